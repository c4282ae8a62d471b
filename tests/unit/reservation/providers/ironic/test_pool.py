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
    """Nodes with change times; counts what each read returns."""

    def __init__(self, nodes):
        self.nodes = {n['uuid']: n for n in nodes}
        self.full_reads = []
        self.changed_reads = 0

    def read_full(self, shards):
        found = [dict(n) for n in self.nodes.values() if n['shard'] in shards]
        self.full_reads.append(len(found))
        return found

    def read_changed(self, shards):
        ordered = sorted(self.nodes.values(),
                         key=lambda n: n['updated_at'] or '', reverse=True)
        for node in ordered:
            self.changed_reads += 1
            yield dict(node)

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
                                shard_of=lambda n: n['shard'],
                                full_interval=full_interval)


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
        # One record to learn the newest change, then the shard.
        assert read == 1 + 5

    def test_incremental_refresh_reads_only_changes(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n4', T0 + datetime.timedelta(minutes=5),
                      instance_uuid='i1')
        before = ironic.changed_reads
        read = pool.refresh({'s0'})
        assert 'n4' not in {n['uuid'] for n in pool.ready()}
        assert len(ironic.full_reads) == 1
        # n4 (changed), n9 (the newest change seen before), n8 and n7
        # (within the 2 s overlap), then n6, older, ends the read.
        assert read == ironic.changed_reads - before == 5

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
