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

"""Rescue, console and crash dump through the ``openstack`` client.

The cloud's Ironic gives every node the ``fake`` rescue interface and the
``fake-graphical`` console (a blank VNC server each); its ``fake``
management interface has no NMI, so a crash dump reaches Ironic's
conductor and is refused there.  Each
action is checked in Nova and, as Ironic's administrator, on the node.
"""

import time

import pytest
import requests

from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import tempest as cloud_tempest
from ironic_multi.testing.vnc_console import fake_rfb
from tests.cloud import test_openstack_client as client_tests

ADMIN = cloud_mod.ADMIN_CLOUD
STATUS_TIMEOUT = 120
# Nova's API for a crash dump (2.17) and remote consoles (2.6).
MICROVERSION = '2.17'


def wait_for_status(cloud, server_id, status):
    deadline = time.monotonic() + STATUS_TIMEOUT
    while True:
        server = cloud.openstack('server', 'show', server_id)
        if server['status'] == status or time.monotonic() > deadline:
            break
        assert server['status'] != 'ERROR', server.get('fault')
        time.sleep(1)
    assert server['status'] == status
    return server


def ironic_node(cloud, server_id):
    (node,) = cloud.ironic.list_nodes(
        fields=('uuid', 'instance_uuid', 'provision_state', 'power_state',
                'console_enabled', 'driver_internal_info'),
        instance_uuid=server_id)
    return node


def test_rescue_and_unrescue(cloud, servers):
    server = client_tests.boot(cloud, 'rescued-1', 'bronze')
    servers.append(server['id'])

    cloud.openstack('server', 'rescue', '--password', 'rescue-secret',
                    server['id'], parse=False)
    wait_for_status(cloud, server['id'], 'RESCUE')
    node = ironic_node(cloud, server['id'])
    assert node['provision_state'] == 'rescue'

    cloud.openstack('server', 'unrescue', server['id'], parse=False)
    shown = wait_for_status(cloud, server['id'], 'ACTIVE')
    node = ironic_node(cloud, server['id'])
    assert (node['provision_state'], node['power_state']) == (
        'active', 'power on')
    # The power state sync leaves it running.
    time.sleep(cloud.update_resources_interval)
    assert cloud.openstack('server', 'show', server['id'])['status'] == (
        'ACTIVE')
    assert shown['OS-EXT-STS:power_state'] in (1, 'Running')


def test_console_url_of_a_node_with_a_console(cloud, servers):
    server = client_tests.boot(cloud, 'console-1', 'bronze')
    servers.append(server['id'])

    console = cloud.openstack('--os-compute-api-version', MICROVERSION,
                              'console', 'url', 'show', '--novnc',
                              server['id'])
    assert console['type'] == 'novnc'
    assert 'token' in console['url']
    node = ironic_node(cloud, server['id'])
    assert node['console_enabled']
    # What Nova's noVNC proxy connects to: the node's VNC server (the test
    # Ironic's console provider serves one per console).
    where = (node['driver_internal_info']['vnc_host'],
             node['driver_internal_info']['vnc_port'])
    assert node['uuid'].encode() in fake_rfb.greeting(*where)
    if cloud.novnc_web is None:
        pytest.skip(cloud_tempest.NO_NOVNC)
    # The URL is the cloud's noVNC proxy's page (tempest's test_novnc
    # goes on through its websocket to the node's VNC server).
    page = requests.get(console['url'], timeout=30)
    assert page.status_code == 200
    assert 'noVNC' in page.text


def test_server_dump_create_sends_the_nmi(cloud, servers):
    server = client_tests.boot(cloud, 'dumped-1', 'bronze')
    servers.append(server['id'])

    cloud.openstack('--os-compute-api-version', MICROVERSION, 'server',
                    'dump', 'create', server['id'], parse=False)

    # The NMI reached Ironic, whose fake hardware refused it: the action's
    # event says so (an NMI changes nothing else).
    deadline = time.monotonic() + STATUS_TIMEOUT
    while True:
        events = [e for e in cloud.openstack('server', 'event', 'list',
                                             server['id'], cloud=ADMIN)
                  if e['Action'] == 'trigger_crash_dump']
        assert len(events) == 1, events
        shown = cloud.openstack('server', 'event', 'show', server['id'],
                                events[0]['Request ID'], cloud=ADMIN)
        done = [e for e in shown['events']
                if e['event'] == 'compute_trigger_crash_dump'
                and e.get('result')]
        if done or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert [e['result'] for e in done] == ['Error'], shown
    assert 'TriggerCrashDumpNotSupported' in done[0]['traceback']
    # Ironic's own answer, in the log of the compute that asked.
    host = cloud.openstack('server', 'show', server['id'],
                           cloud=ADMIN)['OS-EXT-SRV-ATTR:host']
    log_path = cloud.service(cloud.compute_service(host)).log_path
    with open(log_path, errors='replace') as log:
        logged = [line for line in log
                  if 'No crash dump' in line and server['id'] in line]
    assert logged and 'inject_nmi' in logged[-1], logged
    assert ironic_node(cloud, server['id'])['provision_state'] == 'active'
    assert cloud.openstack('server', 'show', server['id'])['status'] == (
        'ACTIVE')
