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

"""Spawn, destroy and rebuild: what the driver asks of the Reserver, and
which Nova exception each failure becomes."""

import json
from unittest import mock

from nova.compute import task_states
from nova.compute import vm_states
from nova import exception as nova_exception
from nova import objects
import pytest

from ironic_multi._reservation.providers import base
from ironic_multi._virt import metadata
from ironic_multi import exception
from tests.unit.virt import fakes

NETWORK_INFO = [{'id': 'vif-1'}, {'id': 'vif-2'}]


def spawn(drv, instance=None, image_meta=None, network_info=NETWORK_INFO,
          **kwargs):
    instance = instance or fakes.instance()
    drv.spawn(None, instance, image_meta or fakes.image_meta(), [],
              'secret', {}, network_info=network_info, **kwargs)
    return instance


def deploy_failed(reason='boom'):
    return exception.DeployFailed(node=fakes.NODE, reason=reason)


def teardown_failed(reason='BMC gone'):
    return exception.TeardownFailed(node=fakes.NODE, reason=reason)


# -- spawn ------------------------------------------------------------------

def test_spawn_claims_then_deploys(drv, reserver):
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'capabilities:boot_mode': 'uefi'})))
    spawn(drv, inst, image_meta=fakes.image_meta(
        **{'trait:CUSTOM_IMAGE': 'required'}))

    assert reserver.names() == ['claim', 'deploy']
    reqs = reserver.claims[fakes.INSTANCE]
    assert reqs.resource_class == 'CUSTOM_BAREMETAL'
    assert reqs.project_id == 'project'
    assert reqs.required_traits == {'CUSTOM_IMAGE'}
    _name, reservation, deployment = reserver.calls[1]
    # The node that was claimed is the one deployed.
    assert reservation.node_uuid == fakes.NODE
    assert reservation.instance_uuid == fakes.INSTANCE
    assert deployment.instance_uuid == fakes.INSTANCE
    # The claim was told what the deploy would write (the provider may
    # write it with the claim).
    assert reserver.claimed_with[fakes.INSTANCE] is deployment
    assert deployment.host == fakes.HOST
    assert deployment.image_source == fakes.IMAGE
    assert deployment.vifs == ('vif-1', 'vif-2')
    assert deployment.instance_info['root_gb'] == '40'
    assert deployment.instance_info['traits'] == ['CUSTOM_IMAGE']
    assert json.loads(deployment.instance_info['capabilities']) == {
        'boot_mode': 'uefi'}
    # No config drive asked for, none sent.
    assert deployment.configdrive is None
    assert fakes.INSTANCE in reserver.held


def test_spawn_sends_the_config_drive_when_required(drv, reserver):
    inst = fakes.instance()
    with mock.patch.object(metadata, 'configdrive_required',
                           return_value=True), \
            mock.patch.object(metadata, 'build_configdrive',
                              return_value='H4sI...') as build:
        spawn(drv, inst)
        deployment = reserver.deployments[0]
        # Built only when the provider asks for it.
        assert not build.called
        assert deployment.configdrive() == 'H4sI...'
    build.assert_called_once_with(inst, NETWORK_INFO, 'secret', [], None)


def test_should_stop_raises_once_the_instance_is_being_deleted(drv,
                                                               reserver):
    inst = fakes.instance()
    answers = []

    def on_deploy(should_stop):
        answers.append(should_stop())
        inst.refresh.side_effect = lambda: setattr(
            inst, 'task_state', task_states.DELETING)
        with pytest.raises(nova_exception.UnexpectedDeletingTaskStateError):
            should_stop()
        inst.task_state = None
        inst.refresh.side_effect = lambda: setattr(
            inst, 'vm_state', vm_states.DELETED)
        with pytest.raises(nova_exception.UnexpectedDeletingTaskStateError):
            should_stop()
        answers.append('checked')

    reserver.on_deploy = on_deploy
    spawn(drv, inst)
    # Alive, it says nothing; it reads the instance anew each time.
    assert answers == [None, 'checked']
    assert inst.refresh.call_count == 3


@pytest.mark.parametrize('deleted', [
    lambda inst: setattr(inst, 'task_state', task_states.DELETING),
    lambda inst: setattr(inst, 'vm_state', vm_states.DELETED),
])
def test_spawn_deleted_during_the_deploy_releases_and_reraises(
        drv, reserver, deleted):
    inst = fakes.instance()
    inst.refresh.side_effect = lambda: deleted(inst)
    reserver.on_deploy = lambda should_stop: should_stop()
    with pytest.raises(nova_exception.UnexpectedDeletingTaskStateError):
        spawn(drv, inst)
    assert reserver.names() == ['claim', 'deploy', 'release']
    assert fakes.INSTANCE not in reserver.held


def test_spawn_of_an_instance_gone_from_nova_releases_and_reraises(
        drv, reserver):
    inst = fakes.instance()
    inst.refresh.side_effect = nova_exception.InstanceNotFound(
        instance_id=fakes.INSTANCE)
    reserver.on_deploy = lambda should_stop: should_stop()
    with pytest.raises(nova_exception.InstanceNotFound):
        spawn(drv, inst)
    assert reserver.names() == ['claim', 'deploy', 'release']


def test_spawn_no_node_reschedules_without_deploying(drv, reserver):
    reserver.errors['claim'] = exception.NoNodeAvailable(
        instance=fakes.INSTANCE, requirements='resource_class=X')
    with pytest.raises(nova_exception.ComputeResourcesUnavailable) as e:
        spawn(drv)
    assert 'resource_class=X' in str(e.value)
    assert reserver.names() == ['claim']


@pytest.mark.parametrize('error', [
    exception.ClaimTimeout(instance=fakes.INSTANCE, timeout=60),
    exception.IronicUnavailable(reason='down'),
    exception.CoordinationUnavailable(url='file://', reason='gone'),
])
def test_spawn_claim_errors_release_and_reschedule(drv, reserver, error):
    reserver.errors['claim'] = error
    with pytest.raises(nova_exception.RescheduledException) as e:
        spawn(drv)
    assert str(error) in str(e.value)
    assert reserver.names() == ['claim', 'release']


def test_spawn_claim_error_and_release_error_abort(drv, reserver):
    # A reschedule with a reservation left behind could deploy the
    # instance on two hosts' nodes.
    reserver.errors['claim'] = exception.ClaimTimeout(
        instance=fakes.INSTANCE, timeout=60)
    reserver.errors['release'] = exception.IronicUnavailable(reason='down')
    with pytest.raises(nova_exception.BuildAbortException):
        spawn(drv)


def test_spawn_invalid_flavor_aborts_naming_the_key(drv, reserver):
    inst = fakes.instance(flavor=fakes.flavor(
        {'resources:CUSTOM_BAREMETAL': '2'}))
    with pytest.raises(nova_exception.BuildAbortException) as e:
        spawn(drv, inst)
    assert 'resources:CUSTOM_BAREMETAL' in str(e.value)
    assert reserver.calls == []


def test_spawn_deploy_failure_releases_and_reschedules(drv, reserver):
    reserver.errors['deploy'] = deploy_failed('boom')
    with pytest.raises(nova_exception.RescheduledException) as e:
        spawn(drv)
    assert 'boom' in str(e.value)
    assert fakes.NODE in str(e.value)
    assert reserver.names() == ['claim', 'deploy', 'release']
    assert reserver.held == {}


def test_spawn_deploy_failure_and_release_error_abort(drv, reserver):
    reserver.errors['deploy'] = deploy_failed()
    reserver.errors['release'] = exception.IronicUnavailable(reason='down')
    with pytest.raises(nova_exception.BuildAbortException):
        spawn(drv)


def test_spawn_keeps_the_node_when_it_cannot_be_taken_back(drv, reserver):
    reserver.errors['deploy'] = teardown_failed('BMC gone')
    with pytest.raises(nova_exception.BuildAbortException) as e:
        spawn(drv)
    assert 'BMC gone' in str(e.value)
    # Releasing would offer a node that may hold the instance's disk.
    assert 'release' not in reserver.names()
    assert fakes.INSTANCE in reserver.held


def test_spawn_of_an_image_ironic_refuses_aborts(drv, reserver):
    # As Nova's in-tree driver: no other host could deploy it either.
    reserver.errors['deploy'] = exception.InvalidImage(
        node=fakes.NODE, reason='ironic.common.exception.InvalidImage: '
                                'The requested image is not valid for use.')
    with pytest.raises(nova_exception.BuildAbortException) as e:
        spawn(drv)
    assert 'refused the image' in str(e.value)
    assert reserver.names() == ['claim', 'deploy', 'release']
    assert reserver.held == {}


def test_spawn_with_an_ephemeral_disk_names_its_device(drv, reserver):
    inst = fakes.instance(flavor=fakes.flavor(ephemeral_gb=10))
    spawn(drv, inst)
    assert inst.default_ephemeral_device == '/dev/sda1'
    inst = fakes.instance()
    spawn(drv, inst)
    assert 'default_ephemeral_device' not in inst


def test_spawn_on_a_provider_that_cannot_deploy_aborts(drv, reserver):
    reserver.errors['deploy'] = exception.NotSupported(
        provider='fake', feature=base.Feature.CONFIGDRIVE)
    with pytest.raises(nova_exception.BuildAbortException) as e:
        spawn(drv)
    assert 'config drive' in str(e.value)
    assert reserver.names() == ['claim', 'deploy', 'release']


def test_spawn_powered_off_when_asked(drv, reserver):
    spawn(drv, power_on=False)
    assert reserver.calls[-1] == ('power', fakes.INSTANCE,
                                  base.PowerAction.OFF, None)
    assert reserver.names() == ['claim', 'deploy', 'power']


def test_spawn_powered_on_by_default(drv, reserver):
    spawn(drv)
    assert 'power' not in reserver.names()


def test_spawn_power_off_failure_reaches_nova(drv, reserver):
    reserver.errors['power'] = exception.PowerActionFailed(
        action=base.PowerAction.OFF, node=fakes.NODE, reason='no BMC')
    with pytest.raises(nova_exception.InstancePowerOffFailure):
        spawn(drv, power_on=False)
    # Nova destroys and reschedules: the node is its to tear down.
    assert 'release' not in reserver.names()


# -- destroy ----------------------------------------------------------------

def destroy(drv, instance=None, network_info=NETWORK_INFO):
    drv.destroy(None, instance or fakes.instance(), network_info)


def test_destroy_tears_down_then_releases(drv, reserver):
    reserver.hold()
    destroy(drv)
    assert reserver.calls == [
        ('teardown', fakes.INSTANCE, ('vif-1', 'vif-2')),
        ('release', fakes.INSTANCE)]
    assert reserver.held == {}


def test_destroy_is_idempotent_without_a_node(drv, reserver):
    destroy(drv)
    destroy(drv, network_info=None)
    assert reserver.calls == [('teardown', fakes.INSTANCE, ('vif-1', 'vif-2')),
                              ('release', fakes.INSTANCE),
                              ('teardown', fakes.INSTANCE, ()),
                              ('release', fakes.INSTANCE)]


def test_destroy_failed_teardown_keeps_the_reservation(drv, reserver):
    reserver.hold()
    reserver.errors['teardown'] = teardown_failed('BMC gone')
    with pytest.raises(nova_exception.InstanceTerminationFailure) as e:
        destroy(drv)
    assert 'BMC gone' in str(e.value)
    assert 'release' not in reserver.names()
    assert fakes.INSTANCE in reserver.held


def test_destroy_with_the_provider_down(drv, reserver):
    reserver.errors['teardown'] = exception.IronicUnavailable(reason='down')
    with pytest.raises(nova_exception.InstanceTerminationFailure):
        destroy(drv)
    assert 'release' not in reserver.names()


def test_destroy_failed_release(drv, reserver):
    reserver.hold()
    reserver.errors['release'] = exception.IronicUnavailable(reason='down')
    with pytest.raises(nova_exception.InstanceTerminationFailure) as e:
        destroy(drv)
    assert 'down' in str(e.value)


def test_failed_spawn_cleanup_never_raises(drv, reserver):
    reserver.errors['teardown'] = exception.IronicUnavailable(reason='down')
    drv.failed_spawn_cleanup(fakes.instance())
    del reserver.errors['teardown']
    reserver.errors['release'] = exception.IronicUnavailable(reason='down')
    drv.failed_spawn_cleanup(fakes.instance())
    del reserver.errors['release']
    drv.failed_spawn_cleanup(fakes.instance())
    assert reserver.names() == ['teardown', 'teardown', 'release',
                                'teardown', 'release']


# -- rebuild ----------------------------------------------------------------

def rebuild(drv, instance=None, bdms=(), **kwargs):
    drv.rebuild(None, instance or fakes.instance(), fakes.image_meta(), [],
                'secret', {}, objects.BlockDeviceMappingList(
                    objects=list(bdms)), None, None, **kwargs)


def test_rebuild_reimages_in_place(drv, reserver):
    reserver.hold()
    inst = fakes.instance(task_state=task_states.REBUILDING)
    rebuild(drv, inst, network_info=NETWORK_INFO, preserve_ephemeral=True)
    inst.save.assert_called_once_with(
        expected_task_state=[task_states.REBUILDING])
    assert inst.task_state == task_states.REBUILD_SPAWNING
    assert reserver.names() == ['rebuild']
    _name, instance_uuid, deployment = reserver.calls[0]
    assert instance_uuid == fakes.INSTANCE
    assert deployment.instance_info['preserve_ephemeral'] == 'True'
    assert deployment.image_source == fakes.IMAGE
    assert deployment.host == fakes.HOST
    assert deployment.vifs == ('vif-1', 'vif-2')


def test_rebuild_failure(drv, reserver):
    reserver.hold()
    reserver.errors['rebuild'] = deploy_failed('bad image')
    with pytest.raises(nova_exception.InstanceDeployFailure) as e:
        rebuild(drv)
    assert 'bad image' in str(e.value)


def test_rebuild_on_a_provider_that_cannot(drv, reserver):
    reserver.hold()
    reserver.errors['rebuild'] = exception.NotSupported(
        provider='fake', feature=base.Feature.REBUILD)
    with pytest.raises(nova_exception.InstanceDeployFailure) as e:
        rebuild(drv)
    assert 'rebuild' in str(e.value)


def test_rebuild_without_a_node(drv, reserver):
    with pytest.raises(nova_exception.InstanceNotFound):
        rebuild(drv)


def test_rebuild_with_an_invalid_flavor(drv, reserver):
    reserver.hold()
    inst = fakes.instance(flavor=fakes.flavor(
        {'resources:CUSTOM_BAREMETAL': '2'}))
    with pytest.raises(nova_exception.InstanceDeployFailure) as e:
        rebuild(drv, inst)
    assert 'resources:CUSTOM_BAREMETAL' in str(e.value)
    assert reserver.calls == []


def test_rebuild_at_microversion_2_93_of_an_image_backed_server(
        drv, reserver):
    # Nova's API passes reimage_boot_volume=True for every rebuild from
    # 2.93 on (the openstack client's default); only a boot volume is
    # the compute manager's business.
    reserver.hold()
    inst = fakes.instance(task_state=task_states.REBUILDING)
    rebuild(drv, inst, bdms=[objects.BlockDeviceMapping(
        boot_index=0, source_type='image', destination_type='local')],
        reimage_boot_volume=True)
    assert reserver.names() == ['rebuild']
    assert inst.task_state == task_states.REBUILD_SPAWNING


def test_rebuild_of_a_boot_volume_is_refused(drv, reserver):
    reserver.hold()
    inst = fakes.instance(task_state=task_states.REBUILDING)
    with pytest.raises(nova_exception.NovaException) as e:
        rebuild(drv, inst, bdms=[objects.BlockDeviceMapping(
            boot_index=0, source_type='volume', destination_type='volume',
            volume_id='b0a7f1e2-0000-4000-8000-000000000001')],
            reimage_boot_volume=True)
    assert 'boot volume' in str(e.value)
    assert reserver.calls == []
    assert not inst.save.called
