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

"""The multi-process cloud's plumbing, without any OpenStack service.

Real processes (``sleep``, a Python child), no servers.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ironic_multi.testing import _process
from ironic_multi.testing.cloud import config
from ironic_multi.testing.cloud import overlay
from ironic_multi.testing.cloud import process


def test_render_and_merge():
    sections = config.merge({'DEFAULT': {'debug': False, 'a': 1}},
                            {'DEFAULT': {'a': 2}, 'x': {'l': ['p', 'q'],
                                                        'none': None}})
    assert config.render(sections) == (
        '[DEFAULT]\ndebug = false\na = 2\n\n[x]\nl = p,q\n')


def test_overlay_links_the_code_under_test(tmp_path):
    directory = overlay.make(str(tmp_path / 'overlay'))
    assert os.path.realpath(os.path.join(directory, 'ironic_multi')) == (
        os.path.realpath(overlay.package_path()))
    (info,) = [n for n in os.listdir(directory) if n.endswith('.dist-info')]
    with open(os.path.join(directory, info, 'entry_points.txt')) as f:
        assert 'ironic_multi.node_providers' in f.read()
    with open(os.path.join(directory, info, 'METADATA')) as f:
        assert 'Name: ironic-multi' in f.read()


def test_no_start_comes_between_a_restarts_stop_and_start(tmp_path):
    service = process.Service('sleeper', ['sleep', '60'], str(tmp_path),
                              dict(os.environ))
    service.start()
    first = service.pid
    theirs = []

    def start_elsewhere():
        try:
            service.start(wait=False)
            theirs.append('started')
        except process.ServiceError as e:
            theirs.append(str(e))

    real_stop = service.stop

    def stop_then_race(*args, **kwargs):
        code = real_stop(*args, **kwargs)
        # A supervisor sees it down right after the stop.
        other = threading.Thread(target=start_elsewhere)
        other.start()
        other.join(timeout=1)
        return code

    service.stop = stop_then_race
    try:
        service.restart()
        assert service.running and service.pid != first
    finally:
        service.stop = real_stop
        deadline = time.monotonic() + 10
        while not theirs and time.monotonic() < deadline:
            time.sleep(0.05)
        service.stop()
    assert theirs == ['sleeper is already running']


def test_service_start_signal_stop(tmp_path):
    service = process.Service('sleeper', ['sleep', '60'], str(tmp_path),
                              dict(os.environ))
    service.start()
    assert service.running and service.rss() > 0
    service.send_signal(signal.SIGSTOP)
    # stop() continues a stopped process before it terminates it.
    assert service.stop(timeout=5) == -signal.SIGTERM
    assert not service.running
    service.start()
    assert service.kill() == -signal.SIGKILL
    assert 'starting sleep 60' in service.log_tail()


def test_a_service_started_by_a_thread_outlives_the_thread(tmp_path):
    """A fault schedule's thread may restart a service, then end.

    PR_SET_PDEATHSIG fires when the thread that forked the child ends:
    the service must not die with it.
    """
    service = process.Service('sleeper', ['sleep', '60'], str(tmp_path),
                              dict(os.environ))
    starter = threading.Thread(target=service.start)
    starter.start()
    starter.join()
    try:
        time.sleep(0.5)
        assert service.running
    finally:
        service.stop(timeout=5)


class SleepServer(_process.ServerFixture):
    """A server fixture whose server is ``sleep``: ready once started."""

    name = 'sleepy'

    def _setUp(self):
        self._prepare(sys.executable)
        self._launch()
        self.wait_ready()

    def _launch(self):
        self._spawn(['sleep', '60'])

    def _ready(self):
        return True


@pytest.fixture
def sleep_server(tmp_path, monkeypatch):
    # No reaping of other runs' leftovers from a unit test.
    monkeypatch.setattr(_process, '_reaped', {'all'})
    server = SleepServer(db_url='sqlite://', log_dir=str(tmp_path))
    with server:
        yield server


def test_a_server_fixture_is_controlled_as_a_service(sleep_server,
                                                     tmp_path):
    service = process.ServerService('sleepy', sleep_server)
    first = service.pid
    assert first and service.running and service.rss() > 0
    service.restart()
    second = service.pid
    assert second not in (None, first) and service.running
    assert service.stop(timeout=5) == -signal.SIGTERM
    assert service.pid is None and not service.running
    # What stays for a start: the same directory.
    assert os.path.isdir(sleep_server.base_dir)
    service.start()
    service.send_signal(signal.SIGSTOP)
    assert service.kill(signal.SIGKILL) == -signal.SIGKILL
    assert not service.running
    service.start()
    assert service.kill(signal.SIGTERM) == -signal.SIGTERM
    # The log is in the log dir, appended to by every start.
    assert sleep_server.log_path == str(tmp_path / 'sleepy.log')


def test_a_server_fixture_log_outlives_it(tmp_path, monkeypatch):
    monkeypatch.setattr(_process, '_reaped', {'all'})
    with SleepServer(db_url='sqlite://', log_dir=str(tmp_path)) as server:
        base_dir = server.base_dir
        with open(server.log_path, 'a') as log:
            log.write('kept\n')
    assert not os.path.exists(base_dir)
    assert (tmp_path / 'sleepy.log').read_text() == 'kept\n'


def test_reaper_kills_the_groups_of_a_runner_killed_hard(tmp_path):
    """What a service forks dies with a runner killed by SIGKILL.

    The service (``sh``) dies with its parent by PR_SET_PDEATHSIG; the
    ``sleep`` it forked does not, only the reaper kills it.
    """
    pid_file = tmp_path / 'pid'
    script = textwrap.dedent('''
        import os, sys, time
        from ironic_multi.testing.cloud import process
        service = process.Service(
            'forker', ['sh', '-c', 'sleep 120 & echo $! > %s; wait'
                       % sys.argv[2]], sys.argv[1], dict(os.environ))
        service.start()
        open(sys.argv[2] + '.watched', 'w').close()
        time.sleep(120)
        ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    runner = subprocess.Popen(
        [sys.executable, '-c', script, str(tmp_path), str(pid_file)],
        env=env)
    # The runner's start (its imports) is not what is tested: a loaded
    # machine (tests side by side) took more than 30 s.  Killed before
    # start() has handed the group to the reaper, nothing could clean up.
    watched = tmp_path / 'pid.watched'
    deadline = time.monotonic() + 120
    while not (watched.exists() and pid_file.exists()
               and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and runner.poll() is None
        time.sleep(0.1)
    sleeper = int(pid_file.read_text())
    assert _alive(sleeper)
    runner.kill()
    runner.wait()
    deadline = time.monotonic() + 15
    while _alive(sleeper):
        assert time.monotonic() < deadline, 'the sleep outlived its runner'
        time.sleep(0.1)


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            # A zombie (state Z) is gone, its parent not having reaped it.
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def test_a_private_database_is_mariadb():
    from ironic_multi.testing.cloud import cloud as cloud_mod

    with pytest.raises(ValueError, match='db_kind must be mysql'):
        cloud_mod.Cloud(private_database=True, db_kind='postgresql')


def test_partition_needs_the_coordination_proxies():
    from ironic_multi.testing.cloud import cloud as cloud_mod

    cloud = cloud_mod.Cloud()
    cloud.coordination_url = 'etcd3+http://127.0.0.1:2379'
    assert cloud.coordination_url_of('compute-1') == cloud.coordination_url
    with pytest.raises(cloud_mod.CloudError,
                       match='coordination_proxies=True'):
        cloud.partition('compute-1')
