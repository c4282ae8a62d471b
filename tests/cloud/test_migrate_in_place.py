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
read from the runbook.  The first apply is killed half way (its
nova-compute gets SIGKILL once it has moved a server) and run again once
the compute is back: it finishes, and moves nothing twice.  The servers
stay ACTIVE on the same nodes and hosts, Ironic gets no provision or
power request for their nodes, placement keeps only the services'
providers, and a server then reboots, stops, starts and rebuilds through
the ``openstack`` client.  Then the way back, as "Moving back" says:
``migrate rollback --from HOST`` per host, and both computes switched
back to the in-tree driver, which takes the servers on (ACTIVE, on their
nodes, one provider per node, still no provision or power request) and
deletes them.
"""

import collections
import os
import signal
import subprocess
import time

import pytest

from ironic_multi._reservation import requirements
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


def runbook_commands(title='Moving the servers in place'):
    """The arguments of a section's commands, as migration.rst has them.

    The section runs from its title to the paragraph on its tests.
    """
    with open(RUNBOOK) as f:
        text = f.read()
    section = text.split('\n%s\n' % title)[1].split(
        '\nThe functional tests ')[0]
    return [line.strip()[len(COMMAND):].split()
            for line in section.splitlines()
            if line.strip().startswith(COMMAND)]


def _host_arg(args, host):
    return [host if arg == 'HOST' else arg for arg in args]


def _kill_half_way(cloud, host, apply_args):
    """Run ``apply``; SIGKILL it and the host's compute once one moved.

    Placement is paused (SIGSTOP) around the kill: the next server's
    first write waits on it, so the kill lands after the first server's
    mark moved and before the last server moved.  The ``apply`` process
    goes too: left waiting, the restarted compute would answer its
    request.
    """
    service = cloud.compute_service(host)
    log_path = cloud.service(service).log_path
    offset = os.path.getsize(log_path)
    apply = subprocess.Popen(
        [cloud.python, '-c', cloud_mod.MANAGE, '--config-file',
         nova.compute_config_path(cloud, host)]
        + _host_arg(apply_args, host) + ['--timeout', '60', '-f', 'json'],
        env=cloud.env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        marker = 'Host %s adopted instance' % host
        while True:
            with open(log_path, errors='replace') as f:
                f.seek(offset)
                if marker in f.read():
                    break
            assert time.monotonic() < deadline, 'no %r in %s' % (marker,
                                                                 log_path)
            time.sleep(0.01)
        cloud.kill('placement', signal.SIGSTOP)
        try:
            apply.kill()
            cloud.kill(service)
        finally:
            cloud.kill('placement', signal.SIGCONT)
    finally:
        apply.kill()
        apply.wait(30)
    return service


def _adoptions(cloud, host, server_id):
    """How often the host's compute logged the end of a server's move."""
    with open(cloud.service(cloud.compute_service(host)).log_path,
              errors='replace') as f:
        return sum(1 for line in f
                   if 'ironic_multi._virt.takeover' in line
                   and 'adopted instance %s' % server_id in line)


def _apply_again(cloud, host, apply_args, timeout=120):
    """``apply`` once the killed service's lock of the host has expired."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return cloud.manage(*_host_arg(apply_args, host), '--timeout',
                                60, host=host)
        except cloud_mod.CloudError as e:
            if ('another service is adopting them now' not in str(e)
                    or time.monotonic() > deadline):
                raise
        time.sleep(2)


def _wait_for_ring(cloud, timeout=120):
    # As the runbook says: each switched service is in the ring (it joins
    # the coordination group at start; a busy etcd may make it retry).
    deadline = time.monotonic() + timeout
    while not set(cloud.computes) <= {
            row['Host'] for row in cloud.manage('ring', 'show')}:
        assert time.monotonic() < deadline, cloud.manage('ring', 'show')
        time.sleep(2)


def _switch(cloud, driver):
    """Stop each compute, give it ``driver``, start it."""
    cloud.compute_driver = driver
    for host in cloud.computes:
        service = cloud.compute_service(host)
        cloud.stop(service)
        nova.compute_config(cloud, host)
        last_start = cloud_mod.utcnow()
        cloud.start(service, wait=False)
    cloud.wait_for_computes(cloud.computes, since=last_start)


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


def _in_tree_servers(cloud, record_property):
    """The servers the in-tree driver runs before the move: all ACTIVE.

    A build the in-tree driver fails ("Failure prepping block device",
    now and then) is not what this test is about: its fault is recorded,
    the server deleted and booted again, once.
    """
    ids = faults.post_servers(cloud, FLAVORS, 'in-tree')
    settled = cloud.wait_for_servers(ids)
    failed = {i: faults.fault_of(s) for i, s in settled.items()
              if s.status != 'ACTIVE'}
    if failed:
        record_property('in_tree_build_faults', failed)
        compute = cloud.connection(ADMIN).compute
        for server_id in failed:
            compute.delete_server(server_id)
        cloud.wait_for_deleted(list(failed))
        cloud.wait_for_capacity()
        # As an operator would after "not mapped to any cell": an in-tree
        # compute that took its nodes late is mapped now.
        nova.discover_hosts(cloud, cloud.nova_conf)
        flavors = [FLAVORS[ids.index(i)] for i in failed]
        again = faults.post_servers(cloud, flavors, 'in-tree-again')
        settled = {i: s for i, s in settled.items() if i not in failed}
        settled.update(cloud.wait_for_servers(again))
        ids = [i for i in ids if i not in failed] + again
    assert faults.statuses(settled) == {'ACTIVE': len(ids)}, {
        i: (s.status, faults.fault_of(s)) for i, s in settled.items()}
    return ids, settled


def test_the_runbook_moves_every_server_in_place(in_tree_cloud,
                                                 record_property):
    cloud = in_tree_cloud
    cloud.wait_for_capacity()
    ids, settled = _in_tree_servers(cloud, record_property)
    held = {server_id: nodes[0] for server_id, nodes in
            cloud.held_nodes().items() if server_id in ids}
    hosts = {server_id: server.compute_host
             for server_id, server in settled.items()}
    assert set(hosts.values()) <= set(cloud.computes)

    # The switch, host by host: stop, change compute_driver, start.
    switched = time.time()
    _switch(cloud, nova.COMPUTE_DRIVER)
    _wait_for_ring(cloud)

    plan_args, apply_args = runbook_commands()
    assert (plan_args, apply_args) == (['migrate', 'plan'], [
        'migrate', 'apply', '--from', 'HOST'])
    rows = cloud.manage(*plan_args)
    plan = [row for row in rows if row['Instance']]
    # Each host the plan names: a host without servers has in-tree compute
    # nodes to remove ("removed" rows).
    from_hosts = sorted({row['From'] for row in rows})
    assert sorted(row['Instance'] for row in plan) == sorted(ids)
    assert {(row['Outcome'], row['From'] == row['To']) for row in plan} == {
        ('moves', True)}, plan

    # The host with the most servers: its apply is killed half way.
    compute = cloud.connection(ADMIN).compute
    busiest = max(sorted(set(hosts.values())),
                  key=lambda h: list(hosts.values()).count(h))
    on_busiest = sorted(s for s, h in hosts.items() if h == busiest)
    assert len(on_busiest) >= 2, hosts
    service = _kill_half_way(cloud, busiest, apply_args)
    moved = {s for s in on_busiest
             if compute.get_server(s).hypervisor_hostname == busiest}
    record_property('moved_before_the_kill', len(moved))
    assert len(moved) < len(on_busiest), (moved, on_busiest)
    restarted = cloud_mod.utcnow()
    cloud.start(service)
    # Up with the restarted process's own report: "apply" asks the
    # service, which refuses while Nova reports its host down.
    cloud.wait_for_computes([busiest], since=restarted)
    _wait_for_ring(cloud)

    started = time.monotonic()
    adopted = []
    for host in from_hosts:
        answer = _apply_again(cloud, host, apply_args)
        assert (answer['Host'], answer['Skipped']) == (host, {}), answer
        adopted += answer['Adopted']
    record_property('apply_seconds', round(time.monotonic() - started, 1))
    # Nothing moved twice: the second run took only what the first left,
    # and no server's move ended twice (the one in flight at the kill may
    # have ended in nova-conductor, unlogged).
    assert set(adopted) <= set(ids) - moved
    assert max(_adoptions(cloud, hosts[s], s) for s in ids) == 1
    # As the runbook's check: nothing left to move or remove.
    assert cloud.manage(*plan_args) == []

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
    # Placement's usage is Ironic's: one unit of its class per held node.
    used = collections.Counter()
    for provider in providers:
        for row in cloud.openstack('resource', 'provider', 'usage', 'show',
                                   provider['uuid'], cloud=ADMIN):
            used[row['resource_class']] += row['usage']
    assert +used == collections.Counter(
        requirements.normalize_resource_class(
            cloud.ironic.get_node(n)['resource_class'])
        for n in held.values())

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
    cloud.openstack('server', 'delete', '--wait', first, parse=False)
    cloud.ironic.wait_for_node(held[first], provision_state='available',
                               instance_uuid=None)
    kept = ids[1:]

    # And back, as "Moving back" says.
    rolled = time.time()
    (rollback_args,) = runbook_commands('Moving back')
    assert rollback_args == ['migrate', 'rollback', '--from', 'HOST']
    back = []
    for host in cloud.computes:
        answer = cloud.manage(*_host_arg(rollback_args, host), '--timeout',
                              60, host=host)
        assert (answer['Skipped'], answer['Remaining']) == ({}, 0), answer
        back += answer['Rolled Back']
    assert sorted(back) == sorted(kept)
    _switch(cloud, nova.IN_TREE_DRIVER)
    nodes = sorted(n['uuid'] for n in cloud.ironic.list_nodes())
    deadline = time.monotonic() + 120
    while sorted(p['name'] for p in cloud.openstack(
            'resource', 'provider', 'list', cloud=ADMIN)) != nodes:
        # The in-tree computes add the free nodes' providers and remove
        # this driver's at their first resource update.
        assert time.monotonic() < deadline
        time.sleep(2)
    for server_id in kept:
        server = compute.get_server(server_id)
        assert (server.status, server.compute_host,
                server.hypervisor_hostname) == (
            'ACTIVE', hosts[server_id], held[server_id])
    assert _provision_or_power(cloud, held.values(), rolled) == []
    cloud.openstack('server', 'reboot', '--wait', kept[0], parse=False)
    cloud.openstack('server', 'delete', '--wait', *kept, cloud=ADMIN,
                    parse=False)
    for node in held.values():
        cloud.ironic.wait_for_node(node, provision_state='available',
                                   instance_uuid=None)
