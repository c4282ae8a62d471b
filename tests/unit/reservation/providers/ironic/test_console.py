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

"""The console of a reserved Ironic node, as Nova's proxies reach it."""


import pytest

from ironic_multi._reservation.providers import base
from ironic_multi import exception
from tests.unit.reservation.providers.ironic import test_rescue as common

NODE, INSTANCE = common.NODE, common.INSTANCE
SERIAL, GRAPHICAL = base.ConsoleKind.SERIAL, base.ConsoleKind.GRAPHICAL
VNC = {'type': 'vnc', 'url': 'http://ironic:6090/vnc_auto.html?path=x'}
SOCAT = {'type': 'socat', 'url': 'tcp://192.0.2.5:8023'}


@pytest.fixture
def conf():
    return common.reservers.make_conf(state_poll_interval=1.0)


class FakeConsole(object):
    """Ironic's console state of one node; a switch takes one read."""

    def __init__(self, api, interface, info, enabled=False):
        self.interface, self.info, self.enabled = interface, info, enabled
        self.pending = None
        self.switches = []
        api.get_node.side_effect = self.get_node
        api.get_console.side_effect = self.get_console
        api.set_console.side_effect = self.set_console

    def get_node(self, node_uuid, fields=None):
        return dict(common.node(), console_interface=self.interface,
                    console_enabled=self.enabled,
                    driver_internal_info={'vnc_host': '192.0.2.1',
                                          'vnc_port': 5900})

    def get_console(self, node_uuid):
        found = {'console_enabled': self.enabled,
                 'console_info': self.info if self.enabled else None}
        if self.pending is not None:
            self.enabled, self.pending = self.pending, None
        return found

    def set_console(self, node_uuid, enabled):
        self.switches.append(enabled)
        self.pending = enabled


def test_graphical_console_is_the_vnc_server_behind_ironic(provider, api,
                                                           clock):
    ironic = FakeConsole(api, 'fake-graphical', VNC)
    console = provider.console(common.reservation(), GRAPHICAL)
    assert console == base.Console(node_uuid=NODE, kind=GRAPHICAL,
                                   host='192.0.2.1', port=5900)
    assert ironic.switches == [True]


def test_an_enabled_graphical_console_is_kept(provider, api, clock):
    ironic = FakeConsole(api, 'fake-graphical', VNC, enabled=True)
    assert provider.console(common.reservation(), GRAPHICAL).port == 5900
    assert ironic.switches == []


def test_serial_console_is_the_socat_endpoint(provider, api, clock):
    ironic = FakeConsole(api, 'ipmitool-socat', SOCAT)
    console = provider.console(common.reservation(), SERIAL)
    assert (console.host, console.port) == ('192.0.2.5', 8023)
    assert ironic.switches == [True]


def test_an_enabled_serial_console_is_reset(provider, api, clock):
    # IPMI takes one session: the one before ends.
    ironic = FakeConsole(api, 'ipmitool-socat', SOCAT, enabled=True)
    provider.console(common.reservation(), SERIAL)
    assert ironic.switches == [False, True]


@pytest.mark.parametrize('interface', ['no-console', None])
@pytest.mark.parametrize('kind', [SERIAL, GRAPHICAL])
def test_a_node_without_console_is_refused_untouched(provider, api, kind,
                                                     interface):
    ironic = FakeConsole(api, interface, None)
    with pytest.raises(exception.NodeCannot) as e:
        provider.console(common.reservation(), kind)
    assert 'console interface is %s' % (interface or 'unknown') in str(
        e.value)
    with pytest.raises(exception.NodeCannot):
        provider.check(common.reservation(), kind.feature)
    assert ironic.switches == []


def test_a_console_of_another_kind_is_switched_back_off(provider, api,
                                                        clock):
    # Ironic's fake serial console gives no socat endpoint.
    ironic = FakeConsole(api, 'fake', {})
    with pytest.raises(exception.NodeCannot) as e:
        provider.console(common.reservation(), SERIAL)
    assert 'is of type none, not socat' in str(e.value)
    assert ironic.switches == [True, False]
    assert not ironic.enabled


def test_an_enabled_console_of_another_kind_stays_on(provider, api):
    ironic = FakeConsole(api, 'fake-graphical', VNC, enabled=True)
    with pytest.raises(exception.NodeCannot):
        provider.console(common.reservation(), SERIAL)
    assert ironic.switches == []
    assert ironic.enabled


@pytest.mark.parametrize('url', ['udp://192.0.2.5:8023', 'tcp://host',
                                 'garbage', None])
def test_a_serial_endpoint_nova_cannot_reach(provider, api, clock, url):
    FakeConsole(api, 'ipmitool-socat', {'type': 'socat', 'url': url})
    with pytest.raises(exception.ConsoleUnavailable) as e:
        provider.console(common.reservation(), SERIAL)
    assert 'no endpoint Nova can reach' in str(e.value)


def test_a_console_that_never_comes_up(provider, api, conf, clock):
    conf.set_override('vnc_console_state_timeout', 4, group='ironic')
    FakeConsole(api, 'fake-graphical', VNC)
    api.set_console.side_effect = None
    started = clock[0]
    with pytest.raises(exception.ConsoleUnavailable) as e:
        provider.console(common.reservation(), GRAPHICAL)
    assert 'within 4 seconds' in str(e.value)
    assert clock[0] - started <= 4


def test_ironic_refusing_the_console(provider, api, clock):
    FakeConsole(api, 'fake-graphical', VNC)
    api.set_console.side_effect = exception.IronicAPIError(
        status_code=400, reason='bad driver info')
    with pytest.raises(exception.ConsoleUnavailable) as e:
        provider.console(common.reservation(), GRAPHICAL)
    assert 'bad driver info' in str(e.value)
