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

"""The Ironic provider's answers to lost answers and conflicts.

The provider contract runs the provider against a real Ironic; these
cases need an Ironic that loses answers on purpose, so IronicAPI is a
mock here.
"""

import time
from unittest import mock

from oslo_config import fixture as config_fixture
import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers.ironic import client
from ironic_multi._reservation.providers.ironic import provider
from ironic_multi._reservation import requirements as reqs
from ironic_multi.conf import CONF
from ironic_multi import exception

NODES = [{'uuid': 'n%d' % i, 'resource_class': 'gold', 'shard': 's1',
          'provision_state': 'available', 'instance_uuid': None}
         for i in range(3)]
BY_UUID = {node['uuid']: node for node in NODES}
LOST = exception.RequestOutcomeUnknown(method='POST', url='/x',
                                       reason='connection reset')


@pytest.fixture
def backend(request):
    fixture = config_fixture.Config(CONF)
    fixture.setUp()
    request.addfinalizer(fixture.cleanUp)
    fixture.config(use_allocations=request.param == 'allocations',
                   group='ironic_multi')
    api = mock.create_autospec(client.IronicAPI, instance=True)
    api.supports.return_value = True
    # Ironic as it is after the claim: the node holds the instance.
    api.get_node.side_effect = lambda uuid, fields=None: dict(
        BY_UUID[uuid], instance_uuid='inst')
    return provider.IronicProvider(CONF, api=api)


def _claim(backend):
    return backend.claim(NODES, 'inst', reqs.Requirements(),
                         time.monotonic() + 10)


@pytest.mark.parametrize('backend', ['patch'], indirect=True)
class TestPatchClaim:

    def test_lost_answer_that_applied_is_a_claim(self, backend):
        backend.api.claim_node.side_effect = LOST
        reservation = _claim(backend)
        assert reservation.node_uuid == 'n0'
        assert reservation.instance_uuid == 'inst'
        assert backend.api.get_node.call_args_list[0] == mock.call(
            'n0', fields=['instance_uuid'])

    def test_lost_answer_that_did_not_apply_moves_on(self, backend):
        claimed = dict(NODES[1], instance_uuid='inst')
        backend.api.claim_node.side_effect = [LOST, claimed]
        backend.api.get_node.side_effect = lambda uuid, fields=None: dict(
            BY_UUID[uuid], instance_uuid=None)
        reservation = _claim(backend)
        assert reservation.node_uuid == 'n1'
        # The PATCH answered with the node: no read after the claim.
        assert backend.api.get_node.call_count == 1

    def test_a_node_gone_from_ironic_is_skipped(self, backend):
        gone = exception.NodeNotFound(node='n0')
        backend.api.claim_node.side_effect = [
            gone, dict(NODES[1], instance_uuid='inst')]
        assert _claim(backend).node_uuid == 'n1'

    def test_a_node_of_another_project_is_released(self, backend):
        # The pool said the node was free for anyone; Ironic says now that
        # it belongs to another project.
        backend.api.claim_node.side_effect = [
            dict(NODES[0], instance_uuid='inst', owner='other'),
            dict(NODES[1], instance_uuid='inst')]
        backend.api.get_node.side_effect = lambda uuid, fields=None: dict(
            BY_UUID[uuid], instance_uuid='inst', owner='other')
        reservation = backend.claim(NODES, 'inst',
                                    reqs.Requirements(project_id='p'),
                                    time.monotonic() + 10)
        # Released, and the next candidate taken instead.
        backend.api.patch_node.assert_called_once_with(
            'n0', [{'op': 'remove', 'path': '/instance_uuid'}],
            idempotent=False, deadline=mock.ANY)
        assert reservation.node_uuid == 'n1'

    @pytest.mark.parametrize('changed', [
        {'maintenance': True},
        {'conductor_group': 'elsewhere'},
        {'provision_state': 'manageable'}])
    def test_a_node_that_left_service_is_released(self, backend, changed):
        # The pool's copy was stale: Ironic's answer to the claim says the
        # node went into maintenance, moved to another conductor group or
        # out of "available" since.
        CONF.set_override('conductor_group', '', group='ironic_multi')
        backend.api.claim_node.side_effect = [
            dict(NODES[0], instance_uuid='inst',
                 **dict({'conductor_group': ''}, **changed)),
            dict(NODES[1], instance_uuid='inst', conductor_group='')]
        backend.api.get_node.side_effect = lambda uuid, fields=None: dict(
            BY_UUID[uuid], instance_uuid='inst', **changed)
        reservation = _claim(backend)
        assert reservation.node_uuid == 'n1'
        backend.api.patch_node.assert_called_once_with(
            'n0', [{'op': 'remove', 'path': '/instance_uuid'}],
            idempotent=False, deadline=mock.ANY)

    def test_only_other_projects_nodes(self, backend):
        backend.api.claim_node.side_effect = [
            dict(NODES[0], instance_uuid='inst', owner='other')]
        backend.api.get_node.side_effect = lambda uuid, fields=None: dict(
            BY_UUID[uuid], instance_uuid='inst', owner='other')
        with pytest.raises(exception.NodeAlreadyClaimed) as caught:
            backend.claim(NODES[:1], 'inst',
                          reqs.Requirements(project_id='p'),
                          time.monotonic() + 10)
        assert 'reserved for other' in caught.value.reason

    def test_conflict_naming_the_instance_returns_its_node(self, backend):
        backend.api.claim_node.side_effect = (
            exception.InstanceAlreadyClaimed(
                node='n0', instance='inst',
                reason='Instance inst is already associated with a node'))
        backend.api.node_by_instance.return_value = dict(
            NODES[2], instance_uuid='inst', provision_state='active')
        reservation = _claim(backend)
        assert reservation.node_uuid == 'n2'
        assert reservation.state == lifecycle.State.ACTIVE
        backend.api.claim_node.assert_called_once()

    def test_every_candidate_taken(self, backend):
        backend.api.claim_node.side_effect = exception.NodeAlreadyClaimed(
            node='n', instance='inst', reason='Node is associated with x')
        with pytest.raises(exception.NodeAlreadyClaimed):
            _claim(backend)
        assert backend.api.claim_node.call_count == 3


@pytest.mark.parametrize('backend', ['allocations'], indirect=True)
class TestAllocationClaim:

    def test_lost_answer_is_read_back_by_uuid(self, backend):
        backend.api.create_allocation.side_effect = LOST
        backend.api.get_allocation.return_value = {
            'uuid': 'inst', 'state': 'active', 'node_uuid': 'n1'}
        reservation = _claim(backend)
        assert reservation.node_uuid == 'n1'
        backend.api.get_allocation.assert_called_with('inst')

    def test_lost_answer_that_did_not_apply_is_sent_again(self, backend):
        backend.api.create_allocation.side_effect = [
            LOST, {'uuid': 'inst', 'state': 'active', 'node_uuid': 'n2'}]
        backend.api.get_allocation.return_value = None
        assert _claim(backend).node_uuid == 'n2'
        assert backend.api.create_allocation.call_count == 2

    def test_failed_allocation_is_deleted(self, backend):
        backend.api.create_allocation.return_value = {
            'uuid': 'inst', 'state': 'error', 'last_error': 'no node'}
        with pytest.raises(exception.NodeAlreadyClaimed) as info:
            _claim(backend)
        assert 'no node' in info.value.reason
        backend.api.delete_allocation.assert_called_once_with('inst')

    def test_a_few_candidates_at_a_time(self, backend):
        # A whole pool as candidates makes Ironic read every one of them.
        many = [{'uuid': 'm%02d' % i, 'resource_class': 'baremetal'}
                for i in range(20)]
        backend.api.create_allocation.side_effect = [
            {'uuid': 'inst', 'state': 'error', 'last_error': 'all taken'},
            {'uuid': 'inst', 'state': 'active', 'node_uuid': 'm09'}]
        backend.api.get_node.side_effect = lambda uuid, fields=None: {
            'uuid': uuid, 'resource_class': 'baremetal',
            'provision_state': 'available', 'instance_uuid': 'inst'}
        found = backend.claim(many, 'inst', reqs.Requirements(),
                              time.monotonic() + 10)
        assert found.node_uuid == 'm09'
        offered = [c.args[1] for c in
                   backend.api.create_allocation.call_args_list]
        assert offered == [['m%02d' % i for i in range(8)],
                           ['m%02d' % i for i in range(8, 16)]]
        backend.api.delete_allocation.assert_called_once_with('inst')

    def test_candidates_gone_from_ironic_are_dropped(self, backend):
        refused = exception.IronicAPIError(
            status_code=400, reason='Nodes cannot be found: n0')
        backend.api.create_allocation.side_effect = [
            refused, {'uuid': 'inst', 'state': 'active', 'node_uuid': 'n1'}]

        def get_node(uuid, fields=None):
            if uuid == 'n0':
                raise exception.NodeNotFound(node=uuid)
            return dict(BY_UUID[uuid], instance_uuid='inst')

        backend.api.get_node.side_effect = get_node
        assert _claim(backend).node_uuid == 'n1'
        retried = backend.api.create_allocation.call_args_list[1]
        assert retried.args[1] == ['n1', 'n2']
