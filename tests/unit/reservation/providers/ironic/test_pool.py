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

import datetime

import pytest

from ironic_multi._reservation.providers.ironic import pool as ready_pool
from ironic_multi._reservation.providers.ironic import states

T0 = datetime.datetime(2026, 11, 21, 12, 0, 0)


def _node(uuid, shard='s1', changed=None, **fields):
    node = {'uuid': uuid, 'shard': shard, 'resource_class': 'gold',
            'provision_state': 'available', 'maintenance': False,
            'instance_uuid': None, 'power_state': 'power off',
            'updated_at': changed and changed.isoformat()}
    node.update(fields)
    return node


class FakeIronic:
    """Nodes with change times; counts what each read returns.

    ``read_changed`` lists as Ironic does after a marker, by
    ``(updated_at, uuid)`` and without nulls, and reads the mark back as
    the provider does.
    """

    def __init__(self, nodes):
        self.nodes = {n['uuid']: n for n in nodes}
        self.full_reads = []
        self.changed_reads = []

    def read_full(self, shards):
        found = [dict(n) for n in self.nodes.values() if n['shard'] in shards]
        self.full_reads.append(len(found))
        return found

    def _dated(self):
        return sorted((n for n in self.nodes.values() if n['updated_at']),
                      key=lambda n: (n['updated_at'], n['uuid']))

    def read_changed(self, mark):
        self.changed_reads.append(mark.uuid)
        now = self.nodes.get(mark.uuid, {}).get('updated_at')
        if now != mark.updated_at:
            raise ready_pool.MarkMoved(mark, read=1)
        found = [dict(n) for n in self._dated()
                 if (n['updated_at'], n['uuid']) > (now, mark.uuid)]
        return found, len(found) + 1

    def read_recent(self):
        return [dict(n) for n in self._dated()[-3:]]

    def change(self, uuid, when, **fields):
        self.nodes[uuid] = dict(self.nodes[uuid], updated_at=when.isoformat(),
                                **fields)


@pytest.fixture
def ironic():
    return FakeIronic([_node('n%d' % i, shard='s%d' % (i % 2),
                             changed=T0 + datetime.timedelta(seconds=i))
                       for i in range(10)])


def make_pool(ironic, full_interval=3600):
    return ready_pool.ReadyPool(ironic.read_full, ironic.read_changed,
                                ironic.read_recent,
                                shard_of=lambda n: n['shard'],
                                full_interval=full_interval)


def _later(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


class TestReadiness:

    @pytest.mark.parametrize('fields', [
        {'provision_state': 'active'}, {'maintenance': True},
        {'instance_uuid': 'i1'}, {'allocation_uuid': 'a1'},
        {'power_state': None}])
    def test_not_ready(self, fields):
        assert not states.is_ready(_node('n', **fields))

    def test_capacity_counts_serving_and_free_nodes(self):
        nodes = [_node('a'), _node('b', instance_uuid='i',
                                   provision_state='active'),
                 _node('c', maintenance=True),
                 _node('d', provision_state='manageable'),
                 _node('e', resource_class='silver')]
        assert states.count_capacity(nodes, lambda n: n['shard']) == {
            's1': {'gold': {'total': 2, 'free': 1},
                   'silver': {'total': 1, 'free': 1}}}


class TestRefresh:

    def test_first_refresh_reads_the_owned_shards(self, ironic):
        pool = make_pool(ironic)
        read = pool.refresh({'s0'})
        assert sorted(n['uuid'] for n in pool.ready()) == [
            'n0', 'n2', 'n4', 'n6', 'n8']
        # Three records for a first mark, then the shard.
        assert read == 3 + 5

    def test_incremental_refresh_reads_only_changes(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n4', _later(5), instance_uuid='i1')
        read = pool.refresh({'s0'})
        assert 'n4' not in {n['uuid'] for n in pool.ready()}
        assert len(ironic.full_reads) == 1
        # After n7, the mark (2 s before the newest change, n9): n8, n9
        # and n4 (changed), and n7 read back.
        assert read == 4

    def test_the_mark_follows_the_changes(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        for minute in (5, 6):
            ironic.change('n%d' % minute, _later(minute))
        pool.refresh({'s0'})
        # n5 is now 2 s or more older than the newest change, n6.
        assert pool.refresh({'s0'}) == 2
        assert ironic.changed_reads[-1] == 'n5'

    def test_nodes_never_updated_are_never_read_again(self, ironic):
        for i in range(10, 100):
            ironic.nodes['n%d' % i] = _node('n%d' % i, shard='s0')
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n99', _later(5), instance_uuid='i1')
        # n8, n9 and n99 after the mark n7, and n7 read back.
        assert pool.refresh({'s0'}) == 4
        assert 'n99' not in {n['uuid'] for n in pool.ready()}

    def test_a_moved_mark_gives_way_to_an_older_one(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n2', _later(5))
        pool.refresh({'s0'})
        # The marks are now n9 (this pass's), then n7; n9 changes.
        ironic.change('n9', _later(6))
        ironic.change('n4', _later(7), instance_uuid='i1')
        pool.refresh({'s0'})
        assert ironic.changed_reads[-2:] == ['n9', 'n7']
        assert 'n4' not in {n['uuid'] for n in pool.ready()}
        assert len(ironic.full_reads) == 1

    def test_when_every_mark_moved_the_read_is_full(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        for i in range(10):
            ironic.change('n%d' % i, _later(5 + i))
        pool.refresh({'s0'})
        assert len(ironic.full_reads) == 2

    def test_without_any_change_every_read_is_full(self):
        ironic = FakeIronic([_node('n%d' % i) for i in range(3)])
        pool = make_pool(ironic)
        pool.refresh({'s1'})
        pool.refresh({'s1'})
        assert len(ironic.full_reads) == 2

    def test_changes_of_other_shards_are_ignored(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n3', T0 + datetime.timedelta(minutes=5))
        pool.refresh({'s0'})
        assert 'n3' not in {n['uuid'] for n in pool.nodes()}

    def test_gained_shard_is_read_fully_lost_shard_dropped(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        pool.refresh({'s1'})
        assert {n['shard'] for n in pool.nodes()} == {'s1'}
        assert len(pool.nodes()) == 5

    def test_full_refresh_when_due(self, ironic):
        pool = make_pool(ironic, full_interval=0)
        pool.refresh({'s0'})
        pool.refresh({'s0'})
        assert len(ironic.full_reads) == 2

    def test_flush_forces_a_full_read(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        pool.flush()
        assert pool.nodes() == []
        pool.refresh({'s0'})
        assert len(ironic.full_reads) == 2

    def test_mark_taken_and_released(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        pool.mark_taken('n0', 'i1')
        assert 'n0' not in {n['uuid'] for n in pool.ready()}
        pool.forget('n0')
        assert 'n0' not in {n['uuid'] for n in pool.nodes()}

    def test_describe(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0', 's1'})
        described = pool.describe()
        assert described['ready'] == described['nodes'] == 10
        assert described['shards'] == 2
        assert 0 <= described['full_read_age'] < 60
