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

"""What a killed test run leaves behind, and its removal by the next one.

Every directory a test fixture makes for a server or its own files
(Ironic, Keystone, etcd, the multi-process cloud, Nova's temporary tree)
is named ``ironic-multi-<kind>-<pid>-...`` and holds ``owner.json``: the
owning process (pid and start time, so that a reused pid does not pass
for it) and, each written before it is created, the databases that go
with the directory.  The fixture's own clean-up removes them.  A run
killed with SIGKILL (tox past its terminate timeout, the OOM killer)
cannot; the next fixture that starts on this machine drops the databases
and removes the directories whose owner is gone.

Only directories that carry this naming are looked at, and only what
their record names is dropped: a database is reaped through the
directory on this machine that recorded it, never by its name alone (a
database server may be shared by several machines).
"""

import json
import logging
import os
import re
import shutil
import tempfile
import threading

LOG = logging.getLogger(__name__)

OWNER_FILE = 'owner.json'
_DIRECTORY = re.compile(r'^ironic-multi-[a-z]+-(?P<pid>\d+)-')
# The machine's temporary directory as this process found it, where the
# directories are made and looked for: Nova's test base points tempfile
# at a directory of its own while its services run, out of sight.
ROOT = tempfile.gettempdir()
# Threads of one process may add databases to one record at once.
_lock = threading.Lock()


def start_time(pid):
    """When ``pid`` started (clock ticks since boot), or None if it is gone.

    A zombie counts as gone: it runs nothing and holds nothing.
    """
    try:
        with open('/proc/%d/stat' % pid) as f:
            # The command name may hold spaces and parentheses.
            fields = f.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None
    # fields[0] is the state (field 3), fields[19] the start time (22).
    return None if fields[0] == 'Z' else fields[19]


def prefix(server):
    """The ``tempfile.mkdtemp`` prefix of ``server``'s directory."""
    return 'ironic-multi-%s-%d-' % (server, os.getpid())


def make_directory(kind):
    """A new directory for ``kind`` in :data:`ROOT`, owned by this process."""
    path = tempfile.mkdtemp(prefix=prefix(kind), dir=ROOT)
    record(path)
    return path


def record(directory, database=None):
    """Write (or extend) the owner record of ``directory``.

    The first call names this process as the owner.

    :param database: ``(kind, name)`` of a database to drop with the
        directory, recorded before it is created.
    """
    path = os.path.join(directory, OWNER_FILE)
    with _lock:
        current = _read(path) or {'pid': os.getpid(),
                                  'started': start_time(os.getpid())}
        if database is not None:
            current.setdefault('databases', []).append(list(database))
        tmp = path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(current, f)
        # A reaper reads the old record or the new one, never half of one.
        os.replace(tmp, path)


def databases(owner):
    """``[(kind, name)]`` of an owner record's databases."""
    found = [tuple(d) for d in owner.get('databases', ())]
    if owner.get('database'):
        # Records written before a directory could hold several.
        found.append(tuple(owner['database']))
    return found


def _read(path):
    try:
        with open(path) as f:
            found = json.load(f)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _owner_gone(directory, pid_in_name):
    owner = _read(os.path.join(directory, OWNER_FILE))
    if owner is None:
        # Killed between making the directory and writing the record.
        return start_time(pid_in_name) is None, {}
    started = start_time(owner.get('pid', pid_in_name))
    return started is None or started != owner.get('started'), owner


def find(root=None):
    """``[(directory, record)]`` of the server directories whose owner died.

    :param root: where to look (:data:`ROOT` by default).
    """
    root = root or ROOT
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    found = []
    for name in names:
        match = _DIRECTORY.match(name)
        path = os.path.join(root, name)
        if match is None or not os.path.isdir(path):
            continue
        gone, owner = _owner_gone(path, int(match.group('pid')))
        if gone:
            found.append((path, owner))
    return found


def reap(drop_database=None, root=None):
    """Drop the databases and remove the directories of dead owners.

    :param drop_database: ``drop_database(kind, name)``; a failure keeps
        the directory (and its record) for a later attempt.  None: the
        directories that record a database are kept for a caller that can
        drop it.
    :returns: the directories removed.
    """
    removed = []
    for path, owner in find(root):
        names = databases(owner)
        if names and drop_database is None:
            continue
        try:
            for kind, name in names:
                drop_database(kind, name)
        except Exception as e:
            LOG.warning('Could not drop database %s left by pid %s: %s',
                        name, owner.get('pid'), e)
            continue
        shutil.rmtree(path, ignore_errors=True)
        LOG.info('Removed %s%s, left by pid %s', path,
                 ' and database %s' % ', '.join(n for _k, n in names)
                 if names else '', owner.get('pid', '?'))
        removed.append(path)
    return removed
