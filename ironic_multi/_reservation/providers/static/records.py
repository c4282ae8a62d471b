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

"""The reservations of the static provider, in a JSON file.

``<inventory>.reservations.json``::

    {"version": 1,
     "reservations": {"<instance uuid>": {"node_uuid": "...",
                                          "state": "claimed", ...}},
     "nodes": {"<node uuid>": {"failures": 1, "last_failure": 1.7e9,
                               "quarantined_at": null, "reason": "..."}}}

Every change is made while holding oslo.concurrency's lock (a semaphore
for the threads of this process, a file lock for the processes of the
host), waited for within a bound, and written to a temporary file that
then replaces the state file.
The data and the directory entry are fsynced before the lock is let go,
so a claim that returned survives a crash of the process or the host, and
readers, which take no lock, always see a whole file.
"""

import contextlib
import copy
import json
import os
import tempfile
import time

from oslo_concurrency import lockutils

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers.static import inventory
from ironic_multi import exception

FORMAT_VERSION = 1
STATE_SUFFIX = '.reservations.json'
LOCK_SUFFIX = '.reservations.lock'
# Seconds a change waits for the lock, unless told otherwise.
DEFAULT_LOCK_TIMEOUT = 60.0


class RecordFile(object):
    """The reservation records next to an inventory file.

    :param lock_timeout: seconds a change waits for the lock when its
        caller gives no deadline.
    """

    def __init__(self, inventory_path, lock_timeout=DEFAULT_LOCK_TIMEOUT):
        self.path = inventory_path + STATE_SUFFIX
        self._lock_dir = os.path.dirname(inventory_path)
        self._lock_name = os.path.basename(inventory_path) + LOCK_SUFFIX
        self._lock_timeout = lock_timeout

    def read(self):
        """``{instance_uuid: record}`` as the file holds them now."""
        return self.read_document()['reservations']

    def read_nodes(self):
        """``{node_uuid: marks}``: failures and quarantines."""
        return self.read_document()['nodes']

    def read_document(self):
        """The whole file: ``{'reservations': ..., 'nodes': ...}``."""
        try:
            with open(self.path, 'rb') as f:
                document = json.load(f)
        except FileNotFoundError:
            return {'reservations': {}, 'nodes': {}}
        except (OSError, ValueError) as e:
            raise inventory.invalid(self.path, 'cannot be read: %s' % e)
        records = (document.get('reservations')
                   if isinstance(document, dict) else None)
        if not isinstance(records, dict):
            raise inventory.invalid(self.path,
                                    'has no "reservations" mapping')
        nodes = document.get('nodes', {})
        if not isinstance(nodes, dict):
            raise inventory.invalid(self.path, '"nodes" is not a mapping')
        for instance_uuid, record in records.items():
            try:
                lifecycle.State(record['state'])
                record['node_uuid']
            except (KeyError, TypeError, ValueError):
                raise inventory.invalid(
                    self.path, 'reservation of %s is malformed: %r'
                    % (instance_uuid, record))
        return {'reservations': records, 'nodes': nodes}

    @contextlib.contextmanager
    def changing(self, deadline=None):
        """The document, under the lock; written back if changed.

        :param deadline: ``time.monotonic()`` value after which waiting for
            the lock gives up; by default ``lock_timeout`` from now.
        :raises RecordsLocked: the lock was not had by the deadline.
        """
        with self._locked(deadline):
            document = self.read_document()
            before = copy.deepcopy(document)
            yield document
            if document != before:
                self._write(document)

    @contextlib.contextmanager
    def _locked(self, deadline):
        asked = time.monotonic()
        if deadline is None:
            deadline = asked + self._lock_timeout

        def left():
            seconds = deadline - time.monotonic()
            if seconds <= 0:
                raise timed_out()
            return seconds

        def timed_out():
            return exception.RecordsLocked(
                path=self.path, timeout=round(deadline - asked, 1))

        threads = lockutils.internal_lock(self._lock_name)
        if not threads.acquire(timeout=left()):
            raise timed_out()
        try:
            processes = lockutils.external_lock(self._lock_name,
                                                lock_path=self._lock_dir)
            if not processes.acquire(timeout=left()):
                raise timed_out()
            try:
                yield
            finally:
                processes.release()
        finally:
            threads.release()

    def _write(self, document):
        """Replace the file atomically and durably; only under the lock."""
        document = dict(document, version=FORMAT_VERSION)
        directory = os.path.dirname(self.path)
        fd, tmp = tempfile.mkstemp(
            dir=directory, prefix=os.path.basename(self.path) + '.')
        try:
            with os.fdopen(fd, 'w') as f:
                json.dump(document, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        # The rename is durable only once the directory is.
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
