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
import subprocess

import pytest

from ironic_multi.testing import _leftovers


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
        'database': ['postgresql', 'ironic_multi_ironic_1_ab']})
    (path / 'ironic.log').write_text('the log of a killed run')

    removed, dropped = _reap(tmp_path)

    assert removed == [path.name]
    assert dropped == [('postgresql', 'ironic_multi_ironic_1_ab')]
    assert not path.exists()


def test_a_live_owner_keeps_its_directory(tmp_path):
    path = tmp_path / 'made-by-this-process'
    path.mkdir()
    # What a fixture of this process writes.
    _leftovers.record(str(path), database=['mysql', 'mine'])
    owned = _directory(tmp_path, os.getpid(),
                       json.loads((path / 'owner.json').read_text()))

    assert _reap(tmp_path) == ([], [])
    assert owned.exists()


def test_a_reused_pid_does_not_pass_for_the_owner(tmp_path):
    # This process's pid, but another start time: the owner died and its
    # pid went to someone else.
    path = _directory(tmp_path, os.getpid(), {
        'pid': os.getpid(), 'started': 'long ago',
        'database': ['postgresql', 'theirs']})

    assert _reap(tmp_path) == ([path.name], [('postgresql', 'theirs')])


def test_without_a_record_the_pid_in_the_name_decides(tmp_path, dead_pid):
    # Killed between making the directory and writing its record.
    dead = _directory(tmp_path, dead_pid)
    live = _directory(tmp_path, os.getpid(), server='keystone')

    assert _reap(tmp_path) == ([dead.name], [])
    assert live.exists()


def test_a_failed_drop_keeps_the_directory_for_later(tmp_path, dead_pid):
    path = _directory(tmp_path, dead_pid, {
        'pid': dead_pid, 'started': '1', 'database': ['postgresql', 'x']})

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
