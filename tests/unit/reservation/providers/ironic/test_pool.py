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


def _ready(pool, shards=None, resource_classes=None):
    """The pool's nodes a claim may take, as the provider's filters see."""
    return [n for n in pool.nodes(shards, resource_classes)
            if states.is_ready(n)]


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
    the provider does.  Its horizon is ``now``, Ironic's clock when a
    listing starts (the skew allowance left out).  ``behind_listing``
    makes changes while the next listing runs, behind the place it has
    reached: that listing does not see them.
    """

    def __init__(self, nodes, now=T0 + datetime.timedelta(minutes=1)):
        self.nodes = {n['uuid']: n for n in nodes}
        self.now = now
        self.behind_listing = None
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
        if self.behind_listing is not None:
            self.behind_listing()
            self.behind_listing = None
        return found, len(found) + 1, self.now

    def read_recent(self):
        return [dict(n) for n in self._dated()[-3:]], self.now

    def change(self, uuid, when, **fields):
        self.nodes[uuid] = dict(self.nodes[uuid], updated_at=when.isoformat(),
                                **fields)


@pytest.fixture
def ironic():
    return FakeIronic([_node('n%d' % i, shard='s%d' % (i % 2),
                             changed=T0 + datetime.timedelta(seconds=i))
                       for i in range(10)])


def make_pool(ironic, full_interval=3600, keep=None):
    return ready_pool.ReadyPool(ironic.read_full, ironic.read_changed,
                                ironic.read_recent,
                                shard_of=lambda n: n['shard'],
                                full_interval=full_interval, keep=keep)


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
        assert sorted(n['uuid'] for n in _ready(pool)) == [
            'n0', 'n2', 'n4', 'n6', 'n8']
        # Three records for a first mark, then the shard.
        assert read == 3 + 5

    def test_incremental_refresh_reads_only_changes(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n4', _later(5), instance_uuid='i1')
        ironic.now = _later(10)
        read = pool.refresh({'s0'})
        assert 'n4' not in {n['uuid'] for n in _ready(pool)}
        assert len(ironic.full_reads) == 1
        # After n9, the newest change before the first horizon: n4
        # (changed), and n9 read back.
        assert read == 2

    def test_the_mark_follows_the_changes(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        for minute in (5, 6):
            ironic.change('n%d' % minute, _later(minute))
        ironic.now = _later(10)
        pool.refresh({'s0'})
        # n6, the newest change before the horizon, is the mark now.
        assert pool.refresh({'s0'}) == 1
        assert ironic.changed_reads[-1] == 'n6'

    def test_the_mark_is_a_change_before_the_horizon(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n5', _later(5))
        # The listing started in the second of n5's change, with n6's
        # change later: neither may be the mark.
        ironic.change('n6', _later(5) + datetime.timedelta(seconds=3))
        ironic.now = _later(5) + datetime.timedelta(microseconds=900000)
        pool.refresh({'s0'})
        pool.refresh({'s0'})
        assert ironic.changed_reads[-2:] == ['n9', 'n9']

    def test_a_change_in_a_second_the_listing_passed_is_seen_next(
            self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        second = _later(5)
        ironic.now = second + datetime.timedelta(milliseconds=500)
        # The listing's first page ends with n4, changed in that second;
        # a later page has n6, changed 2 s after it.  n2 changes between
        # the pages, stamped in n4's second (MariaDB keeps whole seconds)
        # and sorted before it: behind the listing.
        ironic.change('n4', second)
        ironic.change('n6', second + datetime.timedelta(seconds=2))
        ironic.behind_listing = lambda: ironic.change(
            'n2', second, instance_uuid='i1')
        pool.refresh({'s0'})
        assert 'n2' in {n['uuid'] for n in _ready(pool)}  # not seen yet
        ironic.now = _later(10)
        pool.refresh({'s0'})
        assert 'n2' not in {n['uuid'] for n in _ready(pool)}
        assert len(ironic.full_reads) == 1

    def test_no_change_before_the_horizon_keeps_the_mark(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n4', _later(5), instance_uuid='i1')
        ironic.now = _later(5)  # the change is in the horizon's second
        pool.refresh({'s0'})
        ironic.now = _later(6)
        pool.refresh({'s0'})
        assert ironic.changed_reads == ['n9', 'n9']
        assert len(ironic.full_reads) == 1

    def test_nodes_never_updated_are_never_read_again(self, ironic):
        for i in range(10, 100):
            ironic.nodes['n%d' % i] = _node('n%d' % i, shard='s0')
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n99', _later(5), instance_uuid='i1')
        ironic.now = _later(10)
        # n99 after the mark n9, and n9 read back.
        assert pool.refresh({'s0'}) == 2
        assert 'n99' not in {n['uuid'] for n in _ready(pool)}

    def test_a_moved_mark_gives_way_to_an_older_one(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n2', _later(5))
        ironic.now = _later(6)
        pool.refresh({'s0'})
        # The marks are now n2 (this pass's), then n9; n2 changes.
        ironic.change('n2', _later(7))
        ironic.change('n4', _later(8), instance_uuid='i1')
        ironic.now = _later(9)
        pool.refresh({'s0'})
        assert ironic.changed_reads[-2:] == ['n2', 'n9']
        assert 'n4' not in {n['uuid'] for n in _ready(pool)}
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

    def test_a_node_that_left_the_owned_shards_leaves_the_pool(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n4', _later(5), shard='s1')
        pool.refresh({'s0'})
        assert 'n4' not in {n['uuid'] for n in pool.nodes()}
        assert len(ironic.full_reads) == 1

    def test_a_node_that_left_the_conductor_group_leaves_the_pool(
            self, ironic):
        pool = make_pool(ironic, keep=lambda n: states.in_conductor_group(
            n, 'Rack1'))
        for node in ironic.nodes.values():
            node['conductor_group'] = 'rack1'
        pool.refresh({'s0'})
        assert 'n4' in {n['uuid'] for n in _ready(pool)}
        ironic.change('n4', _later(5), conductor_group='rack2')
        ironic.change('n6', _later(5), instance_uuid='i1')
        pool.refresh({'s0'})
        assert {n['uuid'] for n in pool.nodes()} == {'n0', 'n2', 'n6', 'n8'}
        assert {n['uuid'] for n in _ready(pool)} == {'n0', 'n2', 'n8'}
        assert len(ironic.full_reads) == 1

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
        assert 'n0' not in {n['uuid'] for n in _ready(pool)}
        pool.forget('n0')
        assert 'n0' not in {n['uuid'] for n in pool.nodes()}

    def test_describe(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0', 's1'})
        described = pool.describe()
        assert described['ready'] == described['nodes'] == 10
        assert described['shards'] == 2
        assert 0 <= described['full_read_age'] < 60


class TestResourceClasses:
    """The pool keeps each class's nodes apart, through every change."""

    @staticmethod
    def _of(pool, *classes):
        return sorted(n['uuid'] for n in _ready(
            pool, resource_classes=list(classes)))

    def test_nodes_of_a_class(self):
        ironic = FakeIronic([
            _node('g1', changed=T0), _node('g2', changed=T0),
            _node('s1', resource_class='silver', changed=T0),
            _node('x1', resource_class=None, changed=T0)])
        pool = make_pool(ironic)
        pool.refresh({'s1'})
        assert self._of(pool, 'gold') == ['g1', 'g2']
        assert self._of(pool, 'silver', 'gold') == ['g1', 'g2', 's1']
        assert self._of(pool, 'bronze') == []
        assert sorted(pool.resource_classes(), key=str) == [
            None, 'gold', 'silver']

    def test_a_node_that_changed_class_moves(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0'})
        ironic.change('n4', _later(5), resource_class='silver')
        ironic.now = _later(10)
        pool.refresh({'s0'})
        assert self._of(pool, 'silver') == ['n4']
        assert self._of(pool, 'gold') == ['n0', 'n2', 'n6', 'n8']

    def test_taken_forgotten_and_lost_nodes_leave_their_class(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0', 's1'})
        pool.mark_taken('n0', 'i1')
        pool.forget('n2')
        assert 'n0' in {n['uuid'] for n in pool.nodes(
            resource_classes=['gold'])}
        assert self._of(pool, 'gold') == [
            'n%d' % i for i in (1, 3, 4, 5, 6, 7, 8, 9)]
        ironic.now = _later(10)
        pool.refresh({'s1'})
        assert self._of(pool, 'gold') == ['n1', 'n3', 'n5', 'n7', 'n9']
        pool.flush()
        assert pool.resource_classes() == []

    def test_asking_for_fewer_shards_than_the_pool_holds(self, ironic):
        pool = make_pool(ironic)
        pool.refresh({'s0', 's1'})
        assert sorted(n['uuid'] for n in _ready(
            pool, {'s1'}, ['gold'])) == ['n1', 'n3', 'n5', 'n7', 'n9']
        assert len(_ready(pool, {'s0', 's1', 's2'}, ['gold'])) == 10
