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

"""The real-Ironic fixture itself: start, nodes, bulk copies, cleanup."""

import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests
from requests import adapters
from urllib3 import util as urllib3_util

from ironic_multi.testing import _process
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server as server_lib

EMPTY = {'nodes': [], 'allocations': []}


def test_server_answers(ironic_server, record_property):
    response = requests.get(ironic_server.endpoint + '/v1',
                            headers=server_lib.API_HEADERS, timeout=10)
    assert response.status_code == 200
    maximum = response.headers['X-OpenStack-Ironic-API-Maximum-Version']
    assert tuple(map(int, maximum.split('.'))) >= (1, 82)
    assert ironic_server.db_kind in server_lib.DB_KINDS[1:]
    record_property('db_kind', ironic_server.db_kind)
    record_property('start_seconds', round(ironic_server.start_seconds, 2))


def test_enroll_nodes(ironic):
    properties = {'memory_mb': 8192, 'cpus': 8, 'local_gb': 100,
                  'capabilities': 'boot_mode:uefi'}
    uuids = ironic.enroll_nodes(
        3, resource_class='gold', properties=properties,
        traits=['CUSTOM_GPU', 'HW_CPU_X86_AVX2'], shard='s1',
        owner='project-a', lessee='project-b')

    assert len(set(uuids)) == 3
    for node_uuid in uuids:
        node = ironic.request('GET', '/v1/nodes/%s' % node_uuid).json()
        assert node['provision_state'] == 'available'
        assert node['power_state'] == 'power off'
        assert node['instance_uuid'] is None
        assert node['maintenance'] is False
        assert sorted(node['traits']) == ['CUSTOM_GPU', 'HW_CPU_X86_AVX2']
        assert node['resource_class'] == 'gold'
        assert node['properties'] == properties
        assert (node['shard'], node['owner'], node['lessee']) == (
            's1', 'project-a', 'project-b')
    listed = ironic.list_nodes(shard='s1')
    assert sorted(n['uuid'] for n in listed) == sorted(uuids)


def test_bulk_clone_and_wipe(ironic, record_property):
    template = ironic.enroll_nodes(1, traits=['CUSTOM_A'])[0]

    started = time.monotonic()
    clones = ironic.bulk_clone(template, 10000,
                               shard=lambda i: 'shard-%d' % (i % 4))
    seconds = time.monotonic() - started
    record_property('bulk_clone_10000_seconds', round(seconds, 2))

    assert len(ironic.list_nodes()) == 10001
    in_shard = ironic.list_nodes(shard='shard-1')
    assert len(in_shard) == 2500
    assert {n['shard'] for n in in_shard} == {'shard-1'}
    clone = ironic.request('GET', '/v1/nodes/%s' % clones[-1]).json()
    assert (clone['provision_state'], clone['power_state']) == (
        'available', 'power off')
    assert clone['traits'] == ['CUSTOM_A']
    assert clone['instance_uuid'] is None
    # A copy is a node Ironic can allocate.
    allocation = ironic.request(
        'POST', '/v1/allocations', expect=(201,),
        json={'resource_class': 'baremetal',
              'candidate_nodes': [clones[7]]}).json()
    ironic.wait_for_allocation(allocation['uuid'], state='active',
                               node_uuid=clones[7])

    ironic.wipe()
    assert ironic.snapshot() == EMPTY


def _race(server, method, calls):
    """Send the calls at once, one thread each; returns the status codes.

    Each thread connects first (retrying) and races over that connection:
    Ironic's API listens with a backlog of 5, and a burst of 16 new
    connections gets a few reset after a second, which is noise here.
    """
    barrier = threading.Barrier(len(calls))

    def send(call):
        path, body = call
        session = requests.Session()
        session.headers.update(server_lib.API_HEADERS)
        session.mount('http://', adapters.HTTPAdapter(
            max_retries=urllib3_util.Retry(3, backoff_factor=0.1)))
        session.get(server.endpoint + '/v1', timeout=60)
        barrier.wait(timeout=60)
        return session.request(method, server.endpoint + path, json=body,
                               timeout=60).status_code

    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(send, calls))


@pytest.fixture(scope='module')
def sqlite_ironic():
    with server_lib.IronicServer(db_kind='sqlite') as server:
        yield ironic_nodes.IronicNodes(server)


def test_sqlite_claims_race_cleanly(sqlite_ironic):
    node = sqlite_ironic.enroll_nodes(1)[0]
    instances = [str(uuid.uuid4()) for _ in range(16)]
    codes = _race(sqlite_ironic.server, 'PATCH', [
        ('/v1/nodes/%s' % node,
         [{'op': 'add', 'path': '/instance_uuid', 'value': instance}])
        for instance in instances])

    assert sorted(codes) == [200] + [409] * 15
    winner = instances[codes.index(200)]
    assert sqlite_ironic.get_node(node)['instance_uuid'] == winner


def test_sqlite_concurrent_writes_do_not_fail(sqlite_ironic):
    # Without the fixture's sitecustomize, some of these get HTTP 500
    # "database is locked".
    template = sqlite_ironic.enroll_nodes(1)[0]
    nodes = [template] + sqlite_ironic.bulk_clone(template, 15)
    codes = _race(sqlite_ironic.server, 'PUT', [
        ('/v1/nodes/%s/traits' % node, {'traits': ['CUSTOM_%d' % i]})
        for i, node in enumerate(nodes)])

    assert codes == [204] * 16
    for i, node in enumerate(nodes):
        traits = sqlite_ironic.request('GET', '/v1/nodes/%s/traits' % node)
        assert traits.json()['traits'] == ['CUSTOM_%d' % i]


def test_fake_deploy_rescue_and_unrescue_end_powered_on():
    # What deploy_powers_on promises: the fake interfaces end as real ones
    # do, the node running (the deploy step keeps its name and priority).
    if _process.resolve_db_kind('auto') in (None, 'sqlite'):
        pytest.skip('deploy_powers_on needs PostgreSQL or MariaDB')
    with server_lib.IronicServer(deploy_powers_on=True) as server:
        nodes = ironic_nodes.IronicNodes(server)
        (node,) = nodes.enroll_nodes(1)
        nodes.request('PATCH', '/v1/nodes/%s' % node, json=[
            {'op': 'add', 'path': '/instance_uuid',
             'value': str(uuid.uuid4())}])
        for action, state in (('active', 'active'), ('rescue', 'rescue'),
                              ('unrescue', 'active')):
            if action == 'rescue':
                nodes.request('PUT', '/v1/nodes/%s/states/power' % node,
                              expect=(202,), json={'target': 'power off'})
                nodes.wait_for_node(node, power_state='power off',
                                    target_power_state=None)
            body = {'target': action}
            if action == 'rescue':
                body['rescue_password'] = 'secret'
            nodes.request('PUT', '/v1/nodes/%s/states/provision' % node,
                          expect=(202,), json=body)
            found = nodes.wait_for_node(node, provision_state=state,
                                        target_provision_state=None)
            assert found['power_state'] == 'power on', action


def test_cleanup_leaves_nothing(record_property):
    server = server_lib.IronicServer()
    with server:
        pid, base_dir = server.pid, server.base_dir
    assert not os.path.exists(base_dir)
    assert server._database is None
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    record_property('stop_seconds', round(server.stop_seconds, 2))


CHILD = """\
import time
from ironic_multi.testing import ironic_server
server = ironic_server.IronicServer()
server.setUp()
print(server.pid, server.base_dir, server.db_kind,
      (server._database or ('', '-'))[1], flush=True)
time.sleep(600)
"""
# The next run: one Ironic fixture started and stopped.
NEXT = """\
from ironic_multi.testing import ironic_server
with ironic_server.IronicServer(db_kind='sqlite'):
    pass
"""


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGKILL])
def test_killed_runner_leaves_no_ironic(signum):
    child = subprocess.Popen(
        [sys.executable, '-c', CHILD], stdout=subprocess.PIPE, text=True)
    try:
        pid, base_dir, db_kind, database = child.stdout.readline().split()
        child.send_signal(signum)
        child.wait(timeout=30)
    finally:
        child.kill()
        child.wait()

    deadline = time.monotonic() + 15
    while _group_alive(int(pid)):
        assert time.monotonic() < deadline, 'Ironic outlived its runner'
        time.sleep(0.1)
    if signum == signal.SIGKILL:
        # Nothing cleans up after a SIGKILL but the kernel's parent-death
        # signal to Ironic: the directory and the database stay until the
        # next run's first fixture removes them.
        assert os.path.exists(base_dir)
        if db_kind != 'sqlite':
            assert server_lib.databases(db_kind, database) == [database]
        subprocess.run([sys.executable, '-c', NEXT], check=True,
                       timeout=120)
    assert not os.path.exists(base_dir)
    if db_kind != 'sqlite':
        assert server_lib.databases(db_kind, database) == []


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
