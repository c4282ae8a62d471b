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

"""The Reserver on real parts that need no server: the static provider and
``file://`` coordination."""

import itertools
import threading
import time
from unittest import mock

from oslo_utils import uuidutils
import pytest
import yaml

from ironic_multi._reservation import capacity as capacity_mod
from ironic_multi._reservation import filters
from ironic_multi._reservation import providers
from ironic_multi._reservation import requirements as reqs
from ironic_multi._reservation import reserver as reserver_mod
from ironic_multi._reservation import worker as worker_mod
from ironic_multi import exception
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers as test_reservers

SHARDS = ('s0', 's1', 's2', 's3', 's4', 's5')


def _gold(**extra_specs):
    specs = {'resources:CUSTOM_GOLD': '1', 'resources:VCPU': '0',
             'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}
    specs.update(extra_specs)
    return reqs.Requirements.from_request({'extra_specs': specs})


@pytest.fixture
def cluster(tmp_path):
    """Two Reservers (hosts a and b) over one static inventory."""
    inventory = tmp_path / 'nodes.yaml'
    counter = itertools.count()
    nodes = [{'uuid': uuidutils.generate_uuid(), 'resource_class': 'gold',
              'shard': shard, 'name': 'n%d' % next(counter),
              'traits': ['CUSTOM_FAST'] if shard == 's0' else []}
             for shard in SHARDS for _ in range(2)]
    inventory.write_text(yaml.safe_dump(nodes))
    conf = test_reservers.make_conf(
        node_provider='static', static_inventory=str(inventory),
        claim_candidates=2, coordination_url='file://%s' % (tmp_path / 'c'))
    reservers = {}
    for host in ('a', 'b'):
        reservers[host] = reserver_mod.Reserver(conf, host=host)
    for reserver in reservers.values():
        reserver.start(background=False)
    for reserver in reservers.values():
        reserver.refresh()  # both now see both members
    yield reservers
    for reserver in reservers.values():
        reserver.stop()


def _shard_of(reserver, reservation):
    return reservation.shard


class TestClaim:

    def test_claim_takes_an_owned_shard_first(self, cluster):
        a = cluster['a']
        owned = a.owned_shards()
        assert owned and owned != set(SHARDS)
        for _ in range(2 * len(owned)):
            reservation = a.claim(uuidutils.generate_uuid(), _gold())
            assert reservation.shard in owned

    def test_exhausted_owned_shards_fall_over_to_others(self, cluster):
        a = cluster['a']
        held = {a.claim(uuidutils.generate_uuid(), _gold()).node_uuid
                for _ in range(2 * len(SHARDS))}
        assert len(held) == 2 * len(SHARDS)
        with pytest.raises(exception.NoNodeAvailable) as info:
            a.claim('late', _gold())
        assert info.value.instance == 'late'
        assert 'CUSTOM_GOLD' in info.value.requirements

    def test_claim_is_idempotent(self, cluster):
        first = cluster['a'].claim('i1', _gold())
        assert cluster['b'].claim('i1', _gold()) == first

    def test_requirements_are_honoured(self, cluster):
        reservation = cluster['b'].claim(
            'i1', _gold(**{'trait:CUSTOM_FAST': 'required'}))
        assert reservation.shard == 's0'

    def test_lost_race_moves_to_the_next_batch(self, cluster):
        a = cluster['a']
        real_claim = a.provider.claim
        calls = []

        def first_batch_taken(candidates, *args, **kwargs):
            calls.append([n['uuid'] for n in candidates])
            if len(calls) == 1:
                raise exception.NodeAlreadyClaimed(node='x', instance='i1',
                                                   reason='taken')
            return real_claim(candidates, *args, **kwargs)

        with mock.patch.object(a.provider, 'claim', first_batch_taken):
            reservation = a.claim('i1', _gold())
        assert len(calls) == 2
        assert not set(calls[0]) & set(calls[1])
        assert reservation.node_uuid in calls[1]

    def test_claim_timeout_leaves_nothing_behind(self, cluster):
        a = cluster['a']
        taken = exception.NodeAlreadyClaimed(node='x', instance='i1',
                                             reason='taken')
        clock = itertools.count(0, 100)
        with mock.patch.object(a.provider, 'claim', side_effect=taken):
            with mock.patch('time.monotonic', side_effect=clock):
                with pytest.raises(exception.ClaimTimeout):
                    a.claim('i1', _gold())
        assert a.lookup('i1') is None

    def test_release_returns_the_node(self, cluster):
        a = cluster['a']
        held = [a.claim('i%d' % i, _gold()) for i in range(len(SHARDS) * 2)]
        released = a.release(held[0].instance_uuid)
        assert released.node_uuid == held[0].node_uuid
        assert a.release(held[0].instance_uuid) is None
        assert a.claim('again', _gold()).node_uuid == held[0].node_uuid


class TestAdopt:

    def test_an_adoption_given_back(self, cluster):
        a, b = cluster['a'], cluster['b']
        held = a.claim('i1', _gold())
        a.deploy(held, provider_contract.deployment('i1', 'a'))
        assert b.adopt('i1').host == 'a'
        assert a.lookup('i1').host == 'b'
        # Only the host that holds it gives it back.
        with pytest.raises(exception.ReservationNotFound):
            a.give_back('i1', 'a')
        b.give_back('i1', 'a')
        assert a.lookup('i1').host == 'a'
        with pytest.raises(exception.ReservationNotFound):
            b.give_back('i1', 'a')
        with pytest.raises(exception.ReservationNotFound):
            b.give_back('no-such-instance', 'a')


class TestCapacity:

    def test_cluster_capacity_sums_every_member(self, cluster):
        a, b = cluster['a'], cluster['b']
        a.claim('i1', _gold())
        a.refresh()
        b.refresh()
        local = [r.local_capacity()['gold'] for r in (a, b)]
        assert sum(c['total'] for c in local) == 2 * len(SHARDS)
        assert a.cluster_capacity() == b.cluster_capacity() == {
            'gold': {'total': 2 * len(SHARDS),
                     'free': 2 * len(SHARDS) - 1}}

    def test_owned_shards_partition_the_keys(self, cluster):
        a, b = cluster['a'].owned_shards(), cluster['b'].owned_shards()
        assert a | b == set(SHARDS)
        assert not a & b

    def test_a_departed_member_counts_until_its_shards_are_covered(
            self, cluster):
        a, b = cluster['a'], cluster['b']
        everything = {'gold': {'total': 2 * len(SHARDS),
                               'free': 2 * len(SHARDS)}}
        b.stop()
        # b left after a's ring was read: a still owns only its shards,
        # and b's payload is gone from the group.
        with mock.patch.object(a.ring, 'refresh'):
            a.refresh()
        assert a.owned_shards() != set(SHARDS)
        assert a.cluster_capacity() == everything
        assert a.cluster_traits() == {'CUSTOM_FAST'}
        # a's next refresh takes b's shards over and counts them itself.
        a.refresh()
        assert a.owned_shards() == set(SHARDS)
        assert a.cluster_capacity() == everything
        assert a.capacity.published().keys() == {a.membership.member_id}


class TestClaimsCountedAtOnce:
    """A claim is in every member's sum before any refresh."""

    FULL = 2 * len(SHARDS)

    def test_the_other_member_counts_a_claim_at_its_next_look(
            self, cluster):
        a, b = cluster['a'], cluster['b']
        offered = b.offer()[0]['gold']['free']
        with mock.patch.object(a._follower, 'ask') as asked:
            held = a.claim('i1', _gold())
        asked.assert_called_once_with()
        assert held.shard in a.owned_shards()
        assert a.cluster_capacity()['gold']['free'] == self.FULL - 1
        # b's ring poll (file:// has no stream) reads the payloads: a
        # node of a's shards, so b's offer stays; placement need not hear.
        with mock.patch.object(b._follower, 'ask') as asked:
            assert b.watch_ring() is False
        asked.assert_not_called()
        assert b.cluster_capacity()['gold']['free'] == self.FULL - 1
        assert b.offer()[0]['gold']['free'] == offered
        # A claim from b's shards (a's are spent) takes b's offer down.
        for number in range(2, 2 * len(a.owned_shards()) + 2):
            held = a.claim('i%d' % number, _gold())
        assert held.shard in b.owned_shards()
        with mock.patch.object(b._follower, 'ask') as asked:
            b.watch_ring()
        asked.assert_called_once_with()
        assert b.offer()[0]['gold']['free'] == offered - 1

    def test_a_claim_in_another_members_shard_is_counted_once(
            self, cluster):
        a, b = cluster['a'], cluster['b']
        own = 2 * len(a.owned_shards())
        for number in range(own + 1):
            held = a.claim('i%d' % number, _gold())
        # The last one came from b's shards: b's count still has it free.
        assert held.shard in b.owned_shards()
        b.watch_ring()
        for reserver in (a, b):
            assert reserver.cluster_capacity()['gold']['free'] == (
                self.FULL - own - 1)
        # Once the owners counted them, the claims no longer subtract.
        for reserver in (b, a, b):
            reserver.refresh()
        for reserver in (a, b):
            assert reserver.cluster_capacity()['gold']['free'] == (
                self.FULL - own - 1)

    def test_a_claim_published_while_the_backend_is_away_counts_here(
            self, cluster):
        a = cluster['a']
        down = exception.CoordinationUnavailable(url='file://x',
                                                 reason='gone')
        with mock.patch.object(a.membership, 'publish', side_effect=down):
            a.claim('i1', _gold())
        assert a.cluster_capacity()['gold']['free'] == self.FULL - 1


class TestOffers:

    def test_the_offers_add_up_and_a_disabled_services_move(self, cluster):
        a, b = cluster['a'], cluster['b']

        def offered(reserver):
            return reserver.offer()[0]['gold']['free']

        assert offered(a) == 2 * len(a.owned_shards()) > 0
        assert offered(a) + offered(b) == 2 * len(SHARDS)
        with mock.patch.object(a._follower, 'ask') as asked:
            a.set_offering(False)
        asked.assert_called_once_with()
        b.watch_ring()
        assert (offered(a), offered(b)) == (0, 2 * len(SHARDS))
        a.set_offering(True)
        b.watch_ring()
        assert offered(a) + offered(b) == 2 * len(SHARDS)
        assert offered(b) == 2 * len(b.owned_shards())


class TestRingWatch:

    def test_a_host_that_leaves_moves_its_keys_at_once(self, cluster):
        a, b = cluster['a'], cluster['b']
        with mock.patch.object(a.provider, 'refresh',
                               wraps=a.provider.refresh) as refreshed:
            # Nothing changed: one read of the members, no refresh.
            assert a.watch_ring() is False
            refreshed.assert_not_called()
            b.stop()
            assert a.watch_ring() is True
            refreshed.assert_called_once()
        assert a.owned_shards() == set(SHARDS)
        assert a.watch_ring() is False

    def test_the_backend_away_keeps_the_ring(self, cluster):
        a = cluster['a']
        owned = a.owned_shards()
        with mock.patch.object(
                a.membership, 'members',
                side_effect=exception.CoordinationUnavailable(
                    url='file://', reason='down')):
            assert a.watch_ring() is False
        assert a.owned_shards() == owned


class _Membership(object):
    """Only what a CapacityBoard uses: others' payloads set by hand."""

    def __init__(self, member_id='me', payloads=None):
        self.member_id = member_id
        self.payloads = {} if payloads is None else payloads

    def publish(self, payload):
        self.payloads[self.member_id] = payload

    def published(self):
        return dict(self.payloads)


def test_a_departed_members_capacity_counts_for_a_bounded_time():
    membership = _Membership()
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    gold = {'gold': {'total': 2, 'free': 1}}
    membership.payloads['gone'] = {'at': 1, 'shards': {'s1': gold},
                                   'traits': ['CUSTOM_GPU']}
    board.publish({'s0': gold}, set())
    assert board.cluster_capacity()['gold']['total'] == 4
    del membership.payloads['gone']
    board.publish({'s0': gold}, set())
    assert board.cluster_capacity()['gold']['total'] == 4
    assert board.cluster_traits() == {'CUSTOM_GPU'}
    later = time.monotonic() + 61
    with mock.patch.object(capacity_mod.time, 'monotonic',
                           return_value=later):
        board.publish({'s0': gold}, set())
    assert board.cluster_capacity()['gold']['total'] == 2
    assert board.cluster_traits() == frozenset()


def test_claims_subtract_no_more_than_their_shard_counted_free():
    membership = _Membership()
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    membership.payloads['other'] = {
        'at': time.time() - 10,
        'shards': {'s1': {'gold': {'total': 3, 'free': 1}}}}
    board.publish({'s0': {'gold': {'total': 2, 'free': 2}}}, set())
    assert board.took('n1', 's1', 'gold') is True
    # The owner's count had one free node in s1: a second claim there
    # came from a node the count did not have free.
    assert board.took('n2', 's1', 'gold') is False
    assert board.cluster_capacity() == {'gold': {'total': 5, 'free': 2}}
    assert set(membership.payloads['me']['taken']) == {'n1', 'n2'}
    # The same claim made again counts once.
    assert board.took('n1', 's1', 'gold') is False


def test_a_node_claimed_again_after_its_release_is_a_new_claim():
    membership = _Membership()
    board = capacity_mod.CapacityBoard(membership, retain_seconds=600)
    board.publish({'s0': {'gold': {'total': 2, 'free': 2}}}, set())
    board.took('n1', 's0', 'gold', 'i-1')
    # Counted after the claim; then released and counted free again.
    board.publish({'s0': {'gold': {'total': 2, 'free': 2}}}, set())
    assert board.cluster_capacity()['gold']['free'] == 2
    # The same claim again (idempotent): nothing new.
    assert board.took('n1', 's0', 'gold', 'i-1') is False
    # Another instance's claim of the same node: taken again.
    assert board.took('n1', 's0', 'gold', 'i-2') is True
    assert board.cluster_capacity()['gold']['free'] == 1


def test_a_claim_stops_counting_once_its_shard_was_counted_after_it():
    membership = _Membership()
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    board.publish({'s0': {'gold': {'total': 2, 'free': 2}}}, set())
    board.took('n1', 's0', 'gold')
    assert board.cluster_capacity()['gold']['free'] == 1
    # Counted before the claim: the claim still subtracts.
    board.publish({'s0': {'gold': {'total': 2, 'free': 2}}}, set(),
                  counted_at=time.time() - 5)
    assert board.cluster_capacity()['gold']['free'] == 1
    # Counted after it: the count says it all.
    board.publish({'s0': {'gold': {'total': 2, 'free': 1}}}, set())
    assert board.cluster_capacity()['gold']['free'] == 1
    # And after retain_seconds the claim is no longer published.
    later = time.time() + 61
    with mock.patch.object(capacity_mod.time, 'time', return_value=later):
        board.publish({'s0': {'gold': {'total': 2, 'free': 1}}}, set())
    assert membership.payloads['me']['taken'] == {}


def test_builds_waiting_here_come_off_this_members_offer_alone():
    membership = _Membership()
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    gold = {'CUSTOM_GOLD': 1}
    # Another member's build waits on that member's own provider.
    membership.payloads['other'] = {
        'at': time.time(), 'shards': {}, 'waiting': {'i-9': gold}}
    board.publish({'s0': {'gold': {'total': 4, 'free': 4}}}, set())
    assert board.offer() == ({'gold': {'total': 4, 'free': 4}}, {})
    assert board.set_waiting({'i-1': gold, 'i-2': gold}) is True
    assert membership.payloads['me']['waiting'] == {'i-1': gold,
                                                    'i-2': gold}
    assert board.offer() == ({'gold': {'total': 4, 'free': 4}},
                             {'CUSTOM_GOLD': 2})
    assert board.set_waiting({'i-1': gold, 'i-2': gold}) is False
    # A claim: listed as taken and no longer waiting, in one write, so
    # that the offer less the builds waiting does not move.
    board.took('n1', 's0', 'gold', 'i-1')
    published = membership.payloads['me']
    assert set(published['waiting']) == {'i-2'}
    assert published['taken']['n1']['instance'] == 'i-1'
    assert board.offer() == ({'gold': {'total': 4, 'free': 3}},
                             {'CUSTOM_GOLD': 1})
    # Waiting builds read before the claim do not bring it back.
    board.set_waiting({'i-1': gold, 'i-2': gold})
    assert set(membership.payloads['me']['waiting']) == {'i-2'}
    assert board.claimed_lately() == {'i-1'}


def test_a_claim_leaves_waiting_and_the_offer_in_one_step():
    membership = _Membership()
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    board.publish({'s0': {'gold': {'total': 4, 'free': 4}}}, set())
    board.set_waiting({'i-1': {'CUSTOM_GOLD': 1}})
    seen = []
    real_sum = capacity_mod._sum

    def summing(*args):
        # Another thread (the inventory reporter) reads the offer while
        # the claim sums: it must wait, not see the build gone and its
        # node still free.
        reader = threading.Thread(target=lambda: seen.append(board.offer()))
        reader.start()
        reader.join(0.2)
        seen.append('summed')
        return real_sum(*args)

    with mock.patch.object(capacity_mod, '_sum', side_effect=summing):
        board.took('n1', 's0', 'gold', 'i-1')
    for _ in range(50):
        if len(seen) == 2:
            break
        time.sleep(0.05)
    assert seen == ['summed', ({'gold': {'total': 4, 'free': 3}}, {})]


class _Ring(object):
    """Only what a CapacityBoard asks of a ring: each shard's owner."""

    def __init__(self, order, host='me'):
        # {shard: hosts in the order they would own it}
        self._order = order
        self.host = host

    def owner(self, shard, ignore=()):
        return next((h for h in self._order[shard] if h not in ignore),
                    None)


class TestOffer:
    """Each member offers placement the free nodes of its own shards."""

    GOLD = {'gold': {'total': 4, 'free': 3}}

    def _board(self):
        self.membership = _Membership()
        self.membership.payloads['b'] = {
            'at': time.time() - 10, 'host': 'b',
            'shards': {'s1': {'gold': {'total': 4, 'free': 2}}}}
        board = capacity_mod.CapacityBoard(
            self.membership, retain_seconds=60,
            ring=_Ring({'s0': ['me', 'b'], 's1': ['b', 'me']}))
        board.publish({'s0': self.GOLD}, set(), extra={'host': 'me'})
        return board

    def test_the_offers_add_up_to_the_clusters_free_nodes(self):
        board = self._board()
        assert board.cluster_capacity() == {'gold': {'total': 8,
                                                     'free': 5}}
        assert board.offer() == ({'gold': {'total': 8, 'free': 3}}, {})

    def test_a_claim_from_another_members_shard_leaves_the_offer(self):
        board = self._board()
        self.membership.payloads['b']['taken'] = {
            'n1': {'shard': 's1', 'resource_class': 'gold',
                   'at': time.time()}}
        # Not this member's offer: placement's use of b's provider took
        # that unit off already.
        assert board.reread() is False
        assert board.cluster_capacity()['gold']['free'] == 4
        assert board.offer()[0]['gold']['free'] == 3
        self.membership.payloads['b']['taken']['n2'] = {
            'shard': 's0', 'resource_class': 'gold', 'at': time.time()}
        assert board.reread() is True
        assert board.offer()[0]['gold']['free'] == 2

    def test_a_claim_from_another_hosts_shard_never_adds_up_high(self):
        board = self._board()
        board.set_waiting({'i1': {'CUSTOM_GOLD': 1}})
        assert board.offer() == ({'gold': {'total': 8, 'free': 3}},
                                 {'CUSTOM_GOLD': 1})
        # No node left in s0 for i1 (say): it takes one of b's.  b still
        # offers it (2) until it reads the claim, so this member's offer
        # less its builds waiting must not grow (3 - 1).
        board.took('n9', 's1', 'gold', 'i1')
        assert board.offer() == ({'gold': {'total': 8, 'free': 2}}, {})
        # The cluster has the claim (3 + 2 - 1).  b, once it reads the
        # claim, offers 1: the offers are low by one, never high, until
        # b's next count has it; then this member offers s0's 3 again.
        assert board.cluster_capacity()['gold']['free'] == 4
        self.membership.payloads['b'] = dict(
            self.membership.payloads['b'], at=time.time() + 1,
            shards={'s1': {'gold': {'total': 4, 'free': 1}}})
        assert board.reread() is True
        assert board.offer() == ({'gold': {'total': 8, 'free': 3}}, {})
        assert board.cluster_capacity()['gold']['free'] == 4

    def test_the_next_host_offers_the_shards_of_a_disabled_service(self):
        board = self._board()
        self.membership.payloads['b']['offering'] = False
        assert board.reread() is True
        assert board.offer()[0]['gold']['free'] == 5
        del self.membership.payloads['b']['offering']
        assert board.reread() is True
        assert board.offer()[0]['gold']['free'] == 3

    def test_a_disabled_service_offers_nothing(self):
        board = self._board()
        assert board.set_offering(False) is True
        assert self.membership.payloads['me']['offering'] is False
        assert board.offer()[0]['gold']['free'] == 0
        assert board.set_offering(False) is False
        # Its next refresh still says so.
        board.publish({'s0': self.GOLD}, set(), extra={'host': 'me'})
        assert self.membership.payloads['me']['offering'] is False
        assert board.set_offering(True) is True
        assert board.offer()[0]['gold']['free'] == 3


def test_a_claim_from_another_hosts_shard_hides_no_other_node():
    # "one" is disabled: "two" offers its key s1a, "three" its key s1b.
    payloads = {}
    order = {'s1a': ['one', 'two', 'three'], 's1b': ['one', 'three', 'two'],
             's2': ['two', 'three', 'one'], 's3': ['three', 'two', 'one']}
    counts = {'one': {'s1a': 1, 's1b': 1}, 'two': {'s2': 0},
              'three': {'s3': 0}}
    boards = {}
    for name in ('one', 'two', 'three'):
        # Every member's board reads the one dict of payloads.
        boards[name] = capacity_mod.CapacityBoard(
            _Membership(name, payloads), retain_seconds=60,
            ring=_Ring(order, host=name))
    boards['one'].set_offering(False)
    for name, shards in counts.items():
        boards[name].publish(
            {shard: {'gold': {'total': 4, 'free': free}}
             for shard, free in shards.items()}, set(),
            extra={'host': name}, counted_at=time.time() - 10)
    for board in boards.values():
        board.reread()

    def offered():
        return sum(board.offer()[0].get('gold', {}).get('free', 0)
                   for board in boards.values())

    assert offered() == 2
    # "three" had no node of its own shards left: it took s1a's.
    boards['three'].took('n1', 's1a', 'gold', 'i3')
    for board in boards.values():
        board.reread()
    # s1b's node is still free, and "three" offers it.
    assert offered() == 1


def _claim(shard, at):
    return {'shard': shard, 'resource_class': 'gold', 'at': at}


def test_the_owner_counts_another_members_claim_once_when_it_reads_it():
    membership = _Membership('owner')
    publish = mock.Mock(side_effect=membership.publish)
    membership.publish = publish
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    board.publish({'s0': {'gold': {'total': 3, 'free': 2}}}, set(),
                  counted_at=time.time() - 10)
    claim = _claim('s0', time.time())
    membership.payloads['other'] = {'at': time.time(), 'shards': {},
                                    'taken': {'n1': claim}}
    publish.reset_mock()
    assert board.reread() is True
    mine = membership.payloads['owner']
    assert mine['shards']['s0']['gold']['free'] == 1
    assert mine['counted'] == {'n1': claim['at']}
    # Counted once: neither the owner's sum nor a second read takes it
    # off again, and a second read publishes nothing.
    assert board.cluster_capacity()['gold']['free'] == 1
    assert publish.call_count == 1
    assert board.reread() is False
    assert publish.call_count == 1
    assert board.cluster_capacity()['gold']['free'] == 1


def test_a_claim_the_owner_counted_comes_off_no_other_offer():
    # The claimer reads the owner's recount: its own deduction ends.
    owner_at = time.time() - 10
    claim = _claim('s0', time.time())
    membership = _Membership('claimer')
    board = capacity_mod.CapacityBoard(
        membership, retain_seconds=60,
        ring=_Ring({'s0': ['owner', 'claimer'], 's1': ['claimer', 'owner']},
                   host='claimer'))
    membership.payloads['owner'] = {
        'at': owner_at, 'host': 'owner',
        'shards': {'s0': {'gold': {'total': 2, 'free': 2}}}}
    board.publish({'s1': {'gold': {'total': 2, 'free': 1}}}, set(),
                  extra={'host': 'claimer'})
    board.took('n1', 's0', 'gold', 'i1')
    # Not counted by the owner yet: one less here.
    assert board.offer()[0]['gold']['free'] == 0
    membership.payloads['owner'] = dict(
        membership.payloads['owner'], counted={'n1': claim['at']},
        shards={'s0': {'gold': {'total': 2, 'free': 1}}})
    # The owner counted a claim of that node made at another time: a
    # claim of it since (after a release) still comes off.
    board.reread()
    assert board.offer()[0]['gold']['free'] == 0
    taken = board.published()['claimer']['taken']['n1']
    membership.payloads['owner']['counted'] = {'n1': taken['at']}
    board.reread()
    assert board.offer()[0]['gold']['free'] == 1
    assert board.cluster_capacity()['gold']['free'] == 2


def _owner_of_a_claimed_shard():
    """The owner of s0 (2 of 3 free) and an unread claim of n1 in it."""
    membership = _Membership('owner')
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    board.publish({'s0': {'gold': {'total': 3, 'free': 2}}}, set(),
                  counted_at=time.time() - 10)
    membership.payloads['other'] = {'at': time.time(), 'shards': {},
                                    'taken': {'n1': _claim('s0', time.time())}}
    return membership, board


def test_a_new_count_forgets_the_claims_counted_before_it():
    membership, board = _owner_of_a_claimed_shard()
    board.reread()
    # Ironic's count after the claim has it: nothing more comes off.
    board.publish({'s0': {'gold': {'total': 3, 'free': 1}}}, set(),
                  counted_at=time.time() + 1)
    assert 'counted' not in membership.payloads['owner']
    assert membership.payloads['owner']['shards']['s0']['gold']['free'] == 1
    assert board.cluster_capacity()['gold']['free'] == 1


def test_a_recount_the_backend_refuses_is_still_counted_here(caplog):
    membership, board = _owner_of_a_claimed_shard()
    down = exception.CoordinationUnavailable(url='file://x', reason='down')
    with mock.patch.object(membership, 'publish', side_effect=down):
        assert board.reread() is True
    assert board.cluster_capacity()['gold']['free'] == 1
    assert 'Cannot publish the claims this member counted' in caplog.text
    # The next write carries it.
    board.set_waiting({'i9': {'CUSTOM_GOLD': 1}})
    assert membership.payloads['owner']['counted'] == {
        'n1': membership.payloads['other']['taken']['n1']['at']}


def test_another_members_claim_is_read_again_on_demand():
    membership = _Membership()
    board = capacity_mod.CapacityBoard(membership, retain_seconds=60)
    board.publish({'s0': {'gold': {'total': 2, 'free': 2}}}, set())
    assert board.reread() is False
    membership.payloads['other'] = {
        'at': time.time(), 'shards': {},
        'taken': {'n1': {'shard': 's0', 'resource_class': 'gold',
                         'at': time.time() + 1}}}
    assert board.reread() is True
    assert board.cluster_capacity()['gold']['free'] == 1


def test_unknown_provider_is_a_typed_error():
    with pytest.raises(exception.ProviderNotFound) as info:
        providers.load_provider(test_reservers.make_conf(), name='nope')
    assert info.value.name == 'nope'
    assert 'static' in info.value.known and 'ironic' in info.value.known


class TestCoordinationDown:

    def test_claims_go_on_from_the_last_ring(self, cluster):
        a = cluster['a']
        owned = a.owned_shards()
        down = exception.CoordinationUnavailable(url='file://x',
                                                 reason='gone')
        with mock.patch.object(a.membership, 'members', side_effect=down), \
                mock.patch.object(a.membership, 'published',
                                  side_effect=down):
            # The pool and capacity are refreshed all the same.
            a.claim('i0', _gold())
            a.refresh()
            assert a.owned_shards() == owned
            reservation = a.claim('i1', _gold())
            a.refresh()
            # b's last known counts, plus a's new ones.
            assert a.cluster_capacity()['gold'] == {
                'total': 2 * len(SHARDS), 'free': 2 * len(SHARDS) - 2}
        assert reservation.shard in owned

    def test_waiting_builds_count_here_and_are_published_later(
            self, cluster):
        a, b = cluster['a'], cluster['b']
        a.refresh()
        b.refresh()
        down = exception.CoordinationUnavailable(url='file://x',
                                                 reason='gone')
        waiting = {'i0': {'CUSTOM_GOLD': 1}}
        with mock.patch.object(a.membership, 'publish', side_effect=down):
            assert a.builds_waiting(waiting) is True
        assert a.offer()[1] == {'CUSTOM_GOLD': 1}

        def seen_by_b():
            b.refresh()
            return b.capacity.published()[a.membership.member_id][
                'waiting']

        assert seen_by_b() == {}
        # Back: the next change (or refresh) publishes it.
        a.refresh()
        assert seen_by_b() == waiting


def test_the_deprecated_option_name_still_selects_the_provider(tmp_path):
    conf_file = tmp_path / 'nova.conf'
    conf_file.write_text('[ironic_multi]\nreservation_backend = static\n')
    conf = test_reservers.make_conf()
    conf(['--config-file', str(conf_file)], project='ironic-multi',
         default_config_files=[])
    assert conf.ironic_multi.node_provider == 'static'


def test_cluster_traits_are_the_union_of_usable_nodes(cluster):
    for reserver in cluster.values():
        reserver.refresh()
    assert cluster['a'].cluster_traits() == {'CUSTOM_FAST'}
    assert cluster['b'].cluster_traits() == {'CUSTOM_FAST'}


def test_threads_of_one_service_offer_different_nodes(cluster):
    """Claims of one service do not race each other for the same nodes."""
    a = cluster['a']
    offered = []
    real_claim = a.provider.claim
    gate = threading.Barrier(2, timeout=30)

    def claim(candidates, *args, **kwargs):
        offered.append({n['uuid'] for n in candidates})
        gate.wait()  # both batches are on offer at once
        return real_claim(candidates, *args, **kwargs)

    # The same order for both: only the marks keep them apart.
    with mock.patch.object(a.provider, 'claim', claim), \
            mock.patch.object(filters, 'shuffled', iter):
        threads = [threading.Thread(target=a.claim, args=(i, _gold()))
                   for i in ('t1', 't2')]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    first, second = offered
    assert not first & second
    assert a.lookup('t1').node_uuid != a.lookup('t2').node_uuid


# -- one group, one consumer --------------------------------------------------

def test_two_cells_in_one_group_release_nothing(cluster):
    """Each cell's instances look unknown to the other: no orphans."""
    a, b = cluster['a'], cluster['b']
    a.conf.set_override('orphan_grace_period', 0, group='ironic_multi')
    instance = uuidutils.generate_uuid()
    a.claim(instance, _gold())
    # Neither cell's Nova knows the instance: in a group that mixes
    # cells, the other cell's instances look just like that.
    a.set_consumers(lambda uuids: {}, identity='cell-a')
    b.set_consumers(lambda uuids: {}, identity='cell-b')
    for reserver in (a, b):
        reserver.refresh()
    leader = next(r for r in (a, b) if r.leadership.try_lead())
    report = leader.housekeep()
    assert report.actions == []
    assert 'serve different consumers' in report.skipped['orphans']
    assert a.lookup(instance) is not None

    # One cell again: the orphan goes.
    b.set_consumers(lambda uuids: {}, identity='cell-a')
    b.refresh()
    report = leader.housekeep()
    assert [action.kind for action in report.actions] == ['release orphan']


def test_two_cells_in_one_group_are_an_error_at_start(cluster, caplog):
    a, b = cluster['a'], cluster['b']
    a.set_consumers(lambda uuids: {}, identity='cell-a')
    a.refresh()
    b.stop()
    b = cluster['b'] = reserver_mod.Reserver(a.conf, host='b')
    b.set_consumers(lambda uuids: {}, identity='cell-b')
    caplog.clear()
    b.start(background=False)
    errors = [r.getMessage() for r in caplog.records
              if r.levelname == 'ERROR']
    assert len(errors) == 1, errors
    for named in ('coordination group ironic-multi', 'b has cell-b',
                  'a has cell-a', '[DEFAULT] transport_url',
                  '[ironic_multi] coordination_group'):
        assert named in errors[0]
    assert b.check_one_consumer() == {'a': 'cell-a'}
    # One cell: nothing to say.
    b.set_consumers(lambda uuids: {}, identity='cell-a')
    b.refresh()
    assert b.check_one_consumer() == {}


def test_a_long_housekeeping_pass_holds_up_no_other_periodic(
        tmp_path, monkeypatch):
    """The refresh, the health poll and the operator requests go on.

    Intervals run a hundred times faster than configured (the options'
    minimums would make this test last a minute).
    """
    inventory = tmp_path / 'nodes.yaml'
    inventory.write_text(yaml.safe_dump([
        {'uuid': uuidutils.generate_uuid(), 'resource_class': 'gold',
         'shard': 's0', 'name': 'n0'}]))
    conf = test_reservers.make_conf(
        node_provider='static', static_inventory=str(inventory),
        coordination_url='file://%s' % (tmp_path / 'c'),
        pool_refresh_interval=1, request_poll_interval=1,
        health_poll_interval=5, housekeeping_interval=10)
    real_add = worker_mod.Worker.add
    monkeypatch.setattr(
        worker_mod.Worker, 'add',
        lambda worker, name, function, interval, **kwargs: real_add(
            worker, name, function, interval / 100.0, **kwargs))
    reserver = reserver_mod.Reserver(conf, host='a')
    runs = {'refresh': 0, 'health poll': 0, 'operator requests': 0}
    ran = threading.Condition()

    def counted(name, function):
        def run(*args):
            function(*args)
            with ran:
                runs[name] += 1
                ran.notify_all()
        return run

    reserver.on_refresh(counted('refresh', lambda reserver: None))
    reserver.health.poll = counted('health poll', reserver.health.poll)
    reserver.serve_requests = counted('operator requests',
                                      reserver.serve_requests)
    in_pass, end_pass = threading.Event(), threading.Event()

    def long_pass(dry_run=False):
        in_pass.set()
        end_pass.wait(30)

    reserver.housekeeper.run = long_pass
    reserver.start()
    try:
        assert in_pass.wait(30)
        with ran:
            before = dict(runs)
            assert ran.wait_for(
                lambda: all(runs[name] >= before[name] + 2 for name in runs),
                timeout=30), 'runs during the pass: %s' % {
                    name: runs[name] - before[name] for name in runs}
        # The operator's pass waits for none: the periodic one runs.
        with pytest.raises(exception.HousekeepingRunning):
            reserver.housekeep()
        assert not end_pass.is_set()
    finally:
        end_pass.set()
        reserver.stop()


def test_a_stopping_service_leaves_the_group_before_its_work_ends(
        tmp_path):
    """The others take its shard keys at once (a SIGTERM's cleanup_host).

    A housekeeping pass still running must not keep the member in the
    group: the other members would wait for it, or for
    membership_timeout.
    """
    inventory = tmp_path / 'nodes.yaml'
    inventory.write_text(yaml.safe_dump([
        {'uuid': uuidutils.generate_uuid(), 'resource_class': 'gold',
         'shard': 's0', 'name': 'n0'}]))
    conf = test_reservers.make_conf(
        node_provider='static', static_inventory=str(inventory),
        coordination_url='file://%s' % (tmp_path / 'c'),
        housekeeping_interval=10)
    stopping = reserver_mod.Reserver(conf, host='a')
    other = reserver_mod.Reserver(conf, host='b')
    in_pass, end_pass = threading.Event(), threading.Event()

    def long_pass(dry_run=False):
        in_pass.set()
        end_pass.wait(30)

    stopping.housekeeper.run = long_pass
    stopping.start()
    other.start(background=False)
    stopper = threading.Thread(target=stopping.stop, daemon=True)
    try:
        assert in_pass.wait(30)
        assert stopping.membership.member_id in other.membership.members()
        stopper.start()
        deadline = time.monotonic() + 5
        while (stopping.membership.member_id in other.membership.members()
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert stopping.membership.member_id not in (
            other.membership.members())
        assert not end_pass.is_set()
        # The refresh of a stopping service does not join again.
        stopping.refresh()
        assert stopping.membership.member_id not in (
            other.membership.members())
    finally:
        end_pass.set()
        stopper.join(30)
        other.stop()


def test_a_service_that_left_the_group_still_claims_and_stays_out(
        cluster):
    """Nova's graceful shutdown: out of the ring at once, builds go on."""
    a, b = cluster['a'], cluster['b']
    a.leave()
    a.leave()   # twice, as cleanup_host's stop() leaves again
    b.refresh()
    assert a.membership.member_id not in b.membership.members()
    assert set(b.ring.owned()) == set(SHARDS)
    # Every node is still there to claim, from b's shards now.
    claimed = {a.claim('i%d' % n, _gold()).node_uuid for n in range(4)}
    assert len(claimed) == 4
    a.refresh()
    assert a.membership.member_id not in b.membership.members()
    a.stop()


# -- what a service serves: [ironic] shard and conductor_group ----------------

def _static_conf(tmp_path, ironic=None, nodes=None):
    inventory = tmp_path / 'nodes.yaml'
    if not inventory.exists():
        inventory.write_text(yaml.safe_dump(nodes or [
            {'uuid': uuidutils.generate_uuid(), 'resource_class': 'gold',
             'shard': shard, 'name': 'n-%s-%d' % (shard, i),
             'conductor_group': 'rack-1' if i else 'rack-2'}
            for shard in ('s0', 's1') for i in range(2)]))
    return test_reservers.make_conf(
        ironic=ironic, node_provider='static',
        static_inventory=str(inventory),
        coordination_url='file://%s' % (tmp_path / 'c'))


def _started(conf, host):
    reserver = reserver_mod.Reserver(conf, host=host)
    reserver.start(background=False)
    return reserver


@pytest.mark.parametrize('ironic, expected', [
    ({'shard': 's1'}, {('s1', 'rack-1'), ('s1', 'rack-2')}),
    ({'conductor_group': 'RACK-1'}, {('s0', 'rack-1'), ('s1', 'rack-1')}),
    ({'shard': 's0', 'conductor_group': 'rack-2'}, {('s0', 'rack-2')}),
])
def test_the_in_tree_options_limit_what_is_claimed(tmp_path, ironic,
                                                   expected):
    reserver = _started(_static_conf(tmp_path, ironic=ironic), 'a')
    try:
        nodes = {node['uuid']: (node['shard'], node['conductor_group'])
                 for node in reserver.provider.nodes(None)}
        claimed = set()
        with pytest.raises(exception.NoNodeAvailable):
            while True:
                reservation = reserver.claim(uuidutils.generate_uuid(),
                                             _gold())
                claimed.add(nodes[reservation.node_uuid])
        assert claimed == expected
        if 'conductor_group' not in ironic:
            # The static provider counts every conductor group's nodes.
            total = reserver.cluster_capacity()['gold']['total']
            assert total == len(expected)
    finally:
        reserver.stop()


@pytest.mark.parametrize('ironic', [{'shard': 's1'},
                                    {'conductor_group': 'rack-2'}])
def test_members_serving_other_nodes_are_refused_at_start(tmp_path, ironic):
    first = _started(_static_conf(tmp_path), 'a')
    try:
        first.refresh()
        other = reserver_mod.Reserver(_static_conf(tmp_path, ironic=ironic),
                                      host='b')
        with pytest.raises(exception.ConfigInvalid) as info:
            other.start(background=False)
        message = str(info.value)
        assert message.startswith(
            'Invalid configuration: host a of coordination group '
            'ironic-multi serves every conductor group and every shard key, '
            'this host (b) serves ')
        assert '[ironic_multi] coordination_group' in message
        # It left the group: the first one owns every key again.
        first.refresh()
        assert first.ring.hosts == {'a'}
        # Alike, it starts.
        _started(_static_conf(tmp_path), 'a2').stop()
    finally:
        first.stop()


def test_a_restarted_host_is_not_its_own_other_member(tmp_path):
    # Its predecessor crashed with the configuration it had before.
    crashed = _started(_static_conf(tmp_path), 'a')
    crashed.refresh()
    restarted = _started(_static_conf(tmp_path, ironic={'shard': 's1'}), 'a')
    restarted.stop()
    crashed.stop()


def test_peer_list_must_name_every_live_member(tmp_path):
    ironic = {'conductor_group': 'rack-1', 'peer_list': ['a', 'b']}
    first = _started(_static_conf(tmp_path, ironic=ironic), 'a')
    try:
        first.refresh()
        _started(_static_conf(tmp_path, ironic=ironic), 'b').stop()
        with pytest.raises(exception.ConfigInvalid) as info:
            reserver_mod.Reserver(_static_conf(tmp_path, ironic=ironic),
                                  host='c')
        assert info.value.option == '[ironic] peer_list'
        # c lists every host, but a does not list c.
        listed = dict(ironic, peer_list=['a', 'b', 'c'])
        third = reserver_mod.Reserver(_static_conf(tmp_path, ironic=listed),
                                      host='c')
        third.start(background=False)
        third.refresh()
        second = reserver_mod.Reserver(_static_conf(tmp_path, ironic=ironic),
                                       host='b')
        with pytest.raises(exception.ConfigInvalid) as info:
            second.start(background=False)
        assert 'does not name host c' in str(info.value)
        third.stop()
    finally:
        first.stop()


def test_a_claim_draws_only_the_candidates_it_offers(cluster):
    """The pool's candidates are drawn lazily, one batch at a time."""
    a = cluster['a']
    a.refresh()
    drawn = []
    real = a.provider.ready_candidates

    def counted(*args, **kwargs):
        for node in real(*args, **kwargs):
            drawn.append(node['uuid'])
            yield node

    owned = a.provider.ready_nodes(_gold(), a.ring.owned())
    assert len(owned) > 2  # more than one batch (claim_candidates=2)
    with mock.patch.object(a.provider, 'ready_candidates', counted):
        reservation = a.claim('t1', _gold())
    assert reservation.node_uuid in drawn
    assert len(drawn) == 2
