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

import base64
import gzip
import json
from unittest import mock

from nova.network import model as network_model
from nova.virt import netutils
import pytest

from ironic_multi import _configdrive
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._virt import metadata
from ironic_multi import exception
from tests.unit.virt import fakes


def patch_values(patch):
    assert all(op['op'] == 'add' for op in patch)
    return {op['path']: op['value'] for op in patch}


def test_requirements_from_flavor_image_and_project():
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'trait:CUSTOM_RAID': 'required',
                                  'capabilities:boot_mode': 'uefi'})))
    reqs = metadata.requirements_for(inst, fakes.image_meta(
        **{'trait:CUSTOM_IMAGE': 'required'}))
    assert reqs.resource_class == 'CUSTOM_BAREMETAL'
    assert reqs.required_traits == {'CUSTOM_RAID', 'CUSTOM_IMAGE'}
    assert reqs.project_id == 'project'
    # The standard resources are zeroed: no size minimums.
    assert reqs.minimums == ()


def test_requirements_name_the_bad_key():
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'trait:CUSTOM_X': 'maybe'})))
    with pytest.raises(exception.InvalidRequestSpec) as e:
        metadata.requirements_for(inst, fakes.image_meta())
    assert 'trait:CUSTOM_X' in str(e.value)


def deployment(inst, image_meta=None, **kwargs):
    image_meta = image_meta or fakes.image_meta()
    reqs = metadata.requirements_for(inst, image_meta)
    return metadata.deployment_for(inst, image_meta, reqs, fakes.HOST,
                                   **kwargs)


def test_deployment_for():
    inst = fakes.instance(flavor=fakes.flavor(
        dict(fakes.BAREMETAL_SPECS, **{'capabilities:boot_mode': 'uefi'}),
        ephemeral_gb=10, swap=512))
    found = deployment(inst, network_info=[{'id': 'vif-1'}, {'id': 'vif-2'}])
    assert found.instance_uuid == fakes.INSTANCE
    assert found.host == fakes.HOST
    assert found.image_source == fakes.IMAGE
    assert found.vifs == ('vif-1', 'vif-2')
    assert found.configdrive is None
    assert found.instance_info == {
        'root_gb': '40',
        'swap_mb': '512',
        'ephemeral_gb': '10',
        'vcpus': '2',
        'memory_mb': '4096',
        'flavor_name': 'baremetal',
        'display_name': 'server-1',
        'project_id': 'project',
        'project_name': 'N/A',
        'user_id': 'user',
        'user_name': 'N/A',
        'fixed_ips': '[]',
        'floating_ips': '[]',
        'capabilities': json.dumps({'boot_mode': 'uefi'}),
        'image_type': 'whole-disk',
    }


def test_deployment_names_the_owner_and_the_addresses_as_in_tree():
    inst = fakes.instance(system_metadata={
        'owner_project_name': 'demo', 'owner_user_name': 'alice'})
    address = network_model.FixedIP(address='10.0.0.5', floating_ips=[
        network_model.IP(address='203.0.113.9', type='floating')])
    vif = network_model.VIF(id='vif-1', network=network_model.Network(
        subnets=[network_model.Subnet(cidr='10.0.0.0/24', ips=[address])]))
    network_info = network_model.NetworkInfo([vif])
    info = deployment(inst, network_info=network_info).instance_info
    assert (info['project_name'], info['user_name']) == ('demo', 'alice')
    # The same text Nova's in-tree driver writes (its patcher).
    assert info['fixed_ips'] == str(network_info.fixed_ips())
    assert info['floating_ips'] == str(network_info.floating_ips())
    assert '10.0.0.5' in info['fixed_ips']
    assert '203.0.113.9' in info['floating_ips']


def test_the_nodes_local_gb_goes_with_the_deploy():
    node = {'properties': {'local_gb': 930, 'cpus': 8}}
    values = patch_values(deploy.instance_info_patch(
        deployment(fakes.instance()), node=node))
    assert values['/instance_info/local_gb'] == '930'
    assert patch_values(deploy.instance_info_patch(
        deployment(fakes.instance()), node={'properties': {}}))[
            '/instance_info/local_gb'] == '0'


def test_deployment_as_the_ironic_provider_writes_it():
    inst = fakes.instance(flavor=fakes.flavor(
        dict(fakes.BAREMETAL_SPECS, **{'capabilities:boot_mode': 'uefi'}),
        ephemeral_gb=10, swap=512))
    values = patch_values(deploy.instance_info_patch(deployment(inst)))
    assert values == {
        '/instance_info/image_source': fakes.IMAGE,
        '/instance_info/root_gb': '40',
        '/instance_info/swap_mb': '512',
        '/instance_info/ephemeral_gb': '10',
        '/instance_info/vcpus': '2',
        '/instance_info/memory_mb': '4096',
        '/instance_info/flavor_name': 'baremetal',
        '/instance_info/display_name': 'server-1',
        '/instance_info/project_id': 'project',
        '/instance_info/project_name': 'N/A',
        '/instance_info/user_id': 'user',
        '/instance_info/user_name': 'N/A',
        '/instance_info/fixed_ips': '[]',
        '/instance_info/floating_ips': '[]',
        '/instance_info/image_type': 'whole-disk',
        '/instance_info/nova_host_id': fakes.HOST,
        '/instance_info/capabilities': json.dumps({'boot_mode': 'uefi'}),
    }


def test_deployment_names_the_required_traits():
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'trait:CUSTOM_RAID': 'required',
                                  'trait:CUSTOM_SLOW': 'forbidden'})))
    info = deployment(inst, fakes.image_meta(
        **{'trait:CUSTOM_IMAGE': 'required'})).instance_info
    # Ironic picks deploy templates by them.
    assert info['traits'] == ['CUSTOM_IMAGE', 'CUSTOM_RAID']
    assert 'traits' not in deployment(fakes.instance()).instance_info
    assert 'capabilities' not in deployment(fakes.instance()).instance_info


@pytest.mark.parametrize('properties, expected', [
    ({}, 'whole-disk'),
    ({'image_kernel_id': 'k', 'image_ramdisk_id': 'r'}, 'partition'),
    ({'image_ramdisk_id': 'r'}, 'partition'),
    # Nova keeps str(None) of a null property: not a kernel.
    ({'image_kernel_id': 'None'}, 'whole-disk'),
    # The image's own word comes first, either way.
    ({'image_img_type': 'partition'}, 'partition'),
    ({'image_img_type': 'whole-disk', 'image_kernel_id': 'k'},
     'whole-disk'),
])
def test_deployment_names_the_image_type_so_ironic_asks_glance_nothing(
        properties, expected):
    info = deployment(fakes.instance(
        system_metadata=properties)).instance_info
    assert info['image_type'] == expected


def test_a_deployment_from_volumes_has_no_image_type():
    target = base.VolumeTarget(volume_id='v', volume_type='iscsi',
                               properties={}, boot_index=0)
    found = deployment(fakes.instance(), volume_targets=(target,))
    assert found.image_source is None
    assert 'image_type' not in found.instance_info


@pytest.mark.parametrize('preserve, expected', [
    (None, None), (False, 'False'), (True, 'True')])
def test_deployment_preserve_ephemeral(preserve, expected):
    info = deployment(fakes.instance(),
                      preserve_ephemeral=preserve).instance_info
    assert info.get('preserve_ephemeral') == expected


def test_deployment_ephemeral_format(conf):
    conf.config(default_ephemeral_format='ext4')
    info = deployment(fakes.instance(flavor=fakes.flavor(
        ephemeral_gb=10))).instance_info
    assert info['ephemeral_format'] == 'ext4'
    # No ephemeral disk, no format.
    assert 'ephemeral_format' not in deployment(
        fakes.instance()).instance_info


def test_deployment_config_drive_only_when_required():
    inst = fakes.instance()
    with mock.patch.object(metadata, 'build_configdrive',
                           return_value='H4sI...') as build:
        assert deployment(inst).configdrive is None
        inst.config_drive = 'True'
        found = deployment(inst, network_info=[{'id': 'vif-1'}],
                           admin_password='pw', injected_files=[('/f', b'x')])
        assert not build.called
        assert found.configdrive('ports') == 'H4sI...'
    build.assert_called_once_with(inst, [{'id': 'vif-1'}], 'pw',
                                  [('/f', b'x')], 'ports')


def test_vif_ids():
    assert metadata.vif_ids(None) == ()
    assert metadata.vif_ids([]) == ()
    assert metadata.vif_ids([{'id': 'vif-1'}, {'id': 'vif-2'}]) == (
        'vif-1', 'vif-2')


def test_build_configdrive_is_gzipped_base64():
    def make_drive(path):
        with open(path, 'wb') as f:
            f.write(b'iso9660 image')

    builder = mock.MagicMock()
    builder.__enter__.return_value.make_drive.side_effect = make_drive
    inst = fakes.instance()
    with mock.patch.object(_configdrive.instance_metadata,
                           'InstanceMetadata') as i_meta, \
            mock.patch.object(_configdrive.configdrive, 'ConfigDriveBuilder',
                              return_value=builder):
        encoded = metadata.build_configdrive(inst, [], 'pw', [('/f', b'x')])
    assert gzip.decompress(base64.b64decode(encoded)) == b'iso9660 image'
    i_meta.assert_called_once_with(inst, content=[('/f', b'x')],
                                   extra_md={'admin_pass': 'pw'},
                                   network_info=[], network_metadata=None)


def _vif(vif_id, address, mtu=None):
    ip = network_model.FixedIP(address=address)
    return network_model.VIF(
        id=vif_id, address='fa:16:3e:00:00:%s' % vif_id[-1],
        network=network_model.Network(
            id='net', mtu=mtu, subnets=[network_model.Subnet(
                cidr='10.0.0.0/24', ips=[ip])]))


def test_network_data_names_the_nodes_macs_and_bonds():
    # As Nova's in-tree driver: a VIF on a port is that NIC's MAC; one on
    # a port group is a bond of the group's ports, with its options.
    network_info = network_model.NetworkInfo([
        _vif('vif-1', '10.0.0.5', mtu=9000), _vif('vif-2', '10.0.0.6')])
    node_network = base.NodeNetwork(
        ports=(base.NodePort('p1', '52:54:00:00:00:01', None, 'g1'),
               base.NodePort('p2', '52:54:00:00:00:02', None, 'g1'),
               base.NodePort('p3', '52:54:00:00:00:03', 'vif-2')),
        port_groups=(base.NodePortGroup(
            'g1', '52:54:00:00:00:0a', 'vif-1', 'active-backup',
            {'miimon': '100', 'bond_xmit_hash_policy': 'layer2'}),))
    found = _configdrive.network_metadata(network_info, node_network)
    links = {link['id']: link for link in found['links']}
    bond = [link for link in found['links'] if link.get('vif_id') == 'vif-1']
    assert bond == [dict(bond[0], type='bond', bond_mode='active-backup',
                         ethernet_mac_address='52:54:00:00:00:0a',
                         bond_links=['p1', 'p2'], bond_miimon='100',
                         bond_xmit_hash_policy='layer2')]
    # The members have the bond's MTU: Ironic replaces the network data
    # of a drive with a link without one.
    assert links['p1'] == {'id': 'p1', 'type': 'phy',
                           'ethernet_mac_address': '52:54:00:00:00:01',
                           'mtu': 9000}
    assert bond[0]['mtu'] == 9000
    assert links['p2']['ethernet_mac_address'] == '52:54:00:00:00:02'
    (nic,) = [link for link in found['links']
              if link.get('vif_id') == 'vif-2']
    assert (nic['type'], nic['ethernet_mac_address']) == (
        'phy', '52:54:00:00:00:03')
    # Neutron's networks and services are kept as they were.
    assert found['networks'] == netutils.get_network_metadata(
        network_info)['networks']


def test_network_data_without_ports_is_nova_s_own():
    network_info = network_model.NetworkInfo([_vif('vif-1', '10.0.0.5')])
    assert _configdrive.network_metadata(network_info, None) is None
    unknown = _configdrive.network_metadata(network_info,
                                            base.NodeNetwork())
    assert unknown == netutils.get_network_metadata(network_info)
