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

"""Smoke test: one server through Nova onto a real Ironic node and back."""

from tests.functional import nova_base


class NovaBootTest(nova_base.IronicMultiTestBase):

    COMPUTES = 1
    NODES = 2

    def test_boot_and_delete(self):
        inventory = self.provider_inventory('compute1')['CUSTOM_BAREMETAL']
        self.assertEqual(2, inventory['total'])
        self.assertEqual(0, inventory['reserved'])

        server = self._create_server(flavor_id=self.flavor_id,
                                     networks='none')
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual('compute1', server['OS-EXT-SRV-ATTR:host'])

        node = self.node_of(server['id'])
        self.assertIsNotNone(node, 'no Ironic node holds the server')
        self.assertEqual('active', node['provision_state'])
        self.assertEqual(server['id'], node['instance_uuid'])

        self._delete_server(server)
        node = self.ironic.wait_for_node(node['uuid'],
                                         provision_state='available')
        self.assertIsNone(self.node_of(server['id']))
        self.assertEqual([], [n for n in self.ironic.list_nodes()
                              if n['instance_uuid']])
