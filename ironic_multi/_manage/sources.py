# Copyright 2026 The ironic-multi Authors
#
#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Where the commands read from: configuration, provider, group.

Each source is made on first use, so that ``--help`` needs none, and let
go when the command ends.
"""

import contextlib
import dataclasses
import logging
import math
import os
import threading
import time

from oslo_config import cfg

from ironic_multi._manage import base
from ironic_multi._reservation import board
from ironic_multi._reservation import membership as membership_mod
from ironic_multi._reservation import providers
from ironic_multi._reservation.providers.ironic import client
from ironic_multi._reservation import ring as ring_mod
from ironic_multi import conf as im_conf
from ironic_multi import exception

NAME = 'ironic-multi-manage'
LOG = logging.getLogger(NAME)
#: The CLI's host in the group: an operator, owning no shard.
OPERATOR_HOST = membership_mod.OPERATOR_PREFIX + NAME
# nova-compute's configuration files are where this CLI looks by default.
PROJECT = 'nova'
#: Seconds the CLI waits for Ironic or the coordination backend to answer
#: at first (``--wait``): an operator's command, not a service, should
#: say soon that it cannot reach them.
DEFAULT_WAIT = 10
# A wait longer than this says what it waits for.
ANNOUNCE_AFTER = 2


@dataclasses.dataclass
class Service(object):
    """One live compute service of the group, with what it published."""

    member_id: str
    host: str
    payload: dict

    def age(self, now):
        """Seconds since it last published (its last refresh)."""
        return base.age(self.payload.get('at'), now)


def load_conf(config_files=(), config_dirs=()):
    """A ConfigOpts of ironic-multi's options, read like nova-compute's.

    Without files or directories, oslo.config's search for ``nova.conf``
    applies (``~/.nova/``, ``~/``, ``/etc/nova/``, ``/etc/``).

    :raises ManageError: a file is missing or cannot be parsed.
    """
    conf = cfg.ConfigOpts()
    im_conf.register_opts(conf)
    args = []
    for path in config_files or ():
        args += ['--config-file', path]
    for path in config_dirs or ():
        args += ['--config-dir', path]
    try:
        conf(args, project=PROJECT, prog=NAME)
    except cfg.Error as e:
        raise base.ManageError('Cannot read the configuration: %s' % e)
    except SystemExit:
        # oslo.config's own argument parser gave up on the arguments.
        raise base.ManageError('Cannot read the configuration from %s'
                               % ' '.join(args))
    if not read_from(conf):
        raise base.ManageError(
            'No configuration file found: looked for %s.conf and %s.conf '
            '(and %s.conf.d/) in %s. Pass the file nova-compute runs with: '
            '--config-file /etc/nova/nova.conf (or --config-dir DIR)' % (
                PROJECT, NAME, PROJECT, ', '.join(searched())))
    LOG.info('Read the configuration from %s', ', '.join(read_from(conf)))
    try:
        # As nova-compute reads it: Nova's in-tree [ironic] options too.
        im_conf.check(conf)
    except exception.ConfigInvalid as e:
        raise base.ManageError(str(e))
    return conf


def searched():
    """Where oslo.config looks for files when none is given, in order."""
    # The private helper is the one list oslo.config searches; the public
    # find_config_files() returns only what it found.
    return [os.path.join(directory, '')
            for directory in cfg._get_config_dirs(PROJECT)]


def read_from(conf):
    """The configuration files and directories ``conf`` was read from."""
    return list(conf.config_file or ()) + list(conf.config_dir or ())


def describe_ironic(conf):
    """Where the ``[ironic]`` options say Ironic is, for messages."""
    group = conf.ironic
    if group.endpoint_override:
        return 'Ironic at %s' % group.endpoint_override
    if group.auth_type in (None, 'none', 'noauth'):
        return 'Ironic (no [ironic] endpoint_override)'
    auth_url = getattr(group, 'auth_url', None)
    return 'Ironic (the %s endpoint in the catalog of %s)' % (
        group.service_type, auth_url or 'Keystone')


def _check_ironic_options(conf):
    """The ``[ironic]`` options that cannot work, named with the files."""
    group = conf.ironic
    if group.auth_type is None and not group.endpoint_override:
        raise base.ManageError(
            'No [ironic] auth_type in %s: set the [ironic] options '
            'nova-compute uses (auth_type = password, auth_url and '
            'credentials), or auth_type = none and endpoint_override for '
            'an Ironic without Keystone' % ', '.join(read_from(conf)))


@contextlib.contextmanager
def waiting(what, seconds, option='--wait'):
    """Say what a wait of more than ANNOUNCE_AFTER seconds waits for.

    :param option: the option that raises the bound, for the message.
    """
    if seconds <= ANNOUNCE_AFTER:
        # Over before anyone wonders.
        yield
        return
    timer = threading.Timer(ANNOUNCE_AFTER, LOG.warning, args=(
        'Waiting up to %s s for %s (%s raises the bound)',
        _seconds(seconds), what, option))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


class Sources(object):
    """The configuration, node provider and group membership of a run."""

    def __init__(self, config_files=(), config_dirs=(), wait=DEFAULT_WAIT):
        self._config_files = list(config_files or ())
        self._config_dirs = list(config_dirs or ())
        #: Seconds to wait for Ironic and the coordination backend.
        self.wait = wait
        self._conf = None
        self._provider = None
        self._refreshed = False
        self._membership = None
        self._started = []

    @property
    def conf(self):
        if self._conf is None:
            self._conf = load_conf(self._config_files, self._config_dirs)
        return self._conf

    @property
    def opts(self):
        """The ``[ironic_multi]`` group."""
        return self.conf.ironic_multi

    def provider(self, full=False):
        """The node provider of the configuration, started.

        :param full: have its cache hold every node of every shard (one
            full read), as no single service's does.
        """
        if self._provider is None:
            self._provider = self._start_provider()
        if full and not self._refreshed:
            self._provider.refresh(self.in_scope(
                self._provider.shard_keys()))
            self._refreshed = True
        return self._provider

    def _start_provider(self):
        """The configured provider, started within ``--wait`` seconds.

        Its first contact with Ironic (the API version, the shard list) is
        bounded by ``--wait``; so are the retries of any later request
        that finds Ironic unavailable.
        """
        conf = self.conf
        if self.opts.node_provider != 'ironic':
            provider = providers.load_provider(conf)
            provider.start()
            self._started.append(provider.stop)
            return provider
        _check_ironic_options(conf)
        for answered, (option, _delay) in client.RETRY_OPTIONS.items():
            retries, delay = client.retry_policy(conf, answered)
            conf.set_override(option, min(retries, math.ceil(
                self.wait / max(delay, 1))), group='ironic')
        provider = providers.load_provider(conf)
        what = describe_ironic(conf)
        try:
            with waiting(what, self.wait), provider.bounded(
                    time.monotonic() + self.wait):
                provider.start()
        except exception.IronicUnavailable as e:
            raise base.ManageError('%s (waited %s s for %s; --wait raises '
                                   'the bound)' % (e, _seconds(self.wait),
                                                   what))
        self._started.append(provider.stop)
        return provider

    def membership(self):
        """This CLI in the coordination group, as an operator member."""
        if self._membership is None:
            membership = membership_mod.Membership.from_conf(
                self.conf, host=OPERATOR_HOST)
            # Stopped even if the start gives up half way.
            self._started.append(membership.stop)
            with waiting('coordination group %s' % self.group(),
                         self.wait):
                membership.start(timeout=self.wait)
            self._membership = membership
        return self._membership

    def group(self):
        """The group and its (password-free) URL, for messages."""
        return '%s at %s' % (self.opts.coordination_group,
                             membership_mod.redact(
                                 self.opts.coordination_url))

    def services(self):
        """The live compute services, by member id order."""
        membership = self.membership()
        members = membership.members()
        published = membership.published()
        return [Service(member_id=member,
                        host=membership_mod.host_of(member),
                        payload=published.get(member) or {})
                for member in sorted(members)
                if not membership_mod.is_operator(member)]

    def payloads_by_host(self, services):
        """``{host: payload}``, the freshest one where a host has two."""
        found = {}
        for service in services:
            current = found.get(service.host)
            if current is None or (service.payload.get('at') or 0) > (
                    current.get('at') or 0):
                found[service.host] = service.payload
        return found

    def in_scope(self, shard_keys):
        """The keys of ``shard_keys`` the services serve ([ironic] shard)."""
        scope = im_conf.shard_scope(self.conf)
        return {key for key in shard_keys if scope is None or key in scope}

    def ring(self, shard_keys):
        """The shard ring as the services compute it now."""
        shard_ring = ring_mod.ShardRing(self.membership(),
                                        self.opts.ring_partitions,
                                        scope=im_conf.shard_scope(self.conf))
        shard_ring.refresh(shard_keys)
        return shard_ring

    def timeout(self, parsed_args):
        """The ``--timeout`` of a request, or its default."""
        if getattr(parsed_args, 'timeout', None):
            return parsed_args.timeout
        return 3 * self.opts.request_poll_interval + 30

    def ask(self, op, args=None, host=None, expected=None, timeout=60):
        """Ask the services; ``{host: answer}`` of those that answered.

        :param host: the one service that must act, or None.
        :param expected: the hosts whose answers to wait for; None: the
            first answer.
        """
        requester = board.Requester(self.membership())
        request_id = requester.ask(op, args, host)
        with waiting('%s to answer' % (', '.join(expected or ())
                                       or host or 'a service'), timeout,
                     option='--timeout'):
            return requester.answers(request_id, expected=expected,
                                     timeout=timeout)

    def live_hosts(self):
        """Hosts of the live services; ManageError when there are none."""
        hosts = sorted({service.host for service in self.services()})
        if not hosts:
            raise base.ManageError('No live service in coordination group '
                                   '%s' % self.group())
        return hosts

    def close(self):
        """Leave the group and stop the provider; safe to call twice."""
        started, self._started = self._started, []
        for stop in reversed(started):
            stop()
        self._provider = self._membership = None
        self._refreshed = False


def _seconds(value):
    return '%g' % round(value, 1)
