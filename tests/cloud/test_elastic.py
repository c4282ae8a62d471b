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

"""Elastic compute services: scale out during a burst, then scale in by
the runbook of doc/source/cloud.rst (disable, drain, stop, force down,
adopt, delete)."""

import time

from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import watch
from tests.cloud import faults

ADMIN = cloud_mod.ADMIN_CLOUD
FIRST = ('gold', 'gold', 'silver', 'silver', 'gold-gpu', 'silver-uefi')
SECOND = ('gold', 'silver', 'gold-gpu', 'silver-uefi')
ADOPT_BOUND = 60


def test_scale_out_then_in_under_load(cloud, servers, record_property):
    # -- scale out while a burst is in flight ------------------------------
    first = faults.post_servers(cloud, FIRST, 'out')
    servers.extend(first)
    with watch.RingWatch(cloud) as ring:
        started, signalled = time.monotonic(), time.time()
        new = cloud.add_compute(wait=False)
        # The ring watch keeps wall-clock times.
        joined = ring.when('join', new) - signalled
    cloud.wait_for_computes([new])
    cloud_mod.nova.discover_hosts(cloud, cloud.nova_conf)
    cloud.wait_for_capacity([new])
    capacity = time.monotonic() - started
    settled = cloud.wait_for_servers(first)
    record_property('scale_out_ring_join_seconds', round(joined, 1))
    record_property('scale_out_capacity_seconds', round(capacity, 1))
    print('\nscale out: %s in the ring after %.1f s, its capacity in '
          'placement after %.1f s' % (new, joined, capacity))
    assert faults.statuses(settled) == {'ACTIVE': len(FIRST)}
    faults.assert_no_node_held_twice(cloud, settled)
    owners = {row['Host'] for row in cloud.manage('ring', 'show')}
    assert new in owners

    # -- scale in by the runbook, with a second burst in flight --------------
    hosts = faults.hosts_of(cloud, first)
    victim = max(cloud.computes, key=list(hosts.values()).count)
    on_victim = [i for i, h in hosts.items() if h == victim]
    (service,) = [s for s in cloud.openstack(
        'compute', 'service', 'list', '--service', 'nova-compute',
        '--host', victim, cloud=ADMIN)]
    # 1. No new builds on it; 2. its builds finish (none was sent).
    cloud.openstack('compute', 'service', 'set', '--disable',
                    '--disable-reason', 'scale in', victim, 'nova-compute',
                    cloud=ADMIN, parse=False)
    second = faults.post_servers(cloud, SECOND, 'in')
    servers.extend(second)
    # 3. Stop it (SIGTERM: it leaves the ring at once).
    stopped = time.monotonic()
    cloud.stop(cloud.compute_service(victim))
    # 4. Force it down: a live service adopts its instances.
    cloud.openstack('compute', 'service', 'set', '--down', victim,
                    'nova-compute', cloud=ADMIN, parse=False)
    moved_at, moved = faults.wait_until_moved(cloud, on_victim, victim,
                                              ADOPT_BOUND)
    adoption = moved_at - stopped
    # 5. Delete the service (and its compute node and provider).
    cloud.openstack('compute', 'service', 'delete', service['ID'],
                    cloud=ADMIN, parse=False)
    cloud.remove_compute(victim)
    record_property('scale_in_adoption_seconds', round(adoption, 1))
    print('scale in: %d instances of %s adopted %.1f s after the stop'
          % (len(on_victim), victim, adoption))

    settled = cloud.wait_for_servers(first + second)
    assert faults.statuses(settled) == {'ACTIVE': len(first + second)}
    faults.assert_no_node_held_twice(cloud, settled)
    assert victim not in faults.hosts_of(cloud, first + second).values()
    providers = {p['name'] for p in cloud.openstack(
        'resource', 'provider', 'list', cloud=ADMIN)}
    assert victim not in providers
    assert victim not in cloud.nova_services()
