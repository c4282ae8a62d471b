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

"""Deploy throttling, leadership, the health poll and stats."""

import threading
import time
from unittest import mock

import pytest
import tooz

from ironic_multi._reservation import health
from ironic_multi._reservation import leader
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation import membership
from ironic_multi._reservation.providers import base
from ironic_multi._reservation import stats
from ironic_multi._reservation import throttle
from ironic_multi import exception

JOIN = 30


class TestThrottle:

    def test_no_limit(self):
        gate = throttle.DeployThrottle(0, timeout=1)
        with gate.turn('a'), gate.turn('b'):
            assert gate.running == 0

    def test_waiters_go_in_order_and_never_exceed_the_limit(self):
        gate = throttle.DeployThrottle(2, timeout=JOIN)
        order, peak, lock = [], [0], threading.Lock()
        release = threading.Event()

        def deploy(name):
            with gate.turn(name):
                with lock:
                    order.append(name)
                    peak[0] = max(peak[0], gate.running)
                release.wait(JOIN)

        threads = []
        for index in range(6):
            thread = threading.Thread(target=deploy, args=(index,))
            thread.start()
            threads.append(thread)
            # Each queues before the next arrives.
            deadline = time.monotonic() + JOIN
            while (gate.running + gate.waiting < index + 1
                   and time.monotonic() < deadline):
                time.sleep(0.005)
        assert gate.running == 2 and gate.waiting == 4
        release.set()
        for thread in threads:
            thread.join(JOIN)
        assert order == list(range(6))
        assert peak[0] == 2
        assert gate.running == gate.waiting == 0

    def test_a_wait_is_bounded(self):
        gate = throttle.DeployThrottle(1, timeout=0.2)
        with gate.turn('first'):
            started = time.monotonic()
            with pytest.raises(exception.DeployThrottled) as caught:
                with gate.turn('second'):
                    pass
            assert time.monotonic() - started < 5
        assert 'second' in str(caught.value)
        assert gate.waiting == 0
        with gate.turn('third'):
            assert gate.running == 1


class TestLeadership:

    def member(self, tmp_path, host):
        member = membership.Membership('file://%s' % tmp_path, 'g', 5,
                                       host=host)
        member.start()
        return member

    def test_one_leader_and_a_successor(self, tmp_path):
        a = leader.Leadership(self.member(tmp_path, 'a'), 'housekeeper')
        b = leader.Leadership(self.member(tmp_path, 'b'), 'housekeeper')
        assert a.try_lead()
        assert not b.try_lead()
        assert a.try_lead()  # still
        a.resign()
        assert b.try_lead()
        assert not a.try_lead()

    def test_without_the_backend_nobody_leads(self, tmp_path):
        member = membership.Membership('file://%s' % tmp_path, 'g', 5)
        assert not leader.Leadership(member, 'housekeeper').try_lead()

    def test_a_leader_is_confirmed_by_the_backend(self, tmp_path):
        lead = leader.Leadership(self.member(tmp_path, 'a'), 'housekeeper')
        with pytest.raises(exception.LeadershipLost):
            lead.confirm()
        assert lead.try_lead()
        lead.confirm()

    @pytest.mark.parametrize('answer', [
        False, tooz.NotImplemented('no way to tell'),
        tooz.ToozError('connection refused')])
    def test_the_first_doubt_stands_the_leader_down(self, tmp_path, answer):
        # A lock the backend says is another's, a backend that cannot tell
        # (tooz's ZooKeeper and etcd3 locks have no heartbeat to trust),
        # or one that fails to answer: no leader.
        lead = leader.Leadership(self.member(tmp_path, 'a'), 'housekeeper')
        assert lead.try_lead()
        lock = lead._lock
        with mock.patch.object(type(lock), 'is_still_owner',
                               side_effect=[answer]
                               if isinstance(answer, Exception)
                               else None, return_value=answer):
            with pytest.raises(exception.LeadershipLost):
                lead.confirm()
        assert not lead.leading
        # It stood down: the lock is free for the next leader.
        assert leader.Leadership(self.member(tmp_path, 'b'),
                                 'housekeeper').try_lead()


class FakeProvider(object):
    def __init__(self):
        self.found = {}

    def instances(self, host):
        return {i: lifecycle.Reservation(instance_uuid=i, node_uuid='n-' + i,
                                         state=lifecycle.State.ACTIVE,
                                         host=host)
                for i in self.found}

    def health(self, reservations):
        # An instance no longer found: its node is gone.
        return {r.instance_uuid: base.NodeHealth(
            instance_uuid=r.instance_uuid, node_uuid=r.node_uuid,
            power_state=self.found.get(
                r.instance_uuid, (lifecycle.PowerState.UNKNOWN,))[0],
            problem=self.found.get(r.instance_uuid, (None, 'gone'))[1])
            for r in reservations}


class TestHealthPoll:

    def test_findings_and_their_changes_are_kept_and_logged(self, caplog):
        provider = FakeProvider()
        poll = health.HealthPoll(provider, 'h', max_age=60)
        provider.found = {'i': (lifecycle.PowerState.ON, None)}
        poll.poll()
        assert poll.latest('i').power_state == lifecycle.PowerState.ON

        provider.found = {'i': (lifecycle.PowerState.OFF, 'maintenance: x')}
        poll.poll()
        found = poll.latest('i')
        assert found.power_state == lifecycle.PowerState.OFF
        assert found.problem == 'maintenance: x'
        assert 'power changed behind our back, on -> off' in caplog.text
        assert 'maintenance: x' in caplog.text

    def test_our_own_power_changes_are_expected(self, caplog):
        provider = FakeProvider()
        poll = health.HealthPoll(provider, 'h', max_age=60)
        provider.found = {'i': (lifecycle.PowerState.ON, None)}
        poll.poll()
        poll.expect('i', lifecycle.PowerState.OFF)
        provider.found = {'i': (lifecycle.PowerState.OFF, None)}
        poll.poll()
        assert 'behind our back' not in caplog.text

    def test_a_node_deleted_behind_our_back_is_reported(self, caplog):
        provider = FakeProvider()
        poll = health.HealthPoll(provider, 'h', max_age=60)
        provider.found = {'lost': (lifecycle.PowerState.ON, None),
                          'released': (lifecycle.PowerState.ON, None)}
        poll.poll()
        poll.forget('released')
        provider.found = {}
        poll.poll()
        assert poll.latest('lost').problem == 'gone'
        assert poll.latest('released') is None
        assert 'instance released' not in caplog.text
        # Reported until someone deals with it.
        poll.poll()
        assert poll.latest('lost').problem == 'gone'

    def test_old_findings_answer_nothing(self, monkeypatch):
        provider = FakeProvider()
        poll = health.HealthPoll(provider, 'h', max_age=60)
        provider.found = {'i': (lifecycle.PowerState.ON, None)}
        poll.poll()
        later = time.monotonic() + 61
        monkeypatch.setattr(time, 'monotonic', lambda: later)
        assert poll.latest('i') is None


def test_stats_snapshot():
    counted = stats.Stats(window=100)
    counted.count('claims')
    counted.count('claims', 2)
    for value in range(1, 101):
        counted.observe('claim', value / 100.0)
    snapshot = counted.snapshot()
    assert snapshot['counters'] == {'claims': 3}
    latency = snapshot['latency']['claim']
    assert latency['count'] == 100
    assert latency['p50'] == pytest.approx(0.505)
    assert latency['p99'] == 1.0
    assert latency['max'] == 1.0
