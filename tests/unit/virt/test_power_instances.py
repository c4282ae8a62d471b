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

"""Power, instance listing, VIFs, capabilities and the provider tree."""

from unittest import mock

from nova.compute import power_state
from nova.compute import provider_tree
from nova import exception as nova_exception
from nova.objects import external_event
import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._virt import capacity
from ironic_multi._virt import consumers
from ironic_multi._virt import driver
from ironic_multi._virt import host
from ironic_multi._virt import inventory as inventory_mod
from ironic_multi import exception
from tests.unit.virt import fakes

Action = base.PowerAction
OTHER = 'b6f3d1f2-7d1e-4f0a-9d4c-3c1f3f3a0a01'


def power_failed(action, reason='no BMC'):
    return exception.PowerActionFailed(action=action, node=fakes.NODE,
                                       reason=reason)


# -- power ------------------------------------------------------------------

@pytest.mark.parametrize('reboot_type, action', [
    ('SOFT', Action.SOFT_REBOOT),
    ('HARD', Action.REBOOT),
])
def test_reboot(drv, reserver, reboot_type, action):
    reserver.hold()
    drv.reboot(None, fakes.instance(), [], reboot_type)
    assert reserver.calls == [('power', fakes.INSTANCE, action, None)]


def test_power_off_with_a_timeout_is_soft(drv, reserver):
    reserver.hold()
    drv.power_off(fakes.instance(), timeout=3)
    assert reserver.calls == [('power', fakes.INSTANCE, Action.SOFT_OFF, 3)]


def test_power_off_without_a_timeout_is_hard(drv, reserver):
    reserver.hold()
    drv.power_off(fakes.instance())
    drv.power_off(fakes.instance(), timeout=0, retry_interval=5)
    assert reserver.calls == [('power', fakes.INSTANCE, Action.OFF, None)] * 2


def test_power_on(drv, reserver):
    reserver.hold()
    drv.power_on(None, fakes.instance(), [])
    assert reserver.calls == [('power', fakes.INSTANCE, Action.ON, None)]


POWER_CALLS = [
    (lambda d: d.reboot(None, fakes.instance(), [], 'SOFT'),
     Action.SOFT_REBOOT, nova_exception.InstanceRebootFailure),
    (lambda d: d.reboot(None, fakes.instance(), [], 'HARD'),
     Action.REBOOT, nova_exception.InstanceRebootFailure),
    (lambda d: d.power_off(fakes.instance(), timeout=3),
     Action.SOFT_OFF, nova_exception.InstancePowerOffFailure),
    (lambda d: d.power_off(fakes.instance()),
     Action.OFF, nova_exception.InstancePowerOffFailure),
    (lambda d: d.power_on(None, fakes.instance(), []),
     Action.ON, nova_exception.InstancePowerOnFailure),
]


@pytest.mark.parametrize('call, action, nova_error', POWER_CALLS)
def test_power_failure_is_reported(drv, reserver, call, action, nova_error):
    reserver.hold()
    reserver.errors['power'] = power_failed(action, 'no BMC')
    with pytest.raises(nova_error) as e:
        call(drv)
    assert 'no BMC' in str(e.value)


@pytest.mark.parametrize('call, action, nova_error', POWER_CALLS)
def test_power_of_an_instance_without_node(drv, reserver, call, action,
                                           nova_error):
    with pytest.raises(nova_exception.InstanceNotFound) as e:
        call(drv)
    assert fakes.INSTANCE in str(e.value)


def test_power_update_event(drv):
    inst = fakes.instance(task_state='powering-off', vm_state='active')
    drv.power_update_event(inst, external_event.POWER_OFF)
    assert inst.power_state == power_state.SHUTDOWN
    assert inst.vm_state == 'stopped'
    assert inst.task_state is None
    inst.save.assert_called_once_with(expected_task_state='powering-off')
    inst = fakes.instance(task_state='powering-on', vm_state='stopped')
    drv.power_update_event(inst, external_event.POWER_ON)
    assert inst.power_state == power_state.RUNNING
    assert inst.vm_state == 'active'
    inst.save.assert_called_once_with(expected_task_state='powering-on')


# -- instances --------------------------------------------------------------

@pytest.mark.parametrize('power, nova', [
    (lifecycle.PowerState.ON, power_state.RUNNING),
    (lifecycle.PowerState.OFF, power_state.SHUTDOWN),
    (lifecycle.PowerState.UNKNOWN, power_state.NOSTATE),
])
def test_get_info_maps_power_states(drv, reserver, power, nova):
    reserver.hold(power_state=power)
    assert drv.get_info(fakes.instance()).state == nova


def test_get_info_without_node(drv, reserver):
    assert drv.get_info(fakes.instance()).state == power_state.NOSTATE


def test_list_instance_uuids_from_the_reserver(drv, reserver):
    reserver.hold(OTHER, node_uuid='n2')
    reserver.hold(fakes.INSTANCE, node_uuid='n1')
    # The reserver answers for this host only.
    reserver.hold('theirs', host='compute-2', node_uuid='n3')
    assert drv.list_instance_uuids() == sorted([fakes.INSTANCE, OTHER])
    assert drv.get_num_instances() == 2
    assert set(reserver.names()) == {'instances'}


def test_list_instances_reads_names_from_nova(drv, reserver):
    reserver.hold()
    found = [mock.Mock()]
    found[0].name = 'instance-00000001'
    with mock.patch('nova.objects.InstanceList.get_by_filters',
                    return_value=found) as get:
        assert drv.list_instances() == ['instance-00000001']
    assert get.call_args.args[1] == {'uuid': [fakes.INSTANCE]}


def test_list_instances_without_instances_asks_nova_nothing(drv):
    with mock.patch('nova.objects.InstanceList.get_by_filters') as get:
        assert drv.list_instances() == []
    assert not get.called


def test_get_info_uses_the_last_listing(drv, reserver, clock):
    reserver.hold(power_state=lifecycle.PowerState.ON)
    drv.list_instance_uuids()
    # The node powered off since: the listing still answers.
    reserver.hold(power_state=lifecycle.PowerState.OFF)
    assert drv.get_info(fakes.instance()).state == power_state.RUNNING
    assert 'lookup' not in reserver.names()
    # Too old, or asked not to: the reserver is asked.
    clock[0] += 61
    assert drv.get_info(fakes.instance()).state == power_state.SHUTDOWN
    assert drv.get_info(fakes.instance(),
                        use_cache=False).state == power_state.SHUTDOWN
    assert reserver.names().count('lookup') == 2


def test_get_info_asks_for_an_instance_the_listing_did_not_have(
        drv, reserver, clock):
    drv.list_instance_uuids()
    reserver.hold(power_state=lifecycle.PowerState.OFF)
    assert drv.get_info(fakes.instance()).state == power_state.SHUTDOWN
    assert reserver.names() == ['instances', 'lookup']


@pytest.mark.parametrize('error', [
    exception.IronicUnavailable(reason='down'),
    exception.CoordinationUnavailable(url='file://', reason='gone'),
])
def test_listing_with_the_provider_down_is_not_ready(drv, reserver, error):
    reserver.errors['instances'] = error
    with pytest.raises(nova_exception.VirtDriverNotReady):
        drv.list_instance_uuids()
    with pytest.raises(nova_exception.VirtDriverNotReady):
        drv.get_num_instances()


def test_instance_exists(drv, reserver):
    assert not drv.instance_exists(fakes.instance())
    reserver.hold()
    assert drv.instance_exists(fakes.instance())
    assert reserver.calls == [('lookup', fakes.INSTANCE)] * 2


def test_not_ready_before_init_host(reserver):
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    with pytest.raises(nova_exception.VirtDriverNotReady):
        drv.list_instance_uuids()
    with pytest.raises(nova_exception.VirtDriverNotReady):
        drv.get_info(fakes.instance())


# -- networking ---------------------------------------------------------------

def test_vifs(drv, reserver):
    reserver.hold()
    drv.plug_vifs(fakes.instance(), [{'id': 'vif-1'}])
    assert reserver.calls == []
    drv.attach_interface(None, fakes.instance(), None, {'id': 'vif-2'})
    drv.detach_interface(None, fakes.instance(), {'id': 'vif-2'})
    drv.unplug_vifs(fakes.instance(), [{'id': 'vif-1'}, {'id': 'vif-3'}])
    drv.unplug_vifs(fakes.instance(), None)
    assert reserver.calls == [('attach_vif', fakes.INSTANCE, 'vif-2'),
                              ('detach_vif', fakes.INSTANCE, 'vif-2'),
                              ('detach_vif', fakes.INSTANCE, 'vif-1'),
                              ('detach_vif', fakes.INSTANCE, 'vif-3')]
    assert drv.network_binding_host_id(None, fakes.instance()) is None
    assert drv.manages_network_binding_host_id()


def test_unplug_vifs_without_a_node(drv, reserver):
    drv.unplug_vifs(fakes.instance(), [{'id': 'vif-1'}])
    assert reserver.calls == [('detach_vif', fakes.INSTANCE, 'vif-1')]


@pytest.mark.parametrize('error', [
    exception.VifActionFailed(action='attach', vif='vif-2', node=fakes.NODE,
                              reason='no free port'),
    exception.NotSupported(provider='fake', feature=base.Feature.VIFS),
])
def test_attach_interface_failure(drv, reserver, error):
    reserver.hold()
    reserver.errors['attach_vif'] = error
    with pytest.raises(nova_exception.VirtualInterfacePlugException) as e:
        drv.attach_interface(None, fakes.instance(), None, {'id': 'vif-2'})
    assert str(error) in str(e.value)


def test_attach_interface_without_a_node(drv, reserver):
    with pytest.raises(nova_exception.InstanceNotFound):
        drv.attach_interface(None, fakes.instance(), None, {'id': 'vif-2'})


def test_detach_interface_failure(drv, reserver):
    reserver.hold()
    reserver.errors['detach_vif'] = exception.VifActionFailed(
        action='detach', vif='vif-2', node=fakes.NODE, reason='locked')
    with pytest.raises(nova_exception.VirtualInterfacePlugException) as e:
        drv.detach_interface(None, fakes.instance(), {'id': 'vif-2'})
    assert 'locked' in str(e.value)


# -- capabilities -------------------------------------------------------------

def test_attach_interface_follows_the_providers_vifs():
    without = fakes.FakeReserver(features=fakes.ALL_FEATURES
                                 - {base.Feature.VIFS})
    drv = driver.IronicMultiDriver(None, reserver=without)
    drv.init_host(fakes.HOST)
    assert not drv.capabilities['supports_attach_interface']
    # The class, and the other drivers of the process, are not changed.
    assert driver.IronicMultiDriver.capabilities['supports_attach_interface']
    other = driver.IronicMultiDriver(None, reserver=fakes.FakeReserver())
    other.init_host(fakes.HOST)
    assert other.capabilities['supports_attach_interface']
    # The rest of the capabilities stay.
    assert drv.capabilities['supports_image_type_raw']
    assert not drv.capabilities['supports_evacuate']


@pytest.mark.parametrize('call', [
    lambda d: d.attach_volume(None, {}, fakes.instance(), '/dev/sdb'),
    lambda d: d.detach_volume(None, {}, fakes.instance(), '/dev/sdb'),
    lambda d: d.snapshot(None, fakes.instance(), 'image', None),
    lambda d: d.live_migration(None, fakes.instance(), 'dest', None, None),
    lambda d: d.migrate_disk_and_power_off(None, fakes.instance(), 'dest',
                                           None, []),
    lambda d: d.pause(fakes.instance()),
    lambda d: d.suspend(None, fakes.instance()),
    lambda d: d.set_admin_password(fakes.instance(), 'pw'),
])
def test_unsupported_operations_say_so(drv, reserver, call):
    with pytest.raises(NotImplementedError) as e:
        call(drv)
    assert 'bare metal' in str(e.value)
    assert reserver.calls == []


# -- provider tree ------------------------------------------------------------

@pytest.fixture
def tree():
    tree = provider_tree.ProviderTree()
    tree.new_root(fakes.HOST, 'e017ccf2-cbc2-5431-8538-cff32cb8af8e')
    tree.update_traits(fakes.HOST, ['COMPUTE_NODE', 'CUSTOM_OLD'])
    return tree


def test_update_provider_tree(drv, reserver, tree):
    reserver.cluster = {'baremetal': {'total': 10, 'free': 4}}
    reserver.traits = {'CUSTOM_GPU', 'not-a-trait'}
    flavors = [{'extra_specs': fakes.BAREMETAL_SPECS}] * 2
    with mock.patch.object(capacity, 'flavors_on_host',
                           return_value=flavors) as on_host:
        reserver.refresh()
    on_host.assert_called_once_with(fakes.HOST)
    del reserver.calls[:]

    with mock.patch.object(capacity, 'flavors_on_host') as on_host:
        drv.update_provider_tree(tree, fakes.HOST)
    # Under the resource tracker's lock: no round trip of any kind, only
    # what the last refresh computed.
    on_host.assert_not_called()
    assert reserver.names() == ['cluster_traits']
    data = tree.data(fakes.HOST)
    # 6 nodes taken, 2 of them by our instances: reserved hides the 4.
    expected = {'CUSTOM_BAREMETAL': {
        'total': 10, 'reserved': 4, 'min_unit': 1, 'max_unit': 1,
        'step_size': 1, 'allocation_ratio': 1.0}}
    assert data.inventory == expected
    assert data.traits == {'COMPUTE_NODE', 'CUSTOM_GPU'}
    # Published for ironic-multi-manage capacity.
    assert reserver.extra['inventory'] == expected


@pytest.fixture
def in_this_thread():
    """The reporter's daemon threads run their calls at once, here."""
    def run(name, function, *args):
        function(*args)

    with mock.patch.object(inventory_mod.worker, 'in_daemon_thread',
                           side_effect=run):
        yield


def test_a_service_nova_disables_stops_offering_its_nodes(
        drv, reserver, in_this_thread):
    assert drv.set_host_enabled(False) == 'disabled'
    assert reserver.names() == ['set_offering']
    assert reserver.offering is False
    # Told once: the next call, or the trait, changes nothing.
    assert drv.set_host_enabled(False) == 'disabled'
    assert reserver.names() == ['set_offering']
    assert drv.set_host_enabled(True) == 'enabled'
    assert reserver.offering is True


def test_a_service_disabled_while_it_was_down_is_told_by_the_trait(
        drv, reserver, tree, in_this_thread):
    # The resource tracker keeps COMPUTE_STATUS_DISABLED on the provider
    # in step with the service; set_host_enabled is not called at start.
    reserver.refresh()
    tree.update_traits(fakes.HOST, ['COMPUTE_NODE',
                                    'COMPUTE_STATUS_DISABLED'])
    del reserver.calls[:]
    drv.update_provider_tree(tree, fakes.HOST)
    assert reserver.offering is False
    assert 'COMPUTE_STATUS_DISABLED' in tree.data(fakes.HOST).traits
    tree.update_traits(fakes.HOST, ['COMPUTE_NODE'])
    drv.update_provider_tree(tree, fakes.HOST)
    assert reserver.offering is True
    assert reserver.names().count('set_offering') == 2


def _placement(drv, allocations, new=()):
    """Placement's answer to GET /resource_providers/{uuid}/allocations.

    The consumers were instances of the host when it started, but those
    ``new`` (builds sent since).
    """
    drv._inventory_reporter.waiting.hold(set(allocations) - set(new))
    answer = mock.Mock(status_code=200, __bool__=lambda self: True)
    answer.json.return_value = {'allocations': {
        uuid: {'resources': {'CUSTOM_BAREMETAL': 1}} for uuid in allocations}}
    drv.virtapi = mock.Mock(reportclient=mock.Mock(
        get=mock.Mock(return_value=answer)))


def _inventory(drv, reserver, tree, given_up=()):
    flavors = [{'extra_specs': fakes.BAREMETAL_SPECS}] * 2
    with mock.patch.object(capacity, 'flavors_on_host',
                           return_value=flavors) as on_host, \
            mock.patch.object(consumers, 'given_up',
                              return_value=set(given_up)) as asked:
        reserver.refresh()
        drv.update_provider_tree(tree, fakes.HOST)
    on_host.assert_not_called()
    inventory = tree.data(fakes.HOST).inventory['CUSTOM_BAREMETAL']
    return inventory, asked


def test_placement_counts_what_this_host_uses(drv, reserver, tree):
    # An instance on this host whose allocation Nova dropped (a rebuild
    # that failed on its own host): placement counts one, Nova's
    # database two.  The free count must stay Ironic's.
    _placement(drv, ['i-1'])
    reserver.cluster = {'baremetal': {'total': 10, 'free': 4}}
    inventory, _ = _inventory(drv, reserver, tree)
    # Placement's free: 10 - 5 - 1 = 4, Ironic's.
    assert (inventory['total'], inventory['reserved']) == (10, 5)


def test_a_build_nova_gave_up_on_hides_no_free_node(drv, reserver, tree):
    # Nova keeps the allocation of a failed build (ERROR) until the
    # server is deleted; its node is back in the pool.  One node of five
    # holds an instance of this host (i-1), four are free: placement must
    # say four, not three.
    reserver.hold('i-1')
    _placement(drv, ['i-1', 'failed'])
    reserver.cluster = {'baremetal': {'total': 5, 'free': 4}}
    inventory, asked = _inventory(drv, reserver, tree, given_up={'failed'})
    assert asked.call_args[0][0] == {'i-1': {'CUSTOM_BAREMETAL': 1},
                                     'failed': {'CUSTOM_BAREMETAL': 1}}
    assert inventory['total'] - inventory['reserved'] - 2 == 4
    assert reserver.names().count('lookup') == 1

    # Looked up once while it stays given up.
    del reserver.calls[:]
    inventory, _ = _inventory(drv, reserver, tree, given_up={'failed'})
    assert inventory['total'] - inventory['reserved'] - 2 == 4
    assert 'lookup' not in reserver.names()


def test_a_failed_build_whose_node_is_still_held_counts(drv, reserver, tree):
    # Its release has not happened yet: the node is not free in Ironic,
    # and the allocation stands for it.
    reserver.hold('failed')
    _placement(drv, ['failed'])
    reserver.cluster = {'baremetal': {'total': 5, 'free': 4}}
    inventory, _ = _inventory(drv, reserver, tree, given_up={'failed'})
    assert inventory['total'] - inventory['reserved'] - 1 == 4
    assert inventory['total'] == 5


def test_a_build_waiting_for_a_node_comes_off_the_offer(
        drv, reserver, tree):
    # i-1 held its node before; 'new' was allocated here since and has
    # not claimed yet.  This service offers 6 free nodes of its shards.
    _placement(drv, ['i-1'])
    reserver.cluster = {'baremetal': {'total': 10, 'free': 6}}
    _inventory(drv, reserver, tree)
    assert reserver.waiting == {}
    _placement(drv, ['i-1', 'new'], new=['new'])
    inventory, _ = _inventory(drv, reserver, tree)
    assert reserver.waiting == {'new': {'CUSTOM_BAREMETAL': 1}}
    # The 6 less the build that will take one.
    assert inventory['total'] - inventory['reserved'] - 2 == 5
    # Its claim: one free node less, and the build no longer waits; the
    # offer does not move.
    reserver.claims['new'] = object()
    reserver.cluster = {'baremetal': {'total': 10, 'free': 5}}
    inventory, _ = _inventory(drv, reserver, tree)
    assert reserver.waiting == {}
    assert inventory['total'] - inventory['reserved'] - 2 == 5


def test_the_instances_of_the_host_at_its_start_wait_for_nothing(
        reserver, tree, monkeypatch):
    monkeypatch.setattr(consumers, 'host_instances', lambda host: ['i-1'])
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    drv.init_host(fakes.HOST)
    # A build sent before the first read of placement still waits.
    _placement(drv, ['i-1', 'build'], new=['i-1', 'build'])
    reserver.cluster = {'baremetal': {'total': 10, 'free': 6}}
    _inventory(drv, reserver, tree)
    assert reserver.waiting == {'build': {'CUSTOM_BAREMETAL': 1}}


def test_adopted_instances_wait_for_nothing(drv, reserver, tree):
    _placement(drv, ['i-1'])
    reserver.cluster = {'baremetal': {'total': 10, 'free': 6}}
    _inventory(drv, reserver, tree)
    # A takeover moved two instances' allocations here: they hold nodes.
    _placement(drv, ['i-1', 'a-1', 'a-2'], new=['a-1', 'a-2'])
    with mock.patch.object(consumers, 'given_up', return_value=set()):
        drv._takeover._on_adopted({'adopted': ['a-1', 'a-2']})
    assert reserver.waiting == {}
    inventory = drv._inventory_reporter.inventory['CUSTOM_BAREMETAL']
    assert inventory['total'] - inventory['reserved'] - 3 == 6


@pytest.mark.parametrize('ends', ['destroy', 'claim fails'])
def test_an_allocation_about_to_leave_gives_no_node_back(drv, reserver, tree,
                                                         ends):
    # 4 of 10 nodes free; the instance of this host holds one of the 6
    # others (destroy: it goes to cleaning), or found none (its build
    # reschedules).  Nova deletes the allocation once the driver returns.
    _placement(drv, [fakes.INSTANCE])
    reserver.cluster = {'baremetal': {'total': 10, 'free': 4}}
    inventory, _ = _inventory(drv, reserver, tree)
    assert inventory['total'] - inventory['reserved'] - 1 == 4
    with mock.patch.object(capacity, 'change_inventory',
                           return_value=True) as change, \
            mock.patch.object(consumers, 'given_up', return_value=set()):
        if ends == 'destroy':
            reserver.hold()
            drv.destroy(None, fakes.instance(), [])
        else:
            reserver.errors['claim'] = exception.NoNodeAvailable(
                instance=fakes.INSTANCE, requirements='resource_class=X')
            with pytest.raises(nova_exception.ComputeResourcesUnavailable):
                drv.spawn(None, fakes.instance(), fakes.image_meta(), [],
                          'secret', {}, network_info=[])
    # Told before Nova deletes the allocation: once it is gone, placement
    # offers Ironic's 4, not 5.
    (_client, _context, _provider, wanted), _ = change.call_args
    entry = wanted({})['CUSTOM_BAREMETAL']
    assert entry['total'] - entry['reserved'] - 0 == 4


def test_nova_not_answering_counts_every_allocation(drv, reserver, tree):
    _placement(drv, ['i-1', 'failed'])
    reserver.hold('i-1')
    reserver.cluster = {'baremetal': {'total': 5, 'free': 4}}
    flavors = [{'extra_specs': fakes.BAREMETAL_SPECS}] * 2
    with mock.patch.object(capacity, 'flavors_on_host',
                           return_value=flavors), \
            mock.patch.object(consumers, 'given_up',
                              side_effect=RuntimeError('no conductor')):
        reserver.refresh()
        drv.update_provider_tree(tree, fakes.HOST)
    inventory = tree.data(fakes.HOST).inventory['CUSTOM_BAREMETAL']
    # The safe side: one node fewer than Ironic's four.
    assert (inventory['total'], inventory['reserved']) == (5, 0)


def test_update_provider_tree_follows_the_refreshes(drv, reserver, tree):
    with mock.patch.object(capacity, 'flavors_on_host', return_value=[]):
        reserver.cluster = {'baremetal': {'total': 10, 'free': 4}}
        reserver.refresh()
        drv.update_provider_tree(tree, fakes.HOST)
        reserver.cluster = {'baremetal': {'total': 12, 'free': 12},
                            'gold': {'total': 1, 'free': 0}}
        drv.update_provider_tree(tree, fakes.HOST)
        assert tree.data(fakes.HOST).inventory[
            'CUSTOM_BAREMETAL']['total'] == 10
        reserver.refresh()
        drv.update_provider_tree(tree, fakes.HOST)
    inventory = tree.data(fakes.HOST).inventory
    assert inventory['CUSTOM_BAREMETAL']['total'] == 12
    assert inventory['CUSTOM_BAREMETAL']['reserved'] == 0
    assert inventory['CUSTOM_GOLD']['reserved'] == 1


def _follow(drv, reserver):
    for listener in reserver.capacity_listeners:
        listener(reserver)


def test_a_capacity_change_is_told_to_placement_once_reported(
        drv, reserver, tree, caplog):
    _placement(drv, ['i-1'])
    reserver.cluster = {'baremetal': {'total': 10, 'free': 4}}
    with mock.patch.object(capacity, 'change_inventory',
                           return_value=True) as change, \
            mock.patch.object(consumers, 'given_up', return_value=set()):
        # Before the resource tracker reported the node: placement may
        # not know its provider yet.
        _follow(drv, reserver)
        change.assert_not_called()
        drv.update_provider_tree(tree, fakes.HOST)
        reserver.cluster = {'baremetal': {'total': 10, 'free': 3}}
        _follow(drv, reserver)
        (client, _context, provider, wanted), _ = change.call_args
        assert (client, provider) == (
            drv.virtapi.reportclient, host.compute_node_uuid(fakes.HOST))
        # 7 nodes taken, one of them by this host's instance.
        assert wanted({})['CUSTOM_BAREMETAL']['reserved'] == 6
        # Allocations moved the generation under every write: again as
        # soon as this pass ends.
        change.side_effect = capacity.InventoryConflict(
            url='/resource_providers', error='HTTP 409')
        _follow(drv, reserver)
        assert reserver.capacity_changes == 1
        # Placement away: logged, nothing raised; the periodic tells it.
        change.side_effect = nova_exception.ResourceProviderUpdateFailed(
            url='/resource_providers', error='HTTP 503')
        _follow(drv, reserver)
        assert reserver.capacity_changes == 1
    assert any('Cannot tell placement' in r.message
               for r in caplog.records if r.levelname == 'WARNING')


def test_a_usage_that_moved_in_placement_is_followed(drv, reserver, tree):
    _placement(drv, ['i-1', 'i-2'])
    usages = mock.Mock(status_code=200, __bool__=lambda self: True)
    usages.json.return_value = {'usages': {'CUSTOM_BAREMETAL': 2}}
    allocations = drv.virtapi.reportclient.get.return_value
    drv.virtapi.reportclient.get.side_effect = (
        lambda url: usages if url.endswith('/usages') else allocations)
    reserver.cluster = {'baremetal': {'total': 10, 'free': 4}}
    with mock.patch.object(consumers, 'given_up', return_value=set()):
        drv._inventory_reporter.follow_usages()
        # Not before the resource tracker reported the node.
        assert reserver.capacity_changes == 0
        reserver.refresh()
        drv.update_provider_tree(tree, fakes.HOST)
    drv._inventory_reporter.follow_usages()
    assert reserver.capacity_changes == 0
    # A build that failed here left with its allocation.
    usages.json.return_value = {'usages': {'CUSTOM_BAREMETAL': 1}}
    drv._inventory_reporter.follow_usages()
    assert reserver.capacity_changes == 1


# -- diagnostics --------------------------------------------------------------

def test_instance_diagnostics_give_the_nodes_state_and_size(drv, reserver):
    reserver.hold(power_state=lifecycle.PowerState.OFF)
    found = drv.get_instance_diagnostics(fakes.instance())
    assert (found.state, found.driver, found.num_cpus, found.num_disks,
            found.memory_details.maximum) == ('shutdown', 'ironic', 2, 1,
                                              4096)
    # Nova's API serializes exactly these fields (microversion 2.48).
    assert found.obj_to_primitive()


def test_diagnostics_before_2_48_name_the_node(drv, reserver):
    reserver.hold()
    found = drv.get_diagnostics(fakes.instance())
    assert found == {'state': 'running', 'node': fakes.NODE,
                     'provision_state': 'active', 'cpus': 2,
                     'memory_mb': 4096, 'local_gb': 50}


def test_diagnostics_of_an_instance_without_a_node(drv, reserver):
    with pytest.raises(nova_exception.InstanceNotFound):
        drv.get_instance_diagnostics(fakes.instance())
