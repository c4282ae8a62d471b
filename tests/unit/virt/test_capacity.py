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


import copy
import time
from unittest import mock

from nova.compute import provider_tree
from nova import exception as nova_exception
import pytest

from ironic_multi._virt import capacity
from tests.unit.virt import fakes

BM = 'CUSTOM_BAREMETAL'


def inv(total, reserved):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': 1, 'step_size': 1, 'allocation_ratio': 1.0}


@pytest.mark.parametrize('total, free, used, expected', [
    # Nothing in use anywhere: everything is free.
    (10, 10, 0, inv(10, 0)),
    # 6 nodes taken, 2 of them by our own instances: placement sees 2
    # allocations here, and reserved hides the other 4.
    (10, 4, 2, inv(10, 4)),
    # Every used node is ours: nothing to hide.
    (10, 7, 3, inv(10, 0)),
    # Everything taken by others.
    (10, 0, 0, inv(10, 10)),
    # Counts not yet caught up with our claims: never negative.
    (10, 9, 3, inv(10, 0)),
    # Our instances outnumber the published total (nodes went into
    # maintenance): keep room for their allocations.
    (1, 0, 3, inv(3, 0)),
    (0, 0, 2, inv(2, 0)),
])
def test_inventory_reserved(total, free, used, expected):
    result = capacity.inventory({'baremetal': {'total': total, 'free': free}},
                                {BM: used})
    assert result == {BM: expected}


@pytest.mark.parametrize('total, free, used, idle, expected', [
    # One instance holds a node, one build failed (its node is free
    # again): placement must offer Ironic's 4, not 3.
    (5, 4, 2, 1, inv(6, 0)),
    # Others hold 6 nodes, our 2 allocations hold none.
    (10, 4, 2, 2, inv(12, 6)),
    # Everything free, failed builds only.
    (3, 3, 2, 2, inv(5, 0)),
    # More idle than allocated (counts read at different times).
    (3, 3, 1, 2, inv(4, 0)),
    # Our instances outnumber the published total, one failed build.
    (1, 0, 3, 1, inv(3, 0)),
])
def test_idle_allocations_take_no_free_node(total, free, used, idle,
                                            expected):
    result = capacity.inventory({'baremetal': {'total': total, 'free': free}},
                                {BM: used}, {BM: idle})
    assert result == {BM: expected}
    entry = result[BM]
    assert entry['total'] - entry['reserved'] - used == free


@pytest.mark.parametrize('total, free, used, idle, waiting, offered', [
    # Two builds wait (one of them here): two of Ironic's free nodes are
    # theirs.
    (10, 6, 2, 0, 2, 4),
    # A build failed here, one waits elsewhere.
    (10, 6, 2, 1, 1, 5),
    # More builds wait than nodes are free (a burst beyond capacity):
    # nothing offered, and the capacity never below the allocations.
    (10, 2, 3, 0, 5, 0),
])
def test_builds_waiting_for_a_node_take_their_nodes_off(
        total, free, used, idle, waiting, offered):
    entry = capacity.inventory(
        {'baremetal': {'total': total, 'free': free}}, {BM: used},
        {BM: idle}, {BM: waiting})[BM]
    assert entry['total'] - entry['reserved'] - used == offered
    assert 0 <= entry['reserved'] <= entry['total']


@pytest.mark.parametrize('free, used, waiting, leaving', [
    # A burst past capacity: 12 allocations here (5 hold nodes, 7 wait),
    # no node free, and one build found none: its allocation leaves.
    (0, 12, 6, 1),
    # A destroy: its node goes to cleaning, the allocation leaves.
    (4, 3, 0, 1),
])
def test_an_allocation_that_leaves_gives_no_node_back(free, used, waiting,
                                                      leaving):
    entry = capacity.inventory(
        {'baremetal': {'total': 16, 'free': free}}, {BM: used}, None,
        {BM: waiting}, {BM: leaving})[BM]
    before = entry['total'] - entry['reserved'] - used
    after = entry['total'] - entry['reserved'] - (used - leaving)
    assert after == max(free - waiting, 0)
    assert before <= after


class TestWaitingBuilds:

    GOLD = {'CUSTOM_GOLD': 1}

    def _builds(self, held=()):
        self.lookups = []

        def holds(uuid):
            self.lookups.append(uuid)
            return uuid in held if uuid != 'unknown' else None

        return capacity.WaitingBuilds(holds, confirm_after=60)

    def test_consumers_there_at_the_first_read_hold_their_nodes(self):
        builds = self._builds()
        assert builds.update({'a': self.GOLD}, set(), set()) == {}
        assert builds.update({'a': self.GOLD, 'b': self.GOLD}, set(),
                             set()) == {'b': self.GOLD}

    def test_the_hosts_instances_hold_their_nodes_from_the_start(self):
        builds = self._builds()
        builds.hold({'a'})
        # A build allocated before the first read still waits.
        assert builds.update({'a': self.GOLD, 'b': self.GOLD}, set(),
                             set()) == {'b': self.GOLD}

    def test_an_instance_held_before_its_allocation_arrives_holds(self):
        # An adoption says so before it moves the allocation here.
        builds = self._builds()
        builds.update({}, set(), set())
        builds.hold({'adopted'})
        assert builds.update({}, set(), set()) == {}
        assert builds.update({'adopted': self.GOLD}, set(), set()) == {}
        # Not for ever: a consumer that comes much later is a build.
        builds.hold({'late'})
        assert builds.update({}, set(), set()) == {}
        later = time.monotonic() + capacity.EXPECTED_FOR + 1
        with mock.patch.object(capacity.time, 'monotonic',
                               return_value=later):
            assert builds.update({'late': self.GOLD}, set(), set()) == {
                'late': self.GOLD}

    def test_a_claim_or_a_failed_build_ends_the_wait(self):
        builds = self._builds()
        builds.update({}, set(), set())
        now = {'a': self.GOLD, 'b': self.GOLD, 'c': self.GOLD}
        assert set(builds.update(now, set(), set())) == {'a', 'b', 'c'}
        # a claimed; b's build failed (allocation gone); c given up.
        assert builds.update({'a': self.GOLD, 'c': self.GOLD}, {'c'},
                             {'a'}) == {}
        # Held for good, once the claim is no longer listed.
        assert builds.update({'a': self.GOLD}, set(), set()) == {}

    def test_a_consumer_that_leaves_neither_waits_nor_stays_for_long(self):
        builds = self._builds()
        builds.update({'held': self.GOLD}, set(), set())
        now = {'held': self.GOLD, 'new': self.GOLD}
        builds.leaves('held')
        builds.leaves('new')
        start = time.monotonic()
        assert builds.update(now, set(), set()) == {}
        assert builds.leaving() == {'held', 'new'}
        # Gone from placement: forgotten.
        builds.update({'new': self.GOLD}, set(), set())
        assert builds.leaving() == {'new'}
        # Still there after confirm_after: a build again.
        with mock.patch.object(capacity.time, 'monotonic',
                               return_value=start + 61):
            assert builds.update({'new': self.GOLD}, set(), set()) == {
                'new': self.GOLD}
        assert builds.leaving() == set()

    def test_leaving_is_the_last_updates(self):
        # Chaos run, CI 2026-11-29: a build thread said a consumer leaves
        # between the refresh's update and its read of leaving(), and the
        # refresh looked it up in allocations that did not hold it
        # (KeyError in nova-compute).
        builds = self._builds()
        builds.update({'a': self.GOLD}, set(), set())
        builds.leaves('a')
        builds.leaves('b')
        assert builds.leaving() == set()
        builds.update({'a': self.GOLD, 'b': self.GOLD}, set(), set())
        assert builds.leaving() == {'a', 'b'}

    def test_a_long_wait_is_looked_up_once_per_period(self):
        builds = self._builds(held={'adopted'})
        builds.update({}, set(), set())
        now = {'adopted': self.GOLD, 'queued': self.GOLD,
               'unknown': self.GOLD}
        start = 1000.0
        with mock.patch.object(capacity.time, 'monotonic',
                               return_value=start):
            assert set(builds.update(now, set(), set())) == set(now)
        with mock.patch.object(capacity.time, 'monotonic',
                               return_value=start + 30):
            builds.update(now, set(), set())
        assert self.lookups == []
        with mock.patch.object(capacity.time, 'monotonic',
                               return_value=start + 61):
            # An adopted instance holds its node without a claim here;
            # a build still queued, or one Ironic cannot tell of, waits.
            assert set(builds.update(now, set(), set())) == {'queued',
                                                             'unknown'}
        assert sorted(self.lookups) == ['adopted', 'queued', 'unknown']
        with mock.patch.object(capacity.time, 'monotonic',
                               return_value=start + 90):
            builds.update(now, set(), set())
        assert len(self.lookups) == 3


@pytest.mark.parametrize('services', [1, 2, 5])
def test_every_provider_offers_the_cluster_free_count(services):
    # 20 nodes, 9 instances spread over the services, 3 nodes cleaning.
    total, cleaning = 20, 3
    used = [9 // services + (i < 9 % services) for i in range(services)]
    free = total - sum(used) - cleaning
    for mine in used:
        entry = capacity.inventory(
            {'baremetal': {'total': total, 'free': free}}, {BM: mine})[BM]
        assert entry['total'] - entry['reserved'] - mine == free


def test_inventory_omits_empty_classes():
    assert capacity.inventory({'baremetal': {'total': 0, 'free': 0}},
                              {}) == {}
    assert capacity.inventory({}, {BM: 0}) == {}


def test_inventory_normalizes_and_merges_classes():
    cluster = {'bare-metal.gold': {'total': 2, 'free': 1},
               'bare_metal_gold': {'total': 3, 'free': 3},
               'Large': {'total': 1, 'free': 0},
               None: {'total': 7, 'free': 7}}
    result = capacity.inventory(cluster, {})
    assert result == {'CUSTOM_BARE_METAL_GOLD': inv(5, 1),
                      'CUSTOM_LARGE': inv(1, 1)}


def test_used_by_flavors_counts_custom_resources():
    flavors = [{'extra_specs': fakes.BAREMETAL_SPECS},
               {'extra_specs': fakes.BAREMETAL_SPECS},
               {'extra_specs': {'resources:CUSTOM_GOLD': '1',
                                'resources:VCPU': '2'}},
               {'extra_specs': {'resources:CUSTOM_BAD': 'x'}},
               {'extra_specs': None}]
    assert capacity.used_by_flavors(flavors) == {BM: 2, 'CUSTOM_GOLD': 1}


class _Answer(object):
    def __init__(self, status_code, allocations=None):
        self.status_code = status_code
        self._allocations = allocations

    def __bool__(self):
        return self.status_code < 400

    def json(self):
        return {'allocations': self._allocations,
                'resource_provider_generation': 3}


class _Placement(object):
    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def get(self, url, version=None, global_request_id=None):
        self.calls.append((url, version))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_allocations_in_placement_are_what_placement_counts():
    client = _Placement(_Answer(200, {
        'i-1': {'resources': {BM: 1}},
        'i-2': {'resources': {BM: 1, 'CUSTOM_GOLD': 0}}}))
    allocations = capacity.allocations_in_placement(client, 'rp-1')
    assert allocations == {'i-1': {BM: 1}, 'i-2': {BM: 1, 'CUSTOM_GOLD': 0}}
    assert capacity.add_up(allocations.values()) == {BM: 2}
    assert client.calls == [('/resource_providers/rp-1/allocations', None)]


@pytest.mark.parametrize('answer', [_Answer(404), _Answer(503),
                                    RuntimeError('connection refused')])
def test_allocations_in_placement_unknown(answer):
    assert capacity.allocations_in_placement(_Placement(answer),
                                             'rp-1') is None


def test_provider_traits_keeps_nova_traits_and_replaces_the_rest():
    current = {'COMPUTE_NODE', 'COMPUTE_STATUS_DISABLED', 'OWNER_NOVA',
               'CUSTOM_GONE', 'HW_CPU_X86_SSE'}
    nodes = {'CUSTOM_GPU', 'HW_CPU_X86_AVX2', 'not-a-trait', 'NO_SUCH_TRAIT'}
    assert capacity.provider_traits(current, nodes) == {
        'COMPUTE_NODE', 'COMPUTE_STATUS_DISABLED', 'OWNER_NOVA',
        'CUSTOM_GPU', 'HW_CPU_X86_AVX2'}


class _Inventories(object):
    """Placement's inventory of one provider: answers GET and PUT.

    With the report client's provider cache, as Nova's own.
    """

    def __init__(self, puts):
        self.generation = 1
        self.inventories = {BM: {'total': 4, 'reserved': 0}}
        self.puts = list(puts)
        self.written = []
        self._provider_tree = provider_tree.ProviderTree()
        self._provider_tree.new_root('host', 'rp-1', generation=0)

    def get(self, url, version=None, global_request_id=None):
        answer = mock.MagicMock(status_code=200)  # true, as a 200 is
        answer.json.return_value = {
            'resource_provider_generation': self.generation,
            'inventories': copy.deepcopy(self.inventories)}
        return answer

    def put(self, url, body, version=None, global_request_id=None):
        self.written.append(body)
        status = self.puts.pop(0)
        if status == 200:
            self.inventories = body['inventories']
            self.generation += 1
        answer = mock.Mock(status_code=status, text='conflict or worse')
        answer.json.return_value = {
            'resource_provider_generation': self.generation,
            'inventories': copy.deepcopy(self.inventories)}
        return answer


def test_an_inventory_written_during_a_conflict_is_read_and_written_again():
    placement = _Inventories([409, 200])
    wanted = {BM: {'total': 4, 'reserved': 3}}
    assert capacity.change_inventory(placement, mock.Mock(), 'rp-1',
                                     lambda current: wanted) is True
    assert placement.inventories == wanted
    assert [w['resource_provider_generation']
            for w in placement.written] == [1, 1]
    # The report client's cache has what was written: the resource
    # tracker's next update finds nothing to change; and its old
    # generation, so that a write of an older inventory conflicts.
    cached = placement._provider_tree.data('rp-1')
    assert (cached.inventory, cached.generation) == (wanted, 0)
    # Nothing to change: nothing written.
    assert capacity.change_inventory(placement, mock.Mock(), 'rp-1',
                                     lambda current: wanted) is False
    assert len(placement.written) == 2


@pytest.mark.parametrize('puts, error', [
    ([400], nova_exception.ResourceProviderUpdateFailed),
    ([409] * capacity._WRITES, capacity.InventoryConflict),
])
def test_an_inventory_placement_refuses_is_a_typed_error(puts, error):
    placement = _Inventories(puts)
    with pytest.raises(error):
        capacity.change_inventory(placement, mock.Mock(), 'rp-1',
                                  lambda current: {BM: {'total': 1}})
    assert len(placement.written) == len(puts)
    assert placement.inventories == {BM: {'total': 4, 'reserved': 0}}
