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

"""Rescue and unrescue of a reserved Ironic node, and the NMI.

Ironic is a ``mock.create_autospec`` of IronicAPI; time only moves when
the code under test sleeps.
"""


import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import states
from ironic_multi import exception
from ironic_multi.testing import reservers

NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'
INSTANCE = 'a7a9a2a6-7ee0-4a4c-bb36-6b6a0cbd2d01'
OTHER = '0c0e1a9e-3f4e-4a51-9d9b-000000000002'
GROUP = 'ironic-multi'


@pytest.fixture
def conf():
    return reservers.make_conf(deploy_timeout=30, state_poll_interval=1.0)


def reservation():
    return lifecycle.Reservation(instance_uuid=INSTANCE, node_uuid=NODE,
                                 state=lifecycle.State.ACTIVE)


def node(state='active', target=None, instance=INSTANCE, group=GROUP,
         rescue_interface='fake', last_error=None):
    marks = {instance: {'group': group}} if group else {}
    return {'uuid': NODE, 'instance_uuid': instance,
            'instance_info': {'ironic_multi': marks},
            'provision_state': state, 'target_provision_state': target,
            'rescue_interface': rescue_interface, 'maintenance': False,
            'last_error': last_error, 'management_interface': 'fake'}


def test_rescue_asks_ironic_with_the_password_and_waits(provider, api,
                                                        clock):
    api.get_node.side_effect = [node(), node('rescuing', 'rescue'),
                                node('rescue wait', 'rescue'),
                                node('rescue')]
    provider.rescue(reservation(), 'secret')
    api.set_provision_state.assert_called_once_with(
        NODE, 'rescue', body={'rescue_password': 'secret'})
    assert api.get_node.call_count == 4


def test_unrescue_asks_ironic_and_waits_for_active(provider, api, clock):
    api.get_node.side_effect = [node('rescue'),
                                node('unrescuing', 'active'), node()]
    provider.unrescue(reservation())
    api.set_provision_state.assert_called_once_with(NODE, 'unrescue',
                                                    body=None)


@pytest.mark.parametrize('call, state', [
    (lambda p: p.rescue(reservation(), 'pw'), 'rescue'),
    (lambda p: p.unrescue(reservation()), 'active')])
def test_a_node_there_already_is_left_alone(provider, api, call, state):
    api.get_node.return_value = node(state)
    call(provider)
    assert not api.set_provision_state.called


@pytest.mark.parametrize('interface', ['no-rescue', None])
def test_a_node_without_rescue_interface_is_refused_untouched(
        provider, api, interface):
    api.get_node.return_value = node(rescue_interface=interface)
    with pytest.raises(exception.NodeCannot) as e:
        provider.rescue(reservation(), 'pw')
    assert 'rescue interface is %s' % (interface or 'unknown') in str(
        e.value)
    assert e.value.node == NODE
    with pytest.raises(exception.NodeCannot):
        provider.check(reservation(), base.Feature.RESCUE)
    # Only reads: not even the password reached Ironic.
    assert not api.set_provision_state.called
    assert not api.patch_node.called


def test_check_passes_a_node_that_can_be_rescued(provider, api):
    api.get_node.return_value = node()
    provider.check(reservation(), base.Feature.RESCUE)
    assert not api.set_provision_state.called


def test_a_failed_rescue_says_why(provider, api, clock):
    api.get_node.side_effect = [node(), node('rescuing', 'rescue'),
                                node('rescue failed', last_error='no ramdisk')]
    with pytest.raises(exception.RescueFailed) as e:
        provider.rescue(reservation(), 'pw')
    assert 'no ramdisk' in str(e.value)
    assert e.value.action == 'rescue'


def test_a_rescue_refused_by_ironic_is_a_rescue_failure(provider, api):
    api.get_node.return_value = node()
    api.set_provision_state.side_effect = exception.IronicAPIError(
        status_code=400, reason='node in maintenance')
    with pytest.raises(exception.RescueFailed) as e:
        provider.rescue(reservation(), 'pw')
    assert 'node in maintenance' in str(e.value)


def test_a_rescue_of_a_node_not_active_is_refused(provider, api):
    api.get_node.return_value = node('deploying', 'active')
    with pytest.raises(exception.RescueFailed) as e:
        provider.rescue(reservation(), 'pw')
    assert 'provision state is deploying' in str(e.value)
    assert not api.set_provision_state.called


def test_the_rescue_wait_is_bounded(provider, api, conf, clock):
    conf.set_override('deploy_timeout', 5, group='ironic_multi')
    api.get_node.side_effect = [node()] + [node('rescue wait',
                                                'rescue')] * 10
    started = clock[0]
    with pytest.raises(exception.RescueFailed) as e:
        provider.rescue(reservation(), 'pw')
    assert 'within 5 seconds' in str(e.value)
    assert clock[0] - started <= 5


@pytest.mark.parametrize('found, error', [
    (node(instance=OTHER), exception.ReservationNotFound),
    (node(group='another-group'), exception.ForeignReservation),
])
def test_only_a_node_holding_the_instance_under_our_mark(provider, api,
                                                         found, error):
    api.get_node.return_value = found
    for act in (lambda: provider.rescue(reservation(), 'pw'),
                lambda: provider.unrescue(reservation()),
                lambda: provider.crash_dump(reservation()),
                lambda: provider.console(reservation(),
                                         base.ConsoleKind.GRAPHICAL)):
        with pytest.raises(error):
            act()
    assert not api.set_provision_state.called
    assert not api.inject_nmi.called
    assert not api.set_console.called


def test_a_node_claimed_before_marks_is_acted_on(provider, api):
    api.get_node.return_value = node(group=None)
    provider.crash_dump(reservation())
    api.inject_nmi.assert_called_once_with(NODE)


def test_crash_dump_sends_an_nmi(provider, api):
    api.get_node.return_value = node()
    provider.crash_dump(reservation())
    api.inject_nmi.assert_called_once_with(NODE)


def test_an_nmi_the_node_cannot_take_is_refused(provider, api):
    api.get_node.return_value = node()
    api.inject_nmi.side_effect = exception.IronicAPIError(
        status_code=400, reason='fake-hardware does not support inject_nmi')
    with pytest.raises(exception.NodeCannot) as e:
        provider.crash_dump(reservation())
    assert 'management interface (fake) refused' in str(e.value)
    assert 'inject_nmi' in str(e.value)


@pytest.mark.parametrize('error', [
    exception.IronicAPIError(status_code=500, reason='boom'),
    exception.NodeConflict(node=NODE, reason='locked'),
    exception.RequestOutcomeUnknown(method='PUT', url='/x', reason='lost'),
])
def test_an_nmi_that_failed_is_a_crash_dump_failure(provider, api, error):
    api.get_node.return_value = node()
    api.inject_nmi.side_effect = error
    with pytest.raises(exception.CrashDumpFailed):
        provider.crash_dump(reservation())


@pytest.mark.parametrize('state', sorted(states.RESCUED))
def test_a_rescued_node_still_serves_its_instance(provider, api, state):
    api.node_by_instance.return_value = dict(node(state), power_state=None)
    assert provider.lookup(INSTANCE).state == lifecycle.State.ACTIVE
    assert states.is_usable(dict(node(state), maintenance=False))
