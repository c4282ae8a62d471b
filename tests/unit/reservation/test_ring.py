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

import logging
import os
import subprocess
import sys

import fixtures
import pytest

from ironic_multi._reservation import membership
from ironic_multi._reservation import ring

KEYS = ['shard-%04d' % i for i in range(1000)]


class FakeMembership:
    """The membership of ``host`` in a group of ``hosts``."""

    def __init__(self, host, hosts):
        self.member_id = membership.make_member_id(host)
        self.hosts = list(hosts)

    def members(self):
        # Fresh member ids each time, as after restarts: the ring must not
        # care.
        return {membership.make_member_id(h) for h in self.hosts}


def make_ring(host, hosts, keys=KEYS):
    shard_ring = ring.ShardRing(FakeMembership(host, hosts), partitions=32)
    shard_ring.refresh(keys)
    return shard_ring


def owners(shard_ring, keys=KEYS):
    return {key: shard_ring.owner(key) for key in keys}


def test_owned_keys_partition_the_keys():
    hosts = ['c1', 'c2', 'c3']
    owned = [make_ring(h, hosts).owned() for h in hosts]
    assert sum(len(o) for o in owned) == len(KEYS)
    assert set().union(*owned) == set(KEYS)
    for shard_ring, mine in zip((make_ring(h, hosts) for h in hosts), owned):
        assert shard_ring.owned_by(shard_ring.host) == mine


def test_rings_agree_whatever_the_member_order():
    hosts = ['c%d' % i for i in range(5)]
    expected = owners(make_ring('c0', hosts))
    assert owners(make_ring('c4', list(reversed(hosts)))) == expected


def test_rings_agree_across_processes():
    code = ('import sys; from tests.unit.reservation import test_ring as t; '
            'r = t.make_ring("c0", ["c0", "c1", "c2"]); '
            'sys.stdout.write("".join(r.owner(k)[-1] for k in t.KEYS))')
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    # Another hash seed: nothing may depend on hash().
    out = subprocess.run(
        [sys.executable, '-W', 'ignore', '-c', code], cwd=root, check=True,
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, PYTHONHASHSEED='12345')).stdout
    shard_ring = make_ring('c1', ['c2', 'c1', 'c0'])
    assert out == ''.join(shard_ring.owner(k)[-1] for k in KEYS)


def test_restart_under_the_same_host_keeps_the_keys():
    hosts = ['c1', 'c2', 'c3']
    before = make_ring('c1', hosts).owned()
    # A new process start: new member id, same host.
    assert make_ring('c1', hosts).owned() == before


@pytest.mark.parametrize('count', range(3, 9))
def test_join_moves_about_one_share_to_the_new_host(count):
    hosts = ['compute-%d' % i for i in range(count)]
    before = owners(make_ring(hosts[0], hosts))
    after = owners(make_ring(hosts[0], hosts + ['new']))
    moved = {k for k in KEYS if before[k] != after[k]}
    assert {after[k] for k in moved} == {'new'}
    ideal = len(KEYS) / (count + 1)
    assert 0.5 * ideal < len(moved) < 1.5 * ideal


@pytest.mark.parametrize('count', range(3, 9))
def test_leave_moves_only_the_keys_of_the_leaving_host(count):
    hosts = ['compute-%d' % i for i in range(count)]
    before = owners(make_ring(hosts[1], hosts))
    after = owners(make_ring(hosts[1], hosts[1:]))
    moved = {k for k in KEYS if before[k] != after[k]}
    assert moved == {k for k in KEYS if before[k] == hosts[0]}
    ideal = len(KEYS) / count
    assert 0.5 * ideal < len(moved) < 1.5 * ideal


def test_successors_are_the_takeover_order():
    hosts = ['c%d' % i for i in range(6)]
    shard_ring = make_ring('c0', hosts)
    for key in KEYS[:100]:
        owner = shard_ring.owner(key)
        successors = shard_ring.successors(key)
        assert sorted(successors) == hosts[1:]
        if owner != 'c0':
            assert successors[0] == owner
            continue
        # Own keys: the first successor takes over when this host leaves.
        assert make_ring('c1', hosts[1:]).owner(key) == successors[0]


def test_refresh_follows_members_and_remembers_keys():
    members = FakeMembership('c1', ['c1'])
    shard_ring = ring.ShardRing(members, partitions=32)
    assert shard_ring.refresh(KEYS) == set(KEYS)
    members.hosts.append('c2')
    owned = shard_ring.refresh()
    assert shard_ring.hosts == {'c1', 'c2'}
    assert 0 < len(owned) < len(KEYS)
    assert owned == make_ring('c1', ['c1', 'c2']).owned()
    assert shard_ring.owned(['x', 'y']) <= {'x', 'y'}


def test_refresh_logs_ownership_changes_at_info():
    logger = fixtures.FakeLogger(level=logging.DEBUG,
                                 name='ironic_multi._reservation.ring')
    logger.setUp()
    try:
        members = FakeMembership('c1', ['c1', 'c2'])
        shard_ring = ring.ShardRing(members, partitions=32)
        shard_ring.refresh(KEYS[:20])
        logger.reset_output()
        shard_ring.refresh()
        assert 'still owns' in logger.output
        logger.reset_output()
        members.hosts.remove('c2')
        shard_ring.refresh()
        gained = sorted(set(KEYS[:20]) - make_ring('c1', ['c1', 'c2'],
                                                   KEYS[:20]).owned())
        assert 'joined -, left c2' in logger.output
        assert 'gained %s, lost -' % ', '.join(gained) in logger.output
    finally:
        logger.cleanUp()


def test_a_scope_limits_the_ring_to_its_keys():
    # [ironic] shard: the ring holds that key alone, whatever the source
    # lists, and every member computes the same owner for it.
    scoped = {'shard-0001', 'shard-0002'}
    rings = [ring.ShardRing(FakeMembership(h, ['c1', 'c2']), partitions=32,
                            scope=frozenset(scoped)) for h in ('c1', 'c2')]
    for shard_ring in rings:
        shard_ring.refresh(KEYS)
        assert shard_ring.in_scope('shard-0001')
        assert not shard_ring.in_scope('shard-0003')
    assert rings[0].owned() | rings[1].owned() == scoped
    assert not rings[0].owned() & rings[1].owned()
    assert rings[0].owned_by('c2') == rings[1].owned()
