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

"""A cloud of Nova's in-tree Ironic driver moves to this one in place.

A cloud of its own (the session's runs this driver): two nova-compute
processes with ``compute_driver = ironic.IronicDriver`` boot servers of
two flavors.  Then the runbook of doc/source/migration.rst, as written:
each compute is stopped, switched to this driver and started; ``migrate
plan``, then ``migrate apply --from HOST`` per host, their command lines
read from the runbook.  The servers stay
ACTIVE on the same nodes and hosts, Ironic gets no provision or power
request for their nodes, placement keeps only the services' providers,
and the servers then reboot, stop, start, rebuild and are deleted through
the ``openstack`` client.
"""

import os
import time

import pytest

from ironic_multi.testing.chaos import logscan
from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import nova
from tests.cloud import faults

ADMIN = cloud_mod.ADMIN_CLOUD
FLAVORS = ('gold', 'silver', 'gold', 'silver')
RUNBOOK = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                       'doc', 'source', 'migration.rst')
# How the runbook's command lines start; the cloud gives each compute's
# own configuration file.
COMMAND = 'ironic-multi-manage --config-file /etc/nova/nova.conf '


def runbook_commands():
    """The arguments of the cut-over's commands, as migration.rst has them."""
    with open(RUNBOOK) as f:
        text = f.read()
    section = text.split('\nMoving the servers in place\n')[1].split(
        '\nThe functional tests run')[0]
    return [line.strip()[len(COMMAND):].split()
            for line in section.splitlines()
            if line.strip().startswith(COMMAND)]


@pytest.fixture(scope='module')
def in_tree_cloud(record_testsuite_property):
    with cloud_mod.Cloud(computes=2, nodes=8,
                         compute_driver=nova.IN_TREE_DRIVER) as cloud:
        record_testsuite_property('in_tree_cloud_start_seconds',
                                  round(cloud.start_seconds, 1))
        yield cloud


def _provision_or_power(cloud, nodes, since):
    return [(method, path, status) for _wall, method, path, status in
            logscan.node_writes(cloud.log_dir, set(nodes), since)
            if '/states/provision' in path or '/states/power' in path]


def test_the_runbook_moves_every_server_in_place(in_tree_cloud,
                                                 record_property):
    cloud = in_tree_cloud
    cloud.wait_for_capacity()
    ids = faults.post_servers(cloud, FLAVORS, 'in-tree')
    settled = cloud.wait_for_servers(ids)
    assert faults.statuses(settled) == {'ACTIVE': len(ids)}, settled
    held = {server_id: nodes[0] for server_id, nodes in
            cloud.held_nodes().items() if server_id in ids}
    hosts = {server_id: server.compute_host
             for server_id, server in settled.items()}
    assert set(hosts.values()) <= set(cloud.computes)

    # The switch, host by host: stop, change compute_driver, start.
    switched = time.time()
    cloud.compute_driver = nova.COMPUTE_DRIVER
    for host in cloud.computes:
        service = cloud.compute_service(host)
        cloud.stop(service)
        nova.compute_config(cloud, host)
        cloud.start(service, wait=False)
    cloud.wait_for_computes(cloud.computes)
    # As the runbook says: each switched service is in the ring (it joins
    # the coordination group at start; a busy etcd may make it retry).
    deadline = time.monotonic() + 120
    while not set(cloud.computes) <= {
            row['Host'] for row in cloud.manage('ring', 'show')}:
        assert time.monotonic() < deadline, cloud.manage('ring', 'show')
        time.sleep(2)

    plan_args, apply_args = runbook_commands()
    assert (plan_args, apply_args) == (['migrate', 'plan'], [
        'migrate', 'apply', '--from', 'HOST'])
    plan = [row for row in cloud.manage(*plan_args) if row['Instance']]
    assert sorted(row['Instance'] for row in plan) == sorted(ids)
    assert {(row['Outcome'], row['From'] == row['To']) for row in plan} == {
        ('moves', True)}, plan

    started = time.monotonic()
    adopted = []
    for host in sorted(set(hosts.values())):
        answer = cloud.manage(*[host if arg == 'HOST' else arg
                                for arg in apply_args],
                              '--timeout', 60, host=host)
        assert (answer['Host'], answer['Skipped']) == (host, {}), answer
        adopted += answer['Adopted']
    record_property('apply_seconds', round(time.monotonic() - started, 1))
    assert sorted(adopted) == sorted(ids)

    compute = cloud.connection(ADMIN).compute
    for server_id in ids:
        server = compute.get_server(server_id)
        assert (server.status, server.compute_host,
                server.hypervisor_hostname) == (
            'ACTIVE', hosts[server_id], hosts[server_id])
    assert {s: n[0] for s, n in cloud.held_nodes().items()
            if s in ids} == held
    for node in held.values():
        shown = cloud.ironic.get_node(node)
        assert (shown['provision_state'], shown['power_state']) == (
            'active', 'power on'), shown
    assert _provision_or_power(cloud, held.values(), switched) == []
    providers = cloud.openstack('resource', 'provider', 'list', cloud=ADMIN)
    assert sorted(p['name'] for p in providers) == sorted(cloud.computes)

    # Managed by this driver now, through the openstack client.
    first = ids[0]
    cloud.openstack('server', 'reboot', '--wait', first, parse=False)
    cloud.openstack('server', 'stop', first, parse=False)
    cloud.wait_for_servers([first], settled=('SHUTOFF',))
    assert cloud.ironic.get_node(held[first])['power_state'] == 'power off'
    cloud.openstack('server', 'start', first, parse=False)
    cloud.wait_for_servers([first], settled=('ACTIVE',))
    cloud.openstack('server', 'rebuild', '--image', 'cirros', '--wait',
                    first, parse=False)
    assert cloud.held_nodes()[first] == [held[first]]
    cloud.openstack('server', 'delete', '--wait', *ids, cloud=ADMIN,
                    parse=False)
    for node in held.values():
        cloud.ironic.wait_for_node(node, provision_state='available',
                                   instance_uuid=None)
