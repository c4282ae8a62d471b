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

"""Flavors that only some nodes serve (traits, capabilities); capacity.

The scheduler picks a compute service; the service's claim picks a node
that matches the flavor.  The scheduler's filters are configured without
ComputeCapabilitiesFilter (``nova_base.SCHEDULER_FILTERS``): it would
match ``capabilities:*`` against the single compute node's empty host
stats and reject every host.
"""

from ironic_multi.testing import ironic_nodes
from tests.functional import nova_base

TRAIT = 'CUSTOM_GOLD'
CAPABILITY_NODE_PROPERTIES = dict(ironic_nodes.DEFAULT_PROPERTIES,
                                  capabilities='boot_mode:uefi,raid:yes')


class MatchingTest(nova_base.IronicMultiTestBase):

    COMPUTES = 3
    PLAIN_NODES = 2

    def enroll(self):
        self.trait_nodes = set(self.ironic.enroll_nodes(
            2, resource_class=nova_base.RESOURCE_CLASS, traits=[TRAIT]))
        self.capability_nodes = set(self.ironic.enroll_nodes(
            2, resource_class=nova_base.RESOURCE_CLASS,
            properties=CAPABILITY_NODE_PROPERTIES))
        self.ironic.enroll_nodes(self.PLAIN_NODES,
                                 resource_class=nova_base.RESOURCE_CLASS)

    def _flavor(self, name, microversion=None, **extra_specs):
        self.api.microversion = microversion or self.microversion
        try:
            return self._create_flavor(
                name=name, memory_mb=4096, vcpu=2, disk=40, ephemeral=0,
                extra_spec=dict(nova_base.BAREMETAL_SPECS, **extra_specs))
        finally:
            self.api.microversion = self.microversion

    def _fill_then_fail(self, flavor_id, expected_nodes):
        """Two servers on exactly ``expected_nodes``, a third in ERROR."""
        servers = [self.boot(flavor_id) for _ in range(2)]
        nodes = {self.assert_on_ironic(s)['uuid'] for s in servers}
        self.assertEqual(expected_nodes, nodes)

        failed = self.boot(flavor_id, expected_state='ERROR')
        fault = failed['fault']['message']
        # Placement passes the request (a provider reports the trait or
        # the class); each service's claim finds no matching free node and
        # Nova reschedules until max_attempts.
        self.assertTrue('Exceeded maximum number of retries' in fault
                        or 'No valid host' in fault, fault)
        self.record('fault', fault)
        if 'Exceeded maximum number of retries' in fault:
            # Each attempt failed the claim on a compute service; Nova
            # keeps that reason only in its log (the events of a
            # rescheduled build carry no details).
            self.assertIn('Insufficient compute resources: No Ironic node '
                          'is available for instance %s' % failed['id'],
                          self.stdlog.logger.output)
        self.assertIsNone(self.node_of(failed['id']))
        self.assertEqual({}, self.server_allocation(failed['id']))
        return servers, failed

    def test_required_trait_and_capability(self):
        self.assertIn(TRAIT, self._get_provider_traits(
            self._get_provider_uuid_by_host('compute1')))

        trait_flavor = self._flavor(
            'gold', **{'trait:%s' % TRAIT: 'required'})
        gold, _ = self._fill_then_fail(trait_flavor, self.trait_nodes)

        # From microversion 2.86 Nova validates extra specs, and its
        # "capabilities" namespace knows only the host state keys of
        # ComputeCapabilitiesFilter (cpu_info, ...): "boot_mode" is refused.
        # Operators set it without validation (2.85, or the client's
        # default microversion).
        capability_flavor = self._flavor(
            'uefi', microversion='2.85',
            **{'capabilities:boot_mode': 'uefi'})
        uefi, _ = self._fill_then_fail(capability_flavor,
                                       self.capability_nodes)
        # Ironic got the capability to act on (boot mode).
        node = self.node_of(uefi[0]['id'])
        info = self.ironic.get_node(node['uuid'],
                                    fields=['instance_info'])
        self.assertIn('uefi', info['instance_info'].get('capabilities', ''))

        # Capacity (scenario 6): after one periodic pass on every compute,
        # the providers' total - reserved - used add up to the number of
        # free matching nodes in Ironic, although 4 servers are spread
        # over the providers' "used".
        self.refresh_capacity()
        free_nodes = [n for n in self.ironic.list_nodes()
                      if n['provision_state'] == 'available'
                      and not n['instance_uuid'] and not n['maintenance']]
        self.assertEqual(self.PLAIN_NODES, len(free_nodes))
        used = {host: self.provider_usage(host) for host in self.computes}
        self.assertEqual(4, sum(used.values()))
        self.record('used_per_provider', used)
        self.assertEqual(len(free_nodes), self.offered_in_placement())

        for server in gold + uefi:
            self.delete_and_check(server)
        self.refresh_capacity()
        self.assertEqual(6, self.offered_in_placement())

    def test_a_build_nova_gave_up_on_hides_no_free_node(self):
        # What a compute restarted in the middle of a build leaves (its
        # init_host sets the server to ERROR, and placement keeps the
        # allocation until the server is deleted) with the node released
        # before the deploy began: the state, made through Nova's API and
        # the service's own reservation layer.
        server = self.boot()
        host = server['OS-EXT-SRV-ATTR:host']
        node = self.assert_on_ironic(server)
        self.api.post_server_action(server['id'],
                                    {'os-resetState': {'state': 'error'}})
        self.assertEqual('ERROR', self._show_server(server)['status'])
        self.driver_of(self.computes[host]).reserver.teardown(server['id'],
                                                              [])
        self.ironic.wait_for_node(node['uuid'], provision_state='available',
                                  instance_uuid=None)
        (held,) = self.server_allocation(server['id']).values()
        self.assertEqual({'CUSTOM_BAREMETAL': 1}, held)

        # Every node is free, and the scheduler may use all of them.
        self.refresh_capacity()
        free = len(self.ironic.list_nodes(provision_state='available'))
        self.assertEqual(len(self.trait_nodes | self.capability_nodes)
                         + self.PLAIN_NODES, free)
        self.assertEqual(free, self.offered_in_placement())
        self.delete_servers([server])
        self.assertEqual({}, self.server_allocation(server['id']))
