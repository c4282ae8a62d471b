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

"""Nova boots pre-installed machines: the static node provider.

The driver does not care which node provider serves it.  Two compute
services load it with ``node_provider = static`` and a YAML inventory of
two machines; operator commands (scripts that log their arguments) run on
hand-over, return and power actions.  Nova's API boots, reboots, stops,
starts and deletes; three servers for two machines end with two ACTIVE
and one ERROR.
"""

import os

import fixtures

from ironic_multi.testing import static_nodes
from tests.functional import nova_base

HOOK = """#!/bin/sh
echo "$1|$2|$IRONIC_MULTI_INSTANCE_UUID" >> {log}
"""


class StaticProviderTest(nova_base.IronicMultiTestBase):

    COMPUTES = 2
    NODES = 0

    def _setup_ironic(self):
        directory = self.useFixture(fixtures.TempDir()).path
        self.inventory = static_nodes.StaticInventory(directory)
        self.machines = self.inventory.add_nodes(
            2, 'baremetal', properties={'memory_mb': 4096, 'cpus': 2,
                                        'local_gb': 50})
        self.hook_log = os.path.join(directory, 'hooks.log')
        hook = os.path.join(directory, 'hook.sh')
        with open(hook, 'w') as f:
            f.write(HOOK.format(log=self.hook_log))
        os.chmod(hook, 0o755)
        super()._setup_ironic()
        self.flags(node_provider='static',
                   static_inventory=self.inventory.path,
                   static_handover_command=hook,
                   static_return_command=hook,
                   static_power_command=hook,
                   group='ironic_multi')

    def hooks(self):
        """``[(action, machine, instance)]`` the hooks were run with."""
        try:
            with open(self.hook_log) as f:
                return [tuple(line.strip().split('|')) for line in f]
        except FileNotFoundError:
            return []

    def holders(self):
        """``{instance: reservation}`` of the static provider."""
        provider = self.driver_of(self.computes['compute1']).reserver.provider
        return {r.instance_uuid: r for r in provider.reservations()}

    def holder(self, server_id):
        return self.holders().get(server_id)

    def test_boot_power_and_delete_through_nova(self):
        server = self.boot()
        self.assertEqual('ACTIVE', server['status'])
        reservation = self.holder(server['id'])
        self.assertIn(reservation.node_uuid, self.machines)
        self.assertEqual('active', reservation.state.value)
        self.assertEqual(server['OS-EXT-SRV-ATTR:host'], reservation.host)
        self.assertEqual({server['id']: server['OS-EXT-SRV-ATTR:host']},
                         {uuid: r.host for uuid, r in self.holders().items()})
        machine = reservation.node_uuid
        self.assertIn(('handover', machine, server['id']), self.hooks())

        self._reboot_server(server, hard=True)
        server = self._stop_server(server)
        self.assertEqual('off', self.holder(server['id']).power_state.value)
        server = self._start_server(server)
        self.assertEqual('on', self.holder(server['id']).power_state.value)
        self.assertEqual([('reboot', machine), ('power off', machine),
                          ('power on', machine)],
                         [(a, m) for a, m, _i in self.hooks()[1:]])

        self._delete_server(server)
        self.assertIsNone(self.holder(server['id']))
        self.assertEqual(('return', machine, server['id']),
                         self.hooks()[-1])

    def test_three_servers_for_two_machines(self):
        servers = self.wait_for_servers(self.post_servers(3))
        states = sorted(s['status'] for s in servers)
        self.assertEqual(['ACTIVE', 'ACTIVE', 'ERROR'], states)
        active = {s['id'] for s in servers if s['status'] == 'ACTIVE'}
        held = self.holders()
        self.assertEqual(active, set(held))
        self.assertEqual(set(self.machines),
                         {r.node_uuid for r in held.values()})

        self.delete_servers(servers)
        self.assertEqual({}, self.holders())
        self.assertEqual(2, len([h for h in self.hooks()
                                 if h[0] == 'return']))
