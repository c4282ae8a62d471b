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

"""Coordination backends for functional tests: file://, Redis and etcd3.

``coordination`` is parametrized over the three; each test gets a group
of its own.  etcd runs as a process of the test session on free ports;
Redis is the machine's (127.0.0.1:6379), skipped when absent.
"""

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid

import pytest
from tooz import coordination as tooz_coordination

REDIS = ('127.0.0.1', 6379)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.05)
    pytest.fail('timed out after %ss waiting for %s' % (timeout, what))


def _etcd_healthy(url):
    try:
        with urllib.request.urlopen(url + '/health', timeout=1) as answer:
            return json.load(answer).get('health') == 'true'
    except OSError:
        return False


@pytest.fixture(scope='session')
def etcd(tmp_path_factory):
    binary = shutil.which('etcd')
    if binary is None:
        pytest.skip('etcd is not installed (Debian package etcd-server)')
    base = tmp_path_factory.mktemp('etcd')
    client = 'http://127.0.0.1:%d' % _free_port()
    peer = 'http://127.0.0.1:%d' % _free_port()
    with open(base / 'etcd.log', 'wb') as log:
        proc = subprocess.Popen(
            [binary, '--name', 'test', '--data-dir', str(base / 'data'),
             '--listen-client-urls', client, '--advertise-client-urls', client,
             '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
             '--initial-cluster', 'test=' + peer],
            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: proc.poll() is not None or _etcd_healthy(client),
                 30, 'etcd at %s' % client)
        assert proc.poll() is None, (base / 'etcd.log').read_text()
        yield 'etcd3+http://' + client[len('http://'):]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=['file', 'redis', 'etcd3'])
def coordination(request, tmp_path):
    """``(url, group)``: a fresh group on each backend."""
    group = 'ring-test-%s' % uuid.uuid4().hex[:8]
    if request.param == 'file':
        yield 'file://%s' % tmp_path, group
    elif request.param == 'etcd3':
        yield request.getfixturevalue('etcd'), group
    else:
        try:
            socket.create_connection(REDIS, timeout=1).close()
        except OSError as e:
            pytest.skip('no Redis at %s:%d: %s' % (REDIS + (e,)))
        url = 'redis://%s:%d' % REDIS
        yield url, group
        # The server outlives the test: drop the group, best effort.
        cleaner = tooz_coordination.get_coordinator(url, b'cleanup')
        with contextlib.suppress(Exception):
            cleaner.start()
            cleaner.delete_group(group.encode()).get()
            cleaner.stop()
