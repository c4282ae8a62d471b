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

"""What the fault and elasticity tests share: bursts, ring watching."""

import collections
import datetime
import threading
import time

from tooz import coordination as tooz_coordination

from ironic_multi._reservation import membership
from ironic_multi.testing.cloud import cloud as cloud_mod

ADMIN = cloud_mod.ADMIN_CLOUD


def post_servers(cloud, flavors, prefix):
    """POST one server per flavor name as the demo user; no waiting."""
    compute = cloud.connection(cloud_mod.DEMO_CLOUD).compute
    return [compute.create_server(
        name='%s-%d' % (prefix, index), flavor_id=cloud.flavors[flavor],
        image_id=cloud.image_id, networks='none').id
        for index, flavor in enumerate(flavors)]


def assert_no_node_held_twice(cloud, settled, error_holds=False):
    """ACTIVE servers hold one node each, no node is held twice.

    ERROR ones hold none (with ``error_holds``, at most one).
    """
    held = cloud.held_nodes()
    for server_id, server in settled.items():
        if server.status == 'ACTIVE':
            assert len(held.get(server_id, ())) == 1, (server_id, held)
        elif error_holds:
            assert len(held.get(server_id, ())) <= 1, (server_id, held)
        else:
            assert server_id not in held, (server_id, held)
    nodes = [n for ns in held.values() for n in ns]
    assert len(nodes) == len(set(nodes)), held


def statuses(settled):
    return collections.Counter(s.status for s in settled.values())


def fault_of(server):
    """The message of the server's fault (Nova's reason for ERROR)."""
    return (server.fault or {}).get('message')


def hosts_of(cloud, server_ids):
    compute = cloud.connection(ADMIN).compute
    return {i: compute.get_server(i).compute_host for i in server_ids}


class RingWatch(object):
    """Polls the coordination group; records when hosts join and leave.

    ``events`` is ``[(time.time(), 'join' or 'leave', host)]``: wall
    clock, to compare with the services' logs.
    """

    POLL = 0.05

    def __init__(self, cloud):
        self._coordinator = tooz_coordination.get_coordinator(
            cloud.coordination_url, b'test-observer')
        self._group = cloud.coordination_group.encode()
        self.events = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def hosts(self):
        members = self._coordinator.get_members(self._group).get()
        return {membership.host_of(m.decode()) for m in members}

    def __enter__(self):
        self._coordinator.start()
        self._known = self.hosts()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._coordinator.stop()

    def _run(self):
        while not self._stop.is_set():
            hosts = self.hosts()
            now = time.time()
            for host in hosts - self._known:
                self.events.append((now, 'join', host))
            for host in self._known - hosts:
                self.events.append((now, 'leave', host))
            self._known = hosts
            time.sleep(self.POLL)

    def when(self, kind, host, timeout=60):
        """The time of the first ``kind`` event of ``host``; waits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, event, who in self.events:
                if (event, who) == (kind, host):
                    return at
            time.sleep(self.POLL)
        raise AssertionError('%s did not %s the ring within %d s: %s' % (
            host, kind, timeout, self.events))


def _stamp(line):
    # oslo.log starts each line with the local time, to the millisecond.
    return datetime.datetime.strptime(line[:23],
                                      '%Y-%m-%d %H:%M:%S.%f').timestamp()


def logged_at(service, text):
    """``time.time()`` of the last line of a service's log with ``text``."""
    with open(service.log_path, errors='replace') as f:
        lines = [line for line in f if text in line]
    assert lines, 'no %r in %s' % (text, service.log_path)
    return _stamp(lines[-1])


def logged_after(service, text, since, timeout=10):
    """``time.time()`` of the first line with ``text`` from ``since`` on.

    Waits up to ``timeout`` s for it.
    """
    deadline = time.monotonic() + timeout
    while True:
        with open(service.log_path, errors='replace') as f:
            found = [_stamp(line) for line in f if text in line]
        later = [at for at in found if at >= since]
        if later:
            return later[0]
        assert time.monotonic() < deadline, 'no %r since %s in %s' % (
            text, since, service.log_path)
        time.sleep(0.2)


def wait_until_moved(cloud, server_ids, away_from, timeout):
    """Until no server is on ``away_from``; returns the moment."""
    deadline = time.monotonic() + timeout
    while True:
        hosts = hosts_of(cloud, server_ids)
        if away_from not in hosts.values():
            return time.monotonic(), hosts
        if time.monotonic() > deadline:
            raise AssertionError('still on %s after %d s: %s' % (
                away_from, timeout, hosts))
        time.sleep(0.5)
