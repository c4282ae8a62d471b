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

"""Reserve nodes declared in a YAML file (Nodepool's static driver).

For labs, tests and small fixed fleets: no Ironic is asked anything.  The
inventory, ``[ironic_multi]static_inventory``, is a YAML list of nodes; each
entry takes the keys of an Ironic node::

    - uuid: 0f5bc5b4-7d4c-4b6e-9a55-1e0b8a6a3a01   # required, unique
      resource_class: baremetal-gold              # required
      name: rack1-u07                             # optional, unique
      properties:                                 # optional
        memory_mb: 65536                          # integers >= 0
        cpus: 16
        local_gb: 400
        cpu_arch: x86_64
        capabilities: 'boot_mode:uefi,raid:1'     # string or mapping
      traits: [HW_CPU_X86_AVX2, CUSTOM_RAID]      # optional
      shard: rack1             # optional; default: hash of the UUID
      owner: <project id>      # optional; with lessee, who may use it
      lessee: <project id>
      conductor_group: lab     # optional
      maintenance: false       # optional; true keeps the node out

Any other key, a missing required key, a malformed value or a UUID or name
declared twice makes the whole file invalid (StaticInventoryInvalid naming
the file and the entry): a typo must not silently become a node that
matches nothing.  The file is re-read whenever it changes.

Reservations live next to it in ``<inventory>.reservations.json``::

    {"version": 1,
     "reservations": {"<instance uuid>": {"node_uuid": "...",
                                          "state": "claimed", ...}}}

Every change is made while holding an exclusive ``flock`` on
``<inventory>.reservations.lock`` and written to a temporary file that then
replaces the state file, so claims are atomic across the threads and
processes of one host, and readers, which take no lock, always see a whole
file.  Nothing is kept only in memory: a restarted service reads the same
reservations back.
"""

import contextlib
import copy
import datetime
import errno
import fcntl
import json
import os
import re
import tempfile
import threading
import time

from oslo_log import log as logging
from oslo_utils import uuidutils
import yaml

from ironic_multi import exception
from ironic_multi.reservation.backends import base
from ironic_multi.reservation import filters
from ironic_multi.reservation import pool as ready_pool
from ironic_multi.reservation import ring
from ironic_multi.reservation import states

LOG = logging.getLogger(__name__)

STATE_SUFFIX = '.reservations.json'
LOCK_SUFFIX = '.reservations.lock'
FORMAT_VERSION = 1

_REQUIRED = ('uuid', 'resource_class')
_STRINGS = ('uuid', 'name', 'resource_class', 'shard', 'owner', 'lessee',
            'conductor_group')
_KEYS = frozenset(_STRINGS + ('properties', 'traits', 'maintenance'))
_SIZES = ('memory_mb', 'cpus', 'local_gb')
# Placement's rule for trait names.
_TRAIT = re.compile(r'^[A-Z0-9_]{1,255}$')

# What Ironic shows for a node holding a reservation in each state, so that
# states.from_ironic_node() reads the same state back.
_PROVISION_STATES = {
    states.State.REQUESTED: 'available',
    states.State.CLAIMED: 'available',
    states.State.DEPLOYING: 'deploying',
    states.State.ACTIVE: 'active',
    states.State.RELEASING: 'cleaning',
    states.State.ERROR: 'deploy failed',
    # Never stored (a released reservation is deleted), but harmless.
    states.State.RELEASED: 'available',
}

# While waiting for the lock with a deadline: first and longest pause.
_LOCK_POLL = 0.002
_LOCK_POLL_MAX = 0.05


# -- the inventory ----------------------------------------------------------

def _invalid(path, reason, entry=None):
    return exception.StaticInventoryInvalid(path=path, reason=reason,
                                            entry=entry)


def _check_entry(path, index, entry):
    """A normalized copy of one inventory entry, or raise."""
    if not isinstance(entry, dict):
        raise _invalid(path, 'entry %d is not a mapping: %r'
                       % (index, entry), index)
    label = 'entry %d (%s)' % (index, entry.get('uuid') or
                               entry.get('name') or 'no uuid')

    def fail(reason):
        return _invalid(path, '%s: %s' % (label, reason), index)

    unknown = set(entry) - _KEYS
    if unknown:
        raise fail('unknown key(s) %s; known: %s'
                   % (', '.join(sorted(map(str, unknown))),
                      ', '.join(sorted(_KEYS))))
    for key in _REQUIRED:
        if entry.get(key) in (None, ''):
            raise fail('missing required key %s' % key)
    for key in _STRINGS:
        if key in entry and not isinstance(entry[key], (str, type(None))):
            raise fail('%s must be a string, not %r' % (key, entry[key]))
    if not uuidutils.is_uuid_like(entry['uuid']):
        raise fail('uuid %r is not a UUID' % entry['uuid'])

    properties = entry.get('properties') or {}
    if not isinstance(properties, dict):
        raise fail('properties must be a mapping')
    for key in _SIZES:
        value = properties.get(key)
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, int)
                                  or value < 0):
            raise fail('properties.%s must be an integer >= 0, not %r'
                       % (key, value))
    if not isinstance(properties.get('capabilities', ''), (str, dict)):
        raise fail('properties.capabilities must be a string or a mapping')

    traits = entry.get('traits') or []
    if not isinstance(traits, list):
        raise fail('traits must be a list')
    for trait in traits:
        if not isinstance(trait, str) or not _TRAIT.match(trait):
            raise fail('trait %r is not a valid trait name (A-Z, 0-9 and _ '
                       'only)' % (trait,))
    if not isinstance(entry.get('maintenance', False), bool):
        raise fail('maintenance must be true or false')

    node = {key: entry.get(key) for key in _STRINGS}
    node.update(uuid=entry['uuid'].lower(),
                properties=properties, traits=sorted(set(traits)),
                maintenance=entry.get('maintenance', False))
    return node


def load_inventory(path):
    """The nodes declared in ``path``, validated: ``{uuid: node}``.

    :raises: StaticInventoryInvalid naming ``path`` and the entry.
    """
    try:
        with open(path, 'rb') as f:
            document = yaml.safe_load(f)
    except OSError as e:
        raise _invalid(path, 'cannot be read: %s' % e.strerror)
    except yaml.YAMLError as e:
        raise _invalid(path, 'not valid YAML: %s' % e)
    if not isinstance(document, list):
        raise _invalid(path, 'must be a YAML list of nodes, not %s'
                       % type(document).__name__)
    nodes, names = {}, {}
    for index, entry in enumerate(document):
        node = _check_entry(path, index, entry)
        if node['uuid'] in nodes:
            raise _invalid(path, 'entry %d: uuid %s is already declared'
                           % (index, node['uuid']), index)
        if node['name'] is not None:
            if node['name'] in names:
                raise _invalid(path, 'entry %d: name %s is already used by '
                               '%s' % (index, node['name'],
                                       names[node['name']]), index)
            names[node['name']] = node['uuid']
        nodes[node['uuid']] = node
    return nodes


# -- the lock ---------------------------------------------------------------

_thread_locks = {}
_thread_locks_guard = threading.Lock()


def _thread_lock(path):
    # flock excludes other open files of this process too, but where it is
    # emulated with POSIX locks (NFS) it does not: threads queue here first.
    with _thread_locks_guard:
        return _thread_locks.setdefault(path, threading.Lock())


def _forget_thread_locks():
    # A forked child must not inherit a lock held by a parent's thread.
    global _thread_locks_guard
    _thread_locks_guard = threading.Lock()
    _thread_locks.clear()


os.register_at_fork(after_in_child=_forget_thread_locks)


class _LockTimeout(Exception):
    """The deadline passed while waiting for the lock."""


def _wait(deadline):
    """Seconds left before ``deadline`` (None: forever), or raise."""
    if deadline is None:
        return -1
    left = deadline - time.monotonic()
    if left <= 0:
        raise _LockTimeout()
    return left


@contextlib.contextmanager
def _locked(path, deadline=None):
    """Hold the inter-process lock of ``path``.

    :raises _LockTimeout: ``deadline`` passed before the lock was held.
    """
    thread_lock = _thread_lock(path)
    if not thread_lock.acquire(timeout=_wait(deadline)):
        raise _LockTimeout()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if deadline is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                delay = _LOCK_POLL
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as e:
                        if e.errno not in (errno.EAGAIN, errno.EACCES):
                            raise
                    time.sleep(min(delay, _wait(deadline)))
                    delay = min(delay * 2, _LOCK_POLL_MAX)
            yield
        finally:
            # Closing the file drops the flock.
            os.close(fd)
    finally:
        thread_lock.release()


# -- the backend ------------------------------------------------------------

class StaticBackend(base.Backend):
    """Nodes from a YAML file, reservations in a locked JSON file."""

    name = 'static'

    def __init__(self, conf, inventory=None):
        """Use the inventory of ``conf``, or the file ``inventory``.

        :param inventory: path of the YAML file;
            ``[ironic_multi]static_inventory`` by default.
        """
        super().__init__(conf)
        self._opts = conf.ironic_multi
        self.inventory = os.path.abspath(inventory
                                         or self._opts.static_inventory)
        self.state_path = self.inventory + STATE_SUFFIX
        self.lock_path = self.inventory + LOCK_SUFFIX
        self._filters = filters.default_filters(self._opts.conductor_group)
        # (stat signature, nodes): replaced whole, never changed in place.
        self._cache = (None, {})

    def start(self):
        # Fail at startup, not at the first spawn, on a broken file.
        self._nodes()
        self._read_state()

    # -- reading ------------------------------------------------------------

    def _nodes(self):
        """``{uuid: node}`` of the inventory, re-read when it changed."""
        try:
            st = os.stat(self.inventory)
        except OSError as e:
            raise _invalid(self.inventory, 'cannot be read: %s' % e.strerror)
        signature = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached_signature, nodes = self._cache
        if signature != cached_signature:
            nodes = load_inventory(self.inventory)
            for node in nodes.values():
                node['shard'] = node['shard'] or ring.fallback_shard(
                    node['uuid'], self._opts.fallback_shard_count)
            LOG.info('Static inventory %(path)s: %(count)d node(s)',
                     {'path': self.inventory, 'count': len(nodes)})
            self._cache = (signature, nodes)
        return nodes

    def _read_state(self):
        """``{instance_uuid: record}`` from the state file."""
        try:
            with open(self.state_path, 'rb') as f:
                document = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise _invalid(self.state_path, 'cannot be read: %s' % e)
        records = (document.get('reservations')
                   if isinstance(document, dict) else None)
        if not isinstance(records, dict):
            raise _invalid(self.state_path, 'has no "reservations" mapping')
        for instance_uuid, record in records.items():
            try:
                states.State(record['state'])
                record['node_uuid']
            except (KeyError, TypeError, ValueError):
                raise _invalid(self.state_path, 'reservation of %s is '
                               'malformed: %r' % (instance_uuid, record))
        return records

    def _write_state(self, records):
        """Replace the state file atomically; only under the lock."""
        document = {'version': FORMAT_VERSION, 'reservations': records}
        directory = os.path.dirname(self.state_path)
        fd, tmp = tempfile.mkstemp(
            dir=directory, prefix=os.path.basename(self.state_path) + '.')
        try:
            with os.fdopen(fd, 'w') as f:
                json.dump(document, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.state_path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @staticmethod
    def _reservation(instance_uuid, record):
        return base.Reservation(
            instance_uuid=instance_uuid, node_uuid=record['node_uuid'],
            state=states.State(record['state']), shard=record.get('shard'),
            resource_class=record.get('resource_class'))

    @staticmethod
    def _present(node, instance_uuid=None, record=None):
        """``node`` as the Ironic API would show it."""
        node = copy.deepcopy(node)
        node.update(instance_uuid=instance_uuid, allocation_uuid=None,
                    provision_state=(
                        'available' if record is None
                        else _PROVISION_STATES[states.State(record['state'])]),
                    power_state='power off')
        return node

    def nodes(self, shards=None):
        """Every node of ``shards`` (None: all), free or reserved."""
        holders = {record['node_uuid']: (instance_uuid, record)
                   for instance_uuid, record in self._read_state().items()}
        return [self._present(node, *holders.get(uuid, ()))
                for uuid, node in self._nodes().items()
                if shards is None or node['shard'] in shards]

    def shard_of(self, node):
        return node.get('shard') or ring.fallback_shard(
            node['uuid'], self._opts.fallback_shard_count)

    def shard_keys(self):
        counts = {}
        for node in self._nodes().values():
            counts[node['shard']] = counts.get(node['shard'], 0) + 1
        return counts

    def capacity(self, shards=None):
        """``{resource_class: {'total': n, 'free': n}}`` of ``shards``."""
        return ready_pool.count_capacity(self.nodes(shards))

    def ready_nodes(self, requirements, shards):
        # The files are the source of truth and cheap to read: there is no
        # separate ready pool to go stale.
        return filters.match(self.nodes(shards), requirements, self._filters)

    search = ready_nodes

    def refresh(self, shards):
        return len(self.nodes(shards))

    def flush(self):
        self._cache = (None, {})

    def lookup(self, instance_uuid):
        record = self._read_state().get(instance_uuid)
        return None if record is None else self._reservation(instance_uuid,
                                                             record)

    def reservations(self):
        return [self._reservation(instance_uuid, record)
                for instance_uuid, record
                in sorted(self._read_state().items())]

    # -- changing -----------------------------------------------------------

    @contextlib.contextmanager
    def _changing(self, deadline=None):
        """The records, under the lock; written back if changed."""
        with _locked(self.lock_path, deadline):
            records = self._read_state()
            before = copy.deepcopy(records)
            yield records
            if records != before:
                self._write_state(records)

    def claim(self, candidates, instance_uuid, requirements, deadline):
        try:
            with self._changing(deadline) as records:
                return self._claim(records, candidates, instance_uuid,
                                   requirements)
        except _LockTimeout:
            raise exception.ClaimTimeout(instance=instance_uuid,
                                         timeout=self._opts.claim_timeout)

    def _claim(self, records, candidates, instance_uuid, requirements):
        existing = records.get(instance_uuid)
        if existing is not None:
            # A retried spawn, or an answer lost on the way: same node.
            LOG.debug('Instance %(instance)s already holds node %(node)s',
                      {'instance': instance_uuid,
                       'node': existing['node_uuid']})
            return self._reservation(instance_uuid, existing)
        taken = {record['node_uuid'] for record in records.values()}
        nodes = self._nodes()
        for candidate in candidates:
            node = nodes.get(candidate['uuid'])
            if node is None or node['uuid'] in taken:
                continue
            # The candidate list may be old: check the node as it is now.
            if requirements is not None and not filters.match(
                    [self._present(node)], requirements, self._filters):
                continue
            records[instance_uuid] = {
                'node_uuid': node['uuid'],
                'state': states.State.CLAIMED.value,
                'shard': node['shard'],
                'resource_class': node['resource_class'],
                'updated_at': _now(),
            }
            LOG.info('Claimed static node %(node)s for instance '
                     '%(instance)s',
                     {'node': node['uuid'], 'instance': instance_uuid})
            return self._reservation(instance_uuid, records[instance_uuid])
        raise exception.NodeAlreadyClaimed(
            node=','.join(c['uuid'] for c in candidates) or '-',
            instance=instance_uuid, reason='every candidate is taken')

    def release(self, instance_uuid):
        with self._changing() as records:
            record = records.pop(instance_uuid, None)
        if record is None:
            return None
        LOG.info('Released static node %(node)s of instance %(instance)s',
                 {'node': record['node_uuid'], 'instance': instance_uuid})
        return self._reservation(instance_uuid, record).moved_to(
            states.State.RELEASING).moved_to(states.State.RELEASED)

    def set_state(self, instance_uuid, target):
        """Move the reservation of ``instance_uuid`` to state ``target``.

        ``released`` drops the reservation: the node is ready again.

        :returns: the :class:`~.base.Reservation` in its new state.
        :raises InvalidStateTransition: the move is not legal.
        :raises ReservationError: the instance holds no reservation.
        """
        target = states.State(target)
        with self._changing() as records:
            record = records.get(instance_uuid)
            if record is None:
                raise exception.ReservationError(
                    reason='instance %s holds no static node'
                    % instance_uuid)
            moved = self._reservation(instance_uuid, record).moved_to(target)
            if target is states.State.RELEASED:
                del records[instance_uuid]
            elif moved.state.value != record['state']:
                record.update(state=moved.state.value, updated_at=_now())
        LOG.debug('Reservation of %(instance)s on %(node)s is %(state)s',
                  {'instance': instance_uuid, 'node': moved.node_uuid,
                   'state': moved.state})
        return moved


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
