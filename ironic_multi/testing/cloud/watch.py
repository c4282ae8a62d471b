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

"""Watching a running cloud: its coordination group and its services' logs.

For the cloud tests and the bench, which time what the services do from
outside: when a host joins or leaves the group, when a service logged a
line.
"""

import datetime
import threading
import time

from tooz import coordination as tooz_coordination

from ironic_multi._reservation import membership


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
