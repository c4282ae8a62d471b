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
and none may be left in ``/proc`` afterwards.
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

from ironic_multi._sandbox import checks

SMALL = ('--nodes', '8', '--computes', '2', '--servers', '6')
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
RUN_TIMEOUT = 400
STOP_TIMEOUT = 90
MARKER = 'IRONIC_MULTI_SANDBOX_TEST_MARKER'


def _command():
    script = pathlib.Path(sys.executable).parent / 'ironic-multi-sandbox'
    if script.exists():
        return [str(script)]
    return [sys.executable, '-m', 'ironic_multi.cmd.sandbox']


def _env(marker):
    return dict(os.environ, PYTHONUNBUFFERED='1', PYTHONWARNINGS='ignore',
                **{MARKER: marker})


def _marked(marker):
    """Pids of the processes whose environment holds ``marker``."""
    needle = ('%s=%s' % (MARKER, marker)).encode()
    found = []
    for entry in pathlib.Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / 'environ').read_bytes().split(b'\0'):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_until_gone(marker, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        left = _marked(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _describe(pids):
    lines = []
    for pid in pids:
        try:
            cmdline = pathlib.Path('/proc/%d/cmdline' % pid).read_bytes()
        except OSError:
            cmdline = b'?'
        lines.append('%d: %s' % (pid, cmdline.replace(b'\0', b' ')[:200]))
    return '\n'.join(lines)


def test_small_run(tmp_path):
    marker = uuid.uuid4().hex
    result = subprocess.run(
        _command() + list(SMALL) + ['--output', str(tmp_path)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT,
        env=_env(marker))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines[-1].startswith('sandbox OK'), output[-3000:]

    report = json.loads((tmp_path / 'sandbox.json').read_text())
    assert report['double_bookings'] == 0
    assert report['problems'] == []
    assert report['capacity']['mismatches'] == []
    assert report['audit']['other_project'] == []
    # Every live provider's free count is Ironic's, per class.
    truth = report['capacity']['ironic']
    for host, views in report['capacity']['placement'].items():
        for resource_class, counts in truth.items():
            view = views[checks.placement_class(resource_class)]
            assert view['free'] == counts['free'], (host, resource_class)
    # The oversubscribed class: its surplus in ERROR, holding nothing.
    errors = [s for s in report['servers'] if s['status'] == 'ERROR']
    assert len(errors) == 1
    assert errors[0]['flavor'] == 'bronze'
    assert errors[0]['node'] is None
    # A compute service was stopped; its shard keys moved.
    ring = report['ring']
    assert ring['victim'] not in ring['after'].values()
    assert ring['moved']
    assert report['cleanup']['ironic_running'] is False

    chart = pathlib.Path(report['chart'])
    assert chart.read_bytes()[:8] == PNG_SIGNATURE
    assert str(chart) in result.stdout
    assert not _wait_until_gone(marker)


@pytest.mark.parametrize('signum, after', [
    # Ctrl-C while servers boot: Nova's services and Ironic run.
    (signal.SIGINT, 'wave 1: posting'),
    # SIGTERM while the nodes are enrolled: Ironic runs, Nova not yet.
    (signal.SIGTERM, 'Ironic ready at'),
])
def test_interrupted_run_leaves_nothing(tmp_path, signum, after):
    marker = uuid.uuid4().hex
    process = subprocess.Popen(
        _command() + list(SMALL) + ['--output', str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=_env(marker))
    seen = []
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        for line in process.stdout:
            seen.append(line)
            if after in line:
                break
            assert time.monotonic() < deadline, ''.join(seen)
        else:
            pytest.fail('the sandbox ended before %r:\n%s'
                        % (after, ''.join(seen)))
        ironic = re.search(r'\(pid (\d+), \w+ database, config (\S+?)\)',
                           ''.join(seen))
        assert ironic, ''.join(seen)
        assert _marked(marker), 'no process carries the marker'
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
    left = _wait_until_gone(marker)
    assert not left, 'left running:\n%s' % _describe(left)
    pid, config = int(ironic.group(1)), ironic.group(2)
    assert not os.path.exists('/proc/%d' % pid)
    # Ironic's directory (its config, its SQLite database) is gone too.
    assert not os.path.exists(os.path.dirname(config))
