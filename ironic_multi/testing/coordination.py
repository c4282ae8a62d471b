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

"""Coordination backends for tests: an etcd of their own, the local Redis.

``file://`` needs nothing.  etcd runs as a child process on free ports
(Debian's ``etcd-server``); Redis is the machine's, when one answers.
"""

import contextlib
import json
import shutil
import subprocess
import time
import urllib.request

import fixtures
from tooz import coordination as tooz_coordination

from ironic_multi.testing import _net
from ironic_multi.testing import _process

REDIS = ('127.0.0.1', 6379)
REDIS_URL = 'redis://%s:%d' % REDIS
START_TIMEOUT = 30
STOP_TIMEOUT = 10


class CoordinationServerError(Exception):
    pass


def redis_available():
    """Whether the local Redis accepts connections."""
    return _net.listening(*REDIS)


def delete_group(url, group):
    """Drop ``group`` from a server that outlives the test; best effort."""
    with contextlib.suppress(Exception):
        cleaner = tooz_coordination.get_coordinator(url, b'cleanup')
        cleaner.start()
        cleaner.delete_group(group.encode()).get()
        cleaner.stop()


class EtcdServer(fixtures.Fixture):
    """One etcd process on free loopback ports; ``url`` is its tooz URL.

    ``pid`` is the process's id.
    """

    def __init__(self, binary=None):
        super().__init__()
        self.binary = binary or shutil.which('etcd')
        self.url = self.pid = None

    def _setUp(self):
        if self.binary is None:
            raise CoordinationServerError(
                'etcd is not installed (Debian package etcd-server)')
        # Reaped by a later run if this one is killed.
        base = self.useFixture(_process.OwnedTempDir('etcd')).path
        client = 'http://127.0.0.1:%d' % _net.free_port()
        peer = 'http://127.0.0.1:%d' % _net.free_port()
        log_path = base + '/etcd.log'
        with open(log_path, 'wb') as log:
            process = subprocess.Popen(
                [self.binary, '--name', 'test', '--data-dir', base + '/data',
                 '--listen-client-urls', client,
                 '--advertise-client-urls', client,
                 '--listen-peer-urls', peer,
                 '--initial-advertise-peer-urls', peer,
                 '--initial-cluster', 'test=' + peer],
                stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_net.die_with_parent)
        self.addCleanup(_stop, process)
        self.pid = process.pid
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(client):
            if process.poll() is not None or time.monotonic() > deadline:
                with open(log_path, errors='replace') as f:
                    raise CoordinationServerError(
                        'etcd did not start:\n%s' % f.read()[-3000:])
            time.sleep(0.05)
        self.url = 'etcd3+' + client


def _healthy(url):
    try:
        with urllib.request.urlopen(url + '/health', timeout=1) as answer:
            return json.load(answer).get('health') == 'true'
    except OSError:
        return False


def _stop(process):
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def file_url(directory=None):
    """A ``file://`` URL in ``directory``.

    By default a new directory of this process's, reaped by a later run
    once the process is gone.
    """
    return 'file://' + (directory or _process.owned_directory(
        'coordination'))
