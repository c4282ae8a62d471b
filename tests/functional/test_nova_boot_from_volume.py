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

"""Boot from volume through Nova's API, on a real Ironic.

Cinder is Nova's own CinderFixture (its iSCSI-backed volume, whose
connection info is Cinder's); Ironic is real: the node's volume
connector is what Nova hands Cinder, and the volume targets the deploy
writes are Ironic's.  The multi-process cloud has no Cinder (see
doc/source/parity.rst).
"""

from nova.tests.fixtures import cinder as cinder_fixture

from tests.functional import nova_base

VOLUME = cinder_fixture.CinderFixture.ISCSI_BACKED_VOL
INITIATOR = 'iqn.2026-11.org.example:node-%s'


class BootFromVolumeTest(nova_base.IronicMultiTestBase):

    COMPUTES = 1
    NODES = 1

    def enroll(self):
        super().enroll()
        for node in self.ironic.list_nodes():
            self.ironic.add_volume_connector(node['uuid'],
                                             connector_id=INITIATOR % node[
                                                 'uuid'])

    def boot_from_volume(self, expected_state='ACTIVE'):
        server = self._build_server(flavor_id=self.flavor_id,
                                    networks='none')
        server.pop('imageRef')
        server['block_device_mapping_v2'] = [{
            'source_type': 'volume', 'destination_type': 'volume',
            'boot_index': 0, 'uuid': VOLUME}]
        server = self.api.post_server({'server': server})
        return self._wait_for_state_change(server, expected_state)

    def targets_of(self, node_uuid):
        return self.ironic.request('GET', '/v1/volume/targets', params={
            'node': node_uuid, 'detail': True}).json()['targets']

    def test_a_server_boots_from_an_iscsi_volume(self):
        server = self.boot_from_volume()
        node = self.assert_on_ironic(server)

        # Cinder exported the volume to the node's initiator.
        (attachment,) = self.cinder.volume_to_attachment[VOLUME].values()
        connector = attachment['connector']
        self.assertEqual((INITIATOR % node['uuid'], 'baremetal'),
                         (connector['initiator'], connector['os_type']))
        # The node boots from it: Cinder's connection info as its target.
        (target,) = self.targets_of(node['uuid'])
        self.assertEqual(
            (VOLUME, 'iscsi', 0, '1', attachment['id']),
            (target['volume_id'], target['volume_type'],
             target['boot_index'], target['properties']['target_lun'],
             target['properties']['attachment_id']))
        info = self.ironic.get_node(node['uuid'])['instance_info']
        self.assertNotIn('image_source', info)
        self.assertEqual('true', info['boot_from_volume'])

        self.delete_and_check(server)
        # Removed while the node was still the server's.
        self.assertEqual([], self.targets_of(node['uuid']))
        self.assertEqual({}, self.cinder.volume_to_attachment[VOLUME])
