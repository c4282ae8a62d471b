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

"""What the fault and elasticity tests share: bursts, hosts, moves."""

import collections
import time

from ironic_multi.testing.cloud import cloud as cloud_mod

ADMIN = cloud_mod.ADMIN_CLOUD


def post_servers(cloud, flavors, prefix):
    """POST one server per flavor name as the demo user; no waiting."""
    compute = cloud.connection(cloud_mod.DEMO_CLOUD).compute
    return [compute.create_server(
        name='%s-%d' % (prefix, index), flavor_id=cloud.flavors[flavor],
        image_id=cloud.image_id, networks='none').id
        for index, flavor in enumerate(flavors)]


def assert_no_node_held_twice(cloud, settled, error_holds=False):
    """ACTIVE servers hold one node each, no node is held twice.

    ERROR ones hold none (with ``error_holds``, at most one).
    """
    held = cloud.held_nodes()
    for server_id, server in settled.items():
        if server.status == 'ACTIVE':
            assert len(held.get(server_id, ())) == 1, (server_id, held)
        elif error_holds:
            assert len(held.get(server_id, ())) <= 1, (server_id, held)
        else:
            assert server_id not in held, (server_id, held)
    nodes = [n for ns in held.values() for n in ns]
    assert len(nodes) == len(set(nodes)), held


def statuses(settled):
    return collections.Counter(s.status for s in settled.values())


def fault_of(server):
    """The message of the server's fault (Nova's reason for ERROR)."""
    return (server.fault or {}).get('message')


def hosts_of(cloud, server_ids):
    compute = cloud.connection(ADMIN).compute
    return {i: compute.get_server(i).compute_host for i in server_ids}


def wait_until_moved(cloud, server_ids, away_from, timeout):
    """Until no server is on ``away_from``; returns the moment."""
    deadline = time.monotonic() + timeout
    while True:
        hosts = hosts_of(cloud, server_ids)
        if away_from not in hosts.values():
            return time.monotonic(), hosts
        if time.monotonic() > deadline:
            raise AssertionError('still on %s after %d s: %s' % (
                away_from, timeout, hosts))
        time.sleep(0.5)
