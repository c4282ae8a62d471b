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

"""Reservation participants in separate processes racing on a real Ironic."""

import collections
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.functional import participant as participant_mod
from tests.functional.waiting import wait_for

GOLD_SPEC = {'extra_specs': {'resources:CUSTOM_GOLD': '1',
                             'resources:VCPU': '0',
                             'resources:MEMORY_MB': '0',
                             'resources:DISK_GB': '0'}}
# Every claim ends within claim_timeout plus at most one request that
# started before the deadline.
CLAIM_BOUND = participant_mod.CLAIM_TIMEOUT + 5
ANSWER_TIMEOUT = 120.0


class Participant(object):
    """A participant.py process and its JSON line protocol."""

    def __init__(self, endpoint, url, group, host, timeout, log_dir):
        script = participant_mod.__file__
        self.host = host
        self._log = open(os.path.join(log_dir, '%s.log' % host), 'w')
        self.process = subprocess.Popen(
            [sys.executable, script, endpoint, url, group, host,
             str(timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, text=True, bufsize=1)
        self._answers = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.started = self.answer()

    def _read(self):
        for line in self.process.stdout:
            self._answers.put(json.loads(line))
        self._answers.put(None)

    def send(self, **command):
        self.process.stdin.write(json.dumps(command) + '\n')
        self.process.stdin.flush()

    def answer(self):
        answer = self._answers.get(timeout=ANSWER_TIMEOUT)
        assert answer is not None, '%s exited' % self.host
        assert 'failure' not in answer, answer['failure']
        return answer

    def call(self, **command):
        self.send(**command)
        return self.answer()

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


@pytest.fixture
def participants(ironic_server, tmp_path):
    started = []

    def start(count, url=None, group='ironic-multi', timeout=3):
        url = url or 'file://%s' % (tmp_path / 'coordination')
        for index in range(count):
            started.append(Participant(ironic_server.endpoint, url, group,
                                       'host-%d' % index, timeout,
                                       str(tmp_path)))
        for participant in started:
            participant.call(op='refresh')  # all see all members now
        return list(started)

    yield start
    for participant in started:
        participant.stop()


def _enroll(ironic, resource_class, count, shards):
    template, = ironic.enroll_nodes(1, resource_class=resource_class,
                                    shard=shards[0])
    return [template] + ironic.bulk_clone(
        template, count - 1, shard=lambda i: shards[(i + 1) % len(shards)])


def _holders(ironic):
    """``{node: instance}`` of every associated node, from Ironic."""
    return {n['uuid']: n['instance_uuid']
            for n in ironic.list_nodes(fields=['uuid', 'instance_uuid'])
            if n['instance_uuid']}


def test_64_claims_for_50_nodes_from_4_processes(
        ironic, participants, record_property):
    shards = ['shard-%d' % i for i in range(8)]
    gold = set(_enroll(ironic, 'gold', 50, shards))
    _enroll(ironic, 'silver', 150, shards)
    before = ironic.snapshot()
    group = participants(4)

    instances = [str(uuid.uuid4()) for _ in range(64)]
    for index, participant in enumerate(group):
        participant.send(op='claim', spec=GOLD_SPEC, threads=16,
                         instances=instances[index * 16:(index + 1) * 16])
    results = [r for p in group for r in p.answer()['results']]

    outcomes = collections.Counter(r['error'] for r in results)
    assert outcomes == {None: 50, 'NoNodeAvailable': 14}
    won = {r['instance']: r['node'] for r in results if r['node']}
    holders = _holders(ironic)
    # Ironic agrees with every winner, and nothing else is held.
    assert holders == {node: inst for inst, node in won.items()}
    assert set(holders) == gold
    seconds = [r['seconds'] for r in results]
    record_property('claim_seconds_median', statistics.median(seconds))
    record_property('claim_seconds_max', max(seconds))
    assert max(seconds) < CLAIM_BOUND

    for index, participant in enumerate(group):
        participant.call(op='release',
                         instances=instances[index * 16:(index + 1) * 16])
    assert ironic.snapshot() == before


def test_claim_release_cycles_leave_ironic_as_it_started(ironic,
                                                         participants):
    _enroll(ironic, 'gold', 6, ['shard-0', 'shard-1'])
    before = ironic.snapshot()
    first, second = participants(2)
    for _ in range(3):
        instances = [str(uuid.uuid4()) for _ in range(6)]
        results = (first.call(op='claim', spec=GOLD_SPEC, threads=3,
                              instances=instances[:3])['results']
                   + second.call(op='claim', spec=GOLD_SPEC, threads=3,
                                 instances=instances[3:])['results'])
        assert all(r['node'] for r in results), results
        assert len({r['node'] for r in results}) == 6
        first.call(op='release', instances=instances[:3])
        second.call(op='release', instances=instances[3:])
        assert ironic.snapshot() == before


def test_killed_participant_shards_are_taken_over(ironic, participants,
                                                  coordination,
                                                  record_property):
    url, group = coordination
    timeout = 3
    shards = ['shard-%d' % i for i in range(12)]
    _enroll(ironic, 'gold', 36, shards)
    victim, *survivors = participants(3, url=url, group=group,
                                      timeout=timeout)
    owned = [set(p.call(op='refresh')['owned']) for p in survivors]
    assert set(shards) - set.union(*owned), 'the victim owns no shard'

    victim.process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    claimed = []

    def taken_over():
        # Claims go on while the ring heals; each one must succeed.
        survivor = survivors[len(claimed) % 2]
        result, = survivor.call(op='claim', spec=GOLD_SPEC,
                                instances=[str(uuid.uuid4())])['results']
        assert result['node'], result
        claimed.append(result['node'])
        owned = [set(p.call(op='refresh')['owned']) for p in survivors]
        return set.union(*owned) == set(shards)

    wait_for(taken_over, timeout + 10, 'the survivors to own every shard')
    took = time.monotonic() - killed
    record_property('takeover_seconds', took)
    print('takeover after SIGKILL on %s: %.2f s, %d claims meanwhile'
          % (url.split(':')[0], took, len(claimed)))
    # Detection takes the membership timeout; the loop above adds a claim
    # and two refreshes per turn.
    assert took < timeout + 3
    assert len(set(claimed)) == len(claimed)
