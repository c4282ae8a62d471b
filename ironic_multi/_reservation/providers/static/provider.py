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

"""Pre-installed machines declared in YAML (Nodepool's static driver).

For labs, tests and small fixed fleets: no Ironic is asked anything.  The
nodes come from ``[ironic_multi]static_inventory`` (see :mod:`.inventory`),
re-read whenever the file changes; the reservations live in a locked JSON
file next to it (see :mod:`.records`), so a restarted service reads them
back and the processes of one host never give a node out twice.

A spawn hands a node over: the optional ``static_handover_command`` runs,
then the record says ``active`` and names the host.  Destroy runs the
optional ``static_return_command`` and releases the node.  Power actions
run ``static_power_command``; without one they are not supported, and
crash dumps (an NMI) run ``static_crash_dump_command`` likewise.  What a
pre-installed machine cannot do (VIFs, rebuild, config drive, soft power,
rescue, consoles) raises NotSupported.
"""

import datetime
import os
import time

from oslo_log import log as logging

from ironic_multi._reservation import filters
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.static import hooks
from ironic_multi._reservation.providers.static import inventory
from ironic_multi._reservation.providers.static import records as records_mod
from ironic_multi import exception

LOG = logging.getLogger(__name__)

_HARD = {base.PowerAction.SOFT_OFF: base.PowerAction.OFF,
         base.PowerAction.SOFT_REBOOT: base.PowerAction.REBOOT}
_POWER_AFTER = {base.PowerAction.ON: lifecycle.PowerState.ON,
                base.PowerAction.OFF: lifecycle.PowerState.OFF,
                base.PowerAction.REBOOT: lifecycle.PowerState.ON}
_HANDOVER = 'handover'
_RETURN = 'return'
_CRASH_DUMP = 'crash dump'
# Record states of a node that holds what its user left on it: handed
# over (or being), or its return failed.
_HOLDING_DATA = frozenset(state.value for state in (
    lifecycle.State.DEPLOYING, lifecycle.State.ACTIVE,
    lifecycle.State.ERROR))


def _why_not_ready(node):
    if node.get('maintenance'):
        return 'in maintenance'
    if node.get('instance_uuid'):
        return 'reserved for %s' % node['instance_uuid']
    return None


class StaticProvider(base.NodeProvider):
    """Nodes from a YAML file, reservations in a locked JSON file."""

    name = 'static'
    features = frozenset([base.Feature.SET_STATE])
    # A tear down ends at once, in ``releasing``: the release is a call.
    releasing_ends_itself = False

    def __init__(self, conf, inventory_path=None):
        """Use the inventory of ``conf``, or the file ``inventory_path``."""
        super().__init__(conf)
        self._opts = conf.ironic_multi
        self.inventory = os.path.abspath(inventory_path
                                         or self._opts.static_inventory)
        # Every change waits for the records' lock within a bound: a claim
        # within its own deadline, the others as long as a claim may last.
        self.records = records_mod.RecordFile(
            self.inventory, lock_timeout=self._opts.claim_timeout)
        if self._opts.static_crash_dump_command:
            self.features = self.features | {base.Feature.CRASH_DUMP}
        self._ready = (filters.ReadyFilter(self._why_not_ready),)
        # (stat signature, nodes): replaced whole, never changed in place.
        self._cache = (None, {})

    def start(self):
        # Fail at startup, not at the first spawn, on a broken file.
        self._nodes()
        self.records.read()

    # -- inventory --------------------------------------------------------

    def _nodes(self):
        """``{uuid: node}`` of the inventory, re-read when it changed."""
        try:
            st = os.stat(self.inventory)
        except OSError as e:
            raise inventory.invalid(self.inventory,
                                    'cannot be read: %s' % e.strerror)
        signature = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached_signature, nodes = self._cache
        if signature != cached_signature:
            nodes = inventory.load(self.inventory)
            for node in nodes.values():
                node['shard'] = self.shard_of(node)
            LOG.info('Static inventory %(path)s: %(count)d node(s)',
                     {'path': self.inventory, 'count': len(nodes)})
            self._cache = (signature, nodes)
        return nodes

    def _why_not_ready(self, node):
        barred = self.failed_too_often(node.get('failures', 0))
        if barred:
            return barred
        last = node.get('last_failure')
        if last and time.time() - last < self._opts.failure_cooldown:
            return 'failed %d s ago' % (time.time() - last)
        return _why_not_ready(node)

    def nodes(self, shards=None):
        """Every node of ``shards`` (None: all), with its holder if any.

        A quarantined node shows as in maintenance.
        """
        document = self.records.read_document()
        holders = {record['node_uuid']: instance_uuid for instance_uuid,
                   record in document['reservations'].items()}
        marks = document['nodes']
        found = []
        for uuid, node in self._nodes().items():
            if shards is not None and node['shard'] not in shards:
                continue
            mark = marks.get(uuid) or {}
            found.append(dict(
                node, instance_uuid=holders.get(uuid),
                last_failure=mark.get('last_failure'),
                failures=mark.get('failures', 0),
                maintenance=(node['maintenance']
                             or bool(mark.get('quarantined_at')))))
        return found

    def shard_keys(self):
        counts = {}
        for node in self._nodes().values():
            counts[node['shard']] = counts.get(node['shard'], 0) + 1
        return counts

    def capacity(self, shards=None):
        counts = {}
        for node in self.nodes(shards):
            if node.get('maintenance') or self.failed_too_often(
                    node['failures']):
                continue
            entry = counts.setdefault(node['shard'], {}).setdefault(
                node['resource_class'], {'total': 0, 'free': 0})
            entry['total'] += 1
            entry['free'] += not node.get('instance_uuid')
        return counts

    def usable_traits(self, shards):
        return {trait for node in self.nodes(shards)
                if not node.get('maintenance')
                and not self.failed_too_often(node['failures'])
                for trait in node.get('traits') or ()}

    def ready_nodes(self, requirements, shards):
        # The files are the source of truth and cheap to read: there is no
        # separate ready pool to go stale.
        return filters.match(self.nodes(shards), requirements,
                             self._ready + self.filters)

    search = ready_nodes

    def refresh(self, shards):
        return len(self.nodes(shards))

    def flush(self):
        self._cache = (None, {})

    # -- reservations -----------------------------------------------------

    def _reservation(self, instance_uuid, record):
        return lifecycle.Reservation(
            instance_uuid=instance_uuid, node_uuid=record['node_uuid'],
            state=lifecycle.State(record['state']),
            shard=record.get('shard'),
            resource_class=record.get('resource_class'),
            host=record.get('host'),
            power_state=lifecycle.PowerState(
                record.get('power_state', 'unknown')),
            group=record.get('group'), claimer=record.get('claimer'),
            consumer=record.get('consumer'), node_state=record['state'],
            # A node handed over, or whose return failed, holds what its
            # user left on it.
            holds_image=record['state'] in _HOLDING_DATA)

    def lookup(self, instance_uuid):
        record = self.records.read().get(instance_uuid)
        return None if record is None else self._reservation(instance_uuid,
                                                             record)

    def reservations(self):
        return [self._reservation(instance_uuid, record)
                for instance_uuid, record
                in sorted(self.records.read().items())]

    def claim(self, candidates, instance_uuid, requirements, deadline,
              claimer=None, deployment=None):
        try:
            with self.records.changing(deadline) as document:
                return self._claim(document['reservations'], candidates,
                                   instance_uuid, requirements, claimer)
        except exception.RecordsLocked:
            raise exception.ClaimTimeout(instance=instance_uuid,
                                         timeout=self._opts.claim_timeout)

    def _claim(self, records, candidates, instance_uuid, requirements,
               claimer):
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
            if not filters.match([node], requirements,
                                 self._ready + self.filters):
                continue
            records[instance_uuid] = {
                'node_uuid': node['uuid'],
                'state': lifecycle.State.CLAIMED.value,
                'shard': node['shard'],
                'resource_class': node['resource_class'],
                'updated_at': _now(),
                # The ownership mark, in the same locked write.
                'group': self.group,
                'claimer': claimer,
                'consumer': self.consumer,
            }
            LOG.info('Claimed static node %(node)s for instance '
                     '%(instance)s',
                     {'node': node['uuid'], 'instance': instance_uuid})
            return self._reservation(instance_uuid, records[instance_uuid])
        raise exception.NodeAlreadyClaimed(
            node=','.join(c['uuid'] for c in candidates) or '-',
            instance=instance_uuid, reason='every candidate is taken')

    def own(self, instance_uuid):
        with self.records.changing() as document:
            record = document['reservations'].get(instance_uuid)
            if record is None:
                return None
            group = record.get('group')
            if group is None:
                record.update(group=self.group, consumer=self.consumer)
            elif group != self.group:
                raise exception.ForeignReservation(
                    instance=instance_uuid, node=record['node_uuid'],
                    group=group, ours=self.group)
            return self._reservation(instance_uuid, record)

    def release(self, instance_uuid):
        with self.records.changing() as document:
            record = document['reservations'].pop(instance_uuid, None)
        if record is None:
            return None
        LOG.info('Released static node %(node)s of instance %(instance)s',
                 {'node': record['node_uuid'], 'instance': instance_uuid})
        return self._reservation(instance_uuid, record).released()

    def set_state(self, instance_uuid, target, **fields):
        """Move the reservation of ``instance_uuid`` to state ``target``.

        ``released`` drops the reservation: the node is ready again.

        :param fields: more of the record to change (``host``,
            ``power_state``).
        :returns: the reservation in its new state.
        :raises InvalidStateTransition: the move is not legal.
        :raises ReservationNotFound: the instance holds no reservation.
        """
        target = lifecycle.State(target)
        with self.records.changing() as document:
            records = document['reservations']
            record = records.get(instance_uuid)
            if record is None:
                raise exception.ReservationNotFound(instance=instance_uuid)
            moved = self._reservation(instance_uuid, record).moved_to(target)
            if target is lifecycle.State.RELEASED:
                del records[instance_uuid]
            else:
                record.update(fields, state=moved.state.value,
                              updated_at=_now())
                moved = self._reservation(instance_uuid, record)
        LOG.debug('Reservation of %(instance)s on %(node)s is %(state)s',
                  {'instance': instance_uuid, 'node': moved.node_uuid,
                   'state': moved.state})
        return moved

    # -- what is done to a reserved node ---------------------------------

    def _node(self, reservation):
        node = self._nodes().get(reservation.node_uuid)
        if node is None:
            raise exception.NodeNotFound(node=reservation.node_uuid)
        return node

    def _hook(self, option, action, reservation, **environment):
        command = getattr(self._opts, option)
        if command:
            hooks.run(command, action, self._node(reservation),
                      self._opts.static_command_timeout,
                      instance_uuid=reservation.instance_uuid, **environment)
        return bool(command)

    def deploy(self, reservation, deployment, should_stop=None):
        if deployment.vifs:
            self.require(base.Feature.VIFS)
        if deployment.configdrive is not None:
            self.require(base.Feature.CONFIGDRIVE)
        self.set_state(reservation.instance_uuid, lifecycle.State.DEPLOYING,
                       host=deployment.host)
        try:
            self._hook('static_handover_command', _HANDOVER, reservation,
                       host=deployment.host,
                       image_source=deployment.image_source)
        except exception.HookFailed as e:
            self.teardown(reservation)
            raise exception.DeployFailed(node=reservation.node_uuid,
                                         reason=e) from e
        # A pre-installed machine is running when it is handed over.
        active = self.set_state(reservation.instance_uuid,
                                lifecycle.State.ACTIVE,
                                power_state=lifecycle.PowerState.ON.value)
        self.clear_failures(reservation.node_uuid)
        return active

    def teardown(self, reservation, vifs=(), wait=True, deadline=None):
        # The return hook runs to its end (bounded by its timeout) either
        # way, and nothing keeps a node busy.
        current = self.lookup(reservation.instance_uuid)
        if current is None or current.state not in (
                lifecycle.State.DEPLOYING, lifecycle.State.ACTIVE,
                lifecycle.State.ERROR):
            return True
        try:
            self._hook('static_return_command', _RETURN, reservation)
        except exception.HookFailed as e:
            self.set_state(reservation.instance_uuid, lifecycle.State.ERROR)
            raise exception.TeardownFailed(node=reservation.node_uuid,
                                           reason=e) from e
        self.set_state(reservation.instance_uuid, lifecycle.State.RELEASING,
                       host=None)
        return True

    def power(self, reservation, action, timeout=None):
        # Without soft power, a soft action is its hard one.
        action = _HARD.get(action, action)
        try:
            done = self._hook('static_power_command', action, reservation)
        except exception.HookFailed as e:
            raise exception.PowerActionFailed(
                action=action, node=reservation.node_uuid, reason=e) from e
        if not done:
            raise exception.NotSupported(
                provider=self.name,
                feature='%s without static_power_command' % action)
        self.set_state(reservation.instance_uuid, reservation.state,
                       power_state=_POWER_AFTER[action].value)

    def crash_dump(self, reservation):
        self.require(base.Feature.CRASH_DUMP)
        try:
            self._hook('static_crash_dump_command', _CRASH_DUMP, reservation)
        except exception.HookFailed as e:
            raise exception.CrashDumpFailed(
                action=_CRASH_DUMP, node=reservation.node_uuid,
                reason=e) from e

    def health(self, reservations):
        nodes = self._nodes()
        found = {}
        for reservation in reservations:
            current = self.lookup(reservation.instance_uuid)
            node = nodes.get(reservation.node_uuid)
            if node is None:
                problem = 'gone from the inventory'
            elif current is None or current.node_uuid != node['uuid']:
                problem = 'no longer holds the instance'
            elif node.get('maintenance'):
                problem = 'maintenance'
            elif current.state is lifecycle.State.ERROR:
                problem = 'provision error'
            else:
                problem = None
            found[reservation.instance_uuid] = base.NodeHealth(
                instance_uuid=reservation.instance_uuid,
                node_uuid=reservation.node_uuid,
                power_state=(current.power_state if current
                             else lifecycle.PowerState.UNKNOWN),
                problem=problem)
        return found

    def mark_host(self, reservation, host):
        self.set_state(reservation.instance_uuid, reservation.state,
                       host=host)

    # -- failures and quarantine -----------------------------------------

    def _change_marks(self, node_uuid, change):
        with self.records.changing() as document:
            marks = document['nodes'].setdefault(node_uuid, {})
            if marks.get('group') not in (None, self.group):
                # Another group's history with the node: not this one's.
                marks.clear()
            change(marks)
            if any(value for key, value in marks.items() if key != 'group'):
                marks['group'] = self.group
            else:
                del document['nodes'][node_uuid]
        return marks

    def _ours(self, node_uuid):
        group = (self.records.read_document()['nodes'].get(node_uuid)
                 or {}).get('group')
        holders = [r for r in self.reservations()
                   if r.node_uuid == node_uuid]
        group = group or (holders[0].group if holders else None)
        if group != self.group:
            raise exception.ForeignNode(node=node_uuid, group=group or '-',
                                        ours=self.group)

    def record_failure(self, node_uuid, reason):
        def fail(marks):
            marks.update(failures=marks.get('failures', 0) + 1,
                         last_failure=time.time(), reason=str(reason)[:255])
        marks = self._change_marks(node_uuid, fail)
        LOG.warning('Static node %(node)s failed (%(count)d in a row): '
                    '%(reason)s', {'node': node_uuid, 'reason': reason,
                                   'count': marks['failures']})
        return marks['failures']

    def clear_failures(self, node_uuid):
        def clear(marks):
            for key in ('failures', 'last_failure', 'reason'):
                marks.pop(key, None)
        self._change_marks(node_uuid, clear)

    def troubled_nodes(self):
        document = self.records.read_document()
        holders = {
            record['node_uuid']: (instance_uuid, record['state'],
                                  record.get('group'))
            for instance_uuid, record in document['reservations'].items()}
        troubled = dict(document['nodes'])
        # A failed return leaves its record in error: the node may still
        # hold the tenant's data.
        troubled.update((node, troubled.get(node, {}))
                        for node, (_i, state, _g) in holders.items()
                        if state == lifecycle.State.ERROR.value)
        found = []
        for node, marks in troubled.items():
            holder, state, group = holders.get(node, (None, None, None))
            found.append(base.TroubledNode(
                node_uuid=node, failures=marks.get('failures', 0),
                last_failure=marks.get('last_failure'),
                reason=marks.get('reason'),
                failed_state=(state if state == lifecycle.State.ERROR.value
                              else None),
                quarantined_at=marks.get('quarantined_at'),
                holder=holder, group=marks.get('group') or group,
                returnable=holder is None))
        return found

    def recover(self, node_uuid, deadline=None):
        self._ours(node_uuid)
        for reservation in self.reservations():
            if (reservation.node_uuid == node_uuid
                    and reservation.state is lifecycle.State.ERROR):
                # Retry the return; a success leaves the claim to release.
                self.teardown(reservation)

    def quarantine(self, node_uuid, reason):
        self._ours(node_uuid)

        def quarantine(marks):
            marks.update(quarantined_at=time.time(),
                         reason=str(reason)[:255])
        self._change_marks(node_uuid, quarantine)

    def unquarantine(self, node_uuid):
        self._ours(node_uuid)
        with self.records.changing() as document:
            holders = sorted(
                instance for instance, record in
                document['reservations'].items()
                if record['node_uuid'] == node_uuid)
            if holders:
                raise exception.NodeConflict(
                    node=node_uuid, reason='it holds instance %s: lifting '
                                           'its quarantine would not return '
                                           'it to service' % holders[0])
            document['nodes'].pop(node_uuid, None)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
