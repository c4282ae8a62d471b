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

"""``migrate plan`` on a cloud that Nova's in-tree Ironic driver built.

Four servers boot under the in-tree driver; one node stays free.  The
in-tree compute stops and this driver's starts, as the cut-over runbook
says.  The plan then lists the four in-tree compute nodes that hold a
server and the free one, says which server moves where and why the
others would not (a node in maintenance, a server in ERROR, a node marked
by another group), and writes nothing: not to Ironic, Nova or placement.
"""

import json

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi.testing import nova_services
from tests.functional import nova_base

IN_TREE_HOST = 'intree1'
HOST = 'compute1'
# What the plan must leave as it was.
NODE_FIELDS = ('uuid', 'instance_uuid', 'instance_info', 'extra',
               'provision_state', 'power_state', 'maintenance')


class MigratePlanTest(nova_base.IronicMultiTestBase):

    COMPUTES = 0
    NODES = 5
    NODE_PROPERTIES = nova_services.IN_TREE_NODE_PROPERTIES

    def _state(self, servers):
        """What Ironic, Nova and placement say of the servers and nodes."""
        return {
            'nodes': sorted(self.ironic.list_nodes(fields=NODE_FIELDS),
                            key=lambda n: n['uuid']),
            'servers': [(s['id'], s['OS-EXT-SRV-ATTR:host'],
                         s['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                         s['status'])
                        for s in map(self._show_server, servers)],
            'allocations': [self.server_allocation(s['id'])
                            for s in servers],
        }

    def test_plan_lists_moves_and_refusals_and_writes_nothing(self):
        self.start_compute(IN_TREE_HOST, driver=nova_services.IN_TREE_DRIVER)
        self.run_periodics()
        servers = [self.boot() for _ in range(4)]
        moves, maintenance, failed, foreign = servers
        nodes = {s['id']: s['OS-EXT-SRV-ATTR:hypervisor_hostname']
                 for s in servers}
        self.ironic.request(
            'PUT', '/v1/nodes/%s/maintenance' % nodes[maintenance['id']],
            json={'reason': 'fan'}, expect=(202,))
        self.api.post_server_action(failed['id'],
                                    {'os-resetState': {'state': 'error'}})
        self.ironic.request(
            'PATCH', '/v1/nodes/%s' % nodes[foreign['id']], json=[{
                'op': 'add', 'path': ownership.PATH,
                'value': {foreign['id']: ownership.mark('another-group')}}])

        # The cut-over: the in-tree compute stops, this driver's starts.
        self.computes[IN_TREE_HOST].stop()
        self.start_compute(HOST)
        before = self._state(servers)

        code, out, err = self.manage(
            '--config-file', self.manage_config_file(), 'migrate', 'plan',
            '-f', 'json', '--timeout', '30')
        self.assertEqual(1, code, err)
        rows = {row['Node']: row for row in json.loads(out)}
        self.record('plan', rows)

        free = (set(n['uuid'] for n in before['nodes'])
                - set(nodes.values()))
        self.assertEqual(set(nodes.values()) | free, set(rows))
        (free,) = free
        self.assertEqual('removed', rows[free]['Outcome'])
        self.assertIsNone(rows[free]['Instance'])

        row = rows[nodes[moves['id']]]
        self.assertEqual(('moves', [], moves['id'], IN_TREE_HOST, HOST,
                          {'CUSTOM_BAREMETAL': 1}),
                         (row['Outcome'], row['Reasons'], row['Instance'],
                          row['From'], row['To'], row['Resources']))
        for server, reason in ((maintenance, 'is in maintenance'),
                               (failed, 'the server is error'),
                               (foreign, 'carries the mark of group '
                                         'another-group')):
            row = rows[nodes[server['id']]]
            self.assertEqual(('refused', server['id']),
                             (row['Outcome'], row['Instance']))
            self.assertEqual(1, len(row['Reasons']), row)
            self.assertIn(reason, row['Reasons'][0])

        # Read-only.
        self.assertEqual(before, self._state(servers))
