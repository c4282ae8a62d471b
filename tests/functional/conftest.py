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

import uuid

import pytest

from ironic_multi._reservation.providers.ironic import client
from ironic_multi.testing import coordination as coordination_servers
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server
from ironic_multi.testing import keystone_server
from ironic_multi.testing import reservers


@pytest.fixture(scope='session', name='ironic_server')
def _ironic_server():
    """One real Ironic for the whole session: it takes seconds to start.

    pytest tears it down on failures and on Ctrl-C; IronicServer's own
    safety net covers SIGTERM, SIGHUP and a killed test runner.
    """
    with ironic_server.IronicServer() as server:
        yield server


@pytest.fixture(scope='session')
def keystone():
    """A real Keystone, bootstrapped as devstack does."""
    with keystone_server.KeystoneServer() as server:
        yield server


@pytest.fixture(scope='session')
def plain_ironic(keystone):
    """Ironic behind Keystone with its shipped defaults, in RegionOne."""
    with ironic_server.IronicServer(keystone=keystone) as server:
        keystone.add_endpoint('baremetal', 'ironic', server.endpoint)
        yield server


@pytest.fixture(scope='session')
def elevated_ironic(keystone):
    """Ironic with ``rbac_service_role_elevated_access = true``.

    It is in the catalog of ``keystone_server.ELEVATED_REGION``.
    """
    with ironic_server.IronicServer(
            keystone=keystone, service_role_elevated_access=True) as server:
        keystone.add_endpoint('baremetal', 'ironic', server.endpoint,
                              region=keystone_server.ELEVATED_REGION)
        yield server


@pytest.fixture
def ironic(ironic_server):
    """Node helpers on the session's Ironic, emptied after each test."""
    nodes = ironic_nodes.IronicNodes(ironic_server)
    yield nodes
    nodes.wipe()


@pytest.fixture
def ironic_api(ironic_server):
    """The project's own IronicAPI, talking to the session's Ironic."""
    return client.IronicAPI(reservers.make_conf(ironic_server.endpoint))


@pytest.fixture(scope='session')
def etcd():
    """The tooz URL of an etcd of the session's own."""
    server = coordination_servers.EtcdServer()
    if server.binary is None:
        pytest.skip('etcd is not installed (Debian package etcd-server)')
    with server:
        yield server.url


@pytest.fixture(params=['file', 'redis', 'etcd3'])
def coordination(request, tmp_path):
    """``(url, group)``: a fresh group on each backend."""
    group = 'ring-test-%s' % uuid.uuid4().hex[:8]
    if request.param == 'file':
        yield coordination_servers.file_url(str(tmp_path)), group
    elif request.param == 'etcd3':
        yield request.getfixturevalue('etcd'), group
    else:
        if not coordination_servers.redis_available():
            pytest.skip('no Redis at %s:%d' % coordination_servers.REDIS)
        yield coordination_servers.REDIS_URL, group
        coordination_servers.delete_group(coordination_servers.REDIS_URL,
                                          group)
