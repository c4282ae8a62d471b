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

"""What a killed run left: only dead owners' directories are reaped."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import fixtures
import pytest

from ironic_multi.testing import _leftovers
from ironic_multi.testing import _process
from ironic_multi.testing.cloud import cloud as cloud_mod


@pytest.fixture(scope='module')
def dead_pid():
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen(['true'])
    child.wait()
    assert _leftovers.start_time(child.pid) is None
    return child.pid


def _directory(root, pid, owner=None, server='ironic'):
    path = root / ('ironic-multi-%s-%d-abc123' % (server, pid))
    path.mkdir()
    if owner is not None:
        (path / _leftovers.OWNER_FILE).write_text(json.dumps(owner))
    return path


def _reap(root):
    dropped = []

    def drop(kind, name):
        dropped.append((kind, name))

    removed = _leftovers.reap(drop, root=str(root))
    return sorted(os.path.basename(p) for p in removed), dropped


def test_a_dead_owners_directory_and_database_are_reaped(tmp_path,
                                                         dead_pid):
    path = _directory(tmp_path, dead_pid, {
        'pid': dead_pid, 'started': '123',
        'databases': [['postgresql', 'ironic_multi_ironic_1_ab']]})
    (path / 'ironic.log').write_text('the log of a killed run')

    removed, dropped = _reap(tmp_path)

    assert removed == [path.name]
    assert dropped == [('postgresql', 'ironic_multi_ironic_1_ab')]
    assert not path.exists()


def test_every_database_of_a_directory_is_dropped(tmp_path, dead_pid):
    # The multi-process cloud's directory records its six databases; a
    # record of before then named one, as "database".
    cloud = _directory(tmp_path, dead_pid, {
        'pid': dead_pid, 'started': '1',
        'databases': [['mysql', 'nova_api'], ['mysql', 'glance']]},
        server='cloud')
    old = _directory(tmp_path, dead_pid, {
        'pid': dead_pid, 'started': '1', 'database': ['postgresql', 'old']})

    assert _reap(tmp_path) == (sorted([cloud.name, old.name]), [
        ('mysql', 'nova_api'), ('mysql', 'glance'), ('postgresql', 'old')])


def test_without_a_dropper_a_directory_with_a_database_waits(tmp_path,
                                                             dead_pid):
    # An etcd or Nova directory reaps before any server venv is at hand:
    # Ironic's directory stays until one can drop its database.
    ironic = _directory(tmp_path, dead_pid, {
        'pid': dead_pid, 'started': '1', 'databases': [['mysql', 'x']]})
    etcd = _directory(tmp_path, dead_pid, {'pid': dead_pid, 'started': '1'},
                      server='etcd')

    removed = _leftovers.reap(root=str(tmp_path))

    assert removed == [str(etcd)]
    assert ironic.exists()


def test_a_record_keeps_every_database_added(tmp_path):
    _leftovers.record(str(tmp_path))
    _leftovers.record(str(tmp_path), database=('mysql', 'a'))
    _leftovers.record(str(tmp_path), database=('mysql', 'b'))

    owner = json.loads((tmp_path / _leftovers.OWNER_FILE).read_text())
    assert owner['pid'] == os.getpid()
    assert _leftovers.databases(owner) == [('mysql', 'a'), ('mysql', 'b')]


def test_a_live_owner_keeps_its_directory(tmp_path):
    path = tmp_path / 'made-by-this-process'
    path.mkdir()
    # What a fixture of this process writes.
    _leftovers.record(str(path), database=('mysql', 'mine'))
    owned = _directory(tmp_path, os.getpid(),
                       json.loads((path / 'owner.json').read_text()))

    assert _reap(tmp_path) == ([], [])
    assert owned.exists()


def test_a_reused_pid_does_not_pass_for_the_owner(tmp_path):
    # This process's pid, but another start time: the owner died and its
    # pid went to someone else.
    path = _directory(tmp_path, os.getpid(), {
        'pid': os.getpid(), 'started': 'long ago',
        'databases': [['postgresql', 'theirs']]})

    assert _reap(tmp_path) == ([path.name], [('postgresql', 'theirs')])


def test_without_a_record_the_pid_in_the_name_decides(tmp_path, dead_pid):
    # Killed between making the directory and writing its record.
    dead = _directory(tmp_path, dead_pid)
    live = _directory(tmp_path, os.getpid(), server='keystone')

    assert _reap(tmp_path) == ([dead.name], [])
    assert live.exists()


def test_a_failed_drop_keeps_the_directory_for_later(tmp_path, dead_pid):
    path = _directory(tmp_path, dead_pid, {
        'pid': dead_pid, 'started': '1', 'databases': [['postgresql', 'x']]})

    def drop(kind, name):
        raise RuntimeError('the database server is down')

    assert _leftovers.reap(drop, root=str(tmp_path)) == []
    assert (path / _leftovers.OWNER_FILE).exists()


@pytest.mark.parametrize('name', [
    # Directories made before they carried the owner's pid, and others'.
    'ironic-multi-ironic-p_gk0bc7',
    'ironic-multi-ironic-12345678',
    'ironic-multi-coordination-x1',
    'tmpab12cd',
])
def test_other_directories_are_left_alone(tmp_path, name):
    (tmp_path / name).mkdir()

    assert _reap(tmp_path) == ([], [])
    assert (tmp_path / name).exists()


def test_the_prefix_names_the_server_and_this_process():
    assert _leftovers.prefix('keystone') == (
        'ironic-multi-keystone-%d-' % os.getpid())


def test_a_zombie_counts_as_gone():
    child = subprocess.Popen(['true'])
    try:
        # Ended, not yet waited for: a zombie.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert _leftovers.start_time(child.pid) is None
    finally:
        child.wait()


# The fixtures' directories
# -------------------------

# A stand-in for etcd: answers its health check on the client URL.
FAKE_ETCD = """\
#!{python}
import http.server, sys
argv = sys.argv[1:]
port = int(argv[argv.index('--listen-client-urls') + 1].rsplit(':', 1)[1])

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{{"health": "true"}}')

    def log_message(self, *args):
        pass

http.server.HTTPServer(('127.0.0.1', port), Health).serve_forever()
"""
# A runner that starts one fixture, then waits to be killed.
RUNNER = textwrap.dedent("""\
    import sys, tempfile, time
    import fixtures
    from ironic_multi.testing import _process, coordination
    kind = sys.argv[1]
    if kind == 'etcd':
        coordination.EtcdServer(binary=sys.argv[2]).setUp()
    elif kind == 'coordination':
        coordination.file_url()
    elif kind == 'nova':
        # What NovaServicesCase does, then what Nova's test base does.
        _process.OwnedTempDir('nova', tempfile_root=True).setUp()
        fixtures.NestedTempfile().setUp()
        fixtures.TempHomeDir().setUp()
        tempfile.mkstemp(suffix='.sqlite')
    print('ready', flush=True)
    time.sleep(600)
    """)


@pytest.mark.parametrize('kind', ['etcd', 'coordination', 'nova'])
def test_a_killed_runners_fixture_directories_are_reaped(tmp_path, kind):
    fake_etcd = tmp_path / 'etcd'
    fake_etcd.write_text(FAKE_ETCD.format(python=sys.executable))
    fake_etcd.chmod(0o755)
    root = tmp_path / 'tmp'
    root.mkdir()
    runner = subprocess.Popen(
        [sys.executable, '-c', RUNNER, kind, str(fake_etcd)],
        stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, TMPDIR=str(root),
                 PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        assert runner.stdout.readline() == 'ready\n'
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    left = sorted(os.listdir(root))
    assert left, 'the runner made nothing in its temporary directory'

    removed = _leftovers.reap(root=str(root))

    assert sorted(os.path.basename(p) for p in removed) == left
    assert os.listdir(root) == []


def test_directories_are_made_where_the_reaper_looks(tmp_path, monkeypatch):
    monkeypatch.setattr(_leftovers, 'ROOT', str(tmp_path))
    # Nova's test base points tempfile elsewhere while its services run;
    # an Ironic they start must stay in sight.
    with fixtures.NestedTempfile():
        path = _leftovers.make_directory('ironic')

    assert os.path.dirname(path) == str(tmp_path)
    assert os.path.basename(path).startswith(_leftovers.prefix('ironic'))


def test_leftovers_are_reaped_once_and_databases_with_a_venv(monkeypatch):
    calls = []
    monkeypatch.setattr(_leftovers, 'reap', calls.append)
    monkeypatch.setattr(_process, '_reaped', set())

    _process._reap_leftovers()
    _process._reap_leftovers()
    # The first fixture with a server venv drops the databases too.
    _process._reap_leftovers(sys.executable)
    _process._reap_leftovers(sys.executable)
    _process._reap_leftovers()

    assert [drop is None for drop in calls] == [True, False]


class _Reaper(object):
    def __init__(self):
        self.watched = []

    def watch_database(self, python, kind, name):
        self.watched.append((kind, name))


def test_the_clouds_databases_are_recorded_in_its_directory(tmp_path,
                                                            monkeypatch):
    # The reaper drops them when the runner dies; the record, when the
    # reaper died with it.
    reaper = _Reaper()
    monkeypatch.setattr(_process, 'reaper', lambda: reaper)
    monkeypatch.setattr(_process, 'create_database',
                        lambda *args, **kwargs: 'mysql+pymysql://x')
    cloud = cloud_mod.Cloud()
    cloud.base_dir, cloud.python = str(tmp_path), sys.executable

    cloud._create_database('nova_api')
    cloud._create_database('glance')

    owner = json.loads((tmp_path / _leftovers.OWNER_FILE).read_text())
    assert _leftovers.databases(owner) == reaper.watched
    assert [name.split('_')[2] for _kind, name in reaper.watched] == [
        'nova', 'glance']
