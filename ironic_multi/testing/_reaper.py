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

"""Cleans up after a test process that died without cleaning up itself.

    python _reaper.py

A child of the test process, in a session of its own, reading commands
on standard input, one a line:

``group PGID`` / ``forget-group PGID``
    a process group to kill;
``database PYTHON ADMIN_URL NAME`` / ``forget-database ADMIN_URL NAME``
    a database to drop with ``PYTHON _ironic_db.py drop ADMIN_URL NAME``.

End of input means the test process is gone, whatever killed it (SIGKILL
included: the kernel closes its end of the pipe).  The reaper then sends
SIGTERM to every group still listed, SIGKILL a few seconds later, drops
the databases still listed, and exits.  A test process that cleaned up
has told it to forget everything, so it then does nothing.

Why not only ``PR_SET_PDEATHSIG``: it covers the direct child only, and
fires when the *thread* that started it ends.  RabbitMQ's start script,
for one, runs the broker as a child of its own.
"""

import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DB_TOOL = os.path.join(HERE, '_ironic_db.py')
GRACE_SECONDS = 5


def _signal(groups, signum):
    for pgid in list(groups):
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            groups.discard(pgid)
        except PermissionError:
            groups.discard(pgid)


def reap(groups, databases):
    _signal(groups, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while groups and time.monotonic() < deadline:
        time.sleep(0.2)
        _signal(groups, 0)
    _signal(groups, signal.SIGKILL)
    for (admin_url, name), python in databases.items():
        subprocess.run([python, DB_TOOL, 'drop', admin_url, name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    # Ctrl-C in the terminal is for the test process; this one waits for
    # its end of input.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups, databases = set(), {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == 'group':
            groups.add(int(words[1]))
        elif words[0] == 'forget-group':
            groups.discard(int(words[1]))
        elif words[0] == 'database':
            databases[words[2], words[3]] = words[1]
        elif words[0] == 'forget-database':
            databases.pop((words[1], words[2]), None)
    reap(groups, databases)


if __name__ == '__main__':
    main()
