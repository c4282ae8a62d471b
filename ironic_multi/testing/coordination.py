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
import signal
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

    ``pid`` is the process's id.  With ``log_dir`` its log is
    ``log_dir/etcd.log`` (kept after cleanUp), else in its directory.
    Once set up it can be stopped, started and restarted
    (:meth:`stop`, :meth:`start`, :meth:`restart`) on the same ports and
    data directory: the keys survive, as a real etcd's do.
    """

    def __init__(self, binary=None, log_dir=None):
        super().__init__()
        self.binary = binary or shutil.which('etcd')
        self.log_dir = log_dir
        self.url = self.pid = self.log_path = None
        self._argv = self._client = self._process = None

    def _setUp(self):
        if self.binary is None:
            raise CoordinationServerError(
                'etcd is not installed (Debian package etcd-server)')
        # Reaped by a later run if this one is killed.
        base = self.useFixture(_process.OwnedTempDir('etcd')).path
        client = 'http://127.0.0.1:%d' % _net.free_port()
        peer = 'http://127.0.0.1:%d' % _net.free_port()
        self.log_path = (self.log_dir or base) + '/etcd.log'
        self._argv = [
            self.binary, '--name', 'test', '--data-dir', base + '/data',
            '--listen-client-urls', client,
            '--advertise-client-urls', client,
            '--listen-peer-urls', peer,
            '--initial-advertise-peer-urls', peer,
            '--initial-cluster', 'test=' + peer]
        self._client = client
        self.addCleanup(self.stop)
        self.start()
        self.url = 'etcd3+' + client

    @property
    def running(self):
        return self._process is not None and self._process.poll() is None

    def start(self, wait=True):
        """Start etcd (again): same ports, same data."""
        if self.running:
            raise CoordinationServerError('etcd is already running')
        with open(self.log_path, 'ab') as log:
            self._process = _net.popen(self._argv, stdout=log,
                                       stderr=subprocess.STDOUT)
        self.pid = self._process.pid
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while not _healthy(self._client):
            if self._process.poll() is not None or (
                    time.monotonic() > deadline):
                with open(self.log_path, errors='replace') as f:
                    raise CoordinationServerError(
                        'etcd did not start:\n%s' % f.read()[-3000:])
            time.sleep(0.05)

    def stop(self, timeout=None):
        """SIGTERM (SIGKILL after ``timeout``); returns the exit code."""
        process, self._process = self._process, None
        if process is None:
            return None
        process.send_signal(signal.SIGCONT)
        return _stop(process, STOP_TIMEOUT if timeout is None else timeout)

    def restart(self, wait=True):
        self.stop()
        self.start(wait=wait)

    def send_signal(self, signum):
        if self.running:
            self._process.send_signal(signum)

    def wait(self, timeout):
        """The exit code once etcd exits; None after ``timeout``."""
        try:
            return self._process.wait(timeout) if self._process else None
        except subprocess.TimeoutExpired:
            return None


def _healthy(url):
    try:
        with urllib.request.urlopen(url + '/health', timeout=1) as answer:
            return json.load(answer).get('health') == 'true'
    except OSError:
        return False


def _stop(process, timeout=STOP_TIMEOUT):
    process.terminate()
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def file_url(directory=None):
    """A ``file://`` URL in ``directory``.

    By default a new directory of this process's, reaped by a later run
    once the process is gone.
    """
    return 'file://' + (directory or _process.owned_directory(
        'coordination'))
