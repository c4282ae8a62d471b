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

"""Spawn and destroy: claim, deploy, undo, tear down, release."""

from unittest import mock

from nova.compute import task_states
from nova import exception as nova_exception
import pytest

from ironic_multi import exception
from ironic_multi.virt import driver
from ironic_multi.virt import instances
from ironic_multi.virt import metadata
from tests.unit.virt import fakes
from tests.unit.virt.fakes import node

VALID = {'deploy': {'result': True}, 'power': {'result': True},
         'rescue': {'result': None, 'reason': 'not supported'}}
NETWORK_INFO = [{'id': 'vif-1'}, {'id': 'vif-2'}]


@pytest.fixture
def drv(reserver):
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    drv.init_host(fakes.HOST)
    return drv


def spawn(drv, instance=None, image_meta=None, network_info=NETWORK_INFO,
          **kwargs):
    instance = instance or fakes.instance()
    drv.spawn(None, instance, image_meta or fakes.image_meta(), [],
              'secret', {}, network_info=network_info, **kwargs)
    return instance


def provision_calls(api):
    return [c.args[1] for c in api.set_provision_state.call_args_list]


def instance_info(api):
    patch = api.patch_node.call_args_list[0].args[1]
    return {op['path'].rsplit('/', 1)[1]: op['value'] for op in patch}


# -- spawn ------------------------------------------------------------------

def test_spawn_claims_deploys_and_waits(drv, api, reserver, clock):
    api.validate_node.return_value = VALID
    api.get_node.side_effect = [node('deploying', target='active'),
                                node('wait call-back', target='active'),
                                node('active', power_state='power on')]
    spawn(drv, image_meta=fakes.image_meta(
        **{'trait:CUSTOM_IMAGE': 'required'}))

    reqs = reserver.claims[fakes.INSTANCE]
    assert reqs.resource_class == 'CUSTOM_BAREMETAL'
    assert reqs.project_id == 'project'
    info = instance_info(api)
    assert info['image_source'] == fakes.IMAGE
    assert info[instances.HOST_KEY] == fakes.HOST
    assert info['root_gb'] == '40'
    assert info['traits'] == ['CUSTOM_IMAGE']
    assert [c.args for c in api.attach_vif.call_args_list] == [
        (fakes.NODE, 'vif-1'), (fakes.NODE, 'vif-2')]
    api.validate_node.assert_called_once_with(fakes.NODE)
    api.set_provision_state.assert_called_once_with(fakes.NODE, 'active',
                                                    body=None)
    assert api.get_node.call_count == 3
    assert reserver.released == []


def test_spawn_sends_capabilities_and_config_drive(drv, api, clock):
    api.validate_node.return_value = VALID
    api.get_node.return_value = node('active')
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'capabilities:boot_mode': 'uefi'})))
    with mock.patch.object(metadata, 'configdrive_required',
                           return_value=True), \
            mock.patch.object(metadata, 'build_configdrive',
                              return_value='H4sI...') as build:
        spawn(drv, inst)
    build.assert_called_once_with(inst, NETWORK_INFO, 'secret', [])
    api.set_provision_state.assert_called_once_with(
        fakes.NODE, 'active', body={'configdrive': 'H4sI...'})
    assert instance_info(api)['capabilities'] == '{"boot_mode": "uefi"}'


def test_spawn_validation_failure_undoes_and_reschedules(drv, api, reserver,
                                                         clock):
    api.validate_node.return_value = {
        'deploy': {'result': False, 'reason': 'no image'},
        'power': {'result': True}}
    # The teardown reads the claimed, undeployed node.
    api.get_node.return_value = node('available')
    api.list_vifs.return_value = ['vif-3']
    with pytest.raises(nova_exception.RescheduledException) as e:
        spawn(drv)
    assert 'no image' in str(e.value)
    assert provision_calls(api) == []
    assert sorted(c.args[1] for c in api.detach_vif.call_args_list) == [
        'vif-1', 'vif-2', 'vif-3']
    api.patch_node.assert_called_with(fakes.NODE, [
        {'op': 'replace', 'path': '/instance_info', 'value': {}}])
    assert reserver.released == [fakes.INSTANCE]


def test_spawn_deploy_failure_unprovisions_and_reschedules(drv, api,
                                                           reserver, clock):
    api.validate_node.return_value = VALID
    api.get_node.side_effect = [
        node('deploy failed', last_error='boom'),   # the deploy wait
        node('deploy failed', last_error='boom'),   # the teardown's read
        node('deleting', target='available'),
        node('cleaning', instance_uuid=None)]
    with pytest.raises(nova_exception.RescheduledException) as e:
        spawn(drv)
    assert 'boom' in str(e.value)
    assert provision_calls(api) == ['active', 'deleted']
    assert reserver.released == [fakes.INSTANCE]


def test_spawn_deploy_timeout_is_bounded(drv, api, reserver, conf, clock):
    conf.config(deploy_timeout=10, state_poll_interval=2.0,
                group='ironic_multi')
    api.validate_node.return_value = VALID
    stuck = node('wait call-back', target='active')
    reads = []

    def get_node(uuid, fields=None):
        reads.append(clock[0])
        if api.set_provision_state.call_count == 2:   # deleted requested
            return node('available', instance_uuid=None)
        return stuck

    api.get_node.side_effect = get_node
    started = clock[0]
    with pytest.raises(nova_exception.RescheduledException) as e:
        spawn(drv)
    assert 'within 10 seconds' in str(e.value)
    assert reads[-1] - started <= 12
    assert provision_calls(api) == ['active', 'deleted']
    assert reserver.released == [fakes.INSTANCE]


def test_spawn_no_node_reschedules_without_deploying(drv, api, reserver):
    reserver.claim_error = exception.NoNodeAvailable(
        instance=fakes.INSTANCE, requirements='resource_class=X')
    with pytest.raises(nova_exception.ComputeResourcesUnavailable):
        spawn(drv)
    assert not api.patch_node.called
    assert not api.set_provision_state.called


@pytest.mark.parametrize('error', [
    exception.ClaimTimeout(instance=fakes.INSTANCE, timeout=60),
    exception.IronicUnavailable(reason='down'),
])
def test_spawn_claim_errors_reschedule(drv, api, reserver, error):
    reserver.claim_error = error
    with pytest.raises(nova_exception.RescheduledException):
        spawn(drv)
    assert not api.set_provision_state.called
    assert reserver.released == [fakes.INSTANCE]


def test_spawn_invalid_flavor_aborts_naming_the_key(drv, api, reserver):
    inst = fakes.instance(flavor=fakes.flavor(
        {'resources:CUSTOM_BAREMETAL': '2'}))
    with pytest.raises(nova_exception.BuildAbortException) as e:
        spawn(drv, inst)
    assert 'resources:CUSTOM_BAREMETAL' in str(e.value)
    assert reserver.claims == {}


def test_spawn_keeps_the_node_when_it_cannot_be_taken_back(drv, api,
                                                           reserver, clock):
    api.validate_node.return_value = VALID
    api.get_node.return_value = node('deploy failed', last_error='boom')
    api.set_provision_state.side_effect = [None, fakes.api_error(400)]
    with pytest.raises(nova_exception.BuildAbortException):
        spawn(drv)
    # Releasing would offer a node that may hold the instance's disk.
    assert reserver.released == []
    assert fakes.INSTANCE in reserver.claims


def test_spawn_aborted_by_delete_does_not_reschedule(drv, api, reserver,
                                                     clock):
    api.validate_node.return_value = VALID
    inst = fakes.instance()

    def deleting():
        inst.task_state = task_states.DELETING

    inst.refresh.side_effect = deleting
    api.get_node.return_value = node('available')
    with pytest.raises(nova_exception.UnexpectedDeletingTaskStateError):
        spawn(drv, inst)
    assert reserver.released == [fakes.INSTANCE]


def test_spawn_refuses_boot_from_volume(drv, reserver):
    bdm = mock.Mock(boot_index=0)
    bdm.__getitem__ = lambda self, key: {'boot_index': 0}[key]
    with mock.patch('nova.block_device.get_root_bdm', return_value=bdm):
        with pytest.raises(nova_exception.BuildAbortException):
            spawn(drv, block_device_info={'block_device_mapping': [bdm]})
    assert reserver.claims == {}


def test_spawn_powered_off_when_asked(drv, api, clock):
    api.validate_node.return_value = VALID
    api.get_node.side_effect = [node('active', power_state='power on'),
                                node('active', power_state='power off')]
    spawn(drv, power_on=False)
    api.set_power_state.assert_called_once_with(fakes.NODE, 'power off',
                                                soft=False)


# -- destroy ----------------------------------------------------------------

def destroy(drv, instance=None, network_info=NETWORK_INFO):
    drv.destroy(None, instance or fakes.instance(), network_info)


@pytest.mark.parametrize('maintenance', [False, True])
def test_destroy_unprovisions_waits_and_releases(drv, api, reserver, clock,
                                                 maintenance):
    # Ironic tears down nodes in maintenance too (it refuses only deploy
    # and rebuild), so maintenance takes the same path.
    active = node('active', power_state='power on', maintenance=maintenance)
    api.node_by_instance.return_value = active
    api.get_node.side_effect = [active,
                                node('deleting', target='available'),
                                node('cleaning', instance_uuid=None)]
    destroy(drv)
    api.node_by_instance.assert_called_once_with(
        fakes.INSTANCE, fields=instances.NODE_FIELDS)
    assert provision_calls(api) == ['deleted']
    assert api.get_node.call_count == 3
    assert reserver.released == [fakes.INSTANCE]


def test_destroy_retries_a_locked_node(drv, api, reserver, clock):
    api.node_by_instance.return_value = node('deploying', target='active')
    api.get_node.side_effect = [node('deploying', target='active'),
                                node('available', instance_uuid=None)]
    api.set_provision_state.side_effect = [fakes.conflict(), None]
    destroy(drv)
    assert provision_calls(api) == ['deleted', 'deleted']
    assert reserver.released == [fakes.INSTANCE]


def test_destroy_is_idempotent_without_a_node(drv, api, reserver):
    api.node_by_instance.return_value = None
    destroy(drv)
    destroy(drv)
    assert not api.set_provision_state.called
    assert reserver.released == [fakes.INSTANCE, fakes.INSTANCE]


def test_destroy_of_a_node_that_is_gone(drv, api, reserver):
    api.node_by_instance.return_value = node('active')
    api.get_node.side_effect = exception.NodeNotFound(node=fakes.NODE)
    destroy(drv)
    assert not api.set_provision_state.called
    assert reserver.released == [fakes.INSTANCE]


def test_destroy_of_a_node_gone_during_teardown(drv, api, reserver, clock):
    api.node_by_instance.return_value = node('active')
    api.get_node.side_effect = [node('active'),
                                exception.NodeNotFound(node=fakes.NODE)]
    destroy(drv)
    assert reserver.released == [fakes.INSTANCE]


def test_destroy_of_a_claimed_undeployed_node(drv, api, reserver):
    api.node_by_instance.return_value = node('available')
    api.get_node.return_value = node('available')
    api.list_vifs.return_value = []
    destroy(drv, network_info=[{'id': 'vif-1'}])
    assert not api.set_provision_state.called
    api.detach_vif.assert_called_once_with(fakes.NODE, 'vif-1')
    assert reserver.released == [fakes.INSTANCE]


def test_destroy_failed_teardown_keeps_the_reservation(drv, api, reserver,
                                                       clock):
    api.node_by_instance.return_value = node('active')
    api.get_node.side_effect = [node('active'),
                                node('error', last_error='BMC gone')]
    with pytest.raises(nova_exception.InstanceTerminationFailure) as e:
        destroy(drv)
    assert 'BMC gone' in str(e.value)
    assert reserver.released == []


def test_destroy_teardown_is_bounded(drv, api, reserver, conf, clock):
    conf.config(unprovision_timeout=5, group='ironic_multi')
    api.node_by_instance.return_value = node('active')
    api.get_node.return_value = node('deleting', target='available')
    with pytest.raises(nova_exception.InstanceTerminationFailure):
        destroy(drv)
    assert reserver.released == []


def test_destroy_with_ironic_down(drv, api, reserver):
    api.node_by_instance.side_effect = exception.IronicUnavailable(
        reason='down')
    with pytest.raises(nova_exception.InstanceTerminationFailure):
        destroy(drv)
    assert reserver.released == []


def test_failed_spawn_cleanup_never_raises(drv, api, reserver):
    api.node_by_instance.side_effect = exception.IronicUnavailable(
        reason='down')
    drv.failed_spawn_cleanup(fakes.instance())
    api.node_by_instance.side_effect = None
    api.node_by_instance.return_value = None
    drv.failed_spawn_cleanup(fakes.instance())
    assert reserver.released == [fakes.INSTANCE]


# -- rebuild ----------------------------------------------------------------

def test_rebuild_reimages_in_place(drv, api, reserver, clock):
    api.node_by_instance.return_value = node('active')
    api.get_node.side_effect = [node('deploying', target='active'),
                                node('active')]
    inst = fakes.instance(task_state=task_states.REBUILDING)
    drv.rebuild(None, inst, fakes.image_meta(), [], None, {}, [], None,
                None, network_info=[], preserve_ephemeral=True)
    inst.save.assert_called_once_with(
        expected_task_state=[task_states.REBUILDING])
    assert inst.task_state == task_states.REBUILD_SPAWNING
    assert provision_calls(api) == ['rebuild']
    assert instance_info(api)['preserve_ephemeral'] == 'True'
    assert reserver.claims == {} and reserver.released == []


def test_rebuild_failure(drv, api, clock):
    api.node_by_instance.return_value = node('active')
    api.get_node.return_value = node('deploy failed', last_error='bad image')
    with pytest.raises(nova_exception.InstanceDeployFailure):
        drv.rebuild(None, fakes.instance(), fakes.image_meta(), [], None,
                    {}, [], None, None)
