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

"""The housekeeper on the static provider: every action, dry runs, the
quarantine schemes, spare targets; ownership, fencing, failing closed and
the pass's bound."""

import time
from unittest import mock

import pytest

from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import client as ironic_client
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi import exception
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from ironic_multi.testing import static_nodes

GOLD = provider_contract.GOLD


class Cluster(object):
    """A static inventory, a provider, a housekeeper and a fake Nova."""

    def __init__(self, tmp_path, **options):
        options.setdefault('orphan_grace_period', 0)
        self.conf = reservers.make_conf(**options)
        self.inventory = static_nodes.StaticInventory(tmp_path, self.conf)
        self.provider = None
        self.nova = {}
        self.capacity = {}
        # The live members of the group, as the backend lists them.
        self.members = set()

    def nodes(self, count):
        uuids = self.inventory.add_nodes(count, GOLD)
        self.provider = self.inventory.provider()
        return uuids

    def consumers(self, instance_uuids):
        return {u: self.nova[u] for u in instance_uuids if u in self.nova}

    def housekeeper(self, consumers=True, **kwargs):
        kwargs.setdefault('members', lambda: self.members)
        return housekeeper_mod.Housekeeper(
            self.conf, self.provider,
            consumers=self.consumers if consumers else None,
            capacity=lambda: self.capacity, **kwargs)

    def claim(self, instance, deploy=True, host='host-1', claimer=None,
              provider=None):
        provider = provider or self.provider
        requirements = provider_contract.request()
        reservation = provider.claim(
            provider.ready_nodes(requirements, None), instance,
            requirements, time.monotonic() + 10, claimer=claimer)
        if deploy:
            reservation = provider.deploy(
                reservation, provider_contract.deployment(instance, host))
        return reservation

    def other_group(self, **options):
        """A provider of another coordination group on the same files."""
        return self.inventory.provider(reservers.make_conf(
            coordination_group='another-group', **options))

    def kinds(self, report):
        return sorted((a.kind, a.instance_uuid or a.node_uuid, a.done)
                      for a in report.actions)


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path)


def test_orphans_are_torn_down_and_released_after_the_grace(tmp_path):
    cluster = Cluster(tmp_path, orphan_grace_period=3600)
    cluster.nodes(3)
    cluster.claim('alive')
    cluster.claim('deleted')
    cluster.claim('never-known')
    cluster.nova = {'alive': 'active', 'deleted': housekeeper_mod.GONE}
    housekeeper = cluster.housekeeper()

    # Not before the grace period...
    assert housekeeper.run().actions == []
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3601):
        report = housekeeper.run()

    assert cluster.kinds(report) == [
        ('release orphan', 'deleted', True),
        ('release orphan', 'never-known', True)]
    assert {r.instance_uuid for r in cluster.provider.reservations()} == {
        'alive'}


def test_an_orphan_that_comes_back_is_forgiven(tmp_path):
    cluster = Cluster(tmp_path, orphan_grace_period=3600)
    cluster.nodes(1)
    cluster.claim('flaky')
    housekeeper = cluster.housekeeper()
    housekeeper.run()  # first seen gone
    cluster.nova = {'flaky': 'active'}
    housekeeper.run()  # seen alive: forgotten
    cluster.nova = {}
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3601):
        # Gone again, but only just: a new grace period.
        assert housekeeper.run().actions == []
    assert cluster.provider.lookup('flaky') is not None


def test_without_a_consumer_orphans_are_left_alone(cluster):
    cluster.nodes(1)
    cluster.claim('unknown')
    assert cluster.housekeeper(consumers=False).run().actions == []
    assert cluster.provider.lookup('unknown') is not None


def test_dry_run_changes_nothing(cluster):
    cluster.nodes(1)
    cluster.claim('gone')
    report = cluster.housekeeper().run(dry_run=True)
    assert cluster.kinds(report) == [('release orphan', 'gone', False)]
    assert cluster.provider.lookup('gone') is not None


@pytest.mark.parametrize('host', [None, 'host-1'],
                         ids=['unmarked', 'host-marked'])
def test_stuck_claims_time_out(tmp_path, host):
    # A claim with a host mark never deployed either: the mark is written
    # with a claim by PATCH, or by a deploy whose service died before its
    # provision request.
    cluster = Cluster(tmp_path, stuck_claim_timeout=3700)
    cluster.nodes(2)
    stuck = cluster.claim('stuck', deploy=False, claimer='dead-member')
    if host:
        cluster.provider.mark_host(stuck, host)
    assert cluster.provider.lookup('stuck').host == host
    cluster.claim('deployed')
    cluster.nova = {'stuck': 'building', 'deployed': 'active'}
    housekeeper = cluster.housekeeper()

    assert housekeeper.run().actions == []
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3701):
        report = housekeeper.run()

    assert cluster.kinds(report) == [('time out stuck claim', 'stuck', True)]
    assert cluster.provider.lookup('stuck') is None
    assert cluster.provider.lookup('deployed') is not None


def test_a_claim_whose_claimer_lives_is_never_stuck(tmp_path):
    # Queued behind the deploy throttle for longer than the timeout: its
    # service is alive and will deploy it.
    cluster = Cluster(tmp_path, stuck_claim_timeout=3700)
    cluster.nodes(1)
    cluster.claim('queued', deploy=False, claimer='live-member')
    cluster.members = {'live-member'}
    cluster.nova = {'queued': 'building'}
    housekeeper = cluster.housekeeper()
    housekeeper.run()
    with mock.patch('time.monotonic', return_value=time.monotonic() + 7201):
        assert housekeeper.run().actions == []
        # The same claim once its member has gone: stuck from then on.
        cluster.members = set()
        assert housekeeper.run().actions == []
    with mock.patch('time.monotonic', return_value=time.monotonic() + 11000):
        assert cluster.kinds(housekeeper.run()) == [
            ('time out stuck claim', 'queued', True)]


def test_without_the_members_no_claim_is_stuck(tmp_path):
    cluster = Cluster(tmp_path, stuck_claim_timeout=3700)
    cluster.nodes(1)
    cluster.claim('claimed', deploy=False, claimer='someone')
    cluster.nova = {'claimed': 'building'}

    def unreachable():
        raise exception.CoordinationUnavailable(url='etcd3+http://x',
                                                reason='down')

    housekeeper = cluster.housekeeper(members=unreachable)
    housekeeper.run()
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3701):
        report = housekeeper.run()
    assert report.actions == []
    assert 'down' in report.skipped[housekeeper_mod.STUCK_CLAIMS]
    assert cluster.provider.lookup('claimed') is not None


def test_a_failing_teardown_is_counted_then_quarantined(tmp_path):
    script = tmp_path / 'return.sh'
    script.write_text('#!/bin/sh\nexit 1\n')
    script.chmod(0o755)
    cluster = Cluster(tmp_path, static_return_command=str(script),
                      quarantine_after_failures=2)
    (node,) = cluster.nodes(1)
    cluster.claim('deleted')
    housekeeper = cluster.housekeeper()

    first = housekeeper.run()
    assert [(a.kind, a.done) for a in first.actions] == [
        ('release orphan', False)]
    assert 'exit code 1' in first.actions[0].error
    # Kept: the node may hold the tenant's data.
    assert cluster.provider.lookup('deleted').state == lifecycle.State.ERROR

    # The second failure in a row quarantines the node, and the claim of
    # the dead instance goes.
    second = housekeeper.run()
    assert cluster.kinds(second) == [('quarantine', node, True),
                                     ('release orphan', 'deleted', True)]
    (troubled,) = cluster.provider.troubled_nodes()
    assert troubled.quarantined_at is not None
    assert troubled.failures == 2
    assert cluster.provider.lookup('deleted') is None
    assert cluster.provider.ready_nodes(provider_contract.request(),
                                        None) == []


def quarantined(cluster):
    return sorted(t.node_uuid for t in cluster.provider.troubled_nodes()
                  if t.quarantined_at)


@pytest.mark.parametrize('scheme', ['keep', 'cycle'])
def test_max_preserved(tmp_path, scheme):
    cluster = Cluster(tmp_path, quarantine_after_failures=1,
                      max_preserved=2, preserve_scheme=scheme)
    nodes = cluster.nodes(4)
    housekeeper = cluster.housekeeper()
    for node in nodes:
        cluster.provider.record_failure(node, 'deploy failed')
        housekeeper.run()
        time.sleep(0.01)  # quarantine times must differ

    kept = quarantined(cluster)
    assert len(kept) == 2
    rest = set(nodes) - set(kept)
    failing = {t.node_uuid for t in cluster.provider.troubled_nodes()
               if t.failures}
    ready = {n['uuid'] for n in cluster.provider.ready_nodes(
        provider_contract.request(), None)}
    if scheme == 'cycle':
        # The newest two; the older ones are back in service, their
        # failures forgotten.
        assert kept == sorted(nodes[2:])
        assert not failing & rest
        with mock.patch('time.time', return_value=time.time() + 3600):
            assert rest <= {n['uuid'] for n in cluster.provider.ready_nodes(
                provider_contract.request(), None)}
    else:
        # The first two; the quarantine had no room for the others, which
        # stay out of service by their failure count: never back to the
        # users they failed, pass after pass.
        assert kept == sorted(nodes[:2])
        assert rest <= failing
        for _ in range(3):
            report = housekeeper.run()
            assert report.actions == []
            assert sorted(report.out_of_service) == sorted(rest)
        with mock.patch('time.time', return_value=time.time() + 3600):
            assert not rest & {n['uuid'] for n in
                               cluster.provider.ready_nodes(
                                   provider_contract.request(), None)}
        assert not ready & rest


def test_spare_targets(tmp_path):
    cluster = Cluster(tmp_path, spare_targets={GOLD: '3', 'silver': '1'})
    cluster.nodes(1)
    cluster.capacity = {GOLD: {'total': 5, 'free': 2}}
    report = cluster.housekeeper().run()
    assert report.short_of_spares == {
        GOLD: {'free': 2, 'target': 3}, 'silver': {'free': 0, 'target': 1}}
    assert report.as_dict()['short_of_spares'] == report.short_of_spares


GROUP = 'ironic-multi'


def mock_provider(reservations=(), troubled=()):
    provider = mock.Mock(spec=base.NodeProvider)
    provider.group = GROUP
    provider.reservations.return_value = list(reservations)
    provider.lookup.side_effect = lambda uuid: next(
        (r for r in provider.reservations.return_value
         if r.instance_uuid == uuid), None)
    provider.troubled_nodes.return_value = list(troubled)
    provider.troubled_node.side_effect = lambda uuid: next(
        (t for t in provider.troubled_nodes.return_value
         if t.node_uuid == uuid), None)
    return provider


def failed_claim(instance, group=GROUP, claimer=None):
    return lifecycle.Reservation(instance_uuid=instance, node_uuid=None,
                                 state=lifecycle.State.ERROR, group=group,
                                 claimer=claimer)


def test_failed_claims_without_a_node_are_released():
    provider = mock_provider([
        failed_claim('gone'), failed_claim('errored'),
        # Nova may build it again: a retry would reuse the UUID, and
        # deleting the allocation then would delete the new claim.
        failed_claim('building'),
        # Its claimer lives: the claim is its own to clean up.
        failed_claim('claimer-lives', claimer='live'),
        # Not ours.
        failed_claim('theirs', group='another-group'),
        failed_claim('unmarked', group=None)])
    nova = {'errored': 'error', 'building': 'building',
            'claimer-lives': 'error', 'theirs': housekeeper_mod.GONE,
            'unmarked': housekeeper_mod.GONE}
    housekeeper = housekeeper_mod.Housekeeper(
        reservers.make_conf(), provider,
        consumers=lambda uuids: {u: nova[u] for u in uuids if u in nova},
        members=lambda: {'live'})
    report = housekeeper.run()
    assert sorted((a.kind, a.instance_uuid, a.done)
                  for a in report.actions) == [
        ('release failed claim', 'errored', True),
        ('release failed claim', 'gone', True)]
    assert sorted(c.args[0] for c in provider.release.call_args_list) == [
        'errored', 'gone']
    assert report.foreign == 2


def test_without_the_members_no_failed_claim_is_deleted():
    # A claimer that cannot be seen may be alive, and retrying its claim
    # under the same UUID.
    provider = mock_provider([failed_claim('errored')])

    def unreachable():
        raise RuntimeError('tooz: the backend is down')

    for members in (unreachable, None):
        report = housekeeper_mod.Housekeeper(
            reservers.make_conf(), provider,
            consumers=lambda uuids: {u: 'error' for u in uuids},
            members=members).run()
        assert report.actions == []
        assert housekeeper_mod.FAILED_CLAIMS in report.skipped
    assert 'the backend is down' in housekeeper_mod.Housekeeper(
        reservers.make_conf(), provider, consumers=lambda uuids: {},
        members=unreachable).run().skipped[housekeeper_mod.FAILED_CLAIMS]
    assert not provider.release.called


def test_a_failed_node_is_read_again_before_any_write():
    provider = mock_provider(troubled=[base.TroubledNode(
        node_uuid='n-1', failed_state='clean failed', group=GROUP)])
    # Since the listing, another deployer's instance landed on it.
    provider.troubled_node.side_effect = lambda uuid: base.TroubledNode(
        node_uuid='n-1', failed_state='clean failed', group=GROUP,
        holder='theirs')
    report = housekeeper_mod.Housekeeper(reservers.make_conf(),
                                         provider).run()
    (action,) = report.actions
    assert action.kind == 'recover node' and not action.done
    assert 'now holds theirs' in action.error
    assert not provider.record_failure.called
    assert not provider.recover.called


def test_failed_nodes_are_recovered_then_quarantined():
    provider = mock_provider(troubled=[base.TroubledNode(
        node_uuid='n-1', failures=1, failed_state='clean failed',
        group=GROUP)])
    conf = reservers.make_conf(quarantine_after_failures=2)
    housekeeper = housekeeper_mod.Housekeeper(conf, provider)

    report = housekeeper.run()
    assert [a.kind for a in report.actions] == ['recover node']
    provider.recover.assert_called_once_with('n-1', deadline=mock.ANY)
    provider.record_failure.assert_called_once()

    provider.troubled_nodes.return_value = [
        base.TroubledNode(node_uuid='n-1', failures=2,
                          failed_state='clean failed', group=GROUP)]
    report = housekeeper.run()
    assert [a.kind for a in report.actions] == ['quarantine']
    provider.quarantine.assert_called_once()


def test_failed_nodes_of_others_are_left_alone():
    provider = mock_provider(troubled=[
        base.TroubledNode(node_uuid='theirs', failures=5,
                          failed_state='clean failed',
                          group='another-group'),
        # Failed cleaning after another deployer's tear down: no mark.
        base.TroubledNode(node_uuid='unmarked', failed_state='clean failed'),
        # Our marks, but the node is not ours now (the provider says why).
        base.TroubledNode(node_uuid='moved-on', failures=5,
                          failed_state='clean failed', group=GROUP,
                          left_alone='the marks are history'),
        base.TroubledNode(node_uuid='deployed', failures=5, group=GROUP,
                          left_alone='another deployer\'s deployment')])
    report = housekeeper_mod.Housekeeper(reservers.make_conf(),
                                         provider).run()
    assert report.actions == []
    assert report.left_alone == {
        'moved-on': 'the marks are history',
        'deployed': 'another deployer\'s deployment'}
    assert not provider.recover.called
    assert not provider.quarantine.called
    assert not provider.record_failure.called


def test_a_node_that_stopped_being_ours_since_the_listing_is_left():
    provider = mock_provider(troubled=[base.TroubledNode(
        node_uuid='n-1', failed_state='clean failed', group=GROUP)])
    # Since the listing, another deployer deployed it and it failed.
    provider.troubled_node.side_effect = lambda uuid: base.TroubledNode(
        node_uuid='n-1', failed_state='clean failed', group=GROUP,
        left_alone='the marks are history')
    report = housekeeper_mod.Housekeeper(reservers.make_conf(),
                                         provider).run()
    (action,) = report.actions
    assert action.kind == 'recover node' and not action.done
    assert 'no longer this group\'s: the marks are history' in action.error
    assert not provider.record_failure.called
    assert not provider.recover.called


def test_cycle_returns_only_what_a_return_leaves_in_service():
    # The quarantine is full of a node in error (its tear down failed:
    # the tenant's data may be on it) and one that is available: a new
    # failure cycles the available one out, never the one in error.
    in_error = base.TroubledNode(
        node_uuid='in-error', failures=3, failed_state='error',
        quarantined_at=1.0, group=GROUP)
    available = base.TroubledNode(
        node_uuid='available', failures=3, quarantined_at=2.0, group=GROUP,
        returnable=True)
    new = base.TroubledNode(node_uuid='new', failures=3, group=GROUP,
                            failed_state='deploy failed')
    provider = mock_provider(troubled=[in_error, available, new])
    conf = reservers.make_conf(max_preserved=2, preserve_scheme='cycle')

    report = housekeeper_mod.Housekeeper(conf, provider).run()

    assert [(a.kind, a.node_uuid, a.done) for a in report.actions] == [
        ('unquarantine', 'available', True), ('quarantine', 'new', True)]
    provider.unquarantine.assert_called_once_with('available')

    # With nothing left that a return leaves in service, the new failure
    # stays out by its count, and the quarantine keeps its marks.
    provider = mock_provider(troubled=[in_error, new])
    conf = reservers.make_conf(max_preserved=1, preserve_scheme='cycle')
    report = housekeeper_mod.Housekeeper(conf, provider).run()
    assert report.actions == []
    assert report.out_of_service == ['new']
    assert not provider.unquarantine.called


# -- ownership, failing closed, fencing, the bound ----------------------------

def test_marks_on_a_node_that_changed_hands_are_left_alone(tmp_path):
    # This group noted a failure, and let the node go; another group
    # claimed it before the next pass (its deploy, once done, would
    # forget the failure itself).
    cluster = Cluster(tmp_path)
    (node,) = cluster.nodes(1)
    cluster.provider.record_failure(node, 'deploy failed')
    other = cluster.other_group(failure_cooldown=0)
    cluster.claim('theirs', provider=other, deploy=False)
    (noted,) = cluster.provider.troubled_nodes()
    assert (noted.group, noted.holder) == (cluster.provider.group, 'theirs')
    records = cluster.inventory.snapshot()

    report = cluster.housekeeper().run()
    # Nothing written to a node another group holds, not even our marks.
    assert report.actions == []
    assert cluster.inventory.snapshot() == records
    # Their tear down fails: theirs to repair, not this group's.
    other.set_state('theirs', lifecycle.State.ERROR)
    other.record_failure(node, 'their tear down failed')
    assert cluster.housekeeper().run().actions == []
    assert other.lookup('theirs').state == lifecycle.State.ERROR


def test_reservations_of_others_are_never_touched(tmp_path):
    cluster = Cluster(tmp_path, stuck_claim_timeout=3700)
    cluster.nodes(4)
    other = cluster.other_group()
    cluster.claim('their-deployed', provider=other)
    cluster.claim('their-claim', deploy=False, provider=other)
    unmarked = {n['uuid'] for n in cluster.provider.ready_nodes(
        provider_contract.request(), None)}.pop()
    cluster.inventory.claim_unmarked(unmarked, 'someone-elses')
    cluster.claim('our-orphan')
    before = {r.instance_uuid: r for r in cluster.provider.reservations()}
    housekeeper = cluster.housekeeper()

    for later in (0, 3701, 7402):
        with mock.patch('time.monotonic',
                        return_value=time.monotonic() + later):
            report = housekeeper.run()
        assert {a.instance_uuid for a in report.actions} <= {'our-orphan'}
        assert report.foreign == 3
    after = {r.instance_uuid: r for r in cluster.provider.reservations()}
    assert set(after) == set(before) - {'our-orphan'}
    for instance in ('their-deployed', 'their-claim', 'someone-elses'):
        assert after[instance] == before[instance]


def test_nova_unreachable_releases_nothing_and_the_rest_runs(tmp_path):
    cluster = Cluster(tmp_path, stuck_claim_timeout=3700)
    (failing, _, _) = cluster.nodes(3)
    for _ in range(3):
        cluster.provider.record_failure(failing, 'deploy failed')
    cluster.claim('orphan')
    cluster.claim('stuck', deploy=False, claimer='dead')

    def nova_down(uuids):
        raise RuntimeError('MessagingTimeout: no reply from conductor')

    housekeeper = cluster.housekeeper()
    housekeeper.consumers = nova_down
    first = housekeeper.run()
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3701):
        report = housekeeper.run()
    # No orphan without Nova's word; the rules that need no Nova ran.
    assert cluster.kinds(first) == [('quarantine', failing, True)]
    assert cluster.kinds(report) == [('time out stuck claim', 'stuck', True)]
    assert cluster.provider.lookup('orphan') is not None
    assert 'no reply from conductor' in report.skipped[
        housekeeper_mod.ORPHANS]
    assert report.as_dict()['skipped'] == report.skipped


def fence_lost_after(confirmed, calls):
    """A fence that confirms ``confirmed`` times, then says it is lost."""
    def fence():
        calls.append(len(calls))
        if len(calls) > confirmed:
            raise exception.LeadershipLost(role='housekeeper',
                                           reason='lost the lock')
    return fence


def test_leadership_lost_stops_the_destruction(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.nodes(3)
    for instance in ('a', 'b', 'c'):
        cluster.claim(instance)
    calls = []
    # Asked before the tear down, and again before the release.
    fence = fence_lost_after(2, calls)

    report = cluster.housekeeper(fence=fence).run()
    done = [a for a in report.actions if a.done]
    assert len(done) == 1
    assert [a.deferred for a in report.actions] == [False, True, True]
    assert 'lost the lock' in report.stopped
    # The fence is not asked again once it said stop.
    assert len(calls) == 3
    assert len(cluster.provider.reservations()) == 2


def test_the_release_after_a_tear_down_is_fenced_too(tmp_path):
    # The tear down took its time: the leadership may have gone with it.
    cluster = Cluster(tmp_path)
    cluster.nodes(1)
    cluster.claim('orphan')
    fence = fence_lost_after(1, [])
    released = []
    with mock.patch.object(cluster.provider, 'release',
                           side_effect=released.append):
        report = cluster.housekeeper(fence=fence).run()
    (action,) = report.actions
    assert (action.done, action.deferred) == (False, True)
    assert 'lost the lock' in report.stopped
    assert released == []
    assert cluster.provider.lookup('orphan').state == (
        lifecycle.State.RELEASING)


def test_a_release_fenced_off_after_its_tear_down_is_finished(tmp_path):
    # The static provider's tear down ends in "releasing", and only a
    # release ends that: the next leader's pass releases it.
    cluster = Cluster(tmp_path)
    cluster.nodes(1)
    cluster.claim('orphan')
    cluster.housekeeper(fence=fence_lost_after(1, [])).run()
    assert cluster.provider.lookup('orphan').state == (
        lifecycle.State.RELEASING)

    calls = []
    report = cluster.housekeeper(fence=fence_lost_after(1, calls)).run()
    assert cluster.kinds(report) == [('release orphan', 'orphan', True)]
    assert 'torn down' in report.actions[0].reason
    assert len(calls) == 1  # fenced
    assert cluster.provider.reservations() == []
    assert len(cluster.provider.ready_nodes(provider_contract.request(),
                                            None)) == 1


def test_a_release_that_never_came_waits_for_the_grace(tmp_path):
    # The compute service died between its tear down and its release;
    # Nova deleted the instance.  As any orphan: after the grace period,
    # and never while the instance lives.
    cluster = Cluster(tmp_path, orphan_grace_period=3600)
    cluster.nodes(2)
    for instance in ('deleted', 'alive'):
        cluster.provider.teardown(cluster.claim(instance))
    cluster.nova = {'alive': 'active'}
    housekeeper = cluster.housekeeper()
    assert housekeeper.run().actions == []
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3601):
        report = housekeeper.run()
    assert cluster.kinds(report) == [('release orphan', 'deleted', True)]
    assert [r.instance_uuid for r in cluster.provider.reservations()] == [
        'alive']


def test_a_release_that_never_came_reads_the_reservation_again(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.nodes(1)
    cluster.provider.teardown(cluster.claim('orphan'))
    real = cluster.provider.lookup

    def released_and_claimed_again(instance_uuid):
        # Released meanwhile, and its UUID claimed again by a retry.
        current = real(instance_uuid)
        if current is not None and current.state == (
                lifecycle.State.RELEASING):
            cluster.provider.release(instance_uuid)
            return cluster.claim(instance_uuid, deploy=False)
        return current

    with mock.patch.object(cluster.provider, 'lookup',
                           released_and_claimed_again):
        report = cluster.housekeeper().run()
    (action,) = report.actions
    assert not action.done and 'now claimed' in action.error
    assert cluster.provider.lookup('orphan').state == (
        lifecycle.State.CLAIMED)


def test_releasing_reservations_a_provider_ends_are_left_to_it():
    # Ironic's tear down ends the claim: nothing to release.
    releasing = lifecycle.Reservation(
        instance_uuid='gone', node_uuid='node-1',
        state=lifecycle.State.RELEASING, group=GROUP)
    provider = mock_provider([releasing])
    provider.releasing_ends_itself = True
    housekeeper = housekeeper_mod.Housekeeper(
        reservers.make_conf(orphan_grace_period=0), provider,
        consumers=lambda uuids: {}, members=lambda: set())
    assert housekeeper.run().actions == []
    provider.release.assert_not_called()
    provider.teardown.assert_not_called()


def test_the_release_after_a_tear_down_reads_the_node_again(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.nodes(1)
    cluster.claim('orphan')
    other = cluster.other_group()
    real = cluster.provider.teardown

    def teardown_then_taken(reservation, *args, **kwargs):
        # Torn down, released and claimed by another group meanwhile,
        # under the same instance UUID (a retried build of theirs).
        done = real(reservation, *args, **kwargs)
        other.release(reservation.instance_uuid)
        cluster.claim(reservation.instance_uuid, deploy=False,
                      provider=other)
        return done

    released = []
    with mock.patch.object(cluster.provider, 'teardown',
                           teardown_then_taken), \
            mock.patch.object(cluster.provider, 'release',
                              side_effect=released.append):
        report = cluster.housekeeper().run()
    (action,) = report.actions
    assert not action.done and 'now marked for group' in action.error
    assert released == []


def test_a_pass_is_bounded_and_says_what_it_left(tmp_path):
    cluster = Cluster(tmp_path, housekeeping_pass_timeout=30)
    cluster.nodes(3)
    for instance in ('a', 'b', 'c'):
        cluster.claim(instance)
    housekeeper = cluster.housekeeper()
    clock = [time.monotonic()]
    real = cluster.provider.teardown

    def slow_teardown(*args, **kwargs):
        clock[0] += 31
        return real(*args, **kwargs)

    with mock.patch('time.monotonic', lambda: clock[0]), \
            mock.patch.object(cluster.provider, 'teardown', slow_teardown):
        report = housekeeper.run()
    assert [(a.done, a.deferred) for a in report.actions] == [
        (True, False), (False, True), (False, True)]
    assert 'housekeeping_pass_timeout' in report.stopped
    assert report.as_dict()['deferred'] == 2
    assert len(cluster.provider.reservations()) == 2


def test_a_node_ironic_keeps_busy_is_left_for_the_next_pass(clock):
    """A tear down refused (409) for longer than the pass may last.

    Ironic refuses a tear down while a deploy holds the node's lock: the
    request is retried until the pass's bound, not for
    ``unprovision_timeout``, and the node is left for the next pass,
    neither released nor counted as a failure.
    """
    conf = reservers.make_conf(housekeeping_pass_timeout=60,
                               unprovision_timeout=3600,
                               state_poll_interval=1.0,
                               orphan_grace_period=0)
    busy, other = (lifecycle.Reservation(
        instance_uuid=instance, node_uuid='node-%s' % instance,
        state=lifecycle.State.ACTIVE, group=GROUP, host='host-1')
        for instance in ('busy', 'other'))
    provider = mock_provider([busy, other])
    api = mock.create_autospec(ironic_client.IronicAPI, instance=True)
    api.get_node.return_value = {
        'uuid': busy.node_uuid, 'instance_uuid': 'busy',
        'provision_state': 'deploying', 'target_provision_state': 'active'}
    api.set_provision_state.side_effect = exception.NodeConflict(
        node=busy.node_uuid, reason='locked by a conductor')
    provider.teardown.side_effect = ironic_provider.IronicProvider(
        conf, api=api).teardown
    started = clock[0]

    report = housekeeper_mod.Housekeeper(
        conf, provider, consumers=lambda uuids: {}).run()

    assert clock[0] - started <= 60
    first, second = report.actions
    assert (first.instance_uuid, first.done, first.deferred) == (
        'busy', False, True)
    assert 'refused' in first.error and 'locked' in first.error
    assert second.deferred and 'housekeeping_pass_timeout' in report.stopped
    assert report.as_dict()['deferred'] == 2
    provider.record_failure.assert_not_called()
    provider.release.assert_not_called()


def test_a_node_that_changed_since_the_listing_is_left(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.nodes(1)
    cluster.claim('gone')
    housekeeper = cluster.housekeeper()
    real = cluster.provider.lookup

    def released_meanwhile(instance_uuid):
        cluster.provider.release(instance_uuid)
        return real(instance_uuid)

    with mock.patch.object(cluster.provider, 'lookup', released_meanwhile):
        report = housekeeper.run()
    (action,) = report.actions
    assert not action.done and 'released meanwhile' in action.error


def test_an_unexpected_error_ends_one_action_not_the_pass(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.nodes(2)
    cluster.claim('a')
    cluster.claim('b')
    real = cluster.provider.teardown
    broken = []

    def teardown(reservation, *args, **kwargs):
        if not broken:
            broken.append(reservation.instance_uuid)
            raise KeyError('a bug')
        return real(reservation, *args, **kwargs)

    with mock.patch.object(cluster.provider, 'teardown', teardown):
        report = cluster.housekeeper().run()
    outcomes = {a.instance_uuid: (a.done, a.error) for a in report.actions}
    assert outcomes[broken[0]] == (False, "KeyError: 'a bug'")
    (other,) = set(outcomes) - set(broken)
    assert outcomes[other] == (True, None)


# -- one consumer per group -------------------------------------------------

def test_an_instance_is_gone_only_to_the_consumer_it_was_claimed_for(
        tmp_path):
    # Two Nova cells wrongly share a group, and cell B's computes are
    # down: the leader, in cell A, hears only its own cell, which knows
    # none of B's instances.  It must not take them for orphans.
    cluster = Cluster(tmp_path)
    cluster.nodes(4)
    cluster.provider.consumer = 'cell-a'
    cluster.claim('ours-gone', claimer='a-host:1:x')
    cell_b = cluster.inventory.provider()
    cell_b.consumer = 'cell-b'
    cluster.claim('theirs', claimer='b-host:1:x', provider=cell_b)
    # Claimed before marks named consumers: by a host of cell B that is
    # down now, and by a live host of cell A.
    legacy = cluster.inventory.provider()
    cluster.claim('legacy-b', claimer='b-host:1:y', provider=legacy)
    cluster.claim('legacy-a', claimer='a-host:1:y', provider=legacy)
    housekeeper = cluster.housekeeper()
    housekeeper.consumer = 'cell-a'
    housekeeper.consumers_of_hosts = lambda: {'a-host': 'cell-a'}

    report = housekeeper.run()

    assert cluster.kinds(report) == [
        ('release orphan', 'legacy-a', True),
        ('release orphan', 'ours-gone', True)]
    assert report.other_consumers == {
        'theirs': 'claimed for consumer cell-b, not cell-a',
        'legacy-b': 'claimed before marks named consumers, and no live '
                    'member of host b-host or host-1 tells which consumer '
                    'it serves'}
    assert {r.instance_uuid for r in cluster.provider.reservations()} == {
        'theirs', 'legacy-b'}


def test_a_live_host_of_another_consumer_keeps_its_claims(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.nodes(1)
    cluster.claim('legacy', claimer='b-host:1:x', host='b-host')
    housekeeper = cluster.housekeeper()
    housekeeper.consumer = 'cell-a'
    housekeeper.consumers_of_hosts = lambda: {'b-host': 'cell-b'}
    report = housekeeper.run()
    assert report.actions == []
    assert report.other_consumers == {
        'legacy': 'its host b-host serves consumer cell-b, not cell-a'}

    # The members cannot be read: nothing can be told, nothing released.
    def unreadable():
        raise RuntimeError('etcd is down')
    housekeeper.consumers_of_hosts = unreadable
    assert housekeeper.run().actions == []
