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

import dataclasses

from oslo_config import cfg

from ironic_multi._manage import base
from ironic_multi._reservation import board
from ironic_multi._reservation import membership as membership_mod
from ironic_multi._reservation import providers
from ironic_multi._reservation import ring as ring_mod
from ironic_multi import conf as im_conf

NAME = 'ironic-multi-manage'
#: The CLI's host in the group: an operator, owning no shard.
OPERATOR_HOST = membership_mod.OPERATOR_PREFIX + NAME
# nova-compute's configuration files are where this CLI looks by default.
PROJECT = 'nova'


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
    return conf


class Sources(object):
    """The configuration, node provider and group membership of a run."""

    def __init__(self, config_files=(), config_dirs=()):
        self._config_files = list(config_files or ())
        self._config_dirs = list(config_dirs or ())
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
            provider = providers.load_provider(self.conf)
            provider.start()
            self._started.append(provider.stop)
            self._provider = provider
        if full and not self._refreshed:
            self._provider.refresh(set(self._provider.shard_keys()))
            self._refreshed = True
        return self._provider

    def membership(self):
        """This CLI in the coordination group, as an operator member."""
        if self._membership is None:
            membership = membership_mod.Membership.from_conf(
                self.conf, host=OPERATOR_HOST)
            # Stopped even if the start gives up half way.
            self._started.append(membership.stop)
            membership.start(timeout=self.opts.membership_timeout)
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

    def ring(self, shard_keys):
        """The shard ring as the services compute it now."""
        shard_ring = ring_mod.ShardRing(self.membership(),
                                        self.opts.ring_partitions)
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
