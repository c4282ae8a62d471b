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


"""Keeping a sandbox's cloud up after its scenario, for the operator CLI.

What any sandbox needs for ``--keep``: :func:`write_manage_conf` writes
the configuration ``ironic-multi-manage`` reads to reach the cloud,
:func:`paste_lines` says how to run it, and :func:`hold` prints the
lines and waits for Ctrl-C or SIGTERM.  The in-process sandbox and the
multi-process cloud share them.
"""

import os
import shlex
import shutil
import signal
import sys
import threading

#: The file name of the CLI's configuration in the output directory.
MANAGE_CONF = 'ironic-multi-manage.conf'
#: Commands to try on a kept cloud: read-only, then those that ask the
#: services.  ``ironic-multi-manage --help`` lists the rest.
TRY = ('ring show', 'pool show', 'capacity', 'reservations list', 'stats',
       'pool flush', 'housekeeping run --dry-run')
#: One example of every ironic-multi-manage command on a kept sandbox, in
#: the order the documentation shows them (``tools/cli_examples.py``):
#: ``{instance}`` is an instance that holds a node, ``{stopped}`` the
#: compute service the scenario stopped, ``{live}`` a live one.  The
#: sandbox runs no in-tree compute: the migration finds nothing to move,
#: and the rollback only says what it would hand back.  The release comes
#: last: it frees a deployed node.
EXAMPLES = ('ring show', 'pool show', 'capacity', 'reservations list',
            'reservations show {instance}', 'stats',
            'shards assign --dry-run', 'pool flush --yes',
            'housekeeping run --dry-run', 'instances adopt --from {stopped}',
            'migrate plan', 'migrate apply --from {stopped}',
            'migrate rollback --from {live} --dry-run',
            'reservations release {claimed} --yes')
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def write_manage_conf(path, options):
    """Write ``{group: {option: value}}`` as an ini file; return ``path``.

    Lists become comma-separated values.  Readable by its owner only: a
    coordination URL may hold a password.
    """
    lines = []
    for group, values in options.items():
        lines.append('[%s]' % group)
        for name, value in values.items():
            if isinstance(value, (list, tuple)):
                value = ','.join(str(v) for v in value)
            lines.append('%s = %s' % (name, value))
        lines.append('')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write('\n'.join(lines))
    return path


def manage_command(conf_path):
    """``ironic-multi-manage --config-file PATH``, ready to paste.

    The script's full path when this Python's is not the one on PATH
    (under tox it is in the environment's bin directory).
    """
    script = os.path.join(os.path.dirname(sys.executable),
                          'ironic-multi-manage')
    if not os.path.exists(script) or shutil.which(
            'ironic-multi-manage') == script:
        script = 'ironic-multi-manage'
    return '%s --config-file %s' % (shlex.quote(script),
                                    shlex.quote(conf_path))


def paste_lines(conf_path, commands=TRY):
    """The lines that tell how to look into the kept cloud."""
    command = manage_command(conf_path)
    return (['Look into it with the operator CLI, from another terminal:']
            + ['    %s %s' % (command, each) for each in commands[:1]]
            + ['and the same way: %s (--help lists every command).'
               % ', '.join(commands[1:])])


def hold(write, lines, on_signal=None):
    """Print ``lines`` with ``write``, then wait for SIGINT or SIGTERM.

    :param on_signal: called from the signal handler at the first signal,
        before the previous handlers come back: the place to arm what
        handles the signals that follow (under tox, a Ctrl-C comes twice).
    :returns: the signal that ended the wait.
    """
    received = []
    arrived = threading.Event()

    def handler(signum, frame):
        if not received:
            received.append(signum)
            if on_signal is not None:
                on_signal()
        arrived.set()

    previous = {signum: signal.signal(signum, handler)
                for signum in _SIGNALS}
    try:
        for line in lines:
            write(line)
        # A bounded wait lets the handler run on time.
        while not arrived.wait(1):
            pass
    finally:
        for signum, former in previous.items():
            signal.signal(signum, former)
    return received[0]
