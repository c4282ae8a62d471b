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

"""More servers than nodes, booted at once on 3 compute services."""

import collections
import time

from tests.functional import nova_base


class OverbookTest(nova_base.IronicMultiTestBase):
    """12 servers booted at once (12 POSTs, no waiting) for 10 nodes.

    Each of the 3 providers offers the free nodes of its own shards:
    they add up to 10, so placement accepts 10 and the two past the last
    node end in ERROR at the scheduler (no valid host).  An offer still
    being updated when placement answers may let one more through to a
    compute, whose claim then finds no node: it is rescheduled to the
    alternates and ends in ERROR after ``[scheduler] max_attempts`` (3)
    tries.  Either way the claims in Ironic decide which node each build
    gets.
    """

    COMPUTES = 3
    NODES = 10
    SERVERS = 12

    def test_more_servers_than_nodes(self):
        # 12 POSTs without waiting: each build runs in its compute
        # service's build pool, concurrently with the others.
        started = time.monotonic()
        servers = self.wait_for_servers(self.post_servers(self.SERVERS))
        seconds = time.monotonic() - started
        self.record('boot_%d_servers_seconds' % self.SERVERS,
                    round(seconds, 3))
        self.record('seconds_per_server', round(seconds / self.SERVERS, 3))

        by_status = collections.defaultdict(list)
        for server in servers:
            by_status[server['status']].append(server)
        self.assertEqual(10, len(by_status['ACTIVE']))
        self.assertEqual(2, len(by_status['ERROR']))
        self.record('active_per_host', dict(collections.Counter(
            s['OS-EXT-SRV-ATTR:host'] for s in by_status['ACTIVE'])))

        # No double booking: 10 distinct nodes, each holding one distinct
        # server, exactly the ACTIVE ones.
        associated = self.associated_nodes()
        self.assertEqual(10, len(associated))
        self.assertEqual(10, len(set(associated.values())))
        self.assertEqual({s['id'] for s in by_status['ACTIVE']},
                         set(associated.values()))
        for server in by_status['ACTIVE']:
            self.assert_on_ironic(server)
        nodes = self.ironic.list_nodes()
        self.assertEqual({'active': 10}, dict(collections.Counter(
            n['provision_state'] for n in nodes)))

        for server in by_status['ERROR']:
            fault = server['fault']['message']
            # Every attempt failed the claim: Nova gives up after
            # max_attempts with "Exceeded maximum number of retries",
            # naming the last reason, or finds no alternate left.
            self.assertTrue(
                'Exceeded maximum number of retries' in fault
                or 'No valid host' in fault, fault)
            self.assertIsNone(self.node_of(server['id']))
            self.assertEqual({}, self.server_allocation(server['id']))
        self.record('error_faults', sorted(
            s['fault']['message'] for s in by_status['ERROR']))

        # Placement usage equals the nodes associated in Ironic.
        used = sum(self.provider_usage(host) for host in self.computes)
        self.assertEqual(len(associated), used)

        self.delete_servers(servers)
        for node in nodes:
            self.ironic.wait_for_node(node['uuid'],
                                      provision_state='available',
                                      instance_uuid=None)
        self.assertEqual({}, self.associated_nodes())
        self.assertEqual([], self.ironic.list_allocations())
        self.assertEqual(
            0, sum(self.provider_usage(host) for host in self.computes))
