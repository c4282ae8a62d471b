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

"""What the chaos tests build on: every process by name, the links cut.

The servers that were fixtures of their own (etcd, Keystone, Ironic) and
the cloud's private database restart by name like any other service, and
the cloud works after; a compute cut off from etcd alone leaves the
others' ring and comes back once healed.
"""

import datetime
import os
import time

from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import watch

ADMIN = cloud_mod.ADMIN_CLOUD
# Neutron's agent type of networking-baremetal's agent (one per node).
BAREMETAL_AGENT = 'Baremetal Node'
RESTARTED = ('etcd', 'keystone', 'ironic', 'database')
# Seconds after the heal for the compute to be a member again: its
# heartbeat's request on the cut link fails at the heal, and its next
# refresh (pool_refresh_interval) finds it dropped and joins.
REJOIN_BOUND = 30


def test_every_process_restarts_by_name(cloud, servers, record_property):
    before = cloud.pids()
    assert set(RESTARTED) | {'rabbitmq', 'nova-api'} <= set(before)
    restarted = {}
    for name in RESTARTED:
        started = time.monotonic()
        cloud.restart(name)
        restarted[name] = cloud_mod.utcnow()
        seconds = time.monotonic() - started
        record_property('%s_restart_seconds' % name, round(seconds, 1))
        print('\n%s restarted in %.1f s' % (name, seconds))
        assert cloud.pids()[name] != before[name]
    for name, service in cloud.services.items():
        assert os.path.dirname(service.log_path) == cloud.log_dir, name
        assert os.path.getsize(service.log_path) > 0, name

    # networking-baremetal's agents report again after Ironic's restart
    # (cloud.RESTART_AFTER): without it, a run's next port bind was
    # refused, the agents "dead".
    _wait_for_agent_reports(cloud, since=restarted['ironic'])

    # The cloud works: a boot, through the computes' proxy to Ironic.
    seen = len(cloud.ironic_proxy.seen)
    server = cloud.openstack('server', 'create', '--flavor', 'gold',
                             '--image', 'cirros', '--nic', 'none', '--wait',
                             'after-restarts', cloud=ADMIN)
    servers.append(server['id'])
    assert server['status'] == 'ACTIVE'
    claims = [s for s in cloud.ironic_proxy.seen[seen:]
              if s.method == 'PATCH' and s.target.startswith('/v1/nodes/')]
    assert claims and all(s.status == 200 for s in claims)


def _wait_for_agent_reports(cloud, since, timeout=60):
    network = cloud.connection(ADMIN).network
    deadline = time.monotonic() + timeout
    while True:
        stale = [agent.host for agent in network.agents(
            agent_type=BAREMETAL_AGENT)
            if agent.last_heartbeat_at is None
            or _parse(agent.last_heartbeat_at) < since.replace(microsecond=0)]
        if not stale:
            return
        assert time.monotonic() < deadline, (
            'no report after %s from the agents of %s' % (since, stale))
        time.sleep(2)


def _parse(stamp):
    return datetime.datetime.fromisoformat(stamp.replace('T', ' '))


def test_a_partitioned_compute_leaves_the_ring_and_comes_back(
        cloud, record_property):
    host, other = cloud.computes[0], cloud.computes[1]
    with watch.RingWatch(cloud) as ring:
        assert host in ring.hosts()
        cut = time.time()
        cloud.partition(host)
        try:
            left = ring.when('leave', host,
                             timeout=cloud.membership_timeout + 30) - cut
            ring_of_other = {row['Host'] for row in
                             cloud.manage('ring', 'show', host=other)}
            # It still reaches Nova (its service reports up).
            up = cloud.nova_services()[host].state
        finally:
            healed = time.time()
            cloud.heal(host)
        back = ring.when('join', host, timeout=REJOIN_BOUND) - healed
    record_property('partition_to_ring_leave_seconds', round(left, 1))
    record_property('heal_to_ring_join_seconds', round(back, 1))
    print('\npartitioned %s: out of the ring %.1f s after the cut '
          '(membership_timeout %d s), back %.1f s after the heal'
          % (host, left, cloud.membership_timeout, back))
    # Its lease was last renewed at most membership_timeout before the
    # cut; etcd drops it once it expires.
    assert left <= cloud.membership_timeout + 5
    assert host not in ring_of_other
    assert up == 'up'
    rows = cloud.manage('ring', 'show', host=other)
    assert set(cloud.computes) == {row['Host'] for row in rows}
