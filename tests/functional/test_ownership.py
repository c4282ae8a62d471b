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

"""Touch only what is ours, on a real Ironic that is not ours alone.

Other deployers (metalsmith, Bifrost, another Nova, another group of
ironic-multi) share the Ironic: their nodes must come out of every
housekeeping pass and takeover exactly as they went in.  Releases and
deploys must never act on a node that changed hands behind their back,
a claim queued for a deploy turn is never "stuck", and a leader that
loses the coordination backend stops destroying at once.
"""

import signal
import threading
import time
from unittest import mock
import uuid

import pytest

from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation import membership
from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi._virt import takeover
from ironic_multi import exception
from ironic_multi.testing import fault_proxy
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from tests.functional.test_operations import _force_state
from tests.functional.test_reserver_concurrency import GOLD_SPEC
from tests.functional.test_reserver_concurrency import participants  # noqa
from tests.functional.waiting import wait_for

SHARD = 'ownership'
REQUEST = provider_contract.request('baremetal')
GROUP = 'ironic-multi'
# What a foreign node must keep through every pass and takeover.
KEPT = ('instance_uuid', 'provision_state', 'power_state', 'maintenance',
        'allocation_uuid', 'instance_info', 'extra')


def _provider(endpoint, **options):
    options.setdefault('state_poll_interval', 0.1)
    options.setdefault('orphan_grace_period', 0)
    started = ironic_provider.IronicProvider(
        reservers.make_conf(endpoint, **options))
    started.start()
    return started


def _claim(provider, instance, nodes=None, claimer=None):
    candidates = ([{'uuid': n, 'resource_class': 'baremetal'} for n in nodes]
                  if nodes else provider.search(REQUEST, None))
    # No claimer argument unless one is given: the defect tests run
    # against the code before ownership marks too.
    return provider.claim(candidates, instance, REQUEST,
                          time.monotonic() + 60,
                          **({'claimer': claimer} if claimer else {}))


def _deploy(provider, reservation, host='compute1'):
    return provider.deploy(reservation, provider_contract.deployment(
        reservation.instance_uuid, host))


def _new():
    return str(uuid.uuid4())


class _Later(object):
    """The housekeeper's clock, ``seconds`` ahead.

    A pass "much later", without moving the clock of the services' other
    threads (throttle waits, heartbeats).
    """

    def __init__(self, seconds):
        self._seconds = seconds

    def monotonic(self):
        return time.monotonic() + self._seconds


def _later(seconds):
    return mock.patch.object(housekeeper_mod, 'time', _Later(seconds))


def _kept(ironic, node_uuid):
    node = ironic.get_node(node_uuid)
    return {field: node.get(field) for field in KEPT}


# -- releases and deploys that come late --------------------------------------

def test_a_late_release_never_clears_the_next_claim(ironic):
    """Two releasers of one instance: the second comes after a new claim.

    Destroy and the housekeeper, or two leaders: the late one read the
    node holding the instance, then the other released it and another
    instance claimed it.  Ironic's PATCH has no "test": the late removal
    must be refused by the mark's guard, or it clears the new claim (a
    double booking: the new instance's node is free for the next claim).
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    late = _provider(ironic.server.endpoint, use_allocations=False)
    other = _provider(ironic.server.endpoint, use_allocations=False)
    first, second = _new(), _new()
    _claim(late, first, [node])
    real_patch = late.api.patch_node

    def meanwhile(node_uuid, patch, **kwargs):
        # Between the late releaser's read and its write.
        if any(op.get('path') == '/instance_uuid' for op in patch):
            other.release(first)
            _claim(other, second, [node])
            late.api.patch_node = real_patch
        return real_patch(node_uuid, patch, **kwargs)

    late.api.patch_node = meanwhile
    late.release(first)

    assert ironic.get_node(node)['instance_uuid'] == second
    assert ownership.of(ironic.get_node(node)) is not None
    assert late.lookup(second).node_uuid == node


class _Race(object):
    """Threads that claim one node and release what the others give up.

    A claim is *held* from its successful claim until its owner gives it
    up.  Once given up, its owner and every other thread release it at
    once (destroy and the housekeeper, two leaders), then claim the node
    again for instances of their own: some of those releases read the
    node before the owner's release lands, and write after a new claim.
    ``on_lost(provider, reservation)`` is called by the owner of a claim
    found lost, in its thread.
    """

    THREADS = 6

    # Enough of a race to mean something: on a loaded machine a run goes
    # on past ``seconds`` (up to LONGEST) until it has had this much.
    CLAIMS = 10
    LATE_RELEASES = 30
    LONGEST = 90

    def __init__(self, ironic, node, use_allocations, seconds=12,
                 on_lost=None):
        self._ironic = ironic
        self._node = node
        self._use_allocations = use_allocations
        self._on_lost = on_lost
        self._changed = threading.Condition()
        self._given_up = []
        self._until = time.monotonic() + seconds
        self._longest = time.monotonic() + self.LONGEST
        self.held = set()
        self.claims = 0
        self.late_releases = 0
        self.lost = []
        self.errors = []

    def run(self):
        threads = [threading.Thread(target=self._racer, args=(_provider(
            self._ironic.server.endpoint,
            use_allocations=self._use_allocations),), daemon=True)
            for _ in range(self.THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(self.LONGEST + 60)
        assert not any(thread.is_alive() for thread in threads)
        assert self.errors == []
        assert not self._too_little(), (self.claims, self.late_releases)

    def _too_little(self):
        return (self.claims < self.CLAIMS
                or self.late_releases < self.LATE_RELEASES)

    def _running(self):
        now = time.monotonic()
        if self.errors or now >= self._longest:
            return False
        return now < self._until or self._too_little()

    def _racer(self, provider):
        seen = 0
        try:
            while self._running():
                mine = _new()
                try:
                    reservation = _claim(provider, mine, [self._node])
                except exception.NodeAlreadyClaimed:
                    # Taken: release, with its owner, what it gives up.
                    with self._changed:
                        self._changed.wait_for(
                            lambda: len(self._given_up) > seen, timeout=0.5)
                        stale = self._given_up[seen:]
                        seen = len(self._given_up)
                    for instance in stale:
                        _release(provider, instance)
                    with self._changed:
                        self.late_releases += len(stale)
                    continue
                self._hold(provider, reservation)
        except Exception as e:
            self.errors.append(e)

    def _hold(self, provider, reservation):
        mine = reservation.instance_uuid
        with self._changed:
            self.held.add(mine)
            self.claims += 1
        for _ in range(3):
            holder = self._ironic.get_node(self._node)['instance_uuid']
            if holder != mine:
                self.lost.append((mine, holder))
                if self._on_lost is not None:
                    self._on_lost(provider, reservation)
                break
            time.sleep(0.05)
        with self._changed:
            self.held.discard(mine)
            self._given_up.append(mine)
            self._changed.notify_all()
        while not _release(provider, mine) and self._running():
            time.sleep(0.05)


def _release(provider, instance):
    """Whether the release was done.

    Ironic's node lock refuses a write that comes while another holds it
    (409).
    """
    try:
        provider.release(instance)
        return True
    except exception.NodeConflict:
        return False
    except exception.IronicAPIError as e:
        if e.status_code != 409:
            raise
        return False


def test_many_late_releases_never_clear_a_claim(ironic):
    """Allocation mode: no instance loses a claim it has not given up.

    test_a_late_release_never_clears_the_next_claim forces the one
    interleaving that hurts; here it comes, or not, from a race.  Ironic
    deletes an allocation under the node's lock, checking that the node
    is still the allocation's.
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    race = _Race(ironic, node, use_allocations=True)
    race.run()

    assert race.lost == [], '%d of %d claims lost to a release of another ' \
        'instance' % (len(race.lost), race.claims)
    assert ironic.get_node(node)['instance_uuid'] in race.held | {None}


def test_a_claim_lost_to_a_late_release_is_never_deployed(ironic):
    """PATCH mode: a claim a late release cleared never deploys.

    A late release can still clear a new claim, whose deploy then fails
    before it writes anything.

    Ironic checks the mark's guard on its read of the node, before its
    conductor waits for the node's lock: a late release queued behind
    another write to the node lands after the next claim (seen here for
    several claims a run; see failures.rst, "The window that remains").
    The instance that lost its claim must never deploy on the node: its
    deploy stops at its first read.
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    deploys = []

    def deploy(provider, reservation):
        try:
            _deploy(provider, reservation)
        except exception.DeployFailed as e:
            deploys.append(str(e))
        else:
            deploys.append('deployed')

    race = _Race(ironic, node, use_allocations=False, on_lost=deploy)
    race.run()

    assert len(deploys) == len(race.lost)
    assert all('no longer holds' in outcome for outcome in deploys), deploys
    after = ironic.get_node(node)
    assert after['provision_state'] == 'available'
    assert 'nova_host_id' not in (after['instance_info'] or {})


def test_a_stale_failed_claim_never_deletes_the_retry(ironic):
    """A failed claim listed, then retried and won, before it is deleted.

    Allocation mode: the retry reuses the instance's UUID, so deleting
    the allocation the housekeeper listed would delete the new claim.
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic.server.endpoint, use_allocations=True)
    instance = _new()
    ironic.request('POST', '/v1/allocations', expect=(201,), json={
        'uuid': instance, 'resource_class': 'no-such-class',
        'extra': {ownership.KEY: ownership.mark(GROUP)}})
    wait_for(lambda: ironic.request('GET', '/v1/allocations/%s' % instance)
             .json()['state'] == 'error', 30, 'the allocation to fail')
    listed = provider.reservations()

    def retried_meanwhile():
        # The claimer of a retried build deletes the failed allocation
        # and claims again, with the same UUID.
        ironic.request('DELETE', '/v1/allocations/%s' % instance,
                       expect=(204,))
        _claim(provider, instance, [node])
        return listed

    # No member lives: only the re-read can keep the retry.
    housekeeper = housekeeper_mod.Housekeeper(
        provider.conf, provider, consumers=lambda uuids: {},
        members=lambda: set())
    with mock.patch.object(provider, 'reservations', retried_meanwhile):
        housekeeper.run()

    allocation = ironic.request('GET',
                                '/v1/allocations/%s' % instance).json()
    assert allocation['state'] == 'active'
    assert ironic.get_node(node)['instance_uuid'] == instance


def test_a_deploy_never_writes_to_a_node_that_changed_hands(ironic):
    """The claim was released behind a queued deploy, and claimed again."""
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic.server.endpoint)
    queued, thief = _new(), _new()
    reservation = _claim(provider, queued, [node])
    provider.release(queued)
    _claim(provider, thief, [node])
    before = _kept(ironic, node)

    with pytest.raises(exception.DeployFailed) as e:
        _deploy(provider, reservation)

    assert 'no longer holds' in str(e.value)
    assert _kept(ironic, node) == before
    assert ironic.get_node(node)['provision_state'] == 'available'


def _deployed_by_another(ironic, node, instance):
    """``node`` deployed for ``instance`` through Ironic's API directly.

    As metalsmith or Bifrost do: no mark of any group.
    """
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'add', 'path': '/instance_uuid', 'value': instance},
        {'op': 'add', 'path': '/instance_info', 'value': {
            deploy.HOST_KEY: 'their-host',
            'image_source': 'http://images.example.com/theirs.qcow2'}}])
    ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                   expect=(202,), json={'target': 'active'})
    ironic.wait_for_node(node, provision_state='active')


def test_marks_on_a_node_another_took_never_make_it_ours(ironic):
    """Our failure marks outlive the hand-over to another deployer.

    They must not make the other deployer's node, nor its failed tear
    down later, ours to recover, count, quarantine or even clean up.
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic.server.endpoint)
    mine = _new()
    reservation = _claim(provider, mine, [node])
    provider.record_failure(node, 'deploy failed: test')
    provider.release(mine)
    assert ironic.get_node(node)['extra'][ownership.KEY]['group'] == GROUP

    # Before this group's next pass, another deployer takes the node.
    theirs = _new()
    _deployed_by_another(ironic, node, theirs)
    keeper = housekeeper_mod.Housekeeper(
        provider.conf, provider, consumers=lambda uuids: {},
        members=lambda: set())
    before = _kept(ironic, node)
    since = time.time()
    assert keeper.run().actions == []
    assert _kept(ironic, node) == before
    assert ironic.writes([node], since) == []

    # Their tear down; its cleaning fails.  Their node, their repair.
    ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                   expect=(202,), json={'target': 'deleted'})
    ironic.wait_for_node(node, provision_state='available',
                         instance_uuid=None)
    _force_state(ironic, node, 'clean failed')
    before = _kept(ironic, node)
    since = time.time()
    for _ in range(2):
        assert keeper.run().actions == []
    assert _kept(ironic, node) == before
    assert ironic.writes([node], since) == []
    assert reservation.node_uuid == node


def test_marking_a_node_never_wipes_a_new_holders_mark(ironic):
    """An upgrade marks an unmarked claim while it changes hands.

    The instance's node, claimed before marks, is released and claimed
    by another group between the read and the write: the write must not
    replace the other group's mark with ours.
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic.server.endpoint, use_allocations=False)
    other = _provider(ironic.server.endpoint, use_allocations=False,
                      coordination_group='another-group')
    old, theirs = _new(), _new()
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'add', 'path': '/instance_uuid', 'value': old}])
    real_patch = provider.api.patch_node

    def meanwhile(node_uuid, patch, **kwargs):
        provider.api.patch_node = real_patch
        ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
            {'op': 'remove', 'path': '/instance_uuid'}])
        _claim(other, theirs, [node])
        return real_patch(node_uuid, patch, **kwargs)

    provider.api.patch_node = meanwhile
    assert provider.own(old) is None

    found = ironic.get_node(node)
    assert found['instance_uuid'] == theirs
    assert ownership.of(found) == ownership.mark('another-group')


def test_a_host_mark_never_lands_on_a_node_that_changed_hands(ironic):
    """A takeover moves the host mark while the node changes hands."""
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic.server.endpoint, use_allocations=False)
    other = _provider(ironic.server.endpoint, use_allocations=False,
                      coordination_group='another-group')
    mine, theirs = _new(), _new()
    reservation = _claim(provider, mine, [node])
    real_patch = provider.api.patch_node

    def meanwhile(node_uuid, patch, **kwargs):
        provider.api.patch_node = real_patch
        provider.release(mine)
        other.mark_host(_claim(other, theirs, [node]), 'their-host')
        return real_patch(node_uuid, patch, **kwargs)

    provider.api.patch_node = meanwhile
    with pytest.raises(exception.ReservationNotFound):
        provider.mark_host(reservation, 'adopter')

    found = ironic.get_node(node)
    assert found['instance_uuid'] == theirs
    assert found['instance_info'][deploy.HOST_KEY] == 'their-host'


# -- a claim waiting for its deploy turn --------------------------------------

def test_a_claim_queued_past_the_stuck_timeout_deploys(ironic, tmp_path):
    ironic.enroll_nodes(2, shard=SHARD)
    url = 'file://%s' % tmp_path
    options = dict(coordination_url=url, state_poll_interval=0.1,
                   max_concurrent_deploys=1, stuck_claim_timeout=3700,
                   orphan_grace_period=0, housekeeping_interval=3600,
                   pool_refresh_interval=3600, health_poll_interval=3600)
    busy = reservers.build_reserver(ironic.server.endpoint, 'busy',
                                    **options)
    leader = reservers.build_reserver(ironic.server.endpoint, 'leader',
                                      **options)
    busy.start()
    leader.start()
    try:
        instance = _new()
        reservation = busy.claim(instance, REQUEST)
        deployed = {}
        with busy.throttle.turn('a long deploy of another instance'):
            waiter = threading.Thread(target=lambda: deployed.update(
                result=busy.deploy(reservation, provider_contract.deployment(
                    instance, 'busy'))), daemon=True)
            waiter.start()
            wait_for(lambda: busy.throttle.waiting == 1, 10,
                     'the deploy to queue')
            leader.set_consumers(lambda uuids: {u: 'building'
                                                for u in uuids})
            assert leader.housekeep() is not None
            # Long past stuck_claim_timeout, with the claimer alive.
            with _later(7500):
                report = leader.housekeep()
            assert report.actions == []
        waiter.join(30)
        assert deployed['result'].state == lifecycle.State.ACTIVE
        node = ironic.get_node(reservation.node_uuid)
        assert (node['instance_uuid'], node['provision_state']) == (
            instance, 'active')
    finally:
        busy.stop()
        leader.stop()


def test_a_dead_claimers_claim_is_released_in_one_pass(ironic, tmp_path):
    ironic.enroll_nodes(1, shard=SHARD)
    url = 'file://%s' % tmp_path
    options = dict(coordination_url=url, stuck_claim_timeout=3700,
                   housekeeping_interval=3600, pool_refresh_interval=3600,
                   health_poll_interval=3600)
    crashed = reservers.build_reserver(ironic.server.endpoint, 'crashed',
                                       **options)
    leader = reservers.build_reserver(ironic.server.endpoint, 'leader',
                                      **options)
    crashed.start()
    leader.start()
    try:
        instance = _new()
        claimed = crashed.claim(instance, REQUEST)
        assert claimed.claimer == crashed.membership.member_id
        crashed.stop()  # crashed between claim and deploy
        leader.set_consumers(lambda uuids: {u: 'building' for u in uuids})
        leader.housekeep()
        with _later(3701):
            report = leader.housekeep()
        assert [(a.kind, a.done) for a in report.actions] == [
            ('time out stuck claim', True)]
        assert ironic.get_node(claimed.node_uuid)['instance_uuid'] is None
    finally:
        leader.stop()


# -- a leader cut off from the coordination backend ---------------------------

def test_a_killed_claimers_claims_are_released_in_one_pass(
        ironic, participants, tmp_path):  # noqa
    """SIGKILLed between claim and deploy: it never leaves the group.

    Its membership expires; one pass past stuck_claim_timeout releases
    all of its claims.
    """
    ironic.enroll_nodes(3, resource_class='gold', shard=SHARD)
    url = 'file://%s' % (tmp_path / 'coordination')
    group = 'killed-%s' % _new()[:8]
    timeout = 3
    (claimer,) = participants(1, url=url, group=group, timeout=timeout)
    instances = [_new(), _new()]
    answer = claimer.call(op='claim', instances=instances,
                          spec=GOLD_SPEC)
    nodes = [r['node'] for r in answer['results']]
    assert None not in nodes, answer
    leader = reservers.build_reserver(
        ironic.server.endpoint, 'leader', coordination_url=url,
        coordination_group=group, membership_timeout=timeout,
        stuck_claim_timeout=3700, housekeeping_interval=3600,
        pool_refresh_interval=3600, health_poll_interval=3600)
    leader.start()
    try:
        leader.set_consumers(lambda uuids: {u: 'building' for u in uuids})
        # Alive, its claims are its own.
        with _later(3701):
            assert leader.housekeep().actions == []

        claimer.process.send_signal(signal.SIGKILL)
        claimer.process.wait()
        wait_for(lambda: not any(
            membership.host_of(m) == claimer.host
            for m in leader.membership.members()), timeout + 15,
            'the killed member to expire')
        assert leader.housekeep().actions == []
        with _later(3701):
            report = leader.housekeep()
        assert sorted((a.kind, a.instance_uuid, a.done)
                      for a in report.actions) == sorted(
            ('time out stuck claim', i, True) for i in instances)
        for node in nodes:
            assert ironic.get_node(node)['instance_uuid'] is None
    finally:
        leader.stop()


def test_a_leader_cut_off_mid_pass_stops_destroying(ironic, etcd,
                                                    record_property):
    # Three orphans, and a node for a claim after the cut.
    nodes = ironic.enroll_nodes(4, shard=SHARD)[:3]
    timeout = 3
    with fault_proxy.FaultProxy(etcd.replace('etcd3+', '')) as proxy:
        group = 'cut-off-%s' % _new()[:8]
        options = dict(coordination_group=group, membership_timeout=timeout,
                       state_poll_interval=0.1, orphan_grace_period=0,
                       housekeeping_interval=3600,
                       pool_refresh_interval=3600,
                       health_poll_interval=3600)
        cut = reservers.build_reserver(
            ironic.server.endpoint, 'cut',
            coordination_url='etcd3+' + proxy.endpoint, **options)
        other = reservers.build_reserver(ironic.server.endpoint, 'other',
                                         coordination_url=etcd, **options)
        cut.start()
        other.start()
        try:
            orphans = []
            for _ in nodes:
                instance = _new()
                _deploy(cut.provider, cut.claim(instance, REQUEST), 'cut')
                orphans.append(instance)
            gone = lambda uuids: {}
            cut.set_consumers(gone)
            other.set_consumers(gone)
            assert cut.leadership.try_lead()
            real_teardown = cut.provider.teardown
            cut_at = []

            def teardown_then_cut(*args, **kwargs):
                done = real_teardown(*args, **kwargs)
                if not cut_at:
                    # The backend goes away in the middle of the pass.
                    proxy.add_fault('stall')
                    cut_at.append(time.monotonic())
                return done

            with mock.patch.object(cut.provider, 'teardown',
                                   teardown_then_cut):
                report = cut.housekeep()
            record_property('fence_seconds',
                            round(time.monotonic() - cut_at[0], 2))
            untouched = [i for i in orphans
                         if cut.provider.lookup(i) is not None
                         and cut.provider.lookup(i).state
                         == lifecycle.State.ACTIVE]
            assert len(untouched) == 2
            assert [(a.done, a.deferred) for a in report.actions] == [
                (True, False), (False, True), (False, True)]
            assert 'backend' in report.stopped

            # Claims go on without the backend...
            assert cut.leadership.leading is False
            assert not cut.housekeep()
            claimed = cut.claim(_new(), REQUEST)
            assert ironic.get_node(claimed.node_uuid)['instance_uuid'] == (
                claimed.instance_uuid)
            # ...but no takeover: it needs the group's lock.
            with pytest.raises(exception.TakeoverRefused) as e:
                takeover.Takeover(cut, 'cut').adopt(None, 'other')
            assert 'lock' in str(e.value)

            # The lock expires; the other member leads; the backend comes
            # back, and exactly one leads.
            wait_for(other.leadership.try_lead, timeout + 10,
                     'the other member to lead')
            proxy.clear_faults()
            leaders = [r.host for r in (cut, other)
                       if r.leadership.try_lead()]
            assert leaders == ['other']
            assert other.housekeep().stopped is None
        finally:
            proxy.clear_faults()
            cut.stop()
            other.stop()


def _moved_on_keeping_the_mark(ironic, node, new_holder):
    """The node moves on to ``new_holder``, keeping the old mark.

    Another deployer removes the instance but not its mark (instance_info
    is not theirs to clean), and another instance claims the node.
    """
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'remove', 'path': '/instance_uuid'}])
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'add', 'path': '/instance_uuid', 'value': new_holder}])


def test_a_release_after_the_node_moved_on_keeps_the_new_holder(ironic):
    """The old instance's mark is still there; its release must not be.

    The mark's guard passes (the mark outlived its instance), so the
    release reads who holds the node first, and leaves it.
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic.server.endpoint, use_allocations=False)
    old, new = _new(), _new()
    _claim(provider, old, [node])
    _moved_on_keeping_the_mark(ironic, node, new)
    since = time.time()

    provider.release(old)
    provider._claimer.release(old, node, time.monotonic() + 10)

    assert ironic.get_node(node)['instance_uuid'] == new
    assert ironic.writes([node], since) == []


@pytest.mark.xfail(strict=True, reason=(
    'the window left: Ironic has no conditional write on instance_uuid, '
    'so a node that moves on inside one round trip of a release (its read '
    'and its PATCH), keeping the old mark, loses its new holder; see '
    'failures.rst, "Releases"'))
def test_a_node_that_moves_on_inside_a_release_keeps_its_holder(ironic):
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic.server.endpoint, use_allocations=False)
    old, new = _new(), _new()
    _claim(provider, old, [node])
    real_patch = provider.api.patch_node

    def meanwhile(node_uuid, patch, **kwargs):
        provider.api.patch_node = real_patch
        _moved_on_keeping_the_mark(ironic, node, new)
        return real_patch(node_uuid, patch, **kwargs)

    provider.api.patch_node = meanwhile
    provider.release(old)

    assert ironic.get_node(node)['instance_uuid'] == new
