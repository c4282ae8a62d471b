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

"""The cloud through the ``openstack`` client, as an operator and a user.

Every command is python-openstackclient (with osc-placement) run as a
subprocess against the multi-process cloud; Ironic is checked on the
side, as its administrator.
"""

import collections
import json
import os
import time

from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing import fleet
from tests.cloud import faults

ADMIN = cloud_mod.ADMIN_CLOUD
SYSTEM = cloud_mod.SYSTEM_CLOUD
# Seconds past one pool refresh and one resource update: the openstack
# client's own start and the computes' other periodic work.
INVENTORY_SLACK = 20
# How long after the server is ACTIVE its port may take to be.
PORT_ACTIVE_TIMEOUT = 30


def boot(cloud, name, flavor, *extra, wait=True):
    args = ['server', 'create', '--flavor', flavor, '--image', 'cirros',
            '--nic', 'none', name] + list(extra)
    if wait:
        args.append('--wait')
    return cloud.openstack(*args)


def node_of(cloud, server_id):
    nodes = cloud.ironic.list_nodes(
        fields=('uuid', 'instance_uuid', 'provision_state', 'power_state',
                'traits', 'properties', 'resource_class'),
        instance_uuid=server_id)
    assert len(nodes) <= 1, nodes
    return nodes[0] if nodes else None


def test_compute_service_list(cloud):
    services = cloud.openstack('compute', 'service', 'list', cloud=ADMIN)
    by_binary = collections.defaultdict(list)
    for service in services:
        by_binary[service['Binary']].append(service)
    computes = by_binary['nova-compute']
    assert sorted(s['Host'] for s in computes) == sorted(cloud.computes)
    assert {(s['Status'], s['State']) for s in computes} == {
        ('enabled', 'up')}
    for binary in ('nova-conductor', 'nova-scheduler'):
        assert [s['State'] for s in by_binary[binary]] == ['up']


def test_hypervisor_list_and_show(cloud):
    hypervisors = cloud.openstack('hypervisor', 'list', cloud=ADMIN)
    # One compute node per service, named after its host.
    assert sorted(h['Hypervisor Hostname'] for h in hypervisors) == sorted(
        cloud.computes)
    assert {h['Hypervisor Type'] for h in hypervisors} == {'ironic'}
    shown = cloud.openstack('hypervisor', 'show', cloud.computes[0],
                            cloud=ADMIN)
    assert shown['hypervisor_hostname'] == cloud.computes[0]
    assert shown['service_host'] == cloud.computes[0]
    assert shown['state'] == 'up'


def test_inventory_equals_ironic(cloud, record_property):
    """Each compute reports every Ironic node of each class as its total.

    Placement trails Ironic: each compute counts its shards at its pool
    refresh, sums the others' counts at its own, and reports the sum at
    its next resource update, and a node being torn down or cleaned
    counts in no capacity.  So the counts are compared once Ironic is at
    rest (an earlier test's deletes), and each compute gets one pool
    refresh and one resource update to catch up.
    """
    at_rest = time.monotonic()
    counts = collections.Counter(
        'CUSTOM_' + node['resource_class'].upper()
        for node in cloud.wait_for_nodes_at_rest())
    providers = {p['name']: p['uuid'] for p in cloud.openstack(
        'resource', 'provider', 'list', cloud=ADMIN)}
    assert sorted(providers) == sorted(cloud.computes)
    bound = (cloud.pool_refresh_interval + cloud.update_resources_interval
             + INVENTORY_SLACK)
    for host, provider in providers.items():
        deadline = time.monotonic() + bound
        while True:
            inventory = cloud.openstack('resource', 'provider', 'inventory',
                                        'list', provider, cloud=ADMIN)
            totals = {row['resource_class']: row['total']
                      for row in inventory}
            if totals == dict(counts) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert totals == dict(counts), host
        for row in inventory:
            assert 0 <= row['reserved'] <= row['total'], (host, row)
            assert row['max_unit'] == 1, (host, row)
    record_property('inventory_caught_up_seconds',
                    round(time.monotonic() - at_rest, 1))


def test_server_lifecycle_with_trait_and_capability(cloud, servers):
    """Boot by trait and by capability, then every action.

    List, show, reboot, stop, start, rebuild, delete, each checked on
    both sides.
    """
    gpu = boot(cloud, 'gpu-1', 'gold-gpu')
    uefi = boot(cloud, 'uefi-1', 'silver-uefi')
    servers.extend([gpu['id'], uefi['id']])
    assert (gpu['status'], uefi['status']) == ('ACTIVE', 'ACTIVE')
    gpu_node = node_of(cloud, gpu['id'])
    assert fleet.GPU_TRAIT in gpu_node['traits']
    assert gpu_node['resource_class'] == 'gold'
    uefi_node = node_of(cloud, uefi['id'])
    assert 'boot_mode:uefi' in uefi_node['properties']['capabilities']
    assert (gpu_node['provision_state'], uefi_node['provision_state']) == (
        'active', 'active')

    listed = {s['ID']: s for s in cloud.openstack('server', 'list')}
    assert {gpu['id'], uefi['id']} <= set(listed)
    assert listed[gpu['id']]['Status'] == 'ACTIVE'
    shown = cloud.openstack('server', 'show', gpu['id'], cloud=ADMIN)
    assert shown['OS-EXT-SRV-ATTR:hypervisor_hostname'] in cloud.computes

    cloud.openstack('server', 'reboot', '--wait', gpu['id'], parse=False)
    assert node_of(cloud, gpu['id'])['power_state'] == 'power on'

    cloud.openstack('server', 'stop', gpu['id'], parse=False)
    stopped = cloud.wait_for_servers([gpu['id']], settled=('SHUTOFF',))
    assert stopped[gpu['id']].power_state == 4  # Nova's SHUTDOWN
    assert node_of(cloud, gpu['id'])['power_state'] == 'power off'
    cloud.openstack('server', 'start', gpu['id'], parse=False)
    cloud.wait_for_servers([gpu['id']], settled=('ACTIVE',))
    assert node_of(cloud, gpu['id'])['power_state'] == 'power on'

    # At the client's default microversion (Nova asks every rebuild from
    # 2.93 on to re-image a boot volume).
    cloud.openstack('server', 'rebuild', '--image', 'cirros', '--wait',
                    gpu['id'], parse=False)
    # What the client prints is the server as the request left it.
    assert cloud.openstack('server', 'show', gpu['id'])['status'] == (
        'ACTIVE')
    after = node_of(cloud, gpu['id'])
    assert (after['uuid'], after['provision_state']) == (
        gpu_node['uuid'], 'active')

    cloud.openstack('server', 'delete', '--wait', gpu['id'], uefi['id'],
                    parse=False)
    assert node_of(cloud, gpu['id']) is None
    for node in (gpu_node, uefi_node):
        cloud.ironic.wait_for_node(node['uuid'], provision_state='available',
                                   instance_uuid=None)


def test_burst_over_capacity(cloud, servers):
    """More bronze servers than bronze nodes, in one request.

    Nova's scheduler places a request for N servers whole or not at all,
    and placement offers exactly the free bronze nodes: every server
    ends ERROR with "No valid host", as with the in-tree driver, none
    hangs and none holds a node.
    """
    nodes = cloud.layout.group('bronze').count
    wanted = nodes + 2
    cloud.openstack('server', 'create', '--flavor', 'bronze', '--image',
                    'cirros', '--nic', 'none', '--min', wanted, '--max',
                    wanted, 'burst', parse=False)
    ids = [s['ID'] for s in cloud.openstack('server', 'list', '--name',
                                            '^burst')]
    servers.extend(ids)
    assert len(ids) == wanted
    settled = cloud.wait_for_servers(ids)
    assert collections.Counter(s.status for s in settled.values()) == {
        'ERROR': wanted}
    for server in settled.values():
        assert 'No valid host' in faults.fault_of(server), server.fault
    assert not set(cloud.held_nodes()) & set(ids)


def test_boot_with_a_port_on_the_flat_network(cloud, servers):
    """A port on the shared flat network works.

    ML2 with networking-baremetal's mechanism driver: Neutron allocates
    the port, the server is ACTIVE, the deploy plugged the port in (the
    cloud's fake deploy does as the ``neutron`` network interface's, see
    doc/source/cloud.rst): networking-baremetal bound it to the node and
    Neutron made it ACTIVE.  The delete releases it.
    """
    assert cloud.network_id is not None
    server = cloud.openstack('server', 'create', '--flavor', 'silver',
                             '--image', 'cirros', '--network', 'baremetal',
                             '--wait', 'with-port')
    servers.append(server['id'])
    assert server['status'] == 'ACTIVE'
    ports = cloud.openstack('port', 'list', '--device-id', server['id'],
                            cloud=ADMIN)
    assert len(ports) == 1
    assert ports[0]['Fixed IP Addresses'][0]['ip_address'].startswith(
        '192.0.2.')
    deadline = time.monotonic() + PORT_ACTIVE_TIMEOUT
    while True:
        port = cloud.openstack('port', 'show', ports[0]['ID'], cloud=ADMIN)
        if port['status'] == 'ACTIVE' or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert (port['status'], port['binding_host_id'],
            port['binding_vnic_type']) == (
        'ACTIVE', node_of(cloud, server['id'])['uuid'], 'baremetal')
    cloud.openstack('server', 'delete', '--wait', server['id'], parse=False)
    assert cloud.openstack('port', 'list', '--device-id', server['id'],
                           cloud=ADMIN) == []


def test_a_port_group_is_a_bond_in_the_config_drive(cloud, servers):
    """A real boot's config drive bonds the node's port group.

    Every fake node has a port group of two ports.  Ironic's noop network
    interface records no VIF on them, so each free node's port group
    names the server's port in ``extra`` (Ironic reads that too; the
    claim picks one of them).  Nova builds the drive with the cloud's
    mkisofs, named as genisoimage names it, so Ironic's conductor checks
    its network data as in production: it must keep the drive (it
    replaces network data with a link without an MTU).  The drive Ironic
    stored is read back from its database.
    """
    ironic_log = cloud.ironic.server.log_path
    offset = os.path.getsize(ironic_log)
    port = cloud.openstack('port', 'create', '--network', 'baremetal',
                           'bonded')
    vif_path = '/extra/vif_port_id'
    free = {n['uuid'] for n in cloud.ironic.list_nodes(
        provision_state='available')}
    # One listing: every node has one port group.
    groups = {g['node_uuid']: g['uuid'] for g in cloud.ironic.request(
        'GET', '/v1/portgroups', params={
            'fields': 'uuid,node_uuid'}).json()['portgroups']
        if g['node_uuid'] in free}
    for group in groups.values():
        cloud.ironic.request('PATCH', '/v1/portgroups/%s' % group,
                             json=[{'op': 'add', 'path': vif_path,
                                    'value': port['id']}])
    try:
        server = cloud.openstack(
            'server', 'create', '--flavor', 'silver', '--image', 'cirros',
            '--port', port['id'], '--config-drive', 'True', '--wait',
            'bonded')
        servers.append(server['id'])
        assert server['status'] == 'ACTIVE'
        node = node_of(cloud, server['id'])['uuid']
        network_data = json.loads(cloud.ironic.config_drive_file(
            node, '/openstack/latest/network_data.json'))
    finally:
        for group in groups.values():
            cloud.ironic.request('PATCH', '/v1/portgroups/%s' % group,
                                 json=[{'op': 'remove', 'path': vif_path}])
    group = cloud.ironic.request(
        'GET', '/v1/portgroups/%s' % groups[node]).json()
    members = {p['uuid']: p['address'] for p in cloud.ironic.request(
        'GET', '/v1/ports', params={'portgroup': groups[node]}).json()[
            'ports']}
    (bond,) = [link for link in network_data['links']
               if link.get('vif_id') == port['id']]
    assert (bond['type'], bond['bond_mode'], bond['bond_miimon'],
            bond['ethernet_mac_address'], sorted(bond['bond_links'])) == (
        'bond', '802.3ad', '100', group['address'], sorted(members))
    assert {link['id']: link['ethernet_mac_address']
            for link in network_data['links']
            if link['id'] in members} == members
    # The server's address, on the bond.
    (network,) = network_data['networks']
    assert (network['link'], network['ip_address']) == (
        bond['id'], port['fixed_ips'][0]['ip_address'])
    # Ironic read the network data and kept it.
    with open(ironic_log, errors='replace') as log:
        log.seek(offset)
        checked = [line for line in log if node in line and (
            'network_data.json' in line or 'regenerated' in line)]
    assert checked == [], checked
    cloud.openstack('server', 'delete', '--wait', server['id'], parse=False)
    cloud.openstack('port', 'delete', port['id'], parse=False)


def _wait_for_port(cloud, port_id, done, timeout=120):
    """``openstack port show`` until ``done(port)``; returns the port."""
    deadline = time.monotonic() + timeout
    while True:
        port = cloud.openstack('port', 'show', port_id, cloud=ADMIN)
        if done(port):
            return port
        assert time.monotonic() < deadline, port
        time.sleep(1)


def test_an_attached_port_is_bound_to_its_node(cloud, servers):
    """``server add port`` on an active server: the port becomes ACTIVE.

    As on a bare metal cloud with switches: the driver attaches the VIF
    in Ironic, Ironic's flat network interface binds the Neutron port to
    the node and its NIC's switch port, networking-baremetal binds it
    (the ironic-neutron-agent has reported the node's physical network)
    and tells the switch, and Neutron makes it ACTIVE.  ``server remove
    port`` detaches the VIF and unbinds the port.
    """
    server = boot(cloud, 'attach', 'silver')
    servers.append(server['id'])
    node = node_of(cloud, server['id'])['uuid']
    port = cloud.openstack('port', 'create', '--network', 'baremetal',
                           'attached')
    cloud.openstack('server', 'add', 'port', server['id'], port['id'],
                    parse=False)
    bound = _wait_for_port(cloud, port['id'],
                           lambda p: p['status'] == 'ACTIVE')
    # Ironic puts a VIF on a port group (the bond) before a lone NIC.
    (bond,) = [g for g in cloud.ironic.request(
        'GET', '/v1/portgroups', params={'node': node, 'detail': True}).json()[
            'portgroups'] if g['internal_info'].get('tenant_vif_port_id')
        == port['id']]
    links = [p['local_link_connection'] for p in cloud.ironic.request(
        'GET', '/v1/ports', params={'portgroup': bond['uuid'],
                                    'detail': True}).json()['ports']]
    assert (bound['binding_host_id'], bound['binding_vnic_type'],
            bound['binding_vif_type'], bound['device_id'],
            bound['mac_address']) == (node, 'baremetal', 'other',
                                      server['id'], bond['address'])
    profile = bound['binding_profile']
    assert sorted(profile['local_link_information'],
                  key=lambda link: link['port_id']) == sorted(
        links, key=lambda link: link['port_id'])
    assert profile['local_group_information']['bond_mode'] == '802.3ad'
    assert cloud.ironic.request('GET', '/v1/nodes/%s/vifs' % node).json()[
        'vifs'] == [{'id': port['id']}]
    # The switch was told: networking-baremetal called its driver.
    with open(os.path.join(cloud.log_dir, 'neutron-api.log')) as log:
        (told,) = [line for line in log if 'join flat network' in line
                   and port['id'] in line]
    assert all(link['port_id'] in told for link in links)

    cloud.openstack('server', 'remove', 'port', server['id'], port['id'],
                    parse=False)
    unbound = _wait_for_port(cloud, port['id'],
                             lambda p: not p['device_id'])
    assert (unbound['status'], unbound['binding_host_id']) == ('DOWN', '')
    assert cloud.ironic.request('GET', '/v1/nodes/%s/vifs' % node).json()[
        'vifs'] == []
    cloud.openstack('server', 'delete', '--wait', server['id'], parse=False)
    cloud.openstack('port', 'delete', port['id'], parse=False)


def test_instance_info_says_whose_server_it_is(cloud, servers):
    """Ironic's node says whose server it runs, as the in-tree driver's.

    ``instance_info`` names the project and user, the addresses and the
    disk; a flavor with an ephemeral disk gets ``ephemeral0`` in the
    metadata of the config drive (``block-device-mapping``), which
    cloud-init mounts.
    """
    admin = cloud.connection()
    silver = admin.compute.get_flavor(cloud.flavors['silver'])
    flavor = admin.compute.create_flavor(
        name='silver-ephemeral', ram=4096, vcpus=2, disk=40, ephemeral=1,
        is_public=True)
    try:
        admin.compute.post(
            '/flavors/%s/os-extra_specs' % flavor.id,
            json={'extra_specs': silver.extra_specs},
            microversion=cloud_mod.EXTRA_SPECS_MICROVERSION
        ).raise_for_status()
        server = cloud.openstack(
            'server', 'create', '--flavor', 'silver-ephemeral', '--image',
            'cirros', '--network', 'baremetal', '--config-drive', 'True',
            '--wait', 'whose-1')
        servers.append(server['id'])
        (address,) = cloud.openstack(
            'server', 'show', server['id'])['addresses']['baremetal']
        node = node_of(cloud, server['id'])
        (found,) = cloud.ironic.list_nodes(
            fields=('uuid', 'instance_info', 'properties'),
            instance_uuid=server['id'])
        info = found['instance_info']
        assert (info['project_name'], info['user_name'],
                info['display_name'], info['flavor_name']) == (
            'demo', 'demo', 'whose-1', 'silver-ephemeral')
        assert address in info['fixed_ips']
        assert info['floating_ips'] == '[]'
        # Cirros names no kernel: Ironic reads the type from the deploy,
        # as it would have from Glance.
        assert info['image_type'] == 'whole-disk'
        assert info['local_gb'] == str(found['properties'].get('local_gb',
                                                               0))
        meta = json.loads(cloud.ironic.config_drive_file(
            node['uuid'], '/ec2/latest/meta-data.json'))
        # Named after Nova's block device mapping of the flavor's
        # ephemeral disk, as with the in-tree driver.
        assert meta['block-device-mapping']['ephemeral0']
    finally:
        admin.compute.delete_flavor(flavor)
