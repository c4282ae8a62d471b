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

"""Placement sees every build the moment it is scheduled.

Real Nova services and placement, a real Ironic: each compute's provider
offers the free nodes of its own shards, so placement's free counts add
up to Ironic's, and a build takes its unit off the provider it lands on
at once, before its claim, any refresh of the pools or any periodic
update of Nova's resources.  The pool refresh is an hour here, and
Nova's test services run no periodic tasks.  A compute service an
operator disables offers nothing, and the others offer its shards'
nodes.  The announcement of claims on etcd's watch:
``test_member_watch.py``.
"""

import threading
from unittest import mock

from ironic_multi._reservation import reserver as reserver_mod
from tests.functional import nova_base
from tests.functional.waiting import wait_for


class CapacityAtOnceTest(nova_base.IronicMultiTestBase):

    COMPUTES = 3
    NODES = 4
    FLAGS = {'ironic_multi': {'pool_refresh_interval': 3600}}

    def _free(self):
        return {host: self.free_in_placement(host) for host in self.computes}

    def _offered(self):
        return self.offered_in_placement()

    def test_placement_offers_what_ironic_has_free_up_to_the_last_node(
            self):
        self.refresh_capacity()
        self.assertEqual(self.NODES, self._offered())
        # Each offers its own shards' nodes, not every node.
        self.assertLess(max(self._free().values()), self.NODES)
        servers = []
        for number in range(1, self.NODES + 1):
            servers.append(self.boot())
            wait_for(lambda: self._offered() == self.NODES - number,
                     timeout=10, what='placement to offer one node less')
        # Refused by the scheduler, not after a claim that had to fail.
        refused = self.boot(expected_state='ERROR')
        self.assertIn('No valid host', refused['fault']['message'])
        self.assertEqual(0, len(self.build_attempts(refused['id'])))
        for booted_server in servers:
            self.assert_on_ironic(booted_server)

    def test_a_disabled_service_offers_nothing_and_the_others_its_nodes(
            self):
        self.refresh_capacity()
        host = max(sorted(self.computes), key=lambda h: self._free()[h])
        offered = self._free()[host]
        self.assertGreater(offered, 0)
        (service,) = self.api.get_services(host=host, binary='nova-compute')
        self.api.put_service(service['id'], {'status': 'disabled'})
        wait_for(lambda: self._free()[host] == 0, timeout=10,
                 what='the disabled service to offer nothing')
        wait_for(lambda: self._offered() == self.NODES, timeout=10,
                 what='the others to offer its shards\' nodes')
        # Booted elsewhere, up to the last node.
        servers = [self.boot() for _ in range(self.NODES)]
        self.assertNotIn(host, {s['OS-EXT-SRV-ATTR:host'] for s in servers})
        self.api.put_service(service['id'], {'status': 'enabled'})
        self.delete_servers(servers)
        self.refresh_capacity()
        wait_for(lambda: self._free()[host] == offered, timeout=10,
                 what='the service to offer its shards\' nodes again')
        self.assertEqual(self.NODES, self._offered())

    def test_a_build_leaves_the_offer_before_its_claim(self):
        self.refresh_capacity()
        claims = threading.Event()
        claim = reserver_mod.Reserver.claim

        def held(reserver, *args, **kwargs):
            claims.wait(60)
            return claim(reserver, *args, **kwargs)

        with mock.patch.object(reserver_mod.Reserver, 'claim', held):
            (server,) = self.post_servers(1)
            try:
                # Scheduled on one compute, its claim held: placement
                # offers the node it will take no more.
                wait_for(lambda: self._offered() == self.NODES - 1,
                         timeout=10, what='placement to count the build')
                self.assertEqual({}, self.associated_nodes())
            finally:
                claims.set()
        (server,) = self.wait_for_servers([server])
        self.assertEqual('ACTIVE', server['status'])
        # Claimed: the offer stays where it was (a node of another
        # service's shards leaves that service's offer when it reads the
        # claim).
        wait_for(lambda: self._offered() == self.NODES - 1, timeout=10,
                 what='placement to offer the free nodes')
        self.assert_on_ironic(server)
