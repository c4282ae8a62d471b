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

"""The housekeeper: repairs what crashes, lost answers and local deletes
leave behind.

Only the housekeeper releases or quarantines on its own initiative
(Nodepool's rule that one component deletes); everything else only marks.
One member of the group runs it at a time (:mod:`.leader`).  A pass:

1. releases reservations whose instance the consumer (Nova) does not have
   or has deleted, once seen so for ``orphan_grace_period``, tearing their
   node down first (an instance deleted while its compute was down, a
   lost-answer claim that landed after its instance was gone, an
   ``active`` node with no instance);
2. releases claims that never got to deploy within
   ``stuck_claim_timeout`` (the service crashed between claim and deploy);
3. releases failed claims that hold no node (allocations in error);
4. tries to recover nodes left in a failed state (a failed tear down may
   leave the tenant's data), counting each try as a failure;
5. quarantines nodes with ``quarantine_after_failures`` failures in a row,
   keeping at most ``max_preserved`` under the ``keep`` or ``cycle``
   scheme (Octavia's preservation of failed units);
6. warns when a resource class has fewer free nodes than its spare target.

Every action is logged with its reason and counted.  First sightings are
kept in memory: a new leader waits a grace period again, which only
delays.
"""

import dataclasses
import time

from oslo_log import log as logging

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# What a consumer says of an instance.
GONE = 'gone'
"""The consumer deleted the instance, or never had it."""


@dataclasses.dataclass
class Action:
    """One thing the housekeeper did, or would do on a dry run."""

    kind: str
    reason: str
    node_uuid: str = None
    instance_uuid: str = None
    done: bool = False
    error: str = None

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Report:
    actions: list = dataclasses.field(default_factory=list)
    short_of_spares: dict = dataclasses.field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self):
        return {'actions': [a.as_dict() for a in self.actions],
                'short_of_spares': self.short_of_spares,
                'seconds': round(self.seconds, 3)}


class Housekeeper(object):
    """One pass at a time over everything a provider holds.

    :param conf: ironic-multi's options.
    :param provider: the node provider.
    :param consumers: ``f(instance_uuids) -> {uuid: state}`` where the
        state is the consumer's (Nova's ``vm_state``) or :data:`GONE`;
        None when no consumer can be asked: orphans are then left alone.
    :param capacity: ``f() -> {resource_class: {'total', 'free'}}`` of the
        cluster, for the spare targets; None skips them.
    :param stats: a :class:`~.stats.Stats` to count actions in, or None.
    """

    def __init__(self, conf, provider, consumers=None, capacity=None,
                 stats=None):
        self._opts = conf.ironic_multi
        self._provider = provider
        self.consumers = consumers
        self._capacity = capacity
        self._stats = stats
        # {(kind, instance): time first seen}
        self._seen = {}

    def run(self, dry_run=False):
        """One pass; returns its :class:`Report`."""
        started = time.monotonic()
        report = Report()
        self._do = _Doer(report, dry_run, self._stats)
        troubled = self._provider.troubled_nodes()
        # Oldest first: the "cycle" scheme returns them first.
        self._quarantined = sorted((t for t in troubled if t.quarantined_at),
                                   key=lambda t: t.quarantined_at)
        self._reservations(self._provider.reservations())
        self._troubled(troubled)
        report.short_of_spares = self._spares()
        report.seconds = time.monotonic() - started
        LOG.info('Housekeeping pass%(dry)s: %(count)d action(s) in '
                 '%(seconds).2f s',
                 {'count': len(report.actions), 'seconds': report.seconds,
                  'dry': ' (dry run)' if dry_run else ''})
        return report

    # -- reservations -----------------------------------------------------

    def _overdue(self, kind, instance_uuid, period, now, alive):
        """Whether ``(kind, instance)`` was seen for ``period`` seconds."""
        key = (kind, instance_uuid)
        first = self._seen.setdefault(key, now)
        alive.add(key)
        return now - first >= period

    def _reservations(self, reservations):
        now = time.monotonic()
        alive = set()
        known = {}
        if self.consumers is not None and reservations:
            known = self.consumers([r.instance_uuid for r in reservations])
        for reservation in reservations:
            instance = reservation.instance_uuid
            if reservation.node_uuid is None:
                self._do('release failed claim', 'the claim failed and '
                         'holds no node', self._release, reservation)
            elif (self.consumers is not None
                  and known.get(instance, GONE) == GONE):
                if self._overdue('orphan', instance,
                                 self._opts.orphan_grace_period, now, alive):
                    self._do('release orphan', 'the instance is gone from '
                             'the consumer', self._teardown_and_release,
                             reservation)
            elif (reservation.state == lifecycle.State.CLAIMED
                  and reservation.host is None):
                if self._overdue('stuck', instance,
                                 self._opts.stuck_claim_timeout, now, alive):
                    self._do('time out stuck claim', 'claimed %d s ago or '
                             'more and never deployed'
                             % self._opts.stuck_claim_timeout,
                             self._release, reservation)
        # Forget what resolved itself.
        self._seen = {key: seen for key, seen in self._seen.items()
                      if key in alive}

    def _release(self, reservation):
        self._provider.release(reservation.instance_uuid)

    def _teardown_and_release(self, reservation):
        try:
            self._provider.teardown(reservation)
        except exception.TeardownFailed as e:
            # The node may hold the tenant's data: it stays with the dead
            # instance, and out of service, until a tear down works or
            # the count says to quarantine it.
            failures = self._provider.record_failure(
                reservation.node_uuid, 'tear down failed: %s' % e)
            if failures < self._opts.quarantine_after_failures:
                raise
            self._quarantine(base.TroubledNode(
                node_uuid=reservation.node_uuid, failures=failures,
                reason=str(e)), self._quarantined)
        self._provider.release(reservation.instance_uuid)

    # -- troubled nodes ---------------------------------------------------

    def _troubled(self, troubled):
        limit = self._opts.quarantine_after_failures
        quarantined = self._quarantined
        for node in troubled:
            if node.quarantined_at or node.holder:
                continue
            if node.failures >= limit:
                self._quarantine(node, quarantined)
            elif node.failed_state:
                self._do('recover node', 'in %s (%s); try %d of %d' % (
                         node.failed_state, node.reason or '-',
                         node.failures + 1, limit),
                         self._recover, node)

    def _recover(self, node):
        # Each try counts: a node that never recovers is quarantined.
        self._provider.record_failure(node.node_uuid, 'recovery from %s'
                                      % node.failed_state)
        self._provider.recover(node.node_uuid)

    def _quarantine(self, node, quarantined):
        reason = '%d failures in a row, last: %s' % (node.failures,
                                                     node.reason or '-')
        preserved = self._opts.max_preserved
        if len(quarantined) >= preserved:
            if self._opts.preserve_scheme != 'cycle' or not preserved:
                self._do('return to service', 'quarantine is full (%d): '
                         'not preserved' % preserved,
                         lambda n: self._provider.clear_failures(n.node_uuid),
                         node)
                return
            oldest = quarantined.pop(0)
            self._do('unquarantine', 'cycled out for a newer failure',
                     lambda n: self._provider.unquarantine(n.node_uuid),
                     oldest)
        self._do('quarantine', reason,
                 lambda n: self._provider.quarantine(n.node_uuid, reason),
                 node)
        quarantined.append(node)

    # -- spares -----------------------------------------------------------

    def _spares(self):
        targets = self._opts.spare_targets
        if not targets or self._capacity is None:
            return {}
        capacity = self._capacity()
        short = {}
        for resource_class, wanted in sorted(targets.items()):
            free = capacity.get(resource_class, {}).get('free', 0)
            if free < int(wanted):
                short[resource_class] = {'free': free, 'target': int(wanted)}
                LOG.warning('Resource class %(rc)s has %(free)d free '
                            'node(s), below its spare target of %(target)s',
                            {'rc': resource_class, 'free': free,
                             'target': wanted})
        return short


class _Doer(object):
    """Runs, logs and counts the actions of one pass."""

    def __init__(self, report, dry_run, stats):
        self._report = report
        self._dry_run = dry_run
        self._stats = stats

    def __call__(self, kind, reason, function, subject):
        action = Action(kind=kind, reason=reason,
                        node_uuid=getattr(subject, 'node_uuid', None),
                        instance_uuid=getattr(subject, 'instance_uuid',
                                              None))
        self._report.actions.append(action)
        if self._dry_run:
            LOG.info('Housekeeping would %(kind)s (node %(node)s, instance '
                     '%(instance)s): %(reason)s', _fields(action))
            return
        try:
            function(subject)
        except exception.IronicMultiError as e:
            action.error = str(e)
            LOG.warning('Housekeeping failed to %(kind)s (node %(node)s, '
                        'instance %(instance)s): %(error)s',
                        dict(_fields(action), error=e))
            return
        action.done = True
        LOG.warning('Housekeeping did %(kind)s (node %(node)s, instance '
                    '%(instance)s): %(reason)s', _fields(action))
        if self._stats is not None:
            self._stats.count('housekeeping: %s' % kind)


def _fields(action):
    return {'kind': action.kind, 'node': action.node_uuid or '-',
            'instance': action.instance_uuid or '-',
            'reason': action.reason}
