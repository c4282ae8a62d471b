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

"""Rescue, consoles and crash dumps: Nova's calls, our errors as Nova's."""

from nova.compute import task_states
from nova.console import type as console_type
from nova import exception as nova_exception
import pytest

from ironic_multi._reservation.providers import base
from ironic_multi._virt import driver
from ironic_multi import exception
from tests.unit.virt import fakes

Feature = base.Feature
CANNOT = exception.NodeCannot(action='rescue', node=fakes.NODE,
                              reason='its rescue interface is no-rescue')


def test_rescue_and_unrescue_go_to_the_instances_node(drv, reserver):
    reserver.hold()
    drv.rescue(None, fakes.instance(), [], None, 'secret', None, None)
    drv.unrescue(None, fakes.instance())
    assert reserver.calls == [('rescue', fakes.INSTANCE, 'secret'),
                              ('unrescue', fakes.INSTANCE)]


def test_a_failed_rescue_says_why(drv, reserver):
    reserver.hold()
    reserver.errors['rescue'] = CANNOT
    with pytest.raises(nova_exception.InstanceRescueFailure) as e:
        drv.rescue(None, fakes.instance(), [], None, 'pw', None, None)
    assert 'rescue interface is no-rescue' in str(e.value)
    reserver.errors['unrescue'] = exception.RescueFailed(
        action='unrescue', node=fakes.NODE, reason='boom')
    with pytest.raises(nova_exception.InstanceUnRescueFailure) as e:
        drv.unrescue(None, fakes.instance())
    assert 'boom' in str(e.value)


def test_the_power_off_before_a_rescue_refuses_what_cannot_be_rescued(
        drv, reserver):
    # Nova powers off, then rescues: the node is checked first, and a
    # node that cannot be rescued is not even powered off.
    reserver.hold()
    reserver.errors['check'] = CANNOT
    rescuing = fakes.instance(task_state=task_states.RESCUING)
    with pytest.raises(nova_exception.InstanceRescueFailure) as e:
        drv.power_off(rescuing, timeout=60)
    assert 'no-rescue' in str(e.value)
    assert reserver.names() == ['check']


def test_the_power_off_before_a_rescue_that_can_happen(drv, reserver):
    reserver.hold()
    drv.power_off(fakes.instance(task_state=task_states.RESCUING),
                  timeout=60)
    assert reserver.calls == [
        ('check', fakes.INSTANCE, Feature.RESCUE),
        ('power', fakes.INSTANCE, base.PowerAction.SOFT_OFF, 60)]


def test_another_power_off_checks_nothing(drv, reserver):
    reserver.hold()
    reserver.errors['check'] = CANNOT
    drv.power_off(fakes.instance(task_state=task_states.POWERING_OFF))
    assert reserver.names() == ['power']


def test_consoles(drv, reserver):
    reserver.hold()
    vnc = drv.get_vnc_console(None, fakes.instance())
    serial = drv.get_serial_console(None, fakes.instance())
    assert isinstance(vnc, console_type.ConsoleVNC)
    assert isinstance(serial, console_type.ConsoleSerial)
    assert (vnc.host, vnc.port) == ('192.0.2.1', 5900)
    assert reserver.calls == [
        ('console', fakes.INSTANCE, base.ConsoleKind.GRAPHICAL),
        ('console', fakes.INSTANCE, base.ConsoleKind.SERIAL)]


@pytest.mark.parametrize('error', [
    exception.NodeCannot(action='open a console', node=fakes.NODE,
                         reason='its console interface is no-console'),
    exception.ConsoleUnavailable(action='console', node=fakes.NODE,
                                 reason='its console interface is '
                                        'no-console'),
    exception.NotSupported(provider='static', feature='its console '
                                                      'interface is '
                                                      'no-console'),
])
def test_a_console_the_node_has_not(drv, reserver, error):
    reserver.hold()
    reserver.errors['console'] = error
    for call, kind in ((drv.get_vnc_console, 'vnc'),
                       (drv.get_serial_console, 'serial')):
        with pytest.raises(nova_exception.ConsoleTypeUnavailable) as e:
            call(None, fakes.instance())
        assert str(e.value).startswith('Unavailable console type %s: '
                                       % kind)
        assert 'no-console' in str(e.value)


def test_crash_dump(drv, reserver):
    reserver.hold()
    drv.trigger_crash_dump(fakes.instance())
    assert reserver.calls == [('crash_dump', fakes.INSTANCE)]


@pytest.mark.parametrize('error, expected', [
    (exception.NodeCannot(action='send an NMI', node=fakes.NODE,
                          reason='fake refused'),
     nova_exception.TriggerCrashDumpNotSupported),
    (exception.NotSupported(provider='static', feature='crash dump'),
     nova_exception.TriggerCrashDumpNotSupported),
    (exception.CrashDumpFailed(action='send an NMI', node=fakes.NODE,
                               reason='BMC down'),
     nova_exception.NovaException),
])
def test_a_crash_dump_that_cannot_be(drv, reserver, error, expected):
    reserver.hold()
    reserver.errors['crash_dump'] = error
    with pytest.raises(expected) as e:
        drv.trigger_crash_dump(fakes.instance())
    assert str(error) in str(e.value)


@pytest.mark.parametrize('call', [
    lambda d: d.rescue(None, fakes.instance(), [], None, 'pw', None, None),
    lambda d: d.unrescue(None, fakes.instance()),
    lambda d: d.get_vnc_console(None, fakes.instance()),
    lambda d: d.get_serial_console(None, fakes.instance()),
    lambda d: d.trigger_crash_dump(fakes.instance()),
])
def test_an_instance_without_node_is_not_found(drv, reserver, call):
    with pytest.raises(nova_exception.InstanceNotFound):
        call(drv)


@pytest.mark.parametrize('capability, feature', [
    ('supports_rescue', Feature.RESCUE),
    ('supports_serial_console', Feature.SERIAL_CONSOLE),
    ('supports_vnc_console', Feature.GRAPHICAL_CONSOLE),
    ('supports_trigger_crash_dump', Feature.CRASH_DUMP),
])
def test_each_capability_follows_its_provider_feature(capability, feature):
    without = fakes.FakeReserver(features=fakes.ALL_FEATURES - {feature})
    drv = driver.IronicMultiDriver(None, reserver=without)
    drv.init_host(fakes.HOST)
    assert not drv.capabilities[capability]
    assert driver.IronicMultiDriver.capabilities[capability]
    full = driver.IronicMultiDriver(None, reserver=fakes.FakeReserver())
    full.init_host(fakes.HOST)
    assert full.capabilities[capability]
