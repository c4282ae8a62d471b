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

"""A compute service dies: the others take over its shards."""

import time

from nova import context

from tests.functional import nova_base

SHARDS = ['shard-%s' % letter for letter in 'abcdef']


class FailoverTest(nova_base.IronicMultiTestBase):
    """One node per shard key, 3 services, one of them crashes.

    The crash stops the victim's heartbeats without leaving the group
    (a graceful stop leaves at once and would not exercise the timeout),
    then stops its Nova service.  Nova's scheduler only learns that the
    service is down after ``service_down_time`` (60 s); as an operator
    would, the test forces it down through the os-services API, so that
    the ComputeFilter skips it.
    """

    COMPUTES = 3
    MEMBERSHIP_TIMEOUT = 3

    def enroll(self):
        self.node_shard = {}
        for shard in SHARDS:
            (node,) = self.ironic.enroll_nodes(
                1, resource_class=nova_base.RESOURCE_CLASS, shard=shard)
            self.node_shard[node] = shard

    def _reserver(self, host):
        return self.driver_of(self.computes[host]).reserver

    def _crash(self, host):
        """Stop heartbeats and refreshes, then the service, no leaving."""
        driver = self.driver_of(self.computes[host])
        reserver = driver.reserver
        reserver._worker.stop()
        reserver.membership._coordinator.heart.stop()
        # A dead process runs no clean up (the harness's own clean up
        # still stops the reserver at the end of the test).
        driver.cleanup_host = lambda host: None
        self.computes[host].stop()
        (service,) = self.api.get_services(host=host, binary='nova-compute')
        self.api.put_service_force_down(service['id'], True)

    def _periodic(self, hosts):
        ctx = context.get_admin_context()
        # One round publishes every host's counts, the next reads them
        # all: what every service's own refresh does in two intervals.
        for host in hosts + hosts:
            self._reserver(host).refresh()
        for host in hosts:
            self.computes[host].manager.update_available_resource(ctx)

    def test_survivors_take_over_shards(self):
        owned = {host: self._reserver(host).owned_shards()
                 for host in self.computes}
        self.record('owned_before', {h: sorted(s) for h, s in owned.items()})
        victim = max(sorted(owned), key=lambda h: len(owned[h]))
        survivors = sorted(set(self.computes) - {victim})
        self.assertTrue(owned[victim])

        # A server of the victim's, on a node of its own shards.
        mine = self.boot(host=victim)
        node = self.assert_on_ironic(mine, host=victim)
        self.assertIn(self.node_shard[node['uuid']], owned[victim])

        crashed_at = time.monotonic()
        self._crash(victim)
        deadline = crashed_at + 4 * self.MEMBERSHIP_TIMEOUT
        while True:
            for host in survivors:
                self._reserver(host).refresh()
            taken = set().union(*(self._reserver(h).owned_shards()
                                  for h in survivors))
            gone = all(victim not in self._reserver(h).ring.hosts
                       for h in survivors)
            if gone and taken == set(SHARDS):
                break
            self.assertLess(time.monotonic(), deadline,
                            'survivors own %s' % sorted(taken))
            time.sleep(0.2)
        takeover = time.monotonic() - crashed_at
        self.record('takeover_seconds', round(takeover, 3))
        # tooz's file driver drops a member whose heartbeat is older than
        # the timeout: at most the timeout plus a heartbeat period.
        self.assertLess(takeover, 2 * self.MEMBERSHIP_TIMEOUT)
        for host in survivors:
            self.assertNotIn(victim, self._reserver(host).ring.hosts)

        # New servers land on the survivors, on every free node: those of
        # the victim's former shards included.
        self._periodic(survivors)
        servers = [self.boot() for _ in range(3)]

        # Capacity after a periodic pass (scenario 6): the survivors' free
        # counts in placement add up to the free nodes in Ironic (the
        # victim's shards' nodes included).
        self._periodic(survivors)
        free = len([n for n in self.ironic.list_nodes()
                    if n['provision_state'] == 'available'
                    and not n['instance_uuid']])
        self.assertEqual(2, free)
        self.assertEqual(free, self.offered_in_placement(survivors))

        servers += [self.boot() for _ in range(2)]
        for server in servers:
            self.assertIn(server['OS-EXT-SRV-ATTR:host'], survivors)
            self.assert_on_ironic(server)
        taken_over = {self.node_shard[self.node_of(s['id'])['uuid']]
                      for s in servers} & owned[victim]
        self.record('servers_on_victim_shards', sorted(taken_over))
        self.assertEqual(set(owned[victim]) - {self.node_shard[node['uuid']]},
                         taken_over)

        # The victim's server is untouched on both sides.
        mine = self._show_server(mine)
        self.assertEqual('ACTIVE', mine['status'])
        self.assertEqual(victim, mine['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(node['uuid'], self.assert_on_ironic(mine)['uuid'])
        self.assertEqual(6, len(self.associated_nodes()))

        for server in servers:
            self.delete_and_check(server)
