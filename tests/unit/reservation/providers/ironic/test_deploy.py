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

"""Deploy, tear down and rebuild of a reserved Ironic node.

Ironic is a ``mock.create_autospec`` of IronicAPI: what it answers is part
of each scenario.  Time only moves when the code under test sleeps.
"""

import json
from unittest import mock

import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import client
from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import provider as provider_mod
from ironic_multi import exception
from ironic_multi.testing import reservers

HOST = 'compute-1'
NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'
INSTANCE = 'a7a9a2a6-7ee0-4a4c-bb36-6b6a0cbd2d01'
OTHER = 'd3c1e9a0-55a5-4f0e-8a43-2f1b9f8e0c77'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
VIFS = ('vif-1', 'vif-2')
INFO = {'root_gb': '40', 'capabilities': json.dumps({'boot_mode': 'uefi'}),
        'traits': ['CUSTOM_IMAGE']}


@pytest.fixture
def conf():
    return reservers.make_conf(deploy_timeout=60, unprovision_timeout=60,
                               power_timeout=30, state_poll_interval=1.0)


@pytest.fixture
def api():
    api = mock.create_autospec(client.IronicAPI, instance=True)
    api.list_vifs.return_value = []
    api.list_ports.return_value = []
    api.list_port_groups.return_value = []
    # Ironic answers a PATCH with the node as it is after the write.
    api.patch_node.side_effect = lambda uuid, patch, **kw: node()
    return api


# What a read-modify-write of the failure marks reads.
MARK_FIELDS = ['extra', 'provision_updated_at']


def node(provision_state='available', instance_uuid=INSTANCE,
         power_state='power off', target=None, maintenance=False,
         last_error=None, **extra):
    """A node dict as IronicAPI returns it with the provider's fields."""
    return dict({'uuid': NODE, 'instance_uuid': instance_uuid,
                 'provision_state': provision_state,
                 'target_provision_state': target,
                 'power_state': power_state, 'target_power_state': None,
                 'maintenance': maintenance, 'last_error': last_error,
                 'resource_class': 'baremetal'}, **extra)


def marked(*args, group='ironic-multi', **fields):
    """A node as :func:`node`, its instance under ``group``'s mark."""
    found = node(*args, **fields)
    found['instance_info'] = dict(found.get('instance_info') or {}, **{
        ownership.KEY: {found['instance_uuid']: ownership.mark(group)}})
    return found


def answers(api, *reads, holder=None, marks=None):
    """Answer get_node as Ironic would in a scenario.

    The checks of who holds the node get ``holder`` (the claimed node by
    default), reads of ``extra`` a node with ``marks`` (none by default),
    and every other read (a wait's) the next of ``reads``.  With
    ``marks``, the answer to a write shows them too.
    """
    holder = holder or marked()
    reads = iter(reads)
    if marks:
        api.patch_node.side_effect = lambda uuid, patch, **kw: node(
            extra={provider_mod._MARKS: marks})

    def get_node(uuid, fields=None):
        if fields == deploy.HOLDER_FIELDS:
            return holder
        if fields == MARK_FIELDS:
            return {'uuid': NODE,
                    'extra': {provider_mod._MARKS: marks} if marks else {}}
        return next(reads)

    api.get_node.side_effect = get_node


def reservation(state=lifecycle.State.CLAIMED):
    return lifecycle.Reservation(instance_uuid=INSTANCE, node_uuid=NODE,
                                 state=state, resource_class='baremetal')


def deployment(**fields):
    values = dict(instance_uuid=INSTANCE, host=HOST, image_source=IMAGE,
                  instance_info=dict(INFO), vifs=VIFS)
    values.update(fields)
    return base.Deployment(**values)


def provision_calls(api):
    return [c.args[1] for c in api.set_provision_state.call_args_list]


def written_info(api):
    """What the first PATCH wrote into instance_info, after its guard."""
    guard, *patch = api.patch_node.call_args_list[0].args[1]
    assert guard == ownership.guard(INSTANCE, 'ironic-multi')
    assert all(op['op'] == 'add' for op in patch)
    return {op['path'].split('/', 2)[2]: op['value'] for op in patch}


def cleared_instance_info(api):
    return mock.call(NODE, [{'op': 'replace', 'path': '/instance_info',
                             'value': {}}]) in api.patch_node.call_args_list


def conflict(reason='locked'):
    return exception.NodeConflict(node=NODE, reason=reason)


def api_error(status_code, reason='refused'):
    return exception.IronicAPIError(status_code=status_code, reason=reason)


# -- what is written to the node ---------------------------------------------

def test_instance_info_patch_carries_the_image_and_the_host_mark():
    patch = deploy.instance_info_patch(deployment(
        instance_info=dict(INFO, image_source='stale',
                           **{deploy.HOST_KEY: 'compute-9'})))
    assert deploy.HOST_KEY == 'nova_host_id'
    assert patch == [
        {'op': 'add', 'path': '/instance_info/capabilities',
         'value': '{"boot_mode": "uefi"}'},
        {'op': 'add', 'path': '/instance_info/image_source', 'value': IMAGE},
        {'op': 'add', 'path': '/instance_info/nova_host_id', 'value': HOST},
        {'op': 'add', 'path': '/instance_info/root_gb', 'value': '40'},
        {'op': 'add', 'path': '/instance_info/traits',
         'value': ['CUSTOM_IMAGE']},
    ]


def test_the_host_mark_tells_the_instances_of_a_host(provider, api):
    api.supports.return_value = False

    def deployed(instance_uuid, host, uuid, group='ironic-multi', **fields):
        info = {deploy.HOST_KEY: host} if host else {}
        found = node('active', instance_uuid=instance_uuid, uuid=uuid,
                     instance_info=info, **fields)
        return marked(**found, group=group) if group else found

    api.iter_nodes.return_value = [
        deployed(INSTANCE, HOST, 'n1', power_state='power on'),
        deployed(OTHER, 'compute-2', 'n2'),
        # Claimed, not deployed by anyone yet: nobody's instance.
        deployed('new', None, 'n3'),
        # The same host name, in another group (another cell), and a node
        # deployed by someone else with Nova's own host mark.
        deployed('other-group', HOST, 'n4', group='another-group'),
        deployed('foreign', HOST, 'n5', group=None)]
    found = provider.instances(HOST)
    assert list(found) == [INSTANCE]
    assert found[INSTANCE].node_uuid == 'n1'
    assert found[INSTANCE].host == HOST
    assert found[INSTANCE].power_state == lifecycle.PowerState.ON
    assert api.iter_nodes.call_args.kwargs['associated'] is True


# -- deploy -------------------------------------------------------------------

def test_deploy_writes_attaches_provisions_and_waits(provider, api, clock):
    answers(api, node('wait call-back', target='active'),
            node('active', power_state='power on'))
    should_stop = mock.Mock(return_value=None)
    deployed = provider.deploy(reservation(), deployment(), should_stop)

    assert deployed.state == lifecycle.State.ACTIVE
    assert deployed.node_uuid == NODE
    info = written_info(api)
    assert info['image_source'] == IMAGE
    assert info['nova_host_id'] == HOST
    assert info['root_gb'] == '40'
    assert info['traits'] == ['CUSTOM_IMAGE']
    assert [c.args for c in api.attach_vif.call_args_list] == [
        (NODE, 'vif-1'), (NODE, 'vif-2')]
    api.set_provision_state.assert_called_once_with(NODE, 'active',
                                                    body=None)
    # instance_info and VIFs are in place before the provision request
    # (Ironic validates the node then), and the wait starts once the
    # deploy was asked for.  The node is read before each write and
    # before the provision request (the PATCH's answer is the read
    # before the VIFs): it must still hold the instance.  No request of
    # Ironic's validation of its own, and no read of the deploy before
    # one poll interval: Ironic has only accepted it.
    assert [name for name, _args, _kwargs in api.mock_calls
            if not name.startswith('bounded')] == [
        'get_node', 'patch_node', 'attach_vif', 'attach_vif',
        'get_node', 'set_provision_state',
        'get_node', 'get_node']
    # Every request of it is bounded by the deploy's timeout.
    (deadline,) = api.bounded.call_args.args
    assert deadline == 1000.0 + 60
    # Asked before every read whether to go on.
    assert should_stop.call_count == 2
    assert clock[0] == 1002.0


def test_deploy_sends_the_config_drive(provider, api, clock):
    api.get_node.return_value = node('active')
    build = mock.Mock(return_value='H4sI...')
    provider.deploy(reservation(), deployment(configdrive=build))
    build.assert_called_once_with(base.NodeNetwork())
    api.set_provision_state.assert_called_once_with(
        NODE, 'active', body={'configdrive': 'H4sI...'})


def test_the_config_drive_is_built_with_the_nodes_ports(provider, api,
                                                        clock):
    # Read once the VIFs are attached: Ironic says which port has which.
    api.get_node.return_value = node('active')
    api.list_ports.return_value = [
        {'uuid': 'p1', 'address': '52:54:00:00:00:01',
         'portgroup_uuid': 'g1', 'internal_info': {}, 'extra': {}},
        {'uuid': 'p2', 'address': '52:54:00:00:00:02',
         'portgroup_uuid': None,
         'internal_info': {'tenant_vif_port_id': 'vif-2'}, 'extra': {}},
        {'uuid': 'p3', 'address': '52:54:00:00:00:03',
         'internal_info': {}, 'extra': {'vif_port_id': 'vif-3'}}]
    api.list_port_groups.return_value = [
        {'uuid': 'g1', 'address': '52:54:00:00:00:0a', 'mode': '802.3ad',
         'properties': {'miimon': '100'},
         'internal_info': {'tenant_vif_port_id': 'vif-1'}, 'extra': {}}]
    build = mock.Mock(return_value='H4sI...')
    provider.deploy(reservation(), deployment(configdrive=build))
    build.assert_called_once_with(base.NodeNetwork(
        ports=(base.NodePort('p1', '52:54:00:00:00:01', None, 'g1'),
               base.NodePort('p2', '52:54:00:00:00:02', 'vif-2'),
               base.NodePort('p3', '52:54:00:00:00:03', 'vif-3')),
        port_groups=(base.NodePortGroup(
            'g1', '52:54:00:00:00:0a', 'vif-1', '802.3ad',
            {'miimon': '100'}),)))


def test_without_a_config_drive_no_port_is_read(provider, api, clock):
    api.get_node.return_value = node('active')
    provider.deploy(reservation(), deployment())
    assert not api.list_ports.called and not api.list_port_groups.called


def test_deploy_without_vifs(provider, api, clock):
    api.get_node.return_value = node('active')
    provider.deploy(reservation(), deployment(vifs=()))
    assert not api.attach_vif.called
    assert provision_calls(api) == ['active']
    # The read before the write, then the PATCH's answer: no read
    # between the write and the provision request.
    assert [name for name, _args, _kwargs in api.mock_calls
            if not name.startswith('bounded')] == [
        'get_node', 'patch_node', 'set_provision_state', 'get_node']


def test_a_deploy_reads_no_marks_of_a_node_that_has_none(
        provider, api, clock):
    answers(api, node('active'))
    provider.deploy(reservation(), deployment(vifs=()))
    # Ironic's answer to the write showed no marks: nothing to clear.
    assert mock.call(NODE, fields=MARK_FIELDS) not in api.get_node.mock_calls
    assert api.patch_node.call_count == 1


def test_an_old_tear_down_note_alone_costs_no_request(
        provider, api, clock):
    # The note of a tear down that earlier versions wrote: history.
    note = {'group': 'ironic-multi', 'torn_down': 2.0}
    answers(api, node('active'), marks=note)
    provider.deploy(reservation(), deployment(vifs=()))
    # No failure to forget: no read of the marks, no write of them.
    assert mock.call(NODE, fields=MARK_FIELDS) not in api.get_node.mock_calls
    assert api.patch_node.call_count == 1


def test_a_deploy_forgets_the_failures_the_node_had(provider, api, clock):
    failed = {'group': 'ironic-multi', 'failures': 2, 'last_failure': 1.0,
              'reason': 'deploy failed: boom', 'torn_down': 2.0}
    answers(api, node('active'), marks=failed)
    provider.deploy(reservation(), deployment(vifs=()))
    # The marks are read again before they are written: the write's
    # answer is old by then.
    assert api.get_node.call_args_list[-1] == mock.call(NODE,
                                                        fields=MARK_FIELDS)
    assert api.patch_node.call_args_list[-1] == mock.call(NODE, [
        {'op': 'remove', 'path': '/extra/%s' % provider_mod._MARKS}])


def test_marks_that_cannot_be_cleared_do_not_fail_the_deploy(
        provider, api, clock, caplog):
    failed = {'group': 'ironic-multi', 'failures': 1}
    answers(api, node('active'), marks=failed)
    api.patch_node.side_effect = [
        node(extra={provider_mod._MARKS: failed}),
        exception.IronicUnavailable(reason='HTTP 503')]
    deployed = provider.deploy(reservation(), deployment(vifs=()))
    assert deployed.state == lifecycle.State.ACTIVE
    assert 'could not be cleared: Ironic is unavailable: HTTP 503' in (
        caplog.text)


def test_validation_failure_undoes_and_fails(provider, api, clock):
    # Ironic validates the power and deploy interfaces when asked to
    # deploy, and refuses the request with the reason.
    api.set_provision_state.side_effect = api_error(
        400, 'Failed to validate deploy or power info for node %s: no '
             'image' % NODE)
    # The undo reads the claimed, undeployed node.
    api.get_node.return_value = node('available')
    api.list_vifs.return_value = ['vif-3']
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), deployment())
    assert 'Failed to validate deploy or power info' in str(e.value)
    assert 'no image' in str(e.value)
    assert e.value.node == NODE
    assert provision_calls(api) == ['active']
    assert sorted(c.args[1] for c in api.detach_vif.call_args_list) == [
        'vif-1', 'vif-2', 'vif-3']
    api.patch_node.assert_called_with(NODE, [
        {'op': 'replace', 'path': '/instance_info', 'value': {}}])


def test_an_image_ironic_refuses_is_told_apart(provider, api, clock):
    # Ironic's conductor refuses the image when asked to deploy: the
    # driver aborts the build instead of rescheduling, as in-tree.
    api.set_provision_state.side_effect = api_error(
        400, 'ironic.common.exception.InvalidImage: The requested image is '
             'not valid for use.')
    api.get_node.return_value = node('available')
    api.list_vifs.return_value = []
    with pytest.raises(exception.InvalidImage) as e:
        provider.deploy(reservation(), deployment())
    assert 'not valid for use' in str(e.value)
    # Taken back like any failed deploy; the claim stays with the caller.
    assert provision_calls(api) == ['active']
    api.patch_node.assert_called_with(NODE, [
        {'op': 'replace', 'path': '/instance_info', 'value': {}}])


def test_deploy_failure_unprovisions_and_fails(provider, api, clock):
    answers(api,
            node('deploy failed', last_error='boom'),   # the deploy wait
            node('deploy failed', last_error='boom'),   # the undo's read
            node('deleting', target='available'),
            node('cleaning', instance_uuid=None))
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), deployment())
    assert 'boom' in str(e.value)
    assert provision_calls(api) == ['active', 'deleted']


def test_deploy_wait_is_bounded(provider, api, conf, clock):
    conf.set_override('deploy_timeout', 10, group='ironic_multi')
    conf.set_override('state_poll_interval', 2.0, group='ironic_multi')
    stuck = node('wait call-back', target='active')
    reads = []

    def get_node(uuid, fields=None):
        reads.append(clock[0])
        if provision_calls(api) == ['active', 'deleted']:
            return node('available', instance_uuid=None)
        return stuck

    api.get_node.side_effect = get_node
    started = clock[0]
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), deployment())
    assert 'within 10 seconds' in str(e.value)
    assert reads[-1] - started <= 12
    assert provision_calls(api) == ['active', 'deleted']


def test_an_ironic_error_fails_the_deploy_after_undoing_it(
        provider, api, clock):
    refused = conflict('no free port')
    api.attach_vif.side_effect = [None, refused]
    api.get_node.return_value = node('available')
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), deployment())
    assert 'no free port' in str(e.value)
    assert e.value.__cause__ is refused
    assert provision_calls(api) == []
    assert cleared_instance_info(api)


def test_a_node_taken_from_the_instance_fails_without_touching_it(
        provider, api, clock):
    # Released behind the deploy's back (a stuck claim timed out) and
    # claimed by another instance before the deploy began.
    api.get_node.return_value = marked('available', instance_uuid=OTHER)
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), deployment())
    assert 'no longer holds instance %s (it holds %s)' % (
        INSTANCE, OTHER) in str(e.value)
    # Nothing written, provisioned or undone on the other's node.
    assert provision_calls(api) == []
    assert not api.patch_node.called
    assert not api.attach_vif.called and not api.detach_vif.called


@pytest.mark.parametrize('moment', ['before VIFs', 'before provisioning'])
def test_a_node_taken_during_the_deploy_is_never_provisioned(
        provider, api, clock, moment):
    taken = marked('available', instance_uuid=OTHER)
    if moment == 'before VIFs':
        # Taken as the write went through: its answer says so.  (A write
        # under a mark would be refused; a node claimed by allocation has
        # no mark before this write.)
        reads = [node()]
        api.patch_node.side_effect = lambda uuid, patch, **kw: taken
    else:
        reads = [marked(), taken]
    holders = iter(reads)
    answers(api, taken)
    api.get_node.side_effect = lambda uuid, fields=None: (
        next(holders) if fields == deploy.HOLDER_FIELDS else taken)
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), deployment())
    assert 'no longer holds' in str(e.value)
    assert provision_calls(api) == []
    assert not api.detach_vif.called
    assert api.attach_vif.called == (moment == 'before provisioning')


def test_a_guard_refused_by_ironic_fails_the_deploy(provider, api, clock):
    # The node changed hands between the read and Ironic's own read.
    taken = marked('available', instance_uuid=OTHER)
    answers(api, taken)
    api.patch_node.side_effect = api_error(
        400, "Couldn't apply patch: member 'ironic_multi' not found")
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), deployment())
    assert 'under its mark' in str(e.value)
    assert provision_calls(api) == []
    # The undo finds the other instance there: it writes nothing more.
    assert api.patch_node.call_count == 1


def test_should_stop_ends_the_wait_undoes_and_passes_through(provider, api,
                                                             clock):
    class Deleted(Exception):
        pass

    def should_stop():
        # The holder checks of the deploy came first.
        if api.get_node.call_count == 2:
            raise Deleted()

    answers(api, node('deploying', target='active'),
            # the undo
            node('deploying', target='active'),
            node('available', instance_uuid=None))
    with pytest.raises(Deleted):
        provider.deploy(reservation(), deployment(), should_stop)
    assert provision_calls(api) == ['active', 'deleted']


def test_an_undo_that_cannot_finish_raises_teardown_failed(provider, api,
                                                           clock):
    api.get_node.return_value = node('deploy failed', last_error='boom')
    api.set_provision_state.side_effect = [None, api_error(400)]
    with pytest.raises(exception.TeardownFailed) as e:
        provider.deploy(reservation(), deployment())
    assert e.value.node == NODE
    # The node may hold the instance's disk: it stays associated.
    assert not api.delete_allocation.called
    # (The mark's write is guarded by a no-op on it.)
    assert not any(op.get('path') == '/instance_uuid'
                   and op != ownership.holder_guard(INSTANCE)
                   for c in api.patch_node.call_args_list
                   for op in c.args[1])


# -- tear down ----------------------------------------------------------------

@pytest.mark.parametrize('maintenance', [False, True])
def test_teardown_unprovisions_and_waits(provider, api, clock, maintenance):
    # Ironic tears down nodes in maintenance too (it refuses only deploy
    # and rebuild), so maintenance takes the same path.
    api.get_node.side_effect = [
        node('active', power_state='power on', maintenance=maintenance),
        node('deleting', target='available'),
        node('cleaning', instance_uuid=None)]
    provider.teardown(reservation(lifecycle.State.ACTIVE), VIFS)
    assert provision_calls(api) == ['deleted']
    assert api.get_node.call_count == 3
    # Booted from its disk: no volume target to look for.
    assert not api.list_volume_targets.called


def test_teardown_does_not_ask_twice(provider, api, clock):
    api.get_node.side_effect = [node('deleting', target='available'),
                                node('cleaning', instance_uuid=None)]
    provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert provision_calls(api) == []
    assert api.get_node.call_count == 2


@pytest.mark.parametrize('state', ['rescue', 'deploy hold', 'some new state'])
def test_teardown_of_any_other_state_unprovisions(provider, api, clock,
                                                  state):
    answers(api, node(state), node('available', instance_uuid=None))
    provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert provision_calls(api) == ['deleted']


def test_teardown_retries_a_locked_node(provider, api, clock):
    answers(api, node('deploying', target='active'),
            node('available', instance_uuid=None))
    api.set_provision_state.side_effect = [conflict(), None]
    provider.teardown(reservation())
    assert provision_calls(api) == ['deleted', 'deleted']
    assert clock[0] == 1001.0


def test_teardown_of_a_node_locked_until_the_deadline(provider, api, conf,
                                                      clock):
    conf.set_override('unprovision_timeout', 5, group='ironic_multi')
    api.get_node.return_value = node('deploying', target='active')
    api.set_provision_state.side_effect = conflict()
    started = clock[0]
    with pytest.raises(exception.TeardownFailed) as e:
        provider.teardown(reservation())
    assert 'locked' in str(e.value)
    assert clock[0] - started <= 5
    assert 2 <= api.set_provision_state.call_count <= 6


def test_teardown_is_idempotent(provider, api, clock):
    answers(api, node('active'), node('available', instance_uuid=None),
            node('available', instance_uuid=None))
    provider.teardown(reservation(lifecycle.State.ACTIVE))
    provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert provision_calls(api) == ['deleted']
    assert not api.detach_vif.called


def test_teardown_leaves_another_instance_alone(provider, api):
    api.get_node.return_value = node('active', instance_uuid=OTHER)
    provider.teardown(reservation(lifecycle.State.ACTIVE), VIFS)
    assert provision_calls(api) == []
    assert not api.detach_vif.called
    assert not api.patch_node.called


def test_teardown_of_a_node_that_is_gone(provider, api):
    api.get_node.side_effect = exception.NodeNotFound(node=NODE)
    provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert not api.set_provision_state.called


def test_teardown_of_a_node_gone_meanwhile(provider, api, clock):
    reads = iter([node('active'), exception.NodeNotFound(node=NODE)])

    def get_node(uuid, fields=None):
        if fields == MARK_FIELDS:
            return {'uuid': NODE, 'extra': {}}
        found = next(reads)
        if isinstance(found, Exception):
            raise found
        return found

    api.get_node.side_effect = get_node
    provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert provision_calls(api) == ['deleted']


def test_teardown_of_a_claimed_undeployed_node(provider, api):
    api.get_node.return_value = node('available')
    api.list_vifs.return_value = ['vif-2', 'vif-3']
    provider.teardown(reservation(), ['vif-1', 'vif-2'])
    assert not api.set_provision_state.called
    assert [c.args for c in api.detach_vif.call_args_list] == [
        (NODE, 'vif-1'), (NODE, 'vif-2'), (NODE, 'vif-3')]
    api.patch_node.assert_called_once_with(NODE, [
        {'op': 'replace', 'path': '/instance_info', 'value': {}}])


def test_failed_teardown(provider, api, clock):
    answers(api, node('active'), node('error', last_error='BMC gone'))
    with pytest.raises(exception.TeardownFailed) as e:
        provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert 'BMC gone' in str(e.value)
    assert e.value.node == NODE


def test_teardown_is_bounded(provider, api, conf, clock):
    conf.set_override('unprovision_timeout', 5, group='ironic_multi')
    api.get_node.return_value = node('deleting', target='available')
    started = clock[0]
    with pytest.raises(exception.TeardownFailed) as e:
        provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert 'within' in str(e.value)
    assert clock[0] - started <= 5
    assert api.get_node.call_count <= 7


def test_teardown_with_ironic_down(provider, api):
    api.get_node.side_effect = exception.IronicUnavailable(reason='down')
    with pytest.raises(exception.TeardownFailed) as e:
        provider.teardown(reservation(lifecycle.State.ACTIVE))
    assert 'down' in str(e.value)


# -- rebuild ------------------------------------------------------------------

def test_rebuild_reimages_in_place(provider, api, clock):
    answers(api, node('rebuild', target='active'),
            node('deploying', target='active'), node('active'))
    provider.rebuild(reservation(lifecycle.State.ACTIVE), deployment(
        instance_info=dict(INFO, preserve_ephemeral='True')))
    info = written_info(api)
    assert info['preserve_ephemeral'] == 'True'
    assert info['nova_host_id'] == HOST
    assert info['image_source'] == IMAGE
    api.set_provision_state.assert_called_once_with(NODE, 'rebuild',
                                                    body=None)
    # One read of who holds the node (then the PATCH's answer), three
    # reads of the wait.
    assert api.get_node.call_count == 4
    # A rebuild keeps the node and its network.
    assert not api.attach_vif.called and not api.detach_vif.called


def test_rebuild_sends_the_config_drive(provider, api, clock):
    api.get_node.return_value = node('active')
    provider.rebuild(reservation(lifecycle.State.ACTIVE),
                     deployment(configdrive=lambda network: 'H4sI...'))
    api.set_provision_state.assert_called_once_with(
        NODE, 'rebuild', body={'configdrive': 'H4sI...'})


def test_rebuild_failure(provider, api, clock):
    api.get_node.return_value = node('deploy failed', last_error='bad image')
    with pytest.raises(exception.DeployFailed) as e:
        provider.rebuild(reservation(lifecycle.State.ACTIVE), deployment())
    assert 'bad image' in str(e.value)
    # The instance keeps its node: no tear down.
    assert provision_calls(api) == ['rebuild']


def test_rebuild_refused(provider, api):
    api.get_node.return_value = marked('active')
    api.set_provision_state.side_effect = api_error(400, 'in maintenance')
    with pytest.raises(exception.DeployFailed) as e:
        provider.rebuild(reservation(lifecycle.State.ACTIVE), deployment())
    assert 'in maintenance' in str(e.value)
    # Only the checks of who holds the node: no wait began.
    assert {c.kwargs['fields'] for c in api.get_node.call_args_list} == {
        deploy.HOLDER_FIELDS}


def test_rebuild_wait_is_bounded(provider, api, conf, clock):
    conf.set_override('deploy_timeout', 10, group='ironic_multi')
    api.get_node.return_value = node('rebuild', target='active')
    started = clock[0]
    with pytest.raises(exception.DeployFailed):
        provider.rebuild(reservation(lifecycle.State.ACTIVE), deployment())
    assert clock[0] - started <= 10


# -- VIFs ---------------------------------------------------------------------

def test_attach_and_detach_vif(provider, api):
    provider.attach_vif(reservation(lifecycle.State.ACTIVE), 'vif-2')
    api.attach_vif.assert_called_once_with(NODE, 'vif-2')
    provider.detach_vif(reservation(lifecycle.State.ACTIVE), 'vif-2')
    api.detach_vif.assert_called_once_with(NODE, 'vif-2')


@pytest.mark.parametrize('action', ['attach', 'detach'])
def test_vif_errors_name_the_vif_and_the_node(provider, api, action):
    getattr(api, '%s_vif' % action).side_effect = api_error(400, 'no port')
    with pytest.raises(exception.VifActionFailed) as e:
        getattr(provider, '%s_vif' % action)(
            reservation(lifecycle.State.ACTIVE), 'vif-2')
    assert e.value.vif == 'vif-2'
    assert e.value.node == NODE
    assert 'no port' in str(e.value)


def test_a_node_claimed_by_allocation_gets_the_mark_with_its_deploy(
        provider, api, clock):
    # The allocation carries the mark until then: the deploy's first write
    # puts it on the node, from where later writes are guarded by it.
    answers(api, node('active'), holder=node('available'))
    provider.deploy(reservation(), deployment(vifs=()))
    first = api.patch_node.call_args_list[0].args[1]
    # Never over another instance's marks: Ironic refuses the no-op on
    # instance_uuid once another instance holds the node.
    assert first[:2] == [
        {'op': 'replace', 'path': '/instance_uuid', 'value': INSTANCE},
        {'op': 'add', 'path': '/instance_info/ironic_multi',
         'value': {INSTANCE: {'group': 'ironic-multi'}}}]
    assert {'op': 'add', 'path': '/instance_info/image_source',
            'value': IMAGE} in first


# -- boot from volume ---------------------------------------------------------

VOLUME = '2b7c3ce1-1c51-4c4b-8d76-5f0e6a3b9d10'
TARGET = base.VolumeTarget(
    volume_id=VOLUME, volume_type='iscsi', boot_index=0,
    properties={'target_iqn': 'iqn.2010-10.org.openstack:volume-1',
                'target_portal': '192.0.2.10:3260', 'target_lun': 1})


def from_volume(**fields):
    return deployment(image_source=None, volume_targets=(TARGET,), **fields)


def call_names(api):
    return [c[0] for c in api.mock_calls]


def test_a_deploy_from_volumes_writes_its_targets_before_the_provision(
        provider, api, clock):
    answers(api, node('active', power_state='power on'))
    # What a tear down not waited for left behind.
    api.list_volume_targets.return_value = [{'uuid': 'stale',
                                             'volume_id': 'old'}]
    provider.deploy(reservation(), from_volume())

    info = written_info(api)
    assert 'image_source' not in info
    assert info[deploy.VOLUME_BOOT_KEY] == 'true'
    api.delete_volume_target.assert_called_once_with(NODE, 'stale')
    api.create_volume_target.assert_called_once_with(
        NODE, VOLUME, 'iscsi', TARGET.properties, 0)
    names = call_names(api)
    assert (names.index('patch_node') < names.index('delete_volume_target')
            < names.index('create_volume_target')
            < names.index('set_provision_state'))


def test_a_deploy_from_its_disk_touches_no_volume_target(
        provider, api, clock):
    answers(api, node('active', power_state='power on'))
    provider.deploy(reservation(), deployment())
    assert deploy.VOLUME_BOOT_KEY not in written_info(api)
    assert not api.list_volume_targets.called
    assert not api.create_volume_target.called


def test_a_lost_answer_to_a_target_write_is_read_back(provider, api, clock):
    answers(api, node('active', power_state='power on'))
    api.create_volume_target.side_effect = exception.RequestOutcomeUnknown(
        method='POST', url='/v1/volume/targets', reason='lost')
    api.list_volume_targets.side_effect = [
        [], [{'uuid': 'written', 'volume_id': VOLUME}]]
    provider.deploy(reservation(), from_volume())
    assert provision_calls(api) == ['active']


def test_a_target_write_lost_for_good_fails_the_deploy(provider, api, clock):
    answers(api, node('available', instance_uuid=None))
    api.create_volume_target.side_effect = exception.RequestOutcomeUnknown(
        method='POST', url='/v1/volume/targets', reason='lost')
    api.list_volume_targets.return_value = []
    with pytest.raises(exception.DeployFailed) as e:
        provider.deploy(reservation(), from_volume())
    assert 'lost' in str(e.value)
    assert 'active' not in provision_calls(api)


def test_the_tear_down_of_a_node_booted_from_volumes_removes_them_first(
        provider, api, clock):
    booted = {deploy.VOLUME_BOOT_KEY: 'true'}
    api.get_node.side_effect = [
        node('active', power_state='power on', instance_info=booted),
        # Ironic changes a deployed node's targets only once it is off.
        node('active', power_state='power off', instance_info=booted),
        node('deleting', target='available'),
        node('cleaning', instance_uuid=None)]
    api.list_volume_targets.return_value = [{'uuid': 't1'}, {'uuid': 't2'}]
    provider.teardown(reservation(lifecycle.State.ACTIVE))

    api.set_power_state.assert_called_once_with(NODE, 'power off')
    assert [c.args for c in api.delete_volume_target.call_args_list] == [
        (NODE, 't1'), (NODE, 't2')]
    names = call_names(api)
    # While the node still holds the instance: before Ironic's tear down
    # clears instance_uuid.
    assert (names.index('set_power_state')
            < names.index('delete_volume_target')
            < names.index('set_provision_state'))
    assert provision_calls(api) == ['deleted']


def test_the_targets_of_a_node_whose_deploy_failed_go_with_it(
        provider, api):
    api.get_node.return_value = node(
        'available', instance_info={deploy.VOLUME_BOOT_KEY: 'true'})
    api.list_volume_targets.return_value = [{'uuid': 't1'}]
    provider.teardown(reservation())
    # Not deployed: no power off needed to change its targets.
    assert not api.set_power_state.called
    api.delete_volume_target.assert_called_once_with(NODE, 't1')
    assert not api.set_provision_state.called


def test_volume_connectors_are_read_from_the_node(provider, api):
    api.list_volume_connectors.return_value = [
        {'type': 'iqn', 'connector_id': 'iqn.2026-11.org.example:n1'},
        {'type': 'ip', 'connector_id': '198.51.100.7'}]
    assert provider.volume_connectors(reservation()) == (
        base.VolumeConnector('iqn', 'iqn.2026-11.org.example:n1'),
        base.VolumeConnector('ip', '198.51.100.7'))
    api.list_volume_connectors.assert_called_once_with(NODE)
