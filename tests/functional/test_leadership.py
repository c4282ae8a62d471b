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

"""A leader paused past its lock's expiry learns that it lost the lead.

On the real backends: a GC pause, a VM pause or a partition stops the
leader's heart for longer than the lock's timeout; another member takes
the lock; when the first one wakes up, renewing its own lock must not make
it believe it still leads (tooz's etcd3 lock renews an expired lease
without a word), or there are two housekeepers until a restart.
"""

import re
import urllib.parse
import uuid

import pytest

from ironic_multi._reservation import leader
from ironic_multi._reservation import membership as membership_mod
from ironic_multi import exception
from ironic_multi.testing import coordination as coordination_servers
from ironic_multi.testing import fault_proxy
from tests.functional.waiting import wait_for

TIMEOUT = 2


@pytest.fixture(params=['etcd3', 'redis'])
def backend(request):
    if request.param == 'redis':
        if not coordination_servers.redis_available():
            pytest.skip('no Redis at %s:%d' % coordination_servers.REDIS)
        return coordination_servers.REDIS_URL
    return request.getfixturevalue('etcd')


def _member(url, group, host):
    member = membership_mod.Membership(url, group, TIMEOUT, host=host)
    member.start(timeout=TIMEOUT * 5)
    return member


def test_a_paused_leader_learns_that_it_lost_the_lock(backend):
    group = 'leader-test-%s' % uuid.uuid4().hex[:8]
    first = _member(backend, group, 'first')
    second = _member(backend, group, 'second')
    try:
        paused = leader.Leadership(first, 'housekeeper')
        other = leader.Leadership(second, 'housekeeper')
        assert paused.try_lead()
        assert not other.try_lead()

        # The first member's heart stops past the lock's timeout.
        heart = first._coordinator.heart
        heart.stop()
        heart.wait()
        wait_for(other.try_lead, TIMEOUT * 5, 'the other member to lead')

        # Awake again: it must not lead any more, and say so before any
        # destructive action.
        assert not paused.try_lead()
        with pytest.raises(exception.LeadershipLost):
            paused.confirm()
        assert other.try_lead()
        other.confirm()
    finally:
        first.stop()
        second.stop()
        coordination_servers.delete_group(backend, group)


def test_a_lead_given_up_while_etcd_was_away_is_taken_by_another():
    """The chaos run's etcd restart left the group without a leader.

    The leader could not confirm its lead with etcd away, stood down, and
    its release failed; tooz's etcd3 driver went on renewing the lock's
    lease, and nobody could take the lock again while that process lived.
    """
    server = coordination_servers.EtcdServer()
    if server.binary is None:
        pytest.skip('etcd is not installed (Debian package etcd-server)')
    group = 'leader-test-%s' % uuid.uuid4().hex[:8]
    with server:
        first = _member(server.url, group, 'first')
        second = _member(server.url, group, 'second')
        try:
            stood_down = leader.Leadership(first, 'housekeeper')
            other = leader.Leadership(second, 'housekeeper')
            assert stood_down.try_lead()
            server.stop()
            with pytest.raises(exception.LeadershipLost):
                stood_down.confirm()
            assert not stood_down.leading
            server.start()
            # Its lock expires within its timeout once nobody renews it.
            wait_for(other.try_lead, TIMEOUT * 10, 'the other member to '
                     'lead')
            other.confirm()
        finally:
            first.stop()
            second.stop()


def test_a_lead_etcd_gave_after_the_bound_is_given_back(etcd):
    """etcd answers a lock's acquire after the member gave up waiting.

    The acquire went on in a thread nobody waited for and took the lock;
    tooz's etcd3 heartbeat then renewed it for as long as the process
    lived, and nobody, the member included, could lead again.  The lock
    lives longer than the wait here (``lock_timeout``): only giving it
    back lets the other member lead in time.
    """
    lock_timeout = TIMEOUT * 5
    group = 'leader-test-%s' % uuid.uuid4().hex[:8]
    proxy = fault_proxy.FaultProxy(
        'http://%s' % urllib.parse.urlsplit(etcd).netloc)
    with proxy:
        slow = _member('etcd3+%s?lock_timeout=%d' % (
            proxy.endpoint, lock_timeout), group, 'slow')
        second = _member(etcd, group, 'second')
        try:
            late = leader.Leadership(slow, 'housekeeper')
            other = leader.Leadership(second, 'housekeeper')
            key = slow.lock('housekeeper')._key_b64
            acquire = '(?s)^(?=.*"target": "CREATE")(?=.*"%s")' % (
                re.escape(key))
            with proxy.fault('delay', method='POST', path='/kv/txn$',
                             body=acquire, seconds=TIMEOUT * 2) as delayed:
                assert not late.try_lead()
                wait_for(lambda: any(
                    seen.fault == 'delay' and seen.status == 200
                    for seen in proxy.seen), TIMEOUT * 5,
                    'etcd to answer the acquire')
            assert delayed.applied == 1
            wait_for(other.try_lead, lock_timeout / 2,
                     'the other member to lead')
            other.confirm()
            assert not late.try_lead()
        finally:
            slow.stop()
            second.stop()
