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

"""Placement sees a claim on every compute's provider at once.

Real Nova services and placement, a real Ironic: a server booted on one
compute takes its node off every provider's free count before any
refresh of the pools and any periodic update of Nova's resources.  The
pool refresh is an hour here, and Nova's test services run no periodic
tasks, so only the claim's announcement can tell the other computes.
The announcement on etcd's watch: ``test_member_watch.py``.
"""

import threading
import time
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

    def test_a_claim_leaves_every_provider_before_any_periodic(self):
        self.refresh_capacity()
        self.assertEqual({host: self.NODES for host in self.computes},
                         self._free())
        server = self.boot()
        booted = time.monotonic()
        host = server['OS-EXT-SRV-ATTR:host']
        wait_for(lambda: set(self._free().values()) == {self.NODES - 1},
                 timeout=10, what='every provider to count the claim')
        self.record('claim_to_every_provider_seconds',
                    round(time.monotonic() - booted, 3))
        self.assertEqual(1, self.provider_usage(host))
        # Up to the last node, with no periodic: no build is sent to a
        # provider that still offers a node taken since.
        servers = [self.boot() for _ in range(self.NODES - 1)]
        wait_for(lambda: set(self._free().values()) == {0}, timeout=10,
                 what='every provider to count every claim')
        # Refused by the scheduler, not after a claim that had to fail.
        refused = self.boot(expected_state='ERROR')
        self.assertIn('No valid host', refused['fault']['message'])
        for booted_server in [server] + servers:
            self.assert_on_ironic(booted_server)

    def test_a_build_takes_its_node_off_every_provider_before_its_claim(
            self):
        self.refresh_capacity()
        claims = threading.Event()
        claim = reserver_mod.Reserver.claim

        def held(reserver, *args, **kwargs):
            claims.wait(60)
            return claim(reserver, *args, **kwargs)

        with mock.patch.object(reserver_mod.Reserver, 'claim', held):
            (server,) = self.post_servers(1)
            posted = time.monotonic()
            try:
                # Scheduled on one compute, its claim held: every other
                # provider must stop offering the node it will take.
                wait_for(lambda: set(self._free().values())
                         == {self.NODES - 1}, timeout=10,
                         what='every provider to count the waiting build')
                self.record('allocation_to_every_provider_seconds',
                            round(time.monotonic() - posted, 3))
                self.assertEqual({}, self.associated_nodes())
            finally:
                claims.set()
        (server,) = self.wait_for_servers([server])
        self.assertEqual('ACTIVE', server['status'])
        # Claimed: the offer stays where it was.
        self.assertEqual({self.NODES - 1}, set(self._free().values()))
        self.assert_on_ironic(server)
