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

"""What an interrupted run leaves behind, for the sandbox's tests.

Every process a run starts inherits a marker in its environment, so what
is left is found in ``/proc`` whoever started it.  :func:`ctrl_c_under_tox`
is Ctrl-C in the terminal of ``./tox.sh -e sandbox``, as a newcomer
presses it.
"""

import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

MARKER = 'IRONIC_MULTI_SANDBOX_TEST_MARKER'
TOX_SH = pathlib.Path(__file__).resolve().parents[1] / 'tox.sh'
# Seconds the sandbox may take to stop once interrupted.
STOP_TIMEOUT = 90
GONE_TIMEOUT = 15


def marked_env(marker, name=MARKER, **extra):
    """This process's environment, with ``marker`` and ``extra``."""
    return dict(os.environ, PYTHONUNBUFFERED='1', PYTHONWARNINGS='ignore',
                **{name: marker}, **extra)


def marked(marker, name=MARKER):
    """Pids of the processes whose environment holds ``marker``."""
    needle = ('%s=%s' % (name, marker)).encode()
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


def wait_until_gone(marker, timeout=GONE_TIMEOUT, name=MARKER):
    """The marked processes still there after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked(marker, name)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def describe(pids):
    """One line per pid: its command line, for an assertion's message."""
    lines = []
    for pid in pids:
        try:
            cmdline = pathlib.Path('/proc/%d/cmdline' % pid).read_bytes()
        except OSError:
            cmdline = b'?'
        lines.append('%d: %s' % (pid, cmdline.replace(b'\0', b' ')[:200]))
    return '\n'.join(lines)


def outside_tox(env):
    """``env`` as a shell outside this test run's tox environment has it."""
    bin_dir = os.path.join(sys.prefix, 'bin')
    env = {k: v for k, v in env.items()
           if k != 'VIRTUAL_ENV' and not k.startswith('TOX_')}
    env['PATH'] = os.pathsep.join(
        p for p in env.get('PATH', '').split(os.pathsep) if p != bin_dir)
    return env


@dataclasses.dataclass
class Interrupted:
    """A run of ``./tox.sh -e sandbox`` stopped by Ctrl-C half way."""

    output: str
    # The marked processes at the interrupt, and those left after.
    pids: list
    left: list
    # What the run's TMPDIR still holds.
    files: list
    figures: dict


def ctrl_c_under_tox(tmp_path, args, half_way, run_timeout):
    """Run ``./tox.sh -e sandbox -- ARGS``; Ctrl-C at the line ``half_way``.

    The terminal sends SIGINT to the whole foreground job (tox and the
    sandbox alike), and tox sends its own after it.
    """
    marker = os.urandom(16).hex()
    tmpdir = tmp_path / 'tmp'
    tmpdir.mkdir()
    env = outside_tox(marked_env(marker, TMPDIR=str(tmpdir)))
    started = time.monotonic()
    process = subprocess.Popen(
        [str(TOX_SH), '-e', 'sandbox', '--', *args,
         '--output', str(tmp_path / 'out')],
        cwd=str(TOX_SH.parent), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env=env,
        # A process group of its own, as a terminal's foreground job.
        start_new_session=True)
    seen = []
    try:
        deadline = started + run_timeout
        for line in process.stdout:
            seen.append(line)
            if half_way in line:
                break
            if time.monotonic() > deadline:
                raise AssertionError('no %r after %d s:\n%s' % (
                    half_way, run_timeout, ''.join(seen)[-4000:]))
        else:
            raise AssertionError('the sandbox ended before %r:\n%s' % (
                half_way, ''.join(seen)[-4000:]))
        pids = marked(marker)
        assert pids, 'no process carries the marker'
        interrupted = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        rest, _ = process.communicate(timeout=STOP_TIMEOUT)
        stop_seconds = time.monotonic() - interrupted
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    output = ''.join(seen) + rest
    left = wait_until_gone(marker)
    # uv, building the package for tox, leaves its lock files in TMPDIR:
    # not the run's to remove.
    files = sorted(p.name for p in tmpdir.iterdir()
                   if not (p.name.startswith('uv-') and p.suffix == '.lock'))
    sandbox_exit = re.search(r'sandbox: exit (-?\d+)', output)
    figures = {
        'sigint_after_seconds': round(interrupted - started, 1),
        'sigint_to_exit_seconds': round(stop_seconds, 1),
        'tox_exit_code': process.returncode,
        'sandbox_exit_code': sandbox_exit and int(sandbox_exit.group(1)),
        'processes_at_sigint': len(pids),
        'processes_left': len(left),
        'tmpdir_entries_left': len(files),
    }
    return Interrupted(output, pids, left, files, figures)


def summary(figures):
    """The one line the tests print of an interrupted run."""
    return ('Ctrl-C under tox: SIGINT at %(sigint_after_seconds)s s, '
            '%(processes_at_sigint)d processes of the run up; tox exited '
            '%(tox_exit_code)s %(sigint_to_exit_seconds)s s after it, the '
            'sandbox %(sandbox_exit_code)s; left: %(processes_left)d '
            'processes, %(tmpdir_entries_left)d entries in TMPDIR, '
            '%(databases_left)d databases' % figures)
