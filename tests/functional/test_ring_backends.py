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

"""The shard ring on real coordination backends, one process per member.

Three members (``ring_member.py``) share 256 keys over ``file://``, Redis
and etcd3.  A killed member's keys go to the survivors within the
membership timeout, a member that leaves is gone at once, and a member
that was paused past the timeout comes back.  The measured times are
printed and recorded as JUnit properties.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

import fasteners
import pytest
from tooz import hashring

from tests.functional.waiting import wait_for

MEMBER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'ring_member.py')
TIMEOUT = 3
KEYS = {'shard-%d' % i for i in range(256)}
HOSTS = ['m1', 'm2', 'm3']


class Member:
    """A ``ring_member.py`` process and the states it reported."""

    def __init__(self, url, group, host, log_dir):
        self.host = host
        self.log = log_dir / ('%s.log' % host)
        with open(self.log, 'w') as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, '-W', 'ignore', MEMBER, url, group, host,
                 str(len(KEYS)), str(TIMEOUT), '300'],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                text=True)
        self.states = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.states.append(json.loads(line))

    def state(self):
        states = [s for s in self.states if 'hosts' in s]
        return states[-1] if states else None

    def signal(self, signum):
        self.proc.send_signal(signum)
        return time.time()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.proc.stdin.close()


@pytest.fixture
def members(coordination, tmp_path):
    url, group = coordination
    started = [Member(url, group, host, tmp_path) for host in HOSTS]
    try:
        yield started
    finally:
        for member in started:
            member.stop()


def agreed(members):
    """When ``members`` last agreed on the ring, if they do now.

    They agree when each sees exactly these hosts, each read the others'
    payloads, and their owned keys split all keys between them.
    """
    states = [m.state() for m in members]
    hosts = sorted(m.host for m in members)
    if any(s is None or s['hosts'] != hosts or s['published'] != hosts
           for s in states):
        return None
    owned = [set(s['owned']) for s in states]
    if sum(map(len, owned)) != len(KEYS) or set().union(*owned) != KEYS:
        return None
    return max(s['time'] for s in states)


def owned(member):
    return set(member.state()['owned'])


@pytest.fixture
def report(request, record_testsuite_property):
    """Print and record a measured time, named after the backend."""
    def report(name, seconds):
        name = '%s[%s]' % (name, request.node.callspec.params['coordination'])
        record_testsuite_property(name, '%.2f' % seconds)
        print('%s: %.2f s' % (name, seconds))
    return report


def _logs(members):
    return '\n'.join('%s: %s' % (m.host, m.log.read_text()[-2000:])
                     for m in members)


def test_takeover_after_kill_and_leave(members, report):
    first, second, third = members
    wait_for(lambda: agreed(members), 30, 'three members to agree')
    ring = hashring.HashRing(HOSTS)
    for member in members:
        # The same ring as in this process: nothing depends on the process.
        assert owned(member) == {k for k in KEYS
                                 if ring.get_nodes(k.encode()) ==
                                 {member.host}}, _logs(members)
    before = {m.host: owned(m) for m in members}

    killed = third.signal(signal.SIGKILL)
    took_over = wait_for(lambda: agreed([first, second]), TIMEOUT + 10,
                         'the survivors to take over')
    report('takeover_after_kill', took_over - killed)
    assert took_over - killed < TIMEOUT + 1
    for member in (first, second):
        # Only the dead member's keys moved.
        assert owned(member) >= before[member.host]

    left = second.signal(signal.SIGTERM)
    alone = wait_for(lambda: agreed([first]), TIMEOUT + 10,
                     'the last member to own everything')
    report('takeover_after_leave', alone - left)
    assert alone - left < 1.0
    assert second.proc.wait(10) == 0, _logs(members)


def _pause(member, url):
    """Stop ``member``, outside any call to the backend; when it stopped.

    tooz's file driver runs every member's calls through one lock file: a
    member stopped inside a call stalls the others' calls (each ends
    unavailable after the timeout) until it resumes.  That is the driver's
    nature, documented, and not what this test is about.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != 'file':
        return member.signal(signal.SIGSTOP)
    driver_lock = fasteners.InterProcessLock(
        os.path.join(parts.path, '.driver_lock'))
    for attempt in range(20):
        paused = member.signal(signal.SIGSTOP)
        if driver_lock.acquire(timeout=1):
            driver_lock.release()
            return paused
        member.signal(signal.SIGCONT)
        time.sleep(0.05 * attempt)
    pytest.fail('%s held the file driver\'s lock at every pause'
                % member.host)


def test_paused_member_comes_back(members, coordination, report):
    first, second, third = members
    wait_for(lambda: agreed(members), 30, 'three members to agree')

    paused = _pause(third, coordination[0])
    try:
        dropped = wait_for(lambda: agreed([first, second]), TIMEOUT + 10,
                           'the others to drop the paused member')
        report('takeover_after_pause', dropped - paused)
        # Past the timeout, its entry is gone on every backend.
        time.sleep(TIMEOUT)
    finally:
        resumed = third.signal(signal.SIGCONT)
    back = wait_for(lambda: agreed(members), TIMEOUT + 10,
                    'the paused member to come back')
    report('rejoin_after_pause', back - resumed)
