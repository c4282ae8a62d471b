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

"""Rescue, consoles and crash dumps through Nova's API, on a real Ironic.

The test Ironic gives every node the ``fake`` rescue interface and the
``fake-graphical`` console (a blank VNC server on 127.0.0.1, from the
test Ironic's ``ironic-multi-rfb`` console provider); its ``fake``
management interface has no NMI.  Each
scenario checks both sides: the server in Nova, the node in Ironic.
"""

from urllib import parse

from nova import context
from nova import objects
from nova.tests.functional.api import client as api_client

from ironic_multi.testing.vnc_console import fake_rfb
from tests.functional import nova_base


class RescueTest(nova_base.IronicMultiTestBase):

    COMPUTES = 1
    NODES = 1

    def test_rescue_and_unrescue(self):
        server = self.boot()
        node = self.assert_on_ironic(server)

        server = self._rescue_server(server)
        rescued = self.ironic.get_node(node['uuid'])
        self.assertEqual(('rescue', server['id']),
                         (rescued['provision_state'],
                          rescued['instance_uuid']))

        server = self._unrescue_server(server)
        self.assertEqual('ACTIVE', server['status'])
        self.assert_on_ironic(server)
        self.assertEqual('active',
                         self.node_of(server['id'])['provision_state'])
        self.delete_and_check(server)

    def test_delete_a_rescued_server(self):
        server = self._rescue_server(self.boot())
        node = self.delete_and_check(server)
        self.assertEqual('available', node['provision_state'])
        self.assertEqual({}, self.associated_nodes())


class NodeWithoutRescueTest(nova_base.IronicMultiTestBase):

    COMPUTES = 1
    NODES = 1

    def enroll(self):
        super().enroll()
        for node in self.ironic.list_nodes():
            self.ironic.request('PATCH', '/v1/nodes/%s' % node['uuid'],
                                json=[{'op': 'replace',
                                       'path': '/rescue_interface',
                                       'value': 'no-rescue'}])

    def test_rescue_is_refused_and_the_node_left_alone(self):
        server = self._reboot_server(self.boot(), hard=True)
        node = self.assert_on_ironic(server)
        before = self.ironic.get_node(node['uuid'])
        self.assertEqual('power on', before['power_state'])

        self.api.post_server_action(server['id'],
                                    {'rescue': {'adminPass': 'secret'}})
        # Nova puts a server whose rescue failed in ERROR, whatever the
        # driver; the fault says why.
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertIn('rescue interface is no-rescue',
                      server['fault']['message'])
        after = self.ironic.get_node(node['uuid'])
        # Not even powered off first: the node is as it was.
        for field in ('provision_state', 'power_state', 'instance_uuid',
                      'instance_info', 'target_provision_state'):
            self.assertEqual(before[field], after[field], field)


class ConsoleTest(nova_base.IronicMultiTestBase):

    COMPUTES = 1
    NODES = 2

    def _vnc(self, server):
        return self.api.api_post(
            '/servers/%s/remote-consoles' % server['id'],
            {'remote_console': {'protocol': 'vnc', 'type': 'novnc'}})

    def test_vnc_console(self):
        server = self.boot()
        node = self.assert_on_ironic(server)

        console = self._vnc(server).body['remote_console']
        self.assertEqual(('vnc', 'novnc'),
                         (console['protocol'], console['type']))
        # noVNC's page reads the token from ?path=%3Ftoken%3D...
        query = parse.parse_qs(parse.urlparse(console['url']).query)
        (token,) = parse.parse_qs(
            parse.urlparse(query['path'][0]).query)['token']
        found = self.ironic.get_node(node['uuid'])
        self.assertTrue(found['console_enabled'])
        where = (found['driver_internal_info']['vnc_host'],
                 found['driver_internal_info']['vnc_port'])
        # Nova's proxy connects where the token says: the node's console.
        told = self.api.api_get(
            '/os-console-auth-tokens/%s' % token).body['console']
        self.assertEqual(where, (told['host'], int(told['port'])))
        self.assertIn(node['uuid'].encode(), fake_rfb.greeting(*where))
        self.delete_and_check(server)

    def test_a_node_without_console_says_so(self):
        for node in self.ironic.list_nodes():
            self.ironic.request('PATCH', '/v1/nodes/%s' % node['uuid'],
                                json=[{'op': 'replace',
                                       'path': '/console_interface',
                                       'value': 'no-console'}])
        server = self.boot()
        node = self.assert_on_ironic(server)

        error = self.assertRaises(api_client.OpenStackApiException,
                                  self._vnc, server)
        self.assertEqual(400, error.response.status_code)
        self.assertIn('console interface is no-console', error.response.text)
        found = self.ironic.get_node(node['uuid'])
        self.assertFalse(found['console_enabled'])
        self.assertEqual('ACTIVE', self._show_server(server)['status'])


class CrashDumpTest(nova_base.IronicMultiTestBase):

    COMPUTES = 1
    NODES = 1

    def test_crash_dump_reaches_ironic(self):
        server = self._reboot_server(self.boot(), hard=True)
        self.api.post_server_action(server['id'],
                                    {'trigger_crash_dump': None})
        # Ironic's fake management interface has no NMI: its conductor
        # refuses it, and the driver says so in the action's event.
        event = self._wait_for_action_fail_completion(
            server, 'trigger_crash_dump', 'compute_trigger_crash_dump')
        self.assertIn('TriggerCrashDumpNotSupported', event['traceback'])
        # The fault names the node and Ironic's own refusal.
        fault = objects.InstanceFault.get_latest_for_instance(
            context.get_admin_context(), server['id'])
        self.assertIn('management interface (fake) refused', fault.message)
        self.assertIn('inject_nmi', fault.message)
        server = self._show_server(server)
        self.assertEqual('ACTIVE', server['status'])
        self.assert_on_ironic(server)
