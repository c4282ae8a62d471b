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

"""Process faults: a compute killed or stopped, the broker restarted.

Bounds are generous for a loaded 2-core machine; the measured figures
are printed and recorded in the JUnit report.
"""

import signal
import time

from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import watch
from tests.cloud import faults

ADMIN = cloud_mod.ADMIN_CLOUD
# Seconds after the kill for the server to settle (the compute restarts
# and Nova's init_host sets a build it interrupted to ERROR).
KILL_BOUND = 120
# Seconds from the driver's leave to the ring without the host: the
# shard keys move within a second (0.03 to 0.09 s measured in six runs;
# see doc/source/cloud.rst).
LEAVE_BOUND = 1.0
# Nova's log line before it waits for the tasks in progress (after it
# stopped its RPC server), and the driver's when it leaves the group, as
# soon as Nova's graceful shutdown begins.
SHUTDOWN_STARTS = 'Compute manager waiting up to'
LEAVE_STARTS = 'leaving the coordination group now'
RING_CHANGED = 'Shard ring hosts changed'
BURST = ('gold', 'gold', 'silver', 'silver', 'gold-gpu', 'silver-uefi')


def test_sigkill_compute_in_the_middle_of_a_build(cloud, servers,
                                                  record_property):
    compute = cloud.connection(ADMIN).compute
    caught = None
    for attempt in range(3):
        (server_id,) = faults.post_servers(cloud, ['gold'], 'killed')
        servers.append(server_id)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            server = compute.get_server(server_id)
            if server.task_state == 'spawning' and server.compute_host:
                caught = server
                break
            if server.status in cloud_mod.SETTLED:
                break
            time.sleep(0.05)
        if caught:
            break
    assert caught is not None, 'no build caught while spawning'
    service = cloud.compute_service(caught.compute_host)
    killed = time.monotonic()
    cloud.kill(service, signal.SIGKILL)
    restarted = cloud_mod.utcnow()
    # As an init system would.
    cloud.start(service, wait=False)
    settled = cloud.wait_for_servers([caught.id], timeout=KILL_BOUND)
    seconds = time.monotonic() - killed
    record_property('kill_to_settled_seconds', round(seconds, 1))
    print('\nSIGKILL mid-build: %s after %.1f s'
          % (settled[caught.id].status, seconds))
    assert settled[caught.id].status in cloud_mod.SETTLED
    # Nova's init_host sets an interrupted build to ERROR without calling
    # the driver: a deploy that began ends under the ERROR server, which
    # keeps its node until it is deleted, as with Nova's in-tree driver
    # (doc/source/failures.rst says why it is not released before).
    faults.assert_no_node_held_twice(cloud, settled, error_holds=True)
    held = cloud.held_nodes().get(caught.id, [])
    # Until the new process has reported: before, Nova may take the host
    # for down, delete the server in its database alone and leave the
    # node to the restarted service's cleanup (a run failed so).
    cloud.wait_for_computes([caught.compute_host], since=restarted)
    cloud.wait_for_computes(cloud.computes)
    cloud.openstack('server', 'delete', '--wait', caught.id, cloud=ADMIN,
                    parse=False)
    assert caught.id not in cloud.held_nodes()
    for node in held:
        cloud.ironic.wait_for_node(node, provision_state='available',
                                   instance_uuid=None)


def test_sigterm_compute_leaves_the_ring_at_once(cloud, servers,
                                                 record_property):
    """The group is left as Nova begins to stop; adopted later.

    The shard keys move well before membership_timeout (what a crash
    costs); the instances are adopted after takeover_down_after.
    """
    # Each compute offers its own shards' nodes: one that offers silver.
    offers = cloud.offers('CUSTOM_SILVER')
    host = max(cloud.computes, key=lambda h: offers.get(h, 0))
    server = cloud.openstack('server', 'create', '--flavor', 'silver',
                             '--image', 'cirros', '--nic', 'none',
                             '--host', host, '--wait', 'on-stopped',
                             cloud=ADMIN)
    servers.append(server['id'])
    assert server['OS-EXT-SRV-ATTR:host'] == host
    before = {row['Host']: set(row['Shard Keys'])
              for row in cloud.manage('ring', 'show')}
    assert set(before) == set(cloud.computes)
    service = cloud.service(cloud.compute_service(host))
    try:
        with watch.RingWatch(cloud) as ring:
            stopped = time.monotonic()
            signalled = time.time()
            service.send_signal(signal.SIGTERM)
            left_at = ring.when('leave', host)
        service.stop()
        # Nova stops its RPC server (seconds), then waits for the tasks
        # in progress, then calls cleanup_host; the driver left before.
        shutdown = watch.logged_at(service, SHUTDOWN_STARTS)
        leave = watch.logged_at(service, LEAVE_STARTS)
        left, own = left_at - signalled, left_at - leave
        after = {row['Host']: set(row['Shard Keys'])
                 for row in cloud.manage('ring', 'show',
                                         host=cloud.computes[0])}
        # The survivors' rings: the watch on the group (etcd) wakes each
        # at the leave, not at its next member poll.
        seen = [watch.logged_after(cloud.service(cloud.compute_service(h)),
                                   RING_CHANGED, signalled)
                for h in cloud.computes if h != host]
        moved = max(seen) - signalled
        record_property('sigterm_to_survivors_rings_seconds',
                        round(moved, 2))
        record_property('sigterm_to_ring_leave_seconds', round(left, 2))
        record_property('driver_leave_to_ring_leave_seconds', round(own, 2))
        record_property('driver_leave_before_nova_waits_seconds',
                        round(shutdown - leave, 2))
        print('\nSIGTERM: left the ring %.2f s after the signal, %.2f s '
              'after the driver began to leave (membership_timeout %d s)'
              % (left, own, cloud.membership_timeout))
        print('SIGTERM: the survivors\' rings moved %.2f s after the '
              'signal' % moved)
        assert own < LEAVE_BOUND
        # Not at cleanup_host: before Nova even waits for its tasks.
        assert leave < shutdown
        assert moved < left + LEAVE_BOUND
        assert left < cloud.membership_timeout
        assert host not in after
        assert set().union(*after.values()) == set().union(
            *before.values())

        # Nova sees it down after service_down_time, the driver waits
        # takeover_down_after more, then a live service adopts.
        bound = (cloud.service_down_time + cloud.takeover_down_after
                 + 4 * cloud.pool_refresh_interval + 30)
        moved_at, hosts = faults.wait_until_moved(cloud, [server['id']],
                                                  host, bound)
        record_property('sigterm_to_adopted_seconds',
                        round(moved_at - stopped, 1))
        print('adopted by %s after %.1f s'
              % (hosts[server['id']], moved_at - stopped))
        node = cloud.ironic.list_nodes(instance_uuid=server['id'])
        assert len(node) == 1 and node[0]['provision_state'] == 'active'
        # Manageable on its new host.
        cloud.openstack('server', 'reboot', '--wait', server['id'],
                        cloud=ADMIN, parse=False)
    finally:
        if not service.running:
            service.start(wait=False)
        cloud.wait_for_computes([host])


def test_rabbitmq_restart_during_a_burst(cloud, servers, record_property):
    ids = faults.post_servers(cloud, BURST, 'rabbit')
    servers.extend(ids)
    started = time.monotonic()
    cloud.restart('rabbitmq')
    restart = time.monotonic() - started
    settled = cloud.wait_for_servers(ids, timeout=240)
    record_property('rabbitmq_restart_seconds', round(restart, 1))
    record_property('burst_settled_seconds',
                    round(time.monotonic() - started, 1))
    print('\nRabbitMQ restarted in %.1f s; burst %s'
          % (restart, dict(faults.statuses(settled))))
    assert set(faults.statuses(settled)) <= set(cloud_mod.SETTLED)
    faults.assert_no_node_held_twice(cloud, settled)
    cloud.wait_for_computes(cloud.computes)
