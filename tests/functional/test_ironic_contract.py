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

"""Contract tests: the Ironic behaviour ironic-multi relies on.

They run against the real Ironic (fake-hardware) through the project's own
IronicAPI.  A fake Ironic, if one is ever written for unit tests, must
pass this module unchanged (point the ``ironic`` fixture at it).
"""

import concurrent.futures
import json
import os
import subprocess
import uuid

from nova import utils as nova_utils
import pytest

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._virt import metadata
from ironic_multi import exception
from ironic_multi.testing import venvs

MARK = ownership.mark('contract-group')
# A Glance image ID; this Ironic has no Glance to ask about it.
GLANCE_IMAGE = 'a2459075-d96c-40d5-893e-577ff92e721c'
# Ironic's own rule for the type of a Glance image, on given properties.
IRONIC_IMAGE_TYPE_RULE = """
import json, sys
from unittest import mock
from ironic.common import images
found = []
for properties in json.load(sys.stdin):
    with mock.patch.object(images, 'get_image_properties',
                           return_value=properties):
        found.append(images.is_whole_disk_image(
            None, {'image_source': sys.argv[1]}))
print(json.dumps(found))
"""


def _new_uuid():
    return str(uuid.uuid4())


def _instance_of(api, node):
    return api.get_node(node, fields=['instance_uuid'])['instance_uuid']


class TestInstanceUuidClaim:

    def test_claim_sets_instance_uuid(self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        instance = _new_uuid()
        ironic_api.claim_node(node, instance, MARK)
        assert _instance_of(ironic_api, node) == instance

    def test_taken_node_is_a_conflict_naming_the_holder(
            self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        holder, other = _new_uuid(), _new_uuid()
        ironic_api.claim_node(node, holder, MARK)
        with pytest.raises(exception.NodeAlreadyClaimed) as info:
            ironic_api.claim_node(node, other, MARK)
        assert holder in info.value.reason
        assert _instance_of(ironic_api, node) == holder

    def test_one_instance_cannot_hold_two_nodes(self, ironic, ironic_api):
        first, second = ironic.enroll_nodes(2)
        instance = _new_uuid()
        ironic_api.claim_node(first, instance, MARK)
        with pytest.raises(exception.NodeAlreadyClaimed) as info:
            ironic_api.claim_node(second, instance, MARK)
        # The backend relies on the instance being named in this answer.
        assert instance in info.value.reason
        assert _instance_of(ironic_api, second) is None

    def test_racing_claims_have_exactly_one_winner(self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        instances = [_new_uuid() for _ in range(16)]

        def claim(instance):
            try:
                ironic_api.claim_node(node, instance, MARK)
                return instance
            except exception.NodeAlreadyClaimed:
                return None

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            winners = [i for i in pool.map(claim, instances) if i]
        assert len(winners) == 1
        assert _instance_of(ironic_api, node) == winners[0]

    def test_removing_instance_uuid_frees_the_node(self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        ironic_api.claim_node(node, _new_uuid(), MARK)
        ironic_api.patch_node(node, [{'op': 'remove',
                                      'path': '/instance_uuid'}])
        assert _instance_of(ironic_api, node) is None


class TestOwnershipMark:
    """The mark rides in the claim's one write, and guards later writes."""

    def _node(self, api, node):
        return api.get_node(node, fields=['instance_uuid', 'instance_info'])

    def test_a_claim_writes_the_instance_and_its_mark_together(
            self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        instance, loser = _new_uuid(), _new_uuid()
        ironic_api.claim_node(node, instance, MARK)
        assert ownership.of(self._node(ironic_api, node)) == MARK
        with pytest.raises(exception.NodeAlreadyClaimed):
            ironic_api.claim_node(node, loser, ownership.mark('thief'))
        # The refused claim wrote no mark either.
        found = self._node(ironic_api, node)
        assert found['instance_uuid'] == instance
        assert found['instance_info'] == {ownership.KEY: {instance: MARK}}

    def test_a_guarded_write_applies_only_under_the_mark(
            self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        instance = _new_uuid()
        ironic_api.claim_node(node, instance, MARK)
        ironic_api.patch_node(node, [
            ownership.guard(instance, MARK['group']),
            {'op': 'add', 'path': '/instance_info/root_gb', 'value': 10}])
        assert self._node(ironic_api, node)['instance_info']['root_gb'] == 10
        # Released, then claimed by another instance: the guard of the
        # first one now refuses, and changes nothing.
        ironic_api.patch_node(node, ownership.release_patch(
            instance, MARK['group']), idempotent=False)
        other = _new_uuid()
        ironic_api.claim_node(node, other, MARK)
        before = self._node(ironic_api, node)
        with pytest.raises(exception.IronicAPIError) as e:
            ironic_api.patch_node(node, ownership.release_patch(
                instance, MARK['group']), idempotent=False)
        assert e.value.status_code == 400
        assert self._node(ironic_api, node) == before
        assert before['instance_uuid'] == other

    def test_a_holder_guard_cannot_guard_a_release(self, ironic,
                                                   ironic_api):
        """Why a release is guarded by a read of the holder, not a PATCH.

        Ironic applies a PATCH to the node as it reads it and compares
        only the result: a release removes instance_uuid, so a holder
        guard before the removal changes nothing in the result, and
        Ironic accepts it on a node that holds another instance.  The
        same guard refuses (409) a write that keeps instance_uuid.
        """
        node, = ironic.enroll_nodes(1)
        old, new = _new_uuid(), _new_uuid()
        ironic_api.claim_node(node, old, MARK)
        # Another deployer removes the instance but not its mark, and
        # claims the node for another instance.
        ironic_api.patch_node(node, [
            {'op': 'remove', 'path': '/instance_uuid'}], idempotent=False)
        ironic_api.patch_node(node, [
            {'op': 'add', 'path': '/instance_uuid', 'value': new}],
            idempotent=False)
        with pytest.raises(exception.NodeConflict):
            ironic_api.patch_node(node, [
                ownership.holder_guard(old),
                ownership.guard(old, MARK['group'])], idempotent=False)
        assert self._node(ironic_api, node)['instance_uuid'] == new

        ironic_api.patch_node(node, [ownership.holder_guard(old)]
                              + ownership.release_patch(old, MARK['group']),
                              idempotent=False)
        assert self._node(ironic_api, node)['instance_uuid'] is None

    def test_an_allocation_carries_the_mark(self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        instance = _new_uuid()
        created = ironic_api.create_allocation(instance, [node], MARK,
                                               resource_class='baremetal')
        assert ownership.of_allocation(created) == MARK
        assert ownership.of_allocation(
            ironic_api.get_allocation(instance)) == MARK


class TestAllocations:

    def _wait(self, api, allocation_uuid):
        allocation = api.get_allocation(allocation_uuid)
        for _ in range(200):
            if allocation['state'] != 'allocating':
                break
            allocation = api.get_allocation(allocation_uuid)
        return allocation

    def test_allocation_picks_a_candidate(self, ironic, ironic_api):
        nodes = ironic.enroll_nodes(3)
        instance = _new_uuid()
        created = ironic_api.create_allocation(
            instance, nodes[:2], MARK, resource_class='baremetal')
        assert created['uuid'] == instance
        allocation = self._wait(ironic_api, instance)
        assert allocation['state'] == 'active'
        assert allocation['node_uuid'] in nodes[:2]
        assert _instance_of(ironic_api, allocation['node_uuid']) == instance

    def test_no_free_candidate_is_an_error_state(self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        ironic_api.claim_node(node, _new_uuid(), MARK)
        instance = _new_uuid()
        ironic_api.create_allocation(instance, [node], MARK,
                                     resource_class='baremetal')
        allocation = self._wait(ironic_api, instance)
        assert allocation['state'] == 'error'
        assert allocation['last_error']

    def test_traits_must_match(self, ironic, ironic_api):
        plain, = ironic.enroll_nodes(1)
        gold, = ironic.enroll_nodes(1, traits=['CUSTOM_GOLD'])
        instance = _new_uuid()
        ironic_api.create_allocation(instance, [plain, gold], MARK,
                                     resource_class='baremetal',
                                     traits=['CUSTOM_GOLD'])
        assert self._wait(ironic_api, instance)['node_uuid'] == gold

    def test_same_uuid_twice_is_a_conflict(self, ironic, ironic_api):
        nodes = ironic.enroll_nodes(2)
        instance = _new_uuid()
        ironic_api.create_allocation(instance, nodes[:1], MARK,
                                     resource_class='baremetal')
        with pytest.raises(exception.AllocationFailed):
            ironic_api.create_allocation(instance, nodes[1:], MARK,
                                         resource_class='baremetal')

    def test_delete_frees_the_node_and_is_idempotent(self, ironic,
                                                     ironic_api):
        node, = ironic.enroll_nodes(1)
        instance = _new_uuid()
        ironic_api.create_allocation(instance, [node], MARK,
                                     resource_class='baremetal')
        self._wait(ironic_api, instance)
        ironic_api.delete_allocation(instance)
        ironic_api.delete_allocation(instance)
        assert ironic_api.get_allocation(instance) is None
        assert _instance_of(ironic_api, node) is None


class TestShardsAndPaging:

    def test_shard_filter_accepts_a_list(self, ironic, ironic_api):
        s1 = set(ironic.enroll_nodes(2, shard='s1'))
        s2 = set(ironic.enroll_nodes(2, shard='s2'))
        ironic.enroll_nodes(1, shard='s3')
        listed = {n['uuid'] for n in
                  ironic_api.list_nodes(fields=['shard'], shard=['s1', 's2'])}
        assert listed == s1 | s2
        assert ironic_api.list_shards() == {'s1': 2, 's2': 2, 's3': 1}

    def test_unsharded_nodes_are_listed_separately(self, ironic, ironic_api):
        ironic.enroll_nodes(1, shard='s1')
        loose = set(ironic.enroll_nodes(2))
        listed = {n['uuid'] for n in
                  ironic_api.list_nodes(fields=['uuid'], sharded=False)}
        assert listed == loose

    def test_paging_keeps_filters(self, ironic, ironic_api):
        template, = ironic.enroll_nodes(1, resource_class='other')
        wanted = set(ironic.bulk_clone(template, 12, resource_class='gold'))
        ironic.bulk_clone(template, 13)
        listed = ironic_api.list_nodes(fields=['resource_class'],
                                       page_size=5, resource_class='gold')
        assert len(listed) == 12
        assert {n['uuid'] for n in listed} == wanted

    def test_changes_come_first_when_sorted_by_updated_at(self, ironic,
                                                          ironic_api):
        nodes = ironic.enroll_nodes(3)
        ironic_api.claim_node(nodes[0], _new_uuid(), MARK)
        newest = next(ironic_api.iter_nodes(
            detail=True, page_size=2, sort_key='updated_at',
            sort_dir='desc'))
        assert newest['uuid'] == nodes[0]
        assert newest['updated_at']


class TestFakeHardwareProvisioning:

    def _deployed(self, ironic, ironic_api):
        """A node deployed with instance_info as the driver sets it.

        Ironic 39 answers a rebuild of a node without an image type with
        HTTP 500 (UnboundLocalError 'auto_lessee' in
        conductor/deployments.py); an image source avoids that path.
        """
        node, = ironic.enroll_nodes(1)
        ironic_api.claim_node(node, _new_uuid(), MARK)
        ironic_api.patch_node(node, [{
            'op': 'add', 'path': '/instance_info',
            'value': {'image_source': 'http://images.test/disk.qcow2',
                      'image_checksum': 'abc', 'root_gb': 10}}])
        ironic_api.set_provision_state(node, 'active')
        ironic.wait_for_node(node, provision_state='active')
        return node

    @pytest.mark.parametrize('image_type, whole_disk', [
        ('whole-disk', True), ('partition', False)])
    def test_a_deploy_takes_the_image_type_as_given(
            self, ironic, ironic_api, image_type, whole_disk):
        # The driver writes it so that Ironic asks Glance nothing in the
        # provision request.  This Ironic has no Glance: the type it
        # records can only be the one it was given.
        node, = ironic.enroll_nodes(1)
        ironic_api.claim_node(node, _new_uuid(), MARK)
        ironic_api.patch_node(node, [{
            'op': 'add', 'path': '/instance_info',
            'value': {'image_source': GLANCE_IMAGE, 'root_gb': 10,
                      'image_type': image_type}}])
        ironic_api.set_provision_state(node, 'active')
        ironic.wait_for_node(node, provision_state='active')
        found = ironic_api.get_node(
            node, fields=['instance_info', 'driver_internal_info'])
        assert found['driver_internal_info']['is_whole_disk_image'] is (
            whole_disk)
        assert found['instance_info']['image_type'] == image_type

    def test_the_drivers_image_type_is_ironics_rule(self):
        # Ironic's rule on Glance's properties, against the driver's on
        # the same properties as Nova stores them with the instance.
        cases = [{}, {'kernel_id': 'k', 'ramdisk_id': 'r'},
                 {'kernel_id': 'k'}, {'ramdisk_id': 'r'},
                 {'kernel_id': None}, {'img_type': 'partition'},
                 {'img_type': 'whole-disk', 'kernel_id': 'k'},
                 {'img_type': 'partition', 'kernel_id': 'k'}]
        python = os.path.join(
            os.path.dirname(venvs.ensure_venv('ironic')), 'python')
        ironic_says = json.loads(subprocess.run(
            [python, '-c', IRONIC_IMAGE_TYPE_RULE, GLANCE_IMAGE],
            input=json.dumps(cases), capture_output=True, text=True,
            check=True).stdout)
        stored = [nova_utils.get_system_metadata_from_image(
            {'properties': case}) for case in cases]
        ours = [metadata.image_type(system_metadata)
                for system_metadata in stored]
        assert ours == [metadata.WHOLE_DISK if whole else metadata.PARTITION
                        for whole in ironic_says]
        assert set(ours) == {metadata.WHOLE_DISK, metadata.PARTITION}

    def test_deploy_and_undeploy(self, ironic, ironic_api):
        node = self._deployed(ironic, ironic_api)
        ironic_api.set_provision_state(node, 'deleted')
        ironic.wait_for_node(node, provision_state='available')

    def test_rebuild(self, ironic, ironic_api):
        node = self._deployed(ironic, ironic_api)
        ironic_api.set_provision_state(node, 'rebuild')
        ironic.wait_for_node(node, provision_state='active')

    def test_power(self, ironic, ironic_api):
        node, = ironic.enroll_nodes(1)
        ironic_api.set_power_state(node, 'power on')
        ironic.wait_for_node(node, power_state='power on')
        ironic_api.set_power_state(node, 'soft power off')
        ironic.wait_for_node(node, power_state='power off')

    def test_missing_node(self, ironic, ironic_api):
        with pytest.raises(exception.NodeNotFound):
            ironic_api.get_node(_new_uuid())
