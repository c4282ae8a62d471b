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


"""ironic-multi-sandbox end to end, as a newcomer runs it.

The console script runs as a subprocess with small numbers: it must end
with "sandbox OK", report no double booking, and write its JSON report
and its PNG.  Interrupted (Ctrl-C, SIGTERM) it must leave nothing
running: every process it started carries a marker in its environment,
and none may be left in ``/proc`` afterwards (tests/cloud/test_interrupts.py
presses Ctrl-C under ``./tox.sh -e sandbox``, the default mode).  Killed
(SIGKILL), it leaves its directories and database to the next run, which
must remove them.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

from ironic_multi.testing import checks
from ironic_multi.testing import ironic_server
from tests import interrupts

# Nova's services in the sandbox's process: what these tests look at
# (tests/cloud/test_sandbox_on_cloud.py runs it on the cloud).
SMALL = ('--nodes', '8', '--computes', '2', '--servers', '6',
         '--in-process')
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
RUN_TIMEOUT = 400
STOP_TIMEOUT = interrupts.STOP_TIMEOUT
IRONIC_LINE = re.compile(r'\(pid (\d+), (\w+) database, config (\S+?)\)')
# The sandbox's line as wave 1 starts: Nova's services and Ironic run.
HALF_WAY = 'wave 1: posting'
# The next run on the machine: one Ironic started and stopped.
NEXT_RUN = """\
from ironic_multi.testing import ironic_server
with ironic_server.IronicServer(db_kind='sqlite'):
    pass
"""


def _command():
    script = pathlib.Path(sys.executable).parent / 'ironic-multi-sandbox'
    if script.exists():
        return [str(script)]
    return [sys.executable, '-m', 'ironic_multi.cmd.sandbox']


def _read_until(process, marker, text=HALF_WAY):
    """Read the sandbox's output up to the first line with ``text``.

    :returns: ``(lines, the match of its Ironic line, the pids that carry
        the marker)``.
    """
    seen = []
    deadline = time.monotonic() + RUN_TIMEOUT
    for line in process.stdout:
        seen.append(line)
        if text in line:
            break
        assert time.monotonic() < deadline, ''.join(seen)[-4000:]
    else:
        pytest.fail('the sandbox ended before %r:\n%s'
                    % (text, ''.join(seen)[-4000:]))
    ironic = IRONIC_LINE.search(''.join(seen))
    assert ironic, ''.join(seen)
    pids = interrupts.marked(marker)
    assert pids, 'no process carries the marker'
    return seen, ironic, pids


def _databases_of(db_kind, pids):
    """The Ironic databases that ``pids`` created and left."""
    if db_kind == 'sqlite':
        return []
    return [n for n in ironic_server.databases(db_kind, 'ironic_multi_%')
            if any('_%d_' % pid in n for pid in pids)]


def test_small_run(tmp_path):
    marker = uuid.uuid4().hex
    result = subprocess.run(
        _command() + list(SMALL) + ['--output', str(tmp_path)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT,
        env=interrupts.marked_env(marker))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines[-1].startswith('sandbox OK'), output[-3000:]

    report = json.loads((tmp_path / 'sandbox.json').read_text())
    assert report['double_bookings'] == 0
    assert report['problems'] == []
    assert report['capacity']['mismatches'] == []
    assert report['audit']['other_project'] == []
    # The live providers' free counts add up to Ironic's, per class.
    truth = report['capacity']['ironic']
    placement = report['capacity']['placement']
    for resource_class, counts in truth.items():
        name = checks.placement_class(resource_class)
        assert checks.offered(placement, name) == counts['free'], (
            resource_class, placement)
    # The oversubscribed class: its surplus in ERROR, holding nothing.
    errors = [s for s in report['servers'] if s['status'] == 'ERROR']
    assert len(errors) == 1
    assert errors[0]['flavor'] == 'bronze'
    assert errors[0]['node'] is None
    # A compute service was stopped; its shard keys moved.
    ring = report['ring']
    assert ring['victim'] not in ring['after'].values()
    assert ring['moved']
    assert report['cleanup']['left_running'] == []

    chart = pathlib.Path(report['chart'])
    assert chart.read_bytes()[:8] == PNG_SIGNATURE
    assert str(chart) in result.stdout
    assert not interrupts.wait_until_gone(marker)


@pytest.mark.parametrize('signum, after', [
    # Ctrl-C while servers boot: Nova's services and Ironic run.
    (signal.SIGINT, HALF_WAY),
    # SIGTERM while the nodes are enrolled: Ironic runs, Nova not yet.
    (signal.SIGTERM, 'Ironic ready at'),
])
def test_interrupted_run_leaves_nothing(tmp_path, signum, after):
    marker = uuid.uuid4().hex
    process = subprocess.Popen(
        _command() + list(SMALL) + ['--output', str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=interrupts.marked_env(marker))
    try:
        seen, ironic, _pids = _read_until(process, marker, after)
        process.send_signal(signum)
        rest, _ = process.communicate(timeout=STOP_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = ''.join(seen) + rest
    assert process.returncode == 128 + signum, output[-4000:]
    assert 'sandbox interrupted' in output, output[-4000:]
    assert 'sandbox OK' not in output
    left = interrupts.wait_until_gone(marker)
    assert not left, 'left running:\n%s' % interrupts.describe(left)
    pid, config = int(ironic.group(1)), ironic.group(2)
    assert not os.path.exists('/proc/%d' % pid)
    # Ironic's directory (its config, its SQLite database) is gone too.
    assert not os.path.exists(os.path.dirname(config))


def test_a_killed_run_is_reaped_by_the_next(tmp_path):
    """SIGKILL half way: what tox does past its timeouts, the OOM killer.

    Nothing of the run can clean up: its processes die with it (the
    kernel's parent-death signal), its directories (Ironic's, etcd's,
    Nova's temporary tree) and Ironic's database stay until the next run
    starts a server, which removes them.
    """
    marker = uuid.uuid4().hex
    tmpdir = tmp_path / 'tmp'
    tmpdir.mkdir()
    env = interrupts.marked_env(marker, TMPDIR=str(tmpdir))
    process = subprocess.Popen(
        _command() + list(SMALL) + ['--coordination-url', 'etcd',
                                    '--output', str(tmp_path / 'out')],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=env)
    try:
        _seen, ironic, pids = _read_until(process, marker)
    finally:
        process.kill()
        process.wait()
    left = interrupts.wait_until_gone(marker)
    assert not left, 'left running:\n%s' % interrupts.describe(left)
    killed = sorted(p.name for p in tmpdir.iterdir())
    assert [n for n in killed if n.startswith('ironic-multi-ironic-')], killed
    db_kind = ironic.group(2)
    if db_kind != 'sqlite':
        assert _databases_of(db_kind, pids)

    subprocess.run([sys.executable, '-c', NEXT_RUN], env=env, check=True,
                   timeout=STOP_TIMEOUT)

    assert sorted(p.name for p in tmpdir.iterdir()) == [], killed
    assert _databases_of(db_kind, pids) == []
