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

"""Membership of this process in the tooz group of compute services.

Members heartbeat in the background; a member that stops heartbeating
drops out of the group after the membership timeout.  Each member can
publish a small JSON payload (its node counts) that every member reads.
"""

import concurrent.futures
import contextlib
import functools
from importlib import metadata as importlib_metadata
import json
import os
import socket
import tempfile
import threading
import urllib.parse
import uuid

from oslo_log import log as logging
from oslo_utils import strutils
import tooz
from tooz import coordination

from ironic_multi._reservation import leader
from ironic_multi._reservation import worker
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# Drivers whose locks expire after ``lock_timeout`` unless heartbeated.
_LOCK_TIMEOUT_SCHEMES = frozenset(['redis', 'rediss', 'etcd3', 'etcd3gw'])

# URL option that bounds a member's life without heartbeats, when it is not
# ``membership_timeout`` (redis, etcd3, memcached).  ZooKeeper members are
# ephemeral nodes that live as long as the session.
_TIMEOUT_OPTION = {'file': 'timeout', 'zookeeper': 'timeout',
                   'kazoo': 'timeout'}


def make_member_id(host=None):
    """``<host>:<pid>:<random>``, unique for each process start.

    tooz refuses to join with the id of a crashed member until its entry
    expires (on ``file://``: never), so an id is never reused.
    """
    return '%s:%d:%s' % (host or socket.gethostname(), os.getpid(),
                         uuid.uuid4().hex[:8])


def host_of(member_id):
    """The host part of a member id: what stays the same across restarts."""
    return member_id.rsplit(':', 2)[0]


# Hosts of members that are operators (the CLI), not services.
OPERATOR_PREFIX = '@'


def is_operator(member_id):
    """Whether a member is an operator's tool, which owns no shard."""
    return host_of(member_id).startswith(OPERATOR_PREFIX)


def backend_url(url, timeout):
    """``url`` with the membership ``timeout``, unless it sets its own.

    Where the driver has lock timeouts (redis, etcd3), locks get the same
    one: the housekeeper's lock of a dead leader expires as its
    membership does.
    """
    parts = urllib.parse.urlsplit(url)
    options = [_TIMEOUT_OPTION.get(parts.scheme, 'membership_timeout')]
    if parts.scheme.split('+')[0] in _LOCK_TIMEOUT_SCHEMES:
        options.append('lock_timeout')
    present = urllib.parse.parse_qs(parts.query)
    query = '&'.join([parts.query] * bool(parts.query) + [
        '%s=%d' % (option, timeout) for option in options
        if option not in present])
    return urllib.parse.urlunsplit(parts._replace(query=query))


def redact(url):
    """``url`` without its password, for logs and errors."""
    parts = urllib.parse.urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(':%s@' % parts.password, ':***@', 1)
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return strutils.mask_password(url)


def _no_driver(url, error):
    """ConfigInvalid for a URL whose scheme no installed tooz driver has."""
    scheme = urllib.parse.urlsplit(url).scheme
    known = sorted(entry.name for entry in
                   importlib_metadata.entry_points(group='tooz.backends'))
    if scheme in known:
        # The driver is there but its client library is not.
        reason = '%s: %s' % (scheme, error)
    else:
        reason = 'no tooz driver for "%s" (installed: %s)' % (
            scheme, ', '.join(known))
    return exception.ConfigInvalid(
        reason='coordination_url %s: %s' % (redact(url), reason),
        url=redact(url), cause=reason)


# The tooz drivers with both group membership and locks whose holder can
# ask whether it still holds them.
_SUITABLE = 'etcd3+http, redis, zookeeper, memcached or file'


def _unsuitable(url, coordinator):
    """ConfigInvalid if the URL's driver lacks what a group needs, or None.

    tooz's ``mysql://``, ``postgresql://`` and ``kubernetes://`` drivers
    have no group membership; its ``ipc://`` locks cannot say whether
    they are still held, so no member could ever be sure it leads.
    Without this check, neither shows before the first join or
    leadership check, and then not as a configuration error.
    """
    scheme = urllib.parse.urlsplit(url).scheme
    if type(coordinator).join_group is (
            coordination.CoordinationDriver.join_group):
        why = 'the "%s" tooz driver has no group membership' % scheme
    elif leader.cannot_tell_owner(coordinator):
        why = ('the "%s" tooz driver cannot tell a member whether it still '
               'holds a lock, so no member could lead housekeeping'
               % scheme)
    else:
        return None
    reason = '%s (use %s)' % (why, _SUITABLE)
    return exception.ConfigInvalid(
        reason='coordination_url %s: %s' % (redact(url), reason),
        url=redact(url), cause=reason)


def _coordinator(url, member_id):
    """tooz's coordinator for ``url``, or ConfigInvalid."""
    try:
        coordinator = coordination.get_coordinator(url, member_id.encode())
    except (RuntimeError, ImportError, ValueError) as e:
        raise _no_driver(url, e)
    unsuitable = _unsuitable(url, coordinator)
    if unsuitable is not None:
        raise unsuitable
    return coordinator


# Where the client libraries connect when the URL names no port.  Their
# own retries make a refused connection take a minute to surface (redis:
# 15 tries by tooz, each retried with backoff by redis-py): a plain TCP
# connect tells at once.
_DEFAULT_PORTS = {'redis': 6379, 'rediss': 6379, 'etcd3+http': 2379,
                  'etcd3+https': 2379, 'zookeeper': 2181, 'kazoo': 2181,
                  'memcached': 11211, 'mysql': 3306, 'postgresql': 5432}


def _connectable(url, timeout):
    """Raise CoordinationUnavailable if the URL's server refuses TCP."""
    parts = urllib.parse.urlsplit(url)
    try:
        address = parts.hostname, parts.port or _DEFAULT_PORTS[parts.scheme]
    except (KeyError, ValueError):
        # No server of its own (file://), or several hosts: the driver
        # finds out.
        return
    if address[0] is None:
        return
    try:
        socket.create_connection(address, timeout=timeout).close()
    except OSError as e:
        raise exception.CoordinationUnavailable(
            url=redact(url), reason='cannot connect to %s:%d: %s' % (
                address + (e.strerror or str(e) or type(e).__name__,)))


def check_backend(url, timeout):
    """Connect to the backend of ``url`` and read its groups, or raise.

    For tools that must not start anything on a URL that cannot work.
    Nothing is joined or created.

    :raises ConfigInvalid: no installed driver serves the URL, or it
        cannot serve a group (``cause`` says why, ``url`` is the URL
        without its password).
    :raises CoordinationUnavailable: the backend failed or did not answer
        within ``timeout`` seconds (``reason``, ``url``).
    """
    coordinator = _coordinator(url, make_member_id(OPERATOR_PREFIX + 'check'))
    _connectable(url, timeout)

    def probe():
        coordinator.start(start_heart=False)
        try:
            coordinator.get_groups().get(timeout=timeout)
        finally:
            with contextlib.suppress(Exception):
                coordinator.stop()

    try:
        worker.in_daemon_thread('ironic-multi-check', probe).result(
            timeout=timeout)
    except concurrent.futures.TimeoutError:
        raise exception.CoordinationUnavailable(
            url=redact(url), reason='no answer within %s s' % timeout)
    except Exception as e:
        raise exception.CoordinationUnavailable(
            url=redact(url), reason=str(e) or type(e).__name__) from e


def _text(member_id):
    # Drivers return bytes, except file:// for ids it stored as text.
    return member_id.decode() if isinstance(member_id, bytes) else member_id


class _NoAnswer(Exception):
    """A backend call did not end within the bound."""


def _answered_late(action, late, call):
    """Hand the result of an abandoned ``call`` to ``late``, if it has one.

    In a thread of its own: the callback may run in the caller's thread
    (the call ended as the caller gave up), which must not wait longer.
    """
    if call.exception() is not None:
        return

    def run():
        try:
            late(call.result())
        except Exception:
            LOG.exception('Handling the late answer of "%s" failed', action)

    worker.in_daemon_thread('ironic-multi-late-answer', run)


class _FileBoard:
    """Published payloads of ``file://`` members, one JSON file each.

    The tooz file driver cannot update capabilities after the join, and
    leaving and joining again would drop the member from its peers' rings
    for a moment.  The files sit next to the driver's own, on one host.
    """

    def __init__(self, root, group):
        self._dir = os.path.join(root, 'ironic-multi-published', group)

    def _path(self, member_id):
        return os.path.join(self._dir,
                            urllib.parse.quote(member_id, safe='') + '.json')

    def write(self, member_id, payload):
        os.makedirs(self._dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._dir, suffix='.tmp')
        with os.fdopen(fd, 'w') as f:
            json.dump(payload, f)
        # Readers see the old file or the new one, never half of one.
        os.replace(tmp, self._path(member_id))

    def read(self, member_ids):
        payloads = {}
        for member_id in member_ids:
            try:
                with open(self._path(member_id)) as f:
                    payloads[member_id] = json.load(f)
            except FileNotFoundError:
                pass
        return payloads

    def remove(self, member_id):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(member_id))


# tooz's etcd3 gateway driver, whose client and group keys a watch reads.
_WATCHED = ('etcd3+http', 'etcd3+https')


class Membership:
    """This process as one member of the coordination group.

    :param url: tooz URL (``[ironic_multi]coordination_url``).
    :param group: group name (``coordination_group``).
    :param timeout: seconds without heartbeat after which a member is gone
        (``membership_timeout``).  Ignored if the URL sets it.
    :param host: the stable part of the member id (the compute service
        host); the machine's host name by default.
    """

    def __init__(self, url, group, timeout, host=None):
        self.url = backend_url(url, timeout)
        # No call waits longer for the backend than a member may miss
        # heartbeats: past that its view is stale anyway.  tooz's file
        # driver serialises every call of every member on one host
        # through a lock file, which a stopped process may hold for good.
        self._call_timeout = timeout
        self.group = group
        self.member_id = make_member_id(host)
        self.host = host_of(self.member_id)
        self._group_id = self.group.encode()
        self._payload = None
        self._coordinator = None
        self._lock = threading.Lock()
        self._starting = None
        self._stopped = False
        parts = urllib.parse.urlsplit(self.url)
        self._board = (_FileBoard(parts.path, self.group)
                       if parts.scheme == 'file' else None)

    @classmethod
    def from_conf(cls, conf, host=None):
        """A member configured by ``conf``'s ``[ironic_multi]`` group."""
        opts = conf.ironic_multi
        return cls(opts.coordination_url, opts.coordination_group,
                   opts.membership_timeout, host=host)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    @contextlib.contextmanager
    def _translated(self, action, errors=(tooz.ToozError, OSError)):
        try:
            yield
        except _NoAnswer as e:
            raise exception.CoordinationUnavailable(
                url=redact(self.url), reason='%s: no answer within %s s' % (
                    action, self._call_timeout)) from e.__cause__
        except errors as e:
            raise exception.CoordinationUnavailable(
                url=redact(self.url), reason='%s: %s' % (
                    action, str(e) or type(e).__name__)) from e

    def _wait(self, result):
        """The value of a tooz async ``result``, waited for with a bound."""
        try:
            return result.get(timeout=self._call_timeout)
        except tooz.ToozError as e:
            # OperationTimedOut, or on file:// a ToozError from the
            # future's TimeoutError (an OSError the driver translates).
            if isinstance(e, coordination.OperationTimedOut) or isinstance(
                    e.__cause__, TimeoutError):
                raise _NoAnswer() from e
            raise

    def start(self, timeout=None):
        """Connect, start heartbeating and join (creating the group).

        :param timeout: seconds to wait for the backend; past them the
            attempt goes on in the background (some drivers block a minute
            on an unreachable server) and CoordinationUnavailable is
            raised.  :attr:`started` tells when it has succeeded.
        :raises ConfigInvalid: the URL names no usable driver, or one
            without group membership or lock ownership checks.
        :raises CoordinationUnavailable: the backend did not answer.
        """
        coordinator = _coordinator(self.url, self.member_id)
        with self._lock:
            self._stopped = False
        if timeout is None:
            return self._start(coordinator)
        with self._lock:
            if self._starting is None or self._starting.done():
                # A join that outlives the caller's patience goes on there.
                self._starting = worker.in_daemon_thread(
                    'ironic-multi-join', self._start, coordinator)
            attempt = self._starting
        try:
            attempt.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise exception.CoordinationUnavailable(
                url=redact(self.url),
                reason='no answer within %s s; still trying' % timeout)

    def _start(self, coordinator):
        # Drivers let their client library's errors out of start() (etcd3gw
        # raises its own connection error there): all of them mean the same.
        with self._translated('connecting', errors=(Exception,)):
            coordinator.start(start_heart=True)
        with self._lock:
            if self._stopped:
                # stop() came while this attempt was blocked.
                coordinator.stop()
                return
            self._coordinator = coordinator
        try:
            self._join()
            if self._payload is not None:
                self._push()
        except exception.CoordinationUnavailable:
            self.stop()
            raise
        LOG.info('Joined coordination group %(group)s at %(url)s as '
                 '%(member)s', {'group': self.group, 'url': redact(self.url),
                                'member': self.member_id})

    def stop(self):
        """Leave the group and stop heartbeating.  Safe to call twice."""
        with self._lock:
            self._stopped = True
            coordinator, self._coordinator = self._coordinator, None
        if coordinator is None:
            return
        if self._board is not None:
            with contextlib.suppress(OSError):
                self._board.remove(self.member_id)
        try:
            coordinator.stop()
        except tooz.ToozError as e:
            LOG.warning('Could not leave coordination group %(group)s '
                        'cleanly; the other members will drop %(member)s '
                        'after the membership timeout: %(error)s',
                        {'group': self.group, 'member': self.member_id,
                         'error': e})
            return
        LOG.info('Left coordination group %(group)s as %(member)s',
                 {'group': self.group, 'member': self.member_id})

    @property
    def started(self):
        return self._coordinator is not None

    def _client(self):
        if self._coordinator is None:
            raise exception.CoordinationUnavailable(
                url=redact(self.url), reason='membership is not started')
        return self._coordinator

    def _join(self):
        client = self._client()
        join = lambda: self._wait(client.join_group(
            self._group_id, capabilities=self._payload))
        with self._translated('joining group %s' % self.group), \
                contextlib.suppress(coordination.MemberAlreadyExist):
            try:
                join()
            except coordination.GroupNotCreated:
                # Not join_group_create(): it sleeps a second before its
                # second attempt.
                with contextlib.suppress(coordination.GroupAlreadyExist):
                    self._wait(client.create_group(self._group_id))
                join()

    def members(self):
        """Ids of the live members, read from the backend now.

        This member is always among them: if the backend dropped it (it
        missed heartbeats for longer than the timeout, or the group was
        deleted), it joins again first.  etcd3 and redis would otherwise
        keep it out for good while its heart goes on beating.
        """
        with self._translated('listing members of %s' % self.group):
            try:
                found = self._wait(
                    self._client().get_members(self._group_id))
            except coordination.GroupNotCreated:
                found = ()
        members = {_text(m) for m in found}
        if self.member_id not in members:
            LOG.warning('Member %(member)s was dropped from coordination '
                        'group %(group)s; joining again',
                        {'member': self.member_id, 'group': self.group})
            self._join()
            members.add(self.member_id)
        return members

    def watch_target(self):
        """Where to watch the group's members: etcd3 streams them.

        :returns: ``(requests session, watch URL, key prefix)`` of the
            group on etcd3's gateway; None while not started; False for a
            backend without a watch.
        """
        if urllib.parse.urlsplit(self.url).scheme not in _WATCHED:
            return False
        coordinator = self._coordinator
        if coordinator is None:
            return None
        client = coordinator.client
        prefix = b'%s%s/' % (coordinator.GROUP_PREFIX, self._group_id)
        return client.session, client.get_url('/watch'), prefix

    def namesakes(self):
        """Ids of the other live members under this member's host name.

        Each process is a member of its own: another one is this host's
        previous process, until its membership expires, or a second
        process under the same host name.
        """
        return sorted(m for m in self.members()
                      if m != self.member_id and host_of(m) == self.host)

    def lock(self, name):
        """A tooz lock named ``<group>.<name>``, shared by the group.

        Its calls talk to the backend without a bound: make them through
        :meth:`call`.

        :raises CoordinationUnavailable: not started.
        """
        return self._client().get_lock(
            ('%s.%s' % (self.group, name)).encode())

    def call(self, action, function, *args, late=None):
        """``function(*args)``, a blocking call to the backend, bounded.

        It waits at most the membership timeout, like every other call
        here; one that outlives it goes on in a daemon thread.

        :param action: what the call does, for the error.
        :param late: for a call that outlived the bound: called with its
            result once it returns (not when it fails), in a daemon
            thread; what the call took, nobody else knows of.
        :raises CoordinationUnavailable: no answer in time, or the
            backend's error.
        """
        running = worker.in_daemon_thread('ironic-multi-coordination',
                                          function, *args)
        with self._translated(action, errors=(tooz.ToozError, OSError)):
            try:
                return running.result(timeout=self._call_timeout)
            except concurrent.futures.TimeoutError:
                if late is not None:
                    running.add_done_callback(
                        functools.partial(_answered_late, action, late))
                raise _NoAnswer()

    def publish(self, payload):
        """Publish ``payload`` (a JSON-serialisable dict) to all members.

        It replaces this member's previous payload; it is kept across a
        rejoin and vanishes when the member leaves or expires.
        """
        # Only JSON travels: fail here rather than in a peer.
        self._payload = json.loads(json.dumps(payload))
        if self._coordinator is not None:
            self._push()

    def _push(self):
        with self._translated('publishing to %s' % self.group):
            if self._board is not None:
                self._board.write(self.member_id, self._payload)
                return
            try:
                self._wait(self._client().update_capabilities(
                    self._group_id, self._payload))
            except (coordination.MemberNotJoined,
                    coordination.GroupNotCreated):
                self._join()

    def published(self):
        """``{member_id: payload}`` of the live members that published."""
        with self._translated('reading payloads of %s' % self.group):
            try:
                found = self._wait(
                    self._client().get_members_with_capabilities(
                        self._group_id))
            except coordination.GroupNotCreated:
                return {}
            if self._board is not None:
                return self._board.read(_text(m) for m in found)
        return {_text(m): caps for m, caps in found.items()
                if caps is not None}
