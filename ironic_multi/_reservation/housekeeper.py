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
leave behind, on this group's own nodes only.

Only the housekeeper releases or quarantines on its own initiative
(Nodepool's rule that one component deletes); everything else only marks.
And it deletes only what its group created: a reservation without the
group's ownership mark (another deployer's, another group's, or one made
before marks) is counted and reported, never acted on.  One member of the
group runs it at a time (:mod:`.leader`).  A pass:

1. tears down and releases the group's reservations whose instance the
   consumer (Nova) has deleted or does not have, once seen so for
   ``orphan_grace_period`` (an instance deleted while its compute was
   down, a lost-answer claim that landed after its instance was gone);
   one torn down already is only released, where the provider does not
   end it by itself (a release that never came: its caller died, or was
   fenced off); when the consumer cannot be asked, this rule does nothing
   in that pass, and it never takes the word of a consumer (Nova cell)
   other than the one the claim was made for (see :class:`Housekeeper`);
2. releases claims that never got to deploy within
   ``stuck_claim_timeout`` and whose claiming member has left the group
   (the service crashed between claim and deploy): a claim queued behind
   the deploy throttle of a live service is never stuck;
3. deletes failed claims that hold no node (allocations in error) whose
   claimer is gone and whose instance is not being built; when the
   group's members cannot be listed, rules 2 and 3 do nothing in that
   pass;
4. tries to recover the group's nodes left in a failed state, holding no
   instance (a failed tear down may leave the tenant's data), counting
   each try as a failure;
5. quarantines the group's nodes with ``quarantine_after_failures``
   failures in a row, keeping at most ``max_preserved`` under the ``keep``
   or ``cycle`` scheme (Octavia's preservation of failed units); a node
   the quarantine has no room for stays out of claims by its failure
   count, and "cycle" returns only nodes that a return leaves in service
   (never one in a failed state, which may hold a tenant's data);
6. warns when a resource class has fewer free nodes than its spare target.

Rules 4 and 5 act only on a node that the provider says is the group's
now (:attr:`~.base.TroubledNode.left_alone` is None): it holds no
instance, no deployment of anyone else's, no maintenance but the group's
own quarantine, and its marks describe the state it is in.  Marks that
outlived their reservation (the node moved on, another deployer may have
deployed it) count for nothing: such a node is reported, never written.

Before each action it confirms its leadership with the backend and
re-reads the node, which must still hold the same instance under the same
mark (or the same failure marks and no instance), in the state the rule
saw; so does the release that ends a tear down or a quarantine.  The
first doubt about leadership ends the destruction for the pass.  A pass
is bounded by ``housekeeping_pass_timeout``: what it did not get to is
reported as left for the next one, and so is a tear down that the
provider refuses as busy (Ironic's 409 while a deploy holds the node)
until then.  Every action is logged with its reason and counted.  First
sightings are kept in memory: a new leader waits a grace period again,
which only delays.
"""

import dataclasses
import time

from oslo_log import log as logging

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation import membership
from ironic_multi._reservation.providers import base
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# What a consumer says of an instance.
GONE = 'gone'
"""The consumer deleted the instance, or never had it."""
# The consumer's word for an instance whose build goes on (Nova's
# ``vm_state``): its claim may be retried.
BUILDING = 'building'

# Rules that ask the consumer, and fail closed when it cannot answer.
ORPHANS = 'orphans'
FAILED_CLAIMS = 'failed claims'
# A rule that asks who is in the group.
STUCK_CLAIMS = 'stuck claims'


@dataclasses.dataclass
class Action:
    """One thing the housekeeper did, would do, or left for later.

    :ivar deferred: not done, left for the next pass: the pass stopped
        first (see :attr:`Report.stopped`), or the provider kept the node
        busy until the pass's bound (:attr:`error` says so).
    """

    kind: str
    reason: str
    node_uuid: str = None
    instance_uuid: str = None
    done: bool = False
    error: str = None
    deferred: bool = False

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Report:
    """What one pass did, skipped and left.

    :ivar foreign: reservations without this group's mark (never touched).
    :ivar skipped: ``{rule: why}`` of rules that did not run.
    :ivar stopped: why the pass stopped early, or None.
    :ivar out_of_service: nodes beyond the quarantine's room, kept out of
        claims by their failure count.
    :ivar left_alone: ``{node: why}`` of nodes that carry this group's
        failure marks but are not its to act on now (never touched).
    :ivar other_consumers: ``{instance: why}`` of reservations that the
        consumer asked cannot speak for (claimed for another Nova cell, or
        one that cannot be told): never released as orphans.
    """

    actions: list = dataclasses.field(default_factory=list)
    short_of_spares: dict = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    foreign: int = 0
    skipped: dict = dataclasses.field(default_factory=dict)
    stopped: str = None
    out_of_service: list = dataclasses.field(default_factory=list)
    left_alone: dict = dataclasses.field(default_factory=dict)
    other_consumers: dict = dataclasses.field(default_factory=dict)

    @property
    def deferred(self):
        return [a for a in self.actions if a.deferred]

    def as_dict(self):
        return {'actions': [a.as_dict() for a in self.actions],
                'short_of_spares': self.short_of_spares,
                'seconds': round(self.seconds, 3),
                'foreign': self.foreign, 'skipped': dict(self.skipped),
                'stopped': self.stopped,
                'deferred': len(self.deferred),
                'out_of_service': list(self.out_of_service),
                'left_alone': dict(self.left_alone),
                'other_consumers': dict(self.other_consumers)}


class _Changed(Exception):
    """The node is no longer as the rule saw it: the action is moot."""


class _Busy(Exception):
    """The provider keeps the node busy: the action waits a pass."""


class Housekeeper(object):
    """One pass at a time over what a provider holds for this group.

    :param conf: ironic-multi's options.
    :param provider: the node provider; its ``group`` is this group.
    :param consumers: ``f(instance_uuids) -> {uuid: state}`` where the
        state is the consumer's (Nova's ``vm_state``) or :data:`GONE`, and
        an instance it does not know is left out; None when no consumer
        can be asked.  Any exception it raises means "cannot tell".
    :param capacity: ``f() -> {resource_class: {'total', 'free'}}`` of the
        cluster, for the spare targets; None skips them.
    :param stats: a :class:`~.stats.Stats` to count actions in, or None.
    :param fence: ``f()``, raising LeadershipLost unless this member may
        still destroy; called before every action.  None: no fence (a
        caller that is the only actor, such as a test).
    :param members: ``f() -> {member id}`` of the group's live members, or
        None when they cannot be known.

    Two attributes tell the consumer asked from another (a Nova cell):
    :attr:`consumer`, what identifies this one (None: nothing to tell
    apart), and :attr:`consumers_of_hosts`, ``f() -> {host: identity}``
    of the live members.  An instance counts as gone only when the
    consumer that says so is the one it was claimed for: the claim's mark
    names it, or (a claim made before marks named consumers) a live
    member of its claimer's or compute's host serves it.  When that
    cannot be told, nothing is released.
    """

    def __init__(self, conf, provider, consumers=None, capacity=None,
                 stats=None, fence=None, members=None):
        self._opts = conf.ironic_multi
        self._provider = provider
        self._group = provider.group
        self.consumers = consumers
        self._capacity = capacity
        self._stats = stats
        self.fence = fence
        self.members = members
        self.consumer = None
        self.consumers_of_hosts = None
        # {(kind, instance): time first seen}
        self._seen = {}

    def run(self, dry_run=False):
        """One pass; returns its :class:`Report`."""
        started = time.monotonic()
        self._report = report = Report()
        self._do = _Doer(report, dry_run, self._stats, self.fence,
                         started + self._opts.housekeeping_pass_timeout)
        troubled = self._provider.troubled_nodes()
        reservations = self._provider.reservations()
        # Oldest first: the "cycle" scheme returns them first.
        self._quarantined = sorted(
            (t for t in troubled if t.quarantined_at and self._ours(t)
             and not t.left_alone),
            key=lambda t: t.quarantined_at)
        self._reservations(reservations, report)
        self._troubled(troubled)
        report.short_of_spares = self._spares()
        report.seconds = time.monotonic() - started
        LOG.info('Housekeeping pass%(dry)s: %(count)d action(s) in '
                 '%(seconds).2f s, %(deferred)d left for the next pass; '
                 '%(foreign)d reservation(s) of others left alone%(skipped)s',
                 {'count': len(report.actions) - len(report.deferred),
                  'deferred': len(report.deferred),
                  'seconds': report.seconds, 'foreign': report.foreign,
                  'dry': ' (dry run)' if dry_run else '',
                  'skipped': ''.join('; %s not checked: %s' % item
                                     for item in sorted(
                                         report.skipped.items()))})
        return report

    def _ours(self, marked):
        return marked.group is not None and marked.group == self._group

    # -- what the rules ask -------------------------------------------------

    def _consumer_states(self, reservations, report):
        """``{uuid: state}`` from the consumer, or None when it cannot say.

        Fails closed: no answer means no orphan.
        """
        if self.consumers is None:
            why = 'no consumer to ask'
        else:
            try:
                if not reservations:
                    return {}
                return self.consumers([r.instance_uuid for r in reservations])
            except Exception as e:
                why = 'the consumer cannot be asked: %s' % (
                    str(e) or type(e).__name__)
                LOG.warning('Housekeeping leaves orphans and failed claims '
                            'alone this pass: %s', why)
        report.skipped[ORPHANS] = report.skipped[FAILED_CLAIMS] = why
        return None

    def _another_consumers(self, reservation):
        """Why the consumer asked may not speak for the instance, or None.

        Fails closed: a consumer that cannot be told is another's.
        """
        ours = self.consumer
        if ours is None:
            return None
        if reservation.consumer is not None:
            if reservation.consumer == ours:
                return None
            return 'claimed for consumer %s, not %s' % (reservation.consumer,
                                                        ours)
        if self._hosts_served is None:
            try:
                self._hosts_served = (self.consumers_of_hosts()
                                      if self.consumers_of_hosts else {})
            except Exception as e:
                self._hosts_served = {}
                LOG.warning('Cannot tell which consumers the members of '
                            'the group serve: %s', e)
        hosts = [host for host in (
            reservation.claimer and membership.host_of(reservation.claimer),
            reservation.host) if host]
        for host in hosts:
            theirs = self._hosts_served.get(host)
            if theirs is not None:
                if theirs == ours:
                    return None
                return 'its host %s serves consumer %s, not %s' % (
                    host, theirs, ours)
        return ('claimed before marks named consumers, and no live member '
                'of host %s tells which consumer it serves'
                % (' or '.join(hosts) or '(unknown)'))

    def _live_members(self, report):
        if self.members is None:
            return None
        try:
            return set(self.members())
        except Exception as e:
            # Fails closed: no claimer is taken for gone.
            report.skipped[STUCK_CLAIMS] = (
                'the group\'s members cannot be listed: %s' % (
                    str(e) or type(e).__name__))
            return None

    # -- reservations -----------------------------------------------------

    def _overdue(self, kind, instance_uuid, period, now, alive):
        """Whether ``(kind, instance)`` was seen for ``period`` seconds."""
        key = (kind, instance_uuid)
        first = self._seen.setdefault(key, now)
        alive.add(key)
        return now - first >= period

    def _reservations(self, reservations, report):
        now = time.monotonic()
        alive = set()
        ours = [r for r in reservations if self._ours(r)]
        report.foreign = len(reservations) - len(ours)
        known = self._consumer_states(ours, report)
        live = self._live_members(report)
        self._hosts_served = None
        for reservation in ours:
            instance = reservation.instance_uuid
            # An instance the consumer does not know is gone: the mark says
            # that this group claimed it for the consumer.
            state = None if known is None else known.get(instance, GONE)
            if _may_act(reservation, state):
                why = self._another_consumers(reservation)
                if why:
                    report.other_consumers[instance] = why
                    continue
            if reservation.node_uuid is None:
                if live is None:
                    # Its claimer may be alive, and retrying it.
                    report.skipped.setdefault(
                        FAILED_CLAIMS, report.skipped.get(
                            STUCK_CLAIMS, 'the group\'s members are unknown'))
                elif (state is not None and state != BUILDING
                        and not _claimer_lives(reservation, live)):
                    self._do('release failed claim', 'the claim failed, '
                             'holds no node, and its instance is %s' % state,
                             self._release, reservation)
            elif state == GONE:
                releasing = reservation.state == lifecycle.State.RELEASING
                if releasing and self._provider.releasing_ends_itself:
                    # Torn down already; the provider ends it.
                    continue
                if not self._overdue('orphan', instance,
                                     self._opts.orphan_grace_period, now,
                                     alive):
                    continue
                if releasing:
                    # Torn down, but its release never came (its caller
                    # died, or was fenced off).
                    self._do('release orphan', 'the instance is gone from '
                             'the consumer, and its node was torn down',
                             self._release, reservation)
                else:
                    self._do('release orphan', 'the instance is gone from '
                             'the consumer', self._teardown_and_release,
                             reservation)
            elif reservation.state == lifecycle.State.CLAIMED:
                if live is None:
                    report.skipped.setdefault(
                        STUCK_CLAIMS, 'the group\'s members are unknown')
                elif _claimer_lives(reservation, live):
                    # Queued behind the deploy throttle, or deploying now.
                    continue
                elif self._overdue('stuck', instance,
                                   self._opts.stuck_claim_timeout, now,
                                   alive):
                    self._do('time out stuck claim', 'claimed %d s ago or '
                             'more, never deployed, and its claimer %s is '
                             'gone' % (self._opts.stuck_claim_timeout,
                                       reservation.claimer or '(unknown)'),
                             self._release, reservation)
        # Forget what resolved itself.
        self._seen = {key: seen for key, seen in self._seen.items()
                      if key in alive}

    def _fresh(self, reservation, same_state=True):
        """The reservation as it is now, if nothing changed that matters.

        :raises _Changed: it holds another node or none, lost the mark, or
            moved to another state (unless not ``same_state``).
        """
        current = self._provider.lookup(reservation.instance_uuid)
        if current is None:
            raise _Changed('released meanwhile')
        if current.node_uuid != reservation.node_uuid:
            raise _Changed('now on node %s' % current.node_uuid)
        if not self._ours(current):
            raise _Changed('now marked for group %s' % current.group)
        if same_state and current.state != reservation.state:
            raise _Changed('now %s, not %s' % (current.state,
                                               reservation.state))
        return current

    def _release(self, reservation):
        self._fresh(reservation)
        self._provider.release(reservation.instance_uuid)

    def _release_after(self, reservation):
        """The release that ends an action, fenced like the action.

        What came before it (a tear down, a quarantine) took time: the
        leadership is confirmed and the node read again first.
        """
        if self._provider.lookup(reservation.instance_uuid) is None:
            return  # Ended with the tear down: nothing left to destroy.
        if self.fence is not None:
            self.fence()
        self._fresh(reservation, same_state=False)
        self._provider.release(reservation.instance_uuid)

    def _teardown_and_release(self, reservation):
        current = self._fresh(reservation)
        if current.state == lifecycle.State.ERROR:
            # The last tear down failed: this try counts, and enough of
            # them quarantine the node with the dead instance on it.
            failures = self._provider.record_failure(
                current.node_uuid, 'tear down of a gone instance failed')
            if failures >= self._opts.quarantine_after_failures:
                # Out of service with the dead instance's data, for an
                # operator to look at; the claim of the dead instance goes.
                self._quarantine(base.TroubledNode(
                    node_uuid=current.node_uuid, failures=failures,
                    reason='tear down failed', group=self._group,
                    holder=current.instance_uuid))
                self._release_after(current)
                return
        try:
            # Waited for within the pass's bound, to see how it ends: a
            # failure is marked on the node, pinned to the state it left
            # the node in, and the next pass recovers it.  One that goes
            # on past the bound ends the reservation by itself (Ironic
            # clears it); should it fail then, nothing proves that the
            # failed node is still this group's, and it is left for an
            # operator.
            if not self._provider.teardown(current, wait=True,
                                           deadline=self._do.deadline):
                return
        except exception.TeardownRefused as e:
            # Nothing was done to the node: no failure of its own.
            raise _Busy(str(e)) from e
        except exception.TeardownFailed as e:
            # The node may hold the tenant's data: it stays with the dead
            # instance, and out of service, until a tear down works or
            # the count says to quarantine it.
            self._provider.record_failure(current.node_uuid,
                                          'tear down failed: %s' % e)
            raise
        self._release_after(current)

    # -- troubled nodes ---------------------------------------------------

    def _troubled(self, troubled):
        limit = self._opts.quarantine_after_failures
        for node in troubled:
            if not self._ours(node) or node.holder:
                # Another group's marks, or the business of the instance
                # that holds the node: this group's, or someone else's.
                continue
            if node.left_alone:
                self._report.left_alone[node.node_uuid] = node.left_alone
                continue
            if node.quarantined_at:
                continue
            if node.failures >= limit:
                self._quarantine(node)
            elif node.failed_state:
                self._do('recover node', 'in %s (%s); try %d of %d' % (
                         node.failed_state, node.reason or '-',
                         node.failures + 1, limit),
                         self._recover, node)
        if self._report.left_alone:
            LOG.info('Housekeeping leaves alone %d node(s) with this '
                     'group\'s old marks: they are not its now',
                     len(self._report.left_alone))

    def _fresh_node(self, node, same_state=True):
        """The troubled node as it is now, if nothing changed that matters.

        :raises _Changed: it lost this group's marks, is not the group's
            to act on any more, holds another instance or none, or moved
            to another failed state (unless not ``same_state``).
        """
        current = self._provider.troubled_node(node.node_uuid)
        if current is None:
            raise _Changed('no longer marked or failed')
        if not self._ours(current):
            raise _Changed('now marked by group %s' % (current.group or '-'))
        if current.holder != node.holder:
            raise _Changed('now holds %s' % (current.holder or 'no instance'))
        if current.left_alone and not current.holder:
            raise _Changed('no longer this group\'s: %s' % current.left_alone)
        if same_state and current.failed_state != node.failed_state:
            raise _Changed('now %s' % (current.failed_state or 'healthy'))
        return current

    def _recover(self, node):
        # Read before any write: the count below names this group.
        self._fresh_node(node)
        # Each try counts: a node that never recovers is quarantined.
        self._provider.record_failure(node.node_uuid, 'recovery from %s'
                                      % node.failed_state)
        self._provider.recover(node.node_uuid, deadline=self._do.deadline)

    def _quarantine(self, node):
        quarantined = self._quarantined
        reason = '%d failures in a row, last: %s' % (node.failures,
                                                     node.reason or '-')
        preserved = self._opts.max_preserved
        if len(quarantined) >= preserved:
            # "cycle" returns the oldest node a return leaves in service;
            # one in a failed state (a failed tear down: the tenant's data
            # may be on it) stays, and so do its marks.
            oldest = next((q for q in quarantined if q.returnable), None)
            if (self._opts.preserve_scheme != 'cycle' or not preserved
                    or oldest is None):
                # Out of claims by its failure count all the same, until an
                # operator clears it: never back to the users it failed.
                LOG.warning('Node %(node)s failed %(failures)d times in a '
                            'row; the quarantine is full (%(preserved)d%(why)s'
                            '), so it stays out of service by its failure '
                            'count, not in maintenance',
                            {'node': node.node_uuid,
                             'failures': node.failures,
                             'preserved': preserved,
                             'why': '' if oldest is not None
                             or self._opts.preserve_scheme != 'cycle'
                             else '; none of it can be returned to '
                                  'service'})
                self._report.out_of_service.append(node.node_uuid)
                return
            quarantined.remove(oldest)
            self._do('unquarantine', 'cycled out for a newer failure',
                     self._unquarantine, oldest)
        self._do('quarantine', reason,
                 lambda n: self._quarantine_node(n, reason), node)
        quarantined.append(node)

    def _quarantine_node(self, node, reason):
        self._fresh_node(node, same_state=False)
        self._provider.quarantine(node.node_uuid, reason)

    def _unquarantine(self, node):
        current = self._fresh_node(node, same_state=False)
        if current.quarantined_at != node.quarantined_at:
            raise _Changed('no longer quarantined as it was')
        if not current.returnable:
            raise _Changed('a return would no longer leave it in service')
        self._provider.unquarantine(node.node_uuid)

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


def _may_act(reservation, state):
    """Whether a reservation rule may act on ``reservation``."""
    return (reservation.node_uuid is None or state == GONE
            or reservation.state == lifecycle.State.CLAIMED)


def _claimer_lives(reservation, live):
    """Whether the member that made the claim is in the group now."""
    return (live is not None and reservation.claimer is not None
            and reservation.claimer in live)


class _Doer(object):
    """Runs, logs and counts the actions of one pass, fenced and bounded.

    Before each action: the pass's bound, then the fence.  Once either
    says stop, the remaining actions are only recorded, as deferred.
    """

    def __init__(self, report, dry_run, stats, fence, deadline):
        self._report = report
        self._dry_run = dry_run
        self._stats = stats
        self._fence = fence
        self.deadline = deadline

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
        if self._report.stopped is None:
            self._check()
        if self._report.stopped is not None:
            action.deferred = True
            return
        try:
            function(subject)
        except _Busy as e:
            action.deferred = True
            action.error = str(e)
            LOG.info('Housekeeping leaves %(kind)s (node %(node)s, instance '
                     '%(instance)s) for the next pass: %(error)s',
                     dict(_fields(action), error=e))
            return
        except _Changed as e:
            action.error = 'not done: %s' % e
            LOG.info('Housekeeping did not %(kind)s (node %(node)s, '
                     'instance %(instance)s): %(error)s',
                     dict(_fields(action), error=e))
            return
        except exception.LeadershipLost as e:
            self._stop(str(e))
            action.deferred = True
            return
        except exception.IronicMultiError as e:
            action.error = str(e)
            LOG.warning('Housekeeping failed to %(kind)s (node %(node)s, '
                        'instance %(instance)s): %(error)s',
                        dict(_fields(action), error=e))
            return
        except Exception as e:
            # A bug must not end the pass: the other repairs go on.
            action.error = '%s: %s' % (type(e).__name__, e)
            LOG.exception('Housekeeping failed unexpectedly to %(kind)s '
                          '(node %(node)s, instance %(instance)s)',
                          _fields(action))
            return
        action.done = True
        LOG.warning('Housekeeping did %(kind)s (node %(node)s, instance '
                    '%(instance)s): %(reason)s', _fields(action))
        if self._stats is not None:
            self._stats.count('housekeeping: %s' % kind)

    def _check(self):
        if time.monotonic() >= self.deadline:
            self._stop('the pass reached housekeeping_pass_timeout; the '
                       'rest is left for the next pass')
            return
        if self._fence is None:
            return
        try:
            self._fence()
        except exception.LeadershipLost as e:
            self._stop(str(e))

    def _stop(self, why):
        self._report.stopped = why
        LOG.warning('Housekeeping stops its destructive actions for this '
                    'pass: %s', why)


def _fields(action):
    return {'kind': action.kind, 'node': action.node_uuid or '-',
            'instance': action.instance_uuid or '-',
            'reason': action.reason}
