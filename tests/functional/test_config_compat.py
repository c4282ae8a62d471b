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

"""A nova.conf copied from a compute service of Nova's in-tree driver.

With ``[ironic] conductor_group`` it serves the nodes it served in-tree,
on a real Ironic with nodes of two conductor groups (its conductor serves
``rack-1``; ``rack-2`` has none, so its nodes can be listed but not
managed).  What cannot work stops the compute service at start, in one
line, with exit status 2.
"""

import pytest

from ironic_multi.testing import ironic_server as ironic_server_mod
from ironic_multi.testing import nova_services
from tests.functional import nova_base

# What the in-tree compute service's nova.conf said.
IN_TREE = {'conductor_group': 'rack-1', 'peer_list': ['compute1']}


@pytest.fixture(scope='module')
def ironic_server():
    """This module's Ironic (and ``ironic``'s): its conductor serves rack-1.

    It refuses to enroll a node of another group.
    """
    with ironic_server_mod.IronicServer(conductor_group='rack-1') as server:
        yield server


class CopiedConductorGroupTest(nova_base.IronicMultiTestBase):

    COMPUTES = 0
    FLAGS = {'ironic': IN_TREE}

    def enroll(self):
        self.rack_1 = self.ironic.enroll_nodes(
            2, resource_class=nova_base.RESOURCE_CLASS,
            conductor_group='rack-1',
            properties=nova_services.IN_TREE_NODE_PROPERTIES)
        self.rack_2 = self.ironic.bulk_clone(self.rack_1[0], 2,
                                             conductor_group='rack-2')

    def test_in_tree_the_conductor_group_is_what_is_served(self):
        # What the copied configuration meant: one provider per node of
        # rack-1, none for rack-2.
        self.start_compute('compute1', driver=nova_services.IN_TREE_DRIVER)
        self.run_periodics()
        self.assertEqual(set(self.rack_1),
                         {p['name'] for p in self.providers()})

    def test_ironic_multi_serves_the_same_nodes(self):
        self.start_compute('compute1')
        self.refresh_capacity()
        inventory = self.provider_inventory('compute1')['CUSTOM_BAREMETAL']
        self.assertEqual(len(self.rack_1), inventory['total'])
        for _ in self.rack_1:
            node = self.assert_on_ironic(self.boot())
            self.assertIn(node['uuid'], self.rack_1)
        # Free nodes of rack-2 are not this service's.
        self.boot(expected_state='ERROR')
        for uuid in self.rack_2:
            node = self.ironic.get_node(uuid)
            self.assertEqual(('available', None, 'rack-2'), (
                node['provision_state'], node['instance_uuid'],
                node['conductor_group']))


class RefusedTest(nova_base.IronicMultiTestBase):
    """The copied configuration with ``[ironic_multi]`` saying otherwise.

    ``tests/cloud/test_config_compat.py`` starts a real nova-compute.
    """

    COMPUTES = 0
    NODES = 0
    FLAGS = {'ironic': IN_TREE,
             'ironic_multi': {'conductor_group': 'rack-2'}}

    @pytest.fixture(autouse=True)
    def _stderr(self, capfd):
        self._capfd = capfd

    def test_the_compute_stops_in_one_line(self):
        self._capfd.readouterr()
        with self.assertRaises(SystemExit) as refused:
            self.start_compute('compute1')
        self.assertEqual(2, refused.exception.code)
        self.assertEqual(
            ["ironic-multi cannot start: Invalid configuration: [ironic] "
             "conductor_group ('rack-1') and [ironic_multi] conductor_group "
             "('rack-2') disagree: set one of them, they mean the same "
             "here"], self._capfd.readouterr().err.splitlines())
        self.assertEqual([], self.api.get_services(binary='nova-compute'))
