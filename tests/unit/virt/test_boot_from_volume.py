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

"""Boot from volume: the node is held before Nova exports the volumes to
it, its connector is the in-tree driver's, and the deploy boots it from
Cinder's connection info."""

import json
from unittest import mock

from nova import exception as nova_exception
from nova.network import model as network_model
from nova import objects
from nova.virt import block_device as driver_block_device
import pytest

from ironic_multi._reservation.providers import base
from ironic_multi._virt import driver
from ironic_multi._virt import volumes
from tests.unit.virt import fakes

VOLUME = '2b7c3ce1-1c51-4c4b-8d76-5f0e6a3b9d10'
INITIATOR = 'iqn.2026-11.org.example:node-1'
CONNECTION = {'driver_volume_type': 'iscsi',
              'data': {'target_iqn': 'iqn.2010-10.org.openstack:volume-1',
                       'target_portal': '192.0.2.10:3260', 'target_lun': 1}}


@pytest.fixture
def from_volume(monkeypatch):
    """Nova's BDMs of the instance say it boots from a volume."""
    monkeypatch.setattr(volumes, 'boots_from_volume', lambda instance: True)


def block_device_info(boot_index=0):
    bdm = objects.BlockDeviceMapping(
        source_type='volume', destination_type='volume', volume_id=VOLUME,
        boot_index=boot_index, device_name='/dev/sda', device_type='disk',
        disk_bus=None, guest_format=None, delete_on_termination=False,
        attachment_id=None, connection_info=json.dumps(CONNECTION),
        volume_size=10, volume_type=None, no_device=False, snapshot_id=None,
        image_id=None, encrypted=False, tag=None)
    return {'block_device_mapping': [
        driver_block_device.DriverVolumeBlockDevice(bdm)]}


def driver_without_volume_boot():
    """A driver whose provider cannot boot from volumes (the static one)."""
    static = fakes.FakeReserver(
        features=fakes.ALL_FEATURES - {base.Feature.VOLUME_BOOT})
    drv = driver.IronicMultiDriver(None, reserver=static)
    drv.init_host(fakes.HOST)
    static.calls.clear()
    return drv, static


def instance_with_address(address='192.0.2.42'):
    inst = fakes.instance(image_ref='', hostname='server-1')
    vif = network_model.VIF(id='vif-1', network=network_model.Network(
        subnets=[network_model.Subnet(cidr='192.0.2.0/24', ips=[
            network_model.FixedIP(address=address)])]))
    inst.get_network_info = lambda: network_model.NetworkInfo([vif])
    return inst


# -- before the block devices ----------------------------------------------

def test_an_instance_that_boots_from_its_disk_is_not_claimed_early(
        drv, reserver, monkeypatch):
    monkeypatch.setattr(volumes, 'boots_from_volume', lambda instance: False)
    drv.prepare_networks_before_block_device_mapping(fakes.instance(), [])
    assert reserver.calls == []


def test_an_instance_that_boots_from_a_volume_holds_its_node_first(
        drv, reserver, from_volume):
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'trait:CUSTOM_ISCSI': 'required'})))
    drv.prepare_networks_before_block_device_mapping(inst, [])
    assert reserver.names() == ['claim']
    assert reserver.claims[fakes.INSTANCE].required_traits == {
        'CUSTOM_ISCSI'}


def test_a_provider_without_volume_boot_refuses_before_any_claim(
        from_volume):
    drv, static = driver_without_volume_boot()
    with pytest.raises(nova_exception.InstanceUnacceptable) as e:
        drv.prepare_networks_before_block_device_mapping(fakes.instance(),
                                                         [])
    assert 'cannot boot a node from a volume' in str(e.value)
    assert static.calls == []
    assert not drv.capabilities['supports_boot_from_volume']


def test_no_node_for_the_volumes_reschedules(drv, reserver, from_volume):
    reserver.errors['claim'] = nova_exception.ComputeResourcesUnavailable(
        reason='none')
    with pytest.raises(nova_exception.ComputeResourcesUnavailable):
        drv.prepare_networks_before_block_device_mapping(fakes.instance(),
                                                         [])


# -- the connector ----------------------------------------------------------

def test_the_connector_is_the_in_tree_drivers(drv, reserver):
    reserver.hold()
    reserver.connectors = (
        base.VolumeConnector('iqn', INITIATOR),
        base.VolumeConnector('ip', '198.51.100.7'),
        base.VolumeConnector('wwpn', '21000024ff000001'),
        base.VolumeConnector('wwpn', '21000024ff000002'))
    reserver.node = lambda uuid: {'uuid': fakes.NODE,
                                  'properties': {'cpu_arch': 'x86_64'}}
    assert drv.get_volume_connector(instance_with_address()) == {
        'ip': '198.51.100.7', 'host': '198.51.100.7',
        'initiator': INITIATOR,
        'wwpns': ['21000024ff000001', '21000024ff000002'],
        'platform': 'x86_64', 'os_type': 'baremetal', 'multipath': False}


def test_without_an_ip_connector_the_instances_address_is_used(
        drv, reserver):
    reserver.hold()
    reserver.connectors = (base.VolumeConnector('iqn', INITIATOR),)
    connector = drv.get_volume_connector(instance_with_address())
    assert (connector['ip'], connector['host'], connector['initiator']) == (
        '192.0.2.42', '192.0.2.42', INITIATOR)


def test_after_the_node_went_the_connector_names_the_host_only(
        drv, reserver):
    inst = fakes.instance(hostname='server-1')
    inst.get_network_info = lambda: network_model.NetworkInfo([])
    assert drv.get_volume_connector(inst) == {
        'host': 'server-1', 'platform': None, 'os_type': 'baremetal',
        'multipath': False}
    assert reserver.names() == ['volume_connectors']


def test_a_provider_without_volume_boot_has_no_connector():
    drv, static = driver_without_volume_boot()
    static.hold()
    with pytest.raises(nova_exception.NovaException) as e:
        drv.get_volume_connector(fakes.instance())
    assert 'volume boot' in str(e.value)


# -- spawn -----------------------------------------------------------------

def test_spawn_boots_the_held_node_from_the_volumes(drv, reserver,
                                                    from_volume):
    inst = fakes.instance(image_ref='')
    drv.prepare_networks_before_block_device_mapping(inst, [])
    drv.spawn(None, inst, fakes.image_meta(), [], None, {},
              network_info=[{'id': 'vif-1'}],
              block_device_info=block_device_info())

    # The node held since before the volumes were exported: no new claim.
    assert reserver.names() == ['claim', 'lookup', 'deploy']
    (deployment,) = reserver.deployments
    assert deployment.image_source is None
    assert deployment.vifs == ('vif-1',)
    assert deployment.volume_targets == (base.VolumeTarget(
        volume_id=VOLUME, volume_type='iscsi',
        properties=CONNECTION['data'], boot_index=0),)


def test_spawn_from_volumes_whose_node_went_reschedules(drv, reserver):
    with pytest.raises(nova_exception.RescheduledException) as e:
        drv.spawn(None, fakes.instance(image_ref=''), fakes.image_meta(),
                  [], None, {}, block_device_info=block_device_info())
    assert 'no longer reserved' in str(e.value)
    assert reserver.names() == ['lookup']


def test_the_bdms_say_whether_the_root_disk_is_a_volume():
    bdms = [mock.Mock(is_root=False, is_volume=True),
            mock.Mock(is_root=True, is_volume=True)]
    with mock.patch.object(objects.BlockDeviceMappingList,
                           'get_by_instance_uuid', return_value=bdms):
        assert volumes.boots_from_volume(fakes.instance())
    bdms[1].is_volume = False
    with mock.patch.object(objects.BlockDeviceMappingList,
                           'get_by_instance_uuid', return_value=bdms):
        assert not volumes.boots_from_volume(fakes.instance())


# -- rebuild ---------------------------------------------------------------

def test_a_rebuild_keeps_booting_from_the_volumes(drv, reserver):
    reserver.hold()
    inst = fakes.instance(task_state='rebuilding')
    info = block_device_info()
    drv.rebuild(None, inst, fakes.image_meta(), [], None, {},
                objects.BlockDeviceMappingList(objects=[
                    bdm._bdm_obj for bdm in info['block_device_mapping']]),
                None, None, block_device_info=info)
    (deployment,) = reserver.deployments
    # No image over the node's disk: it boots from the volume still.
    assert deployment.image_source is None
    assert [t.volume_id for t in deployment.volume_targets] == [VOLUME]
