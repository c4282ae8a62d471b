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

"""The test servers restart as an init system restarts a service.

Same port, same data: etcd keeps its keys, Ironic its nodes, Keystone its
keys (a token issued before the restart is still valid), the cloud's
private MariaDB its databases.  Each log stays in the log directory the
caller gave.
"""

import os
import signal
import subprocess

import pytest
import requests
from tooz import coordination as tooz_coordination

from ironic_multi.testing import _process
from ironic_multi.testing.cloud import database
from ironic_multi.testing import coordination
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server
from ironic_multi.testing import keystone_server
from ironic_multi.testing import venvs


def _restarted(server):
    first = server.pid
    server.restart()
    assert server.running and server.pid != first


def test_etcd_restarts_with_its_keys(tmp_path):
    server = coordination.EtcdServer(log_dir=str(tmp_path))
    if server.binary is None:
        pytest.skip('etcd is not installed (Debian package etcd-server)')
    with server:
        writer = tooz_coordination.get_coordinator(server.url, b'writer')
        writer.start()
        writer.create_group(b'kept').get()
        writer.stop()
        url = server.url
        _restarted(server)
        assert server.url == url
        reader = tooz_coordination.get_coordinator(server.url, b'reader')
        reader.start()
        try:
            assert b'kept' in reader.get_groups().get()
        finally:
            reader.stop()
        # SIGKILL, then a start: the data is etcd's own to recover.
        server.send_signal(signal.SIGKILL)
        assert server.wait(10) == -signal.SIGKILL
        server.stop()
        server.start()
    assert os.path.getsize(tmp_path / 'etcd.log') > 0


def test_ironic_restarts_on_its_port_with_its_nodes(tmp_path):
    with ironic_server.IronicServer(log_dir=str(tmp_path)) as server:
        nodes = ironic_nodes.IronicNodes(server)
        (node,) = nodes.enroll_nodes(1)
        endpoint = server.endpoint
        _restarted(server)
        assert server.endpoint == endpoint
        assert nodes.get_node(node)['provision_state'] == 'available'
    assert os.path.getsize(tmp_path / 'ironic.log') > 0


def test_keystone_restarts_with_its_keys(tmp_path):
    with keystone_server.KeystoneServer(log_dir=str(tmp_path)) as server:
        token = server.token('admin', 'system')
        _restarted(server)
        answer = requests.get(
            server.auth_url + '/auth/tokens', timeout=30,
            headers={'X-Auth-Token': token, 'X-Subject-Token': token})
        assert answer.status_code == 200, answer.text
    assert os.path.getsize(tmp_path / 'keystone.log') > 0


@pytest.fixture
def mariadb(tmp_path):
    """``(python with the database tool's drivers, a private MariaDB)``."""
    python = os.path.join(os.path.dirname(venvs.ensure_venv('ironic')),
                          'python')
    service = database.make_service(str(tmp_path / 'base'), str(tmp_path))
    service.start()
    try:
        yield python, service
    finally:
        assert service.stop() == 0


def test_a_private_mariadb_restarts_with_its_databases(mariadb, tmp_path):
    python, service = mariadb
    url = _process.create_database(python, 'mysql', 'kept',
                                   admin_url=service.admin_url)
    assert url.startswith('mysql+pymysql://root@127.0.0.1:%d/kept'
                          % service.port)
    first = service.pid
    service.restart()
    assert service.pid != first
    found = subprocess.run(
        [python, _process.DB_TOOL, 'databases', service.admin_url,
         'kept'], capture_output=True, text=True, check=True)
    assert found.stdout.split() == ['kept']
    assert 'ready for connections' in (tmp_path / 'database.log').read_text()


def test_a_mariadb_is_made_to_allow_the_clouds_connections(mariadb):
    python, service = mariadb
    wanted = database.MAX_CONNECTIONS + 100
    assert _process.allow_connections(
        python, 'mysql', wanted, admin_url=service.admin_url) == (
            database.MAX_CONNECTIONS, wanted)
    # Never lowered.
    assert _process.allow_connections(
        python, 'mysql', 10, admin_url=service.admin_url) == (wanted, wanted)


def test_a_private_mariadb_starts_in_a_deep_directory(tmp_path):
    """A TMPDIR deep enough for the socket's path to pass 107 bytes."""
    base = tmp_path / ('d' * 110)
    service = database.make_service(str(base), str(tmp_path))
    assert len(str(base / 'mariadb' / 'mysqld.sock')) > 107
    service.start()
    try:
        assert service.running
    finally:
        assert service.stop() == 0
    assert (base / 'mariadb' / 'data').is_dir()
