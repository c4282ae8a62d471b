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

"""Power, instance listing, VIFs and the provider tree."""

from unittest import mock

from nova.compute import power_state
from nova.compute import provider_tree
from nova import exception as nova_exception
from nova.objects import external_event
import pytest

from ironic_multi import exception
from ironic_multi.virt import capacity
from ironic_multi.virt import driver
from tests.unit.virt import fakes
from tests.unit.virt.fakes import node


@pytest.fixture
def drv(reserver):
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    drv.init_host(fakes.HOST)
    return drv


def power(state, target=None, last_error=None):
    return {'uuid': fakes.NODE, 'power_state': state,
            'target_power_state': target, 'last_error': last_error}


def power_calls(api):
    return [(c.args[1], c.kwargs.get('soft')) for c in
            api.set_power_state.call_args_list]


# -- power ------------------------------------------------------------------

def test_hard_reboot(drv, api, clock):
    api.node_by_instance.return_value = node('active')
    api.get_node.side_effect = [power('power on', target='rebooting'),
                                power('power on')]
    drv.reboot(None, fakes.instance(), [], 'HARD')
    assert power_calls(api) == [('rebooting', False)]


def test_soft_reboot_falls_back_to_hard(drv, api, clock):
    api.node_by_instance.return_value = node('active')
    api.set_power_state.side_effect = [fakes.api_error(400), None]
    api.get_node.return_value = power('power on')
    drv.reboot(None, fakes.instance(), [], 'SOFT')
    assert power_calls(api) == [('rebooting', True), ('rebooting', False)]


def test_power_off_soft_then_hard_after_timeout(drv, api, clock):
    api.node_by_instance.return_value = node('active')
    on, off = power('power on', target='soft power off'), power('power off')
    reads = iter([on] * 10 + [off])
    api.get_node.side_effect = lambda *a, **k: next(reads)
    drv.power_off(fakes.instance(), timeout=3)
    assert power_calls(api) == [('power off', True), ('power off', False)]


def test_power_off_and_on(drv, api, clock):
    api.node_by_instance.return_value = node('active')
    api.get_node.side_effect = [power('power off'), power('power on')]
    drv.power_off(fakes.instance())
    drv.power_on(None, fakes.instance(), [])
    assert power_calls(api) == [('power off', False), ('power on', False)]


def test_power_failure_is_reported(drv, api, clock):
    api.node_by_instance.return_value = node('active')
    api.get_node.return_value = power('power off', last_error='no BMC')
    with pytest.raises(nova_exception.InstancePowerOnFailure) as e:
        drv.power_on(None, fakes.instance(), [])
    assert 'no BMC' in str(e.value)


def test_power_wait_is_bounded(drv, api, conf, clock):
    conf.config(power_timeout=5, group='ironic_multi')
    api.node_by_instance.return_value = node('active')
    api.get_node.return_value = power('power off', target='power on')
    with pytest.raises(nova_exception.InstancePowerOnFailure):
        drv.power_on(None, fakes.instance(), [])
    assert api.get_node.call_count <= 6


def test_power_of_an_instance_without_node(drv, api):
    api.node_by_instance.return_value = None
    with pytest.raises(nova_exception.InstanceNotFound):
        drv.power_on(None, fakes.instance(), [])


def test_power_update_event(drv):
    inst = fakes.instance(task_state='powering-off', vm_state='active')
    drv.power_update_event(inst, external_event.POWER_OFF)
    assert inst.power_state == power_state.SHUTDOWN
    assert inst.vm_state == 'stopped'
    inst.save.assert_called_once_with(expected_task_state='powering-off')


# -- instances --------------------------------------------------------------

@pytest.mark.parametrize('ironic, nova', [
    ('power on', power_state.RUNNING),
    ('power off', power_state.SHUTDOWN),
    (None, power_state.NOSTATE),
    ('error', power_state.NOSTATE),
])
def test_get_info_maps_power_states(drv, api, ironic, nova):
    api.node_by_instance.return_value = node('active', power_state=ironic)
    assert drv.get_info(fakes.instance()).state == nova


def test_get_info_without_node(drv, api):
    api.node_by_instance.return_value = None
    assert drv.get_info(fakes.instance()).state == power_state.NOSTATE


def test_list_instance_uuids_only_of_this_host(drv, api):
    mine = 'b6f3d1f2-7d1e-4f0a-9d4c-3c1f3f3a0a01'
    api.iter_nodes.return_value = [
        fakes.local_node(instance_uuid=mine, uuid='n1'),
        fakes.local_node(host='compute-2', instance_uuid='theirs',
                         uuid='n2'),
        # Claimed, not yet deployed by anyone: not listed.
        dict(fakes.local_node(instance_uuid='new', uuid='n3'),
             instance_info={})]
    assert drv.list_instance_uuids() == [mine]
    assert drv.get_num_instances() == 1
    assert api.iter_nodes.call_args.kwargs['associated'] is True


def test_list_instances_reads_names_from_nova(drv, api):
    api.iter_nodes.return_value = [fakes.local_node()]
    found = [mock.Mock()]
    found[0].name = 'instance-00000001'
    with mock.patch('nova.objects.InstanceList.get_by_filters',
                    return_value=found) as get:
        assert drv.list_instances() == ['instance-00000001']
    assert get.call_args.args[1] == {'uuid': [fakes.INSTANCE]}


def test_get_info_uses_the_last_listing(drv, api, clock):
    api.iter_nodes.return_value = [fakes.local_node(power_state='power on')]
    drv.list_instance_uuids()
    assert drv.get_info(fakes.instance()).state == power_state.RUNNING
    assert not api.node_by_instance.called
    # Too old, or asked not to: Ironic is asked.
    clock[0] += 61
    api.node_by_instance.return_value = node('active',
                                             power_state='power off')
    assert drv.get_info(fakes.instance()).state == power_state.SHUTDOWN
    assert drv.get_info(fakes.instance(),
                        use_cache=False).state == power_state.SHUTDOWN
    assert api.node_by_instance.call_count == 2


def test_listing_with_ironic_down_is_not_ready(drv, api):
    api.iter_nodes.side_effect = exception.IronicUnavailable(reason='down')
    with pytest.raises(nova_exception.VirtDriverNotReady):
        drv.list_instance_uuids()


def test_instance_exists(drv, api):
    api.node_by_instance.return_value = node('active')
    assert drv.instance_exists(fakes.instance())
    api.node_by_instance.return_value = None
    assert not drv.instance_exists(fakes.instance())


def test_not_ready_before_init_host(reserver):
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    with pytest.raises(nova_exception.VirtDriverNotReady):
        drv.list_instance_uuids()


# -- networking ---------------------------------------------------------------

def test_vifs(drv, api):
    api.node_by_instance.return_value = node('active')
    drv.plug_vifs(fakes.instance(), [{'id': 'vif-1'}])
    assert not api.attach_vif.called
    drv.attach_interface(None, fakes.instance(), None, {'id': 'vif-2'})
    api.attach_vif.assert_called_once_with(fakes.NODE, 'vif-2')
    drv.detach_interface(None, fakes.instance(), {'id': 'vif-2'})
    drv.unplug_vifs(fakes.instance(), [{'id': 'vif-1'}])
    assert [c.args for c in api.detach_vif.call_args_list] == [
        (fakes.NODE, 'vif-2'), (fakes.NODE, 'vif-1')]
    api.node_by_instance.return_value = None
    drv.unplug_vifs(fakes.instance(), [{'id': 'vif-1'}])
    assert drv.network_binding_host_id(None, fakes.instance()) is None


def test_attach_interface_failure(drv, api):
    api.node_by_instance.return_value = node('active')
    api.attach_vif.side_effect = fakes.api_error(400)
    with pytest.raises(nova_exception.VirtualInterfacePlugException):
        drv.attach_interface(None, fakes.instance(), None, {'id': 'vif-2'})


@pytest.mark.parametrize('call', [
    lambda d: d.attach_volume(None, {}, fakes.instance(), '/dev/sdb'),
    lambda d: d.get_volume_connector(fakes.instance()),
    lambda d: d.snapshot(None, fakes.instance(), 'image', None),
    lambda d: d.live_migration(None, fakes.instance(), 'dest', None, None),
    lambda d: d.rescue(None, fakes.instance(), [], None, 'pw', None, None),
])
def test_unsupported_operations_say_so(drv, call):
    with pytest.raises(NotImplementedError) as e:
        call(drv)
    assert 'bare metal' in str(e.value)


# -- provider tree ------------------------------------------------------------

@pytest.fixture
def tree():
    tree = provider_tree.ProviderTree()
    tree.new_root(fakes.HOST, 'e017ccf2-cbc2-5431-8538-cff32cb8af8e')
    tree.update_traits(fakes.HOST, ['COMPUTE_NODE', 'CUSTOM_OLD'])
    return tree


def test_update_provider_tree(drv, api, reserver, tree):
    reserver.cluster = {'baremetal': {'total': 10, 'free': 4}}
    reserver.traits = {'CUSTOM_GPU'}
    flavors = [{'extra_specs': fakes.BAREMETAL_SPECS}] * 2
    with mock.patch.object(capacity, 'flavors_on_host',
                           return_value=flavors) as on_host:
        drv.update_provider_tree(tree, fakes.HOST)
    on_host.assert_called_once_with(fakes.HOST)
    data = tree.data(fakes.HOST)
    assert data.inventory == {'CUSTOM_BAREMETAL': {
        'total': 10, 'reserved': 4, 'min_unit': 1, 'max_unit': 1,
        'step_size': 1, 'allocation_ratio': 1.0}}
    assert data.traits == {'COMPUTE_NODE', 'CUSTOM_GPU'}


def test_update_provider_tree_keeps_inventory_on_errors(drv, api, reserver,
                                                        tree):
    tree.update_inventory(fakes.HOST, {'CUSTOM_BAREMETAL': {
        'total': 3, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
        'step_size': 1, 'allocation_ratio': 1.0}})
    reserver.cluster = exception.CoordinationUnavailable(url='file://',
                                                         reason='gone')
    reserver.cluster_traits = mock.Mock(side_effect=reserver.cluster)
    with mock.patch.object(capacity, 'flavors_on_host', return_value=[]):
        drv.update_provider_tree(tree, fakes.HOST)
    data = tree.data(fakes.HOST)
    assert data.inventory['CUSTOM_BAREMETAL']['total'] == 3
    assert data.traits == {'COMPUTE_NODE', 'CUSTOM_OLD'}
