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

"""Power changes of a reserved Ironic node, and the power it reports.

Ironic is a ``mock.create_autospec`` of IronicAPI; time only moves when
the code under test sleeps.
"""


import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi import exception
from ironic_multi.testing import reservers

NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'
INSTANCE = 'a7a9a2a6-7ee0-4a4c-bb36-6b6a0cbd2d01'
Action = base.PowerAction


@pytest.fixture
def conf():
    return reservers.make_conf(power_timeout=30, state_poll_interval=1.0)


def reservation():
    return lifecycle.Reservation(instance_uuid=INSTANCE, node_uuid=NODE,
                                 state=lifecycle.State.ACTIVE)


def power(state, target=None, last_error=None):
    return {'uuid': NODE, 'power_state': state,
            'target_power_state': target, 'last_error': last_error}


def power_calls(api):
    return [c.args[1] for c in api.set_power_state.call_args_list]


def api_error(status_code, reason='refused'):
    return exception.IronicAPIError(status_code=status_code, reason=reason)


@pytest.mark.parametrize('action, target, end', [
    (Action.ON, 'power on', 'power on'),
    (Action.OFF, 'power off', 'power off'),
    (Action.REBOOT, 'rebooting', 'power on'),
    (Action.SOFT_OFF, 'soft power off', 'power off'),
    (Action.SOFT_REBOOT, 'soft rebooting', 'power on'),
])
def test_each_action_asks_ironic_and_waits_for_its_end(provider, api, clock,
                                                       action, target, end):
    other = 'power off' if end == 'power on' else 'power on'
    api.get_node.side_effect = [power(other, target=end),
                                power(end, target=end),
                                power(end)]
    provider.power(reservation(), action)
    api.set_power_state.assert_called_once_with(NODE, target)
    assert api.get_node.call_count == 3


def test_hard_reboot(provider, api, clock):
    api.get_node.side_effect = [power('power on', target='rebooting'),
                                power('power on')]
    provider.power(reservation(), Action.REBOOT)
    assert power_calls(api) == ['rebooting']


def test_soft_reboot_refused_falls_back_to_hard(provider, api, clock):
    api.set_power_state.side_effect = [api_error(400), None]
    api.get_node.return_value = power('power on')
    provider.power(reservation(), Action.SOFT_REBOOT)
    assert power_calls(api) == ['soft rebooting', 'rebooting']


def test_soft_power_off_then_hard_after_its_timeout(provider, api, clock):
    sent = []
    api.set_power_state.side_effect = lambda node, target: sent.append(
        (target, clock[0]))
    on, off = power('power on', target='soft power off'), power('power off')
    # The hard power off takes 10 s: longer than the soft one's timeout.
    reads = iter([on] * 14 + [off])
    api.get_node.side_effect = lambda *a, **k: next(reads)
    provider.power(reservation(), Action.SOFT_OFF, timeout=3)
    assert [target for target, _at in sent] == ['soft power off',
                                                'power off']
    # The soft one had its 3 s, the hard one power_timeout.
    assert sent[1][1] - sent[0][1] == 3
    assert clock[0] - sent[1][1] == 10


def test_soft_power_off_that_works_needs_no_hard_one(provider, api, clock):
    api.get_node.side_effect = [power('power on', target='power off'),
                                power('power off')]
    provider.power(reservation(), Action.SOFT_OFF, timeout=3)
    assert power_calls(api) == ['soft power off']


def test_power_off_and_on(provider, api, clock):
    api.get_node.side_effect = [power('power off'), power('power on')]
    provider.power(reservation(), Action.OFF)
    provider.power(reservation(), Action.ON)
    assert power_calls(api) == ['power off', 'power on']


def test_power_failure_is_reported(provider, api, clock):
    api.get_node.return_value = power('power off', last_error='no BMC')
    with pytest.raises(exception.PowerActionFailed) as e:
        provider.power(reservation(), Action.ON)
    assert 'no BMC' in str(e.value)
    assert e.value.node == NODE
    assert e.value.action == Action.ON
    # A hard action has nothing to fall back to.
    assert power_calls(api) == ['power on']


def test_power_refused_is_reported_without_waiting(provider, api):
    api.set_power_state.side_effect = exception.NodeConflict(
        node=NODE, reason='locked')
    with pytest.raises(exception.PowerActionFailed) as e:
        provider.power(reservation(), Action.OFF)
    assert 'locked' in str(e.value)
    assert not api.get_node.called


def test_soft_then_hard_failure_is_reported(provider, api, clock):
    api.set_power_state.side_effect = [api_error(400, 'no ACPI'),
                                       api_error(500, 'BMC down')]
    with pytest.raises(exception.PowerActionFailed) as e:
        provider.power(reservation(), Action.SOFT_REBOOT)
    assert 'BMC down' in str(e.value)
    assert e.value.action == Action.REBOOT
    assert power_calls(api) == ['soft rebooting', 'rebooting']


def test_power_wait_is_bounded(provider, api, conf, clock):
    conf.set_override('power_timeout', 5, group='ironic_multi')
    api.get_node.return_value = power('power off', target='power on')
    started = clock[0]
    with pytest.raises(exception.PowerActionFailed) as e:
        provider.power(reservation(), Action.ON)
    assert 'within 5 seconds' in str(e.value)
    assert api.get_node.call_count <= 6
    assert clock[0] - started <= 5


def test_a_given_timeout_bounds_the_wait(provider, api, clock):
    api.get_node.return_value = power('power on', target='power off')
    started = clock[0]
    with pytest.raises(exception.PowerActionFailed):
        provider.power(reservation(), Action.OFF, timeout=2)
    assert clock[0] - started <= 2


@pytest.mark.parametrize('ironic, expected', [
    ('power on', lifecycle.PowerState.ON),
    ('power off', lifecycle.PowerState.OFF),
    (None, lifecycle.PowerState.UNKNOWN),
    ('error', lifecycle.PowerState.UNKNOWN),
])
def test_a_reservation_tells_the_power_of_its_node(provider, api, ironic,
                                                   expected):
    api.node_by_instance.return_value = {
        'uuid': NODE, 'instance_uuid': INSTANCE, 'provision_state': 'active',
        'power_state': ironic, 'instance_info': {}}
    found = provider.lookup(INSTANCE)
    assert found.node_uuid == NODE
    assert found.power_state == expected
