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

"""Housekeeping, leadership and the health poll on a real Ironic.

Where Nova is involved (orphans of instances it deleted on its own), its
in-process services run; elsewhere the housekeeper is driven directly.
"""

import signal
import time
import uuid

import pytest

from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi._virt import consumers
from ironic_multi import exception
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from tests.functional import nova_base
from tests.functional.test_reserver_concurrency import participants  # noqa
from tests.functional.waiting import wait_for

SHARD = 'housekeeping'
REQUEST = provider_contract.request('baremetal')
SLACK = 5.0


def _provider(nodes, **options):
    options.setdefault('state_poll_interval', 0.1)
    options.setdefault('orphan_grace_period', 0)
    started = ironic_provider.IronicProvider(
        reservers.make_conf(nodes.server.endpoint, **options))
    started.start()
    return started


def keeper(provider, nova=None, members=(), **options):
    """A housekeeper alone: its group's live members are ``members``."""
    conf = provider.conf
    for name, value in options.items():
        conf.set_override(name, value, group='ironic_multi')
    return housekeeper_mod.Housekeeper(
        conf, provider,
        consumers=(lambda uuids: {u: nova[u] for u in uuids if u in nova})
        if nova is not None else None, members=lambda: set(members))


def claim(provider, instance, deploy=True, host='keeper-host'):
    provider.refresh({SHARD})
    reservation = provider.claim(provider.ready_nodes(REQUEST, {SHARD}),
                                 instance, REQUEST, time.monotonic() + 60)
    if deploy:
        reservation = provider.deploy(
            reservation, provider_contract.deployment(instance, host))
    return reservation


def kinds(report):
    return sorted((a.kind, a.done) for a in report.actions)


# -- housekeeping -----------------------------------------------------------

class OrphanTest(nova_base.IronicMultiTestBase):
    """Nova deletes a server on its own while its compute is down."""

    COMPUTES = 2
    NODES = 2
    FLAGS = {'ironic_multi': {'orphan_grace_period': 3}}

    def test_an_orphan_is_released_after_the_grace_and_not_before(self):
        server = self.boot()
        node = self.assert_on_ironic(server)
        owner = server['OS-EXT-SRV-ATTR:host']
        survivor = next(h for h in self.computes if h != owner)
        self.computes[owner].stop()
        (service,) = self.api.get_services(host=owner,
                                           binary='nova-compute')
        self.api.put_service_force_down(service['id'], True)
        # Nova's API deletes locally: the driver is never asked.
        self._delete_server(server)
        self.assertEqual(server['id'],
                         self.ironic.get_node(node['uuid'])['instance_uuid'])

        reserver = self.driver_of(self.computes[survivor]).reserver
        first = reserver.housekeep()
        self.assertIsNotNone(first, 'the survivor does not lead')
        self.assertEqual([], first.actions)
        self.assertEqual('active',
                         self.ironic.get_node(node['uuid'])[
                             'provision_state'])
        time.sleep(3)
        second = reserver.housekeep()
        self.assertEqual([('release orphan', True)], kinds(second))
        self.ironic.wait_for_node(node['uuid'], provision_state='available',
                                  instance_uuid=None)
        self.record('housekeeping_seconds', round(second.seconds, 3))

    def test_nova_says_which_instances_are_gone(self):
        server = self.boot()
        states = consumers.instance_states([server['id'], str(uuid.uuid4())])
        self.assertEqual({server['id']: 'active'}, states)
        self._delete_server(server)
        states = consumers.instance_states([server['id']])
        self.assertEqual({server['id']: housekeeper_mod.GONE}, states)


def test_a_stuck_claim_times_out(ironic):
    ironic.enroll_nodes(2, shard=SHARD)
    provider = _provider(ironic)
    stuck = claim(provider, provider_contract.new_instance(), deploy=False)
    deployed = claim(provider, provider_contract.new_instance())
    nova = {stuck.instance_uuid: 'building',
            deployed.instance_uuid: 'active'}
    housekeeper = keeper(provider, nova, stuck_claim_timeout=3700)

    assert housekeeper.run().actions == []
    later = time.monotonic() + 3701
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, 'monotonic', lambda: later)
        report = housekeeper.run()
    assert kinds(report) == [('time out stuck claim', True)]
    assert ironic.get_node(stuck.node_uuid)['instance_uuid'] is None
    assert ironic.get_node(deployed.node_uuid)['instance_uuid'] == (
        deployed.instance_uuid)


def test_allocations_in_error_are_deleted(ironic):
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic, use_allocations=True)
    failed = provider_contract.new_instance()
    # Made by a claimer of this group that crashed before deleting it, and
    # one of another client, which stays.
    ironic.request('POST', '/v1/allocations', expect=(201,), json={
        'uuid': failed, 'resource_class': 'no-such-class',
        'extra': {ownership.KEY: ownership.mark(provider.group, 'gone')}})
    theirs = provider_contract.new_instance()
    ironic.request('POST', '/v1/allocations', expect=(201,), json={
        'uuid': theirs, 'resource_class': 'no-such-class'})
    wait_for(lambda: ironic.request(
        'GET', '/v1/allocations/%s' % failed).json()['state'] == 'error',
        30, 'the allocation to fail')

    wait_for(lambda: ironic.request(
        'GET', '/v1/allocations/%s' % theirs).json()['state'] == 'error',
        30, 'the other allocation to fail')

    report = keeper(provider, {}).run()

    assert kinds(report) == [('release failed claim', True)]
    left = {a['uuid'] for a in ironic.list_allocations()}
    assert theirs in left and failed not in left


def test_a_node_failing_to_deploy_is_quarantined(ironic):
    nodes = ironic.enroll_nodes(3, shard=SHARD)
    provider = _provider(ironic, quarantine_after_failures=2,
                         failure_cooldown=0, max_preserved=2,
                         preserve_scheme='cycle')
    housekeeper = keeper(provider, {})
    for node in nodes:
        for _ in range(2):
            instance = provider_contract.new_instance()
            reservation = provider.claim(
                [{'uuid': node, 'resource_class': 'baremetal'}], instance,
                REQUEST, time.monotonic() + 30)
            # Ironic refuses to deploy a node in maintenance.
            ironic.request('PUT', '/v1/nodes/%s/maintenance' % node,
                           expect=(202,), json={'reason': 'test'})
            with pytest.raises(exception.DeployFailed):
                provider.deploy(reservation,
                                provider_contract.deployment(instance))
            # What the Reserver does when a deploy fails.
            provider.record_failure(node, "deploy failed")
            ironic.request('DELETE', '/v1/nodes/%s/maintenance' % node,
                           expect=(202,))
            provider.release(instance)
        report = housekeeper.run()
        assert ('quarantine', True) in kinds(report)
        time.sleep(0.01)

    in_maintenance = [n for n in nodes if ironic.get_node(n)['maintenance']]
    # "cycle": the newest two are kept, the first went back to service.
    assert in_maintenance == nodes[1:]
    for node in nodes[1:]:
        reason = ironic.get_node(node)['maintenance_reason']
        assert reason.startswith('ironic-multi quarantine: 2 failures')
    assert not ironic.get_node(nodes[0])['maintenance']


def test_a_node_left_failed_is_recovered(ironic):
    ours, theirs = ironic.enroll_nodes(2, shard=SHARD)
    provider = _provider(ironic)
    for node in (ours, theirs):
        _force_state(ironic, node, 'clean failed')
    # This group saw the failure of one; the other failed for someone
    # else.
    provider.record_failure(ours, 'cleaning failed')

    report = keeper(provider, {}).run()

    assert [(a.kind, a.node_uuid, a.done) for a in report.actions] == [
        ('recover node', ours, True)]
    ironic.wait_for_node(ours, provision_state='available')
    (troubled,) = [t for t in provider.troubled_nodes()
                   if t.node_uuid == ours]
    assert troubled.failures == 2
    # Recovered: the marks describe a state the node left.
    assert troubled.left_alone
    assert ironic.get_node(theirs)['provision_state'] == 'clean failed'


def test_a_tear_down_that_works_leaves_no_marks(ironic):
    # Nothing is written to the node but the tear down itself: a failure
    # of the cleaning after it is not this group's to repair (nothing
    # proves that nobody else used the node since).
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic)
    deployed = claim(provider, provider_contract.new_instance())
    since = time.time()
    provider.teardown(deployed)
    ironic.wait_for_node(node, provision_state='available')
    assert not [t for t in provider.troubled_nodes() if t.node_uuid == node]
    assert [(method, path.rsplit('/', 1)[-1]) for _, method, path, _ in
            ironic.writes([node], since)] == [('PUT', 'provision')]


def _force_state(ironic, node, state):
    """A node in ``state`` as a failed clean leaves it."""
    ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                   expect=(202,), json={'target': 'manage'})
    ironic.wait_for_node(node, provision_state='manageable')
    # Cleaning with a step the fake hardware does not have fails.
    ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                   expect=(202,), json={
                       'target': 'clean',
                       'clean_steps': [{'interface': 'deploy',
                                        'step': 'no_such_step'}]})
    wait_for(lambda: ironic.get_node(node)['provision_state'] == state, 30,
             'node %s to reach %s' % (node, state))


# -- leadership -------------------------------------------------------------

def test_a_killed_leader_is_succeeded_within_the_membership_timeout(
        ironic, participants, coordination, record_property):  # noqa
    url, group = coordination
    timeout = 3
    members = participants(3, url=url, group=group, timeout=timeout)
    answers = {p.host: p.call(op='housekeep') for p in members}
    leaders = [host for host, answer in answers.items() if answer['leads']]
    assert len(leaders) == 1
    (leader,) = [p for p in members if p.host == leaders[0]]
    survivors = [p for p in members if p is not leader]

    leader.process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    passes = []

    def someone_leads():
        turn = [p.call(op='housekeep') for p in survivors]
        passes.extend(turn)
        return any(answer['leads'] for answer in turn)

    wait_for(someone_leads, timeout + 15, 'a new leader')
    took = time.monotonic() - killed
    record_property('leader_takeover_seconds', round(took, 2))
    print('new leader after SIGKILL on %s: %.2f s'
          % (url.split(':')[0], took))
    assert took < timeout + SLACK
    # One leader from now on, and never two passes at once.
    for _ in range(5):
        passes.extend(p.call(op='housekeep') for p in survivors)
    led = [p for p in passes if p['leads']]
    spans = sorted((p['started'], p['ended']) for p in led)
    for (_s1, end), (start, _e2) in zip(spans, spans[1:]):
        assert end <= start
    hosts = {p.host for p in survivors
             if p.call(op='housekeep')['leads']}
    assert len(hosts) == 1


# -- the health poll ----------------------------------------------------------

@pytest.mark.parametrize('behind_our_back', ['maintenance', 'power off',
                                             'deleted'])
def test_the_health_poll_sees_changes_within_one_interval(
        ironic, tmp_path, behind_our_back):
    ironic.enroll_nodes(1, shard=SHARD)
    interval = 5
    reserver = reservers.build_reserver(
        ironic.server.endpoint, 'polled',
        coordination_url='file://%s' % tmp_path,
        health_poll_interval=interval, state_poll_interval=0.1,
        housekeeping_interval=3600)
    reserver.start()
    try:
        instance = provider_contract.new_instance()
        reservation = reserver.claim(instance, REQUEST)
        reserver.deploy(reservation, provider_contract.deployment(
            instance, 'polled'))
        reserver.power(instance, base.PowerAction.ON)
        node = reservation.node_uuid
        reserver.health.poll()
        assert reserver.health.latest(instance).problem is None

        changed = time.monotonic()
        if behind_our_back == 'maintenance':
            ironic.request('PUT', '/v1/nodes/%s/maintenance' % node,
                           expect=(202,), json={'reason': 'disk'})
            seen = lambda h: h.problem == 'maintenance: disk'
        elif behind_our_back == 'power off':
            ironic.request('PUT', '/v1/nodes/%s/states/power' % node,
                           expect=(202,), json={'target': 'power off'})
            seen = lambda h: h.power_state == lifecycle.PowerState.OFF
        else:
            ironic.request('PUT', '/v1/nodes/%s/maintenance' % node,
                           expect=(202,), json={'reason': 'gone'})
            ironic.request('DELETE', '/v1/nodes/%s' % node, expect=(204,))
            seen = lambda h: h.problem == 'gone'

        wait_for(lambda: (reserver.health.latest(instance) is not None
                          and seen(reserver.health.latest(instance))),
                 interval + SLACK, 'the health poll to see it')
        assert time.monotonic() - changed < interval + SLACK
    finally:
        reserver.stop()
