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

"""The failed-node rules on nodes that are no longer this group's.

The group's failure marks outlive its reservation: a node this group
failed on goes back to service, and another deployer (metalsmith,
Bifrost, another Nova, an operator) may deploy it, fail it or put it in
maintenance.  Whatever state that leaves it in, housekeeping must send
no write for it: Ironic's access log is the judge.  The same rules still
act on the group's own failed nodes (the controls below), so that the
silence is not that of rules that never run.
"""

import os
import time
import uuid

import pytest

from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi.testing.chaos import foreign
from ironic_multi.testing.chaos import invariants
from ironic_multi.testing import reservers
from tests.functional.test_operations import _force_state

SHARD = 'foreign'
LIMIT = 3
# What a pass could change; Ironic's own processes move the rest on.
KEPT = ('instance_uuid', 'provision_state', 'power_state', 'maintenance',
        'maintenance_reason', 'instance_info', 'extra')


def _kept(ironic, node_uuid):
    node = ironic.get_node(node_uuid)
    return {field: node.get(field) for field in KEPT}


def _provider(ironic, **options):
    options.setdefault('state_poll_interval', 0.1)
    options.setdefault('quarantine_after_failures', LIMIT)
    started = ironic_provider.IronicProvider(
        reservers.make_conf(ironic.server.endpoint, **options))
    started.start()
    return started


def _keeper(provider):
    return housekeeper_mod.Housekeeper(
        provider.conf, provider, consumers=lambda uuids: {},
        members=lambda: set())


def _fail(provider, node, times=LIMIT):
    """This group's failures, as its deploys record them."""
    for _ in range(times):
        provider.record_failure(node, 'deploy failed: test')


def _their_instance_info():
    return {deploy.HOST_KEY: 'their-host',
            'image_source': 'http://images.example.com/theirs.qcow2'}


def _deployed_without_instance(ironic, node):
    # A plain "baremetal node deploy": instance_info, no instance_uuid.
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'add', 'path': '/instance_info',
         'value': _their_instance_info()}])
    ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                   expect=(202,), json={'target': 'active'})
    ironic.wait_for_node(node, provision_state='active')


def _held_by_another(ironic, node):
    # Another Nova's claim: instance_uuid alone, no mark of any group.
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'add', 'path': '/instance_uuid', 'value': str(uuid.uuid4())}])


def _in_their_maintenance(ironic, node):
    ironic.request('PUT', '/v1/nodes/%s/maintenance' % node, expect=(202,),
                   json={'reason': 'their disk is being replaced'})


# How another deployer leaves a node that carries this group's marks.
# Fake hardware neither fails a deploy nor a tear down: those failed
# states are set behind the API, as the conductor sets them.
FOREIGN_KINDS = {
    'deploy failed': lambda ironic, node: (
        _deployed_without_instance(ironic, node),
        ironic.force_provision_state(node, 'deploy failed')),
    'clean failed': lambda ironic, node: _force_state(ironic, node,
                                                      'clean failed'),
    'error': lambda ironic, node: (
        _deployed_without_instance(ironic, node),
        ironic.force_provision_state(node, 'error')),
    'active without instance_uuid': _deployed_without_instance,
    'our old failure marks, held by another': _held_by_another,
}


@pytest.mark.parametrize('kind', sorted(FOREIGN_KINDS))
def test_housekeeping_never_writes_to_a_node_another_deployer_took(
        ironic, kind):
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic)
    # This group failed on it often enough to quarantine it, once.
    _fail(provider, node)
    FOREIGN_KINDS[kind](ironic, node)
    before = _kept(ironic, node)
    since = time.time()

    reports = [_keeper(provider).run() for _ in range(2)]

    assert [r.actions for r in reports] == [[], []]
    assert ironic.writes([node], since) == []
    assert _kept(ironic, node) == before
    if kind != 'our old failure marks, held by another':
        # Reported, so that an operator knows why nothing was done.
        assert node in reports[-1].left_alone


def test_a_node_in_maintenance_set_by_someone_else_is_left_alone(ironic):
    # This group's own failed deploy, marked in the state it left the
    # node in; then an operator puts the node in maintenance.
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic)
    ironic.force_provision_state(node, 'deploy failed')
    _fail(provider, node, times=1)
    _in_their_maintenance(ironic, node)
    since = time.time()

    report = _keeper(provider).run()

    assert report.actions == []
    assert 'maintenance set by someone else' in report.left_alone[node]
    assert ironic.writes([node], since) == []


def test_the_groups_own_failed_nodes_are_still_recovered_and_quarantined(
        ironic):
    # The controls: the same states, left by this group's own failures.
    recovered, quarantined = ironic.enroll_nodes(2, shard=SHARD)
    provider = _provider(ironic)
    for node in (recovered, quarantined):
        ironic.force_provision_state(node, 'deploy failed')
    _fail(provider, recovered, times=1)
    _fail(provider, quarantined)
    since = time.time()

    report = _keeper(provider).run()

    assert sorted((a.kind, a.node_uuid, a.done) for a in report.actions) == [
        ('quarantine', quarantined, True),
        ('recover node', recovered, True)]
    assert ironic.writes([recovered, quarantined], since) != []
    assert ironic.get_node(quarantined)['maintenance']
    # The recovery tore the failed deploy down; cleaning follows.
    assert ironic.get_node(recovered)['provision_state'] in (
        'cleaning', 'clean wait', 'available')


def test_a_failed_tear_down_is_marked_and_recovered_as_ours(ironic):
    # The failure the group saw itself stays its own: marked in the state
    # it left the node in, then recovered by the next pass.
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    provider = _provider(ironic)
    ironic.force_provision_state(node, 'error')
    failures = provider.record_failure(node, 'tear down failed: test')
    (troubled,) = [t for t in provider.troubled_nodes()
                   if t.node_uuid == node]
    assert (troubled.failures, troubled.left_alone) == (failures, None)

    report = _keeper(provider).run()

    assert [(a.kind, a.done) for a in report.actions] == [
        ('recover node', True)]
    ironic.wait_for_node(node, provision_state='available')


def test_cycling_the_quarantine_never_returns_a_node_in_error(ironic):
    """A node quarantined in error may hold a tenant's disk.

    Cycling it out would lift its maintenance and drop its marks: a node
    in error that no rule looks at any more.  The cycle returns the
    oldest node that a return leaves in service instead.
    """
    in_error, available, newest = ironic.enroll_nodes(3, shard=SHARD)
    provider = _provider(ironic, max_preserved=2, preserve_scheme='cycle')
    ironic.force_provision_state(in_error, 'error')
    for node in (in_error, available):
        _fail(provider, node)
        assert [a.kind for a in _keeper(provider).run().actions] == [
            'quarantine']
    kept = _kept(ironic, in_error)

    ironic.force_provision_state(newest, 'deploy failed')
    _fail(provider, newest)
    report = _keeper(provider).run()

    assert sorted((a.kind, a.node_uuid, a.done) for a in report.actions) == [
        ('quarantine', newest, True), ('unquarantine', available, True)]
    assert _kept(ironic, in_error) == kept
    assert kept['maintenance'] and kept['extra'][ironic_provider._MARKS][
        'quarantined_at']
    assert not ironic.get_node(available)['maintenance']


def test_the_chaos_runs_other_deployers_survive_housekeeping(ironic):
    """The chaos run's seed, every kind, through real passes; then a write.

    The chaos run judges "nodes of other deployers untouched" on these
    nodes: the housekeeper's rules must leave each alone, and the check
    must see a write to one (planted here) for what it is.
    """
    provider = _provider(ironic, quarantine_after_failures=3)
    foreigners = foreign.seed(ironic, resource_class='baremetal',
                              shard=SHARD, group=provider.group,
                              host='compute-1')
    assert set(foreign.FAILED_KINDS) <= set(foreigners.nodes)
    foreigners.remember(ironic)
    log_dir = os.path.dirname(ironic.server.log_path)

    reports = [_keeper(provider).run() for _ in range(2)]

    assert [r.actions for r in reports] == [[], []]
    assert foreigners.check(ironic, log_dir) == []
    # Planted: a write behind the checker's back, which Ironic accepts.
    planted = foreigners.nodes['available in an operator\'s maintenance']
    ironic.request('PATCH', '/v1/nodes/%s' % planted, json=[
        {'op': 'add', 'path': '/extra/touched', 'value': True}])
    found = foreigners.check(ironic, log_dir)
    assert {invariant for invariant, _ in found} == {
        invariants.FOREIGN_UNTOUCHED}
    assert any('PATCH /v1/nodes/%s' % planted in detail
               for _, detail in found), found
    assert any('extra' in detail for _, detail in found), found
