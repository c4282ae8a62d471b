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

"""Capacity, published per shard by each member, summed for the cluster.

Each member publishes the node counts of the shards it owns, per shard,
with the time it counted them.  While the ring moves, an old owner's
payload and the new owner's may both name a shard; the sum takes each
shard once, from the freshest count, so nothing is counted twice.

A member that leaves takes its payload with it, possibly before the
survivors' rings hand them its shards.  Summing without it would drop its
shards' capacity and traits from placement until the next refresh and
periodic, and a boot asking for one of those traits would find no valid
host.  So a departed member's last payload still counts for the shards no
live member covers yet, for at most ``retain_seconds``.

A claim is published at once, not at the owner's next refresh: each
member's payload lists the nodes it claimed lately (``taken``, with the
shard, the resource class and the time), and the sum counts such a node
as no longer free wherever its shard's count is older than the claim.
Every member then sees the cluster's free count drop by one as soon as
it reads the payload (etcd's watch tells it; see
:mod:`~.member_watch`), not up to ``pool_refresh_interval`` later.

Each member offers placement the free nodes of the shards it owns, not
the cluster's: with every provider offering every free node, a burst
that the scheduler allocates faster than the members tell each other
is allocated up to K times the free nodes, and the builds past them
fail their claims and reschedule.  With each member offering its own
shards, placement's free counts add up to the cluster's, and an
allocation takes its unit off the one provider it lands on at once, in
placement itself.  A member whose compute service Nova disabled
offers nothing (``offering``), and the ring's next host takes its shards'
free nodes (:meth:`CapacityBoard.set_offering`).

Builds come before claims: the scheduler allocates on one provider
seconds before that service claims a node, and its node is still free
in Ironic meanwhile.  So each member publishes its builds that wait for
a node (``waiting``: instance, placement resources), and the builds
waiting here come off this member's offer; a claim takes its instance
off ``waiting`` in the same write that lists it in ``taken``, so the
offer less the builds waiting does not move when a build claims.  A
claim from another host's shards comes off this member's offer until
the shard's owner counts it, as the host that offers the shard offers
the node until it reads the claim.  The owner counts it as soon as it
reads it (``counted``), not at its next pool refresh: an owner Nova
disabled still counts, and its refresh may be far off.  A claim is
listed for ``retain_seconds``: by then its shard's owner has counted
it.  Clocks of the members are assumed in step (NTP), as Nova assumes
for its services' heartbeats.

The sum is computed when the periodic refresh publishes, and again when
a claim is published, and kept: the virt driver reads it under Nova's
resource tracker lock, where no network round trip belongs.
"""

import json
import threading
import time

from oslo_log import log as logging

from ironic_multi import exception

LOG = logging.getLogger(__name__)

_COUNTS = ('total', 'free')


class CapacityBoard(object):
    """This member's published counts and the cluster's last sum.

    :param membership: a :class:`~.membership.Membership`.
    :param retain_seconds: how long a departed member's last payload
        still counts for the shards no live member covers.
    :param ring: the member's :class:`~.ring.ShardRing`, which says the
        shards whose free nodes it offers; without one it offers every
        shard's.
    """

    def __init__(self, membership, retain_seconds=0, ring=None):
        self._membership = membership
        self._retain_seconds = retain_seconds
        self._ring = ring
        # Reentrant: a claim sums under the lock it changes the counts in.
        self._lock = threading.RLock()
        self._capacity = {}
        # {resource_class: free nodes of the shards this member offers}
        self._offered = {}
        self._offering = True
        self._traits = frozenset()
        self._payload = None
        self._others = {}
        # {member_id: (payload, monotonic time it was last seen)}
        self._departed = {}
        # {node uuid: {'shard', 'resource_class', 'at'}}: this member's
        # recent claims.
        self._taken = {}
        # {instance uuid: {placement resource class: units}}: this
        # member's builds that wait for a node.
        self._waiting = {}
        # Whether _count_claims changed the payload since it was published.
        self._recounted = False

    def publish(self, shard_capacity, traits, extra=None, counted_at=None):
        """Publish this member's counts, then read every member's.

        :param shard_capacity: ``{shard: {resource_class: {'total': n,
            'free': n}}}`` of the owned shards.
        :param traits: the traits of the owned shards' usable nodes.
        :param extra: more JSON for the operator CLI (stats, ...).
        :param counted_at: when the counts were read (``time.time()``);
            now by default.  A claim made after it is not in the counts.

        With the coordination backend down, the other members' last
        payloads are summed with this one's new counts.
        """
        with self._lock:
            taken = self._recent_claims()
            waiting = dict(self._waiting)
            offering = self._offering
        payload = dict(extra or {}, at=counted_at or time.time(),
                       shards=shard_capacity, traits=sorted(traits),
                       taken=taken, waiting=waiting, offering=offering)
        try:
            self._membership.publish(payload)
            others = self._read_others()
        except exception.CoordinationUnavailable as e:
            LOG.warning('Cannot publish capacity; summing with the last '
                        'known counts of the other members: %s', e)
            others = self._others
        self._add_up(payload, others)
        self._publish_recount()

    def _read_others(self):
        """The other live members' payloads that carry counts."""
        return {member: other for member, other
                in self._membership.published().items()
                if member != self._membership.member_id
                and 'shards' in other}

    def _add_up(self, payload, others):
        """Sum ``payload`` and the others' payloads.

        :returns: whether what this member tells placement changed: the
            nodes, the free nodes it offers, the traits.
        """
        with self._lock:
            payload = self._count_claims(payload, others)
            live = [payload, *others.values()]
            departed = self._still_departed(others, live)
            capacity, traits, offered = _sum(
                live + [kept for kept, _seen in departed.values()],
                self._offers(live), payload.get('taken'))
            # What the inventory reported to placement is made of; the
            # cluster's free count moves with every claim anywhere.
            changed = (_nodes(capacity) != _nodes(self._capacity)
                       or frozenset(traits) != self._traits
                       or offered != self._offered)
            self._capacity, self._traits = capacity, frozenset(traits)
            self._offered = offered
            self._payload, self._others = payload, others
            self._departed = departed
        return changed

    def _count_claims(self, payload, others):
        """``payload`` with the others' new claims in its shards counted.

        The claimer offers one less until the shard's counts take its
        claim in (see :func:`_sum`), and the shard's offerer one less
        once it reads the claim: both until the owner counts again, a
        pool refresh away (longer for an owner Nova disabled).  So the
        owner counts a claim as soon as it reads it: one node less free
        in the shard's counts, the claim named in ``counted``.  Published
        by :meth:`reread`, once per claim.
        """
        shards = payload.get('shards') or {}
        counted = payload.get('counted') or {}
        new = {node: claim
               for other in others.values()
               for node, claim in (other.get('taken') or {}).items()
               if claim.get('shard') in shards
               and claim.get('at', 0) > payload.get('at', 0)
               and counted.get(node) != claim.get('at')}
        if not new:
            return payload
        shards = {shard: {rc: dict(count) for rc, count in counts.items()}
                  for shard, counts in shards.items()}
        for claim in new.values():
            count = shards[claim['shard']].get(claim.get('resource_class'))
            if count and count.get('free', 0) > 0:
                count['free'] -= 1
        LOG.debug('Counting %d claims of other members in this member\'s '
                  'shards: %s', len(new), ', '.join(sorted(new)))
        self._recounted = True
        return dict(payload, shards=shards, counted=dict(
            counted, **{node: claim.get('at') for node, claim in new.items()}))

    def _offers(self, live):
        """``offers(shard)``: whether this member offers its free nodes.

        The shard's ring owner offers them, unless Nova disabled its
        service: then the next host on the ring that did not.
        """
        ring = self._ring
        if ring is None:
            return lambda shard: True
        resting = {p.get('host') for p in live if p.get('offering') is False}
        return lambda shard: ring.owner(shard, ignore=resting) == ring.host

    def set_offering(self, offering):
        """Whether this member offers its shards' free nodes to placement.

        Not while Nova has its compute service disabled: the scheduler
        sends it no build, and the ring's next host offers them instead.

        :returns: whether this member's offer changed.
        :raises CoordinationUnavailable: not published; counted here all
            the same.
        """
        with self._lock:
            if offering == self._offering:
                return False
            self._offering = offering
            if self._payload is None:
                return False
            payload = dict(self._payload, offering=offering)
            others = self._others
        LOG.info('%s the free nodes of this member\'s shards to placement',
                 'Offering' if offering else 'No longer offering')
        return self._publish_sum(payload, others)

    def took(self, node_uuid, shard, resource_class, instance_uuid=None):
        """Publish that this member claimed ``node_uuid`` just now.

        :returns: whether what this member tells placement changed.
        :raises CoordinationUnavailable: not published; counted here
            all the same.
        """
        with self._lock:
            earlier = self._taken.get(node_uuid)
            # A claim made again (idempotent) keeps its first time; a new
            # claim of a node released since is a new claim.
            if not earlier or earlier.get('instance') != instance_uuid:
                self._taken[node_uuid] = {
                    'shard': shard, 'resource_class': resource_class,
                    'instance': instance_uuid, 'at': time.time()}
            # The build no longer waits: one write, so that no reader
            # counts its node twice (taken and waiting).
            self._waiting.pop(instance_uuid, None)
            if self._payload is None:
                return False
            payload = dict(self._payload, taken=self._recent_claims(),
                           waiting=dict(self._waiting))
            # Summed before the lock is let go: offer() sees the build
            # leave ``waiting`` and its node leave the offer in one step.
            changed = self._add_up(payload, self._others)
        self._membership.publish(payload)
        return changed

    def _publish_sum(self, payload, others):
        """Sum with ``payload`` at once, then publish it; see ``_add_up``.

        Summed first: counted here even when the backend refuses it.
        """
        changed = self._add_up(payload, others)
        self._membership.publish(payload)
        return changed

    def set_waiting(self, waiting):
        """Publish this member's builds that wait for a node.

        :param waiting: ``{instance uuid: {placement resource class:
            units}}``; a build claimed lately is left out (it may have
            claimed since ``waiting`` was read).
        :returns: whether they changed (and with them :meth:`offer`).
        :raises CoordinationUnavailable: not published; counted here
            all the same.
        """
        with self._lock:
            claimed = self._claimed()
            waiting = {uuid: dict(resources)
                       for uuid, resources in waiting.items()
                       if uuid not in claimed}
            if waiting == self._waiting:
                return False
            self._waiting = waiting
            if self._payload is None:
                return True
            payload = dict(self._payload, waiting=dict(waiting))
            others = self._others
        self._publish_sum(payload, others)
        return True

    def claimed_lately(self):
        """The instances whose claims this member published lately."""
        with self._lock:
            return self._claimed()

    def _claimed(self):
        return {claim.get('instance') for claim in self._taken.values()}

    def reread(self):
        """Read the other members' payloads again and sum them.

        :returns: whether what this member tells placement changed.
        :raises CoordinationUnavailable: the sum stays as it was.
        """
        with self._lock:
            payload = self._payload
        if payload is None:
            return False
        changed = self._add_up(payload, self._read_others())
        self._publish_recount()
        return changed

    def _publish_recount(self):
        """Publish the payload if it counted the others' claims since.

        Only the reads bring new claims of others: the writes that sum
        with the others already read publish the counted payload.
        """
        with self._lock:
            recounted, self._recounted = self._recounted, False
            payload = self._payload
        if not recounted:
            return
        try:
            self._membership.publish(payload)
        except exception.CoordinationUnavailable as e:
            # The next write carries it.
            LOG.warning('Cannot publish the claims this member counted: %s',
                        e)

    def _recent_claims(self):
        """This member's claims its shards' owners may not have counted."""
        oldest = time.time() - self._retain_seconds
        self._taken = {node: claim for node, claim in self._taken.items()
                       if claim['at'] >= oldest}
        return dict(self._taken)

    def _still_departed(self, others, live):
        """The departed members' payloads that still count."""
        now = time.monotonic()
        departed = dict(self._departed)
        departed.update((member, (payload, now))
                        for member, payload in self._others.items()
                        if member not in others)
        kept = {}
        for member, (payload, seen) in departed.items():
            if member in others:
                continue
            if now - seen > self._retain_seconds:
                LOG.debug('No longer counting the capacity last published '
                          'by %s, which left %.0f s ago', member, now - seen)
                continue
            if _uncovered(payload, live):
                kept[member] = (payload, seen)
        newly = sorted(set(kept) - set(self._departed))
        if newly:
            LOG.info('Counting the last published capacity of %s, which '
                     'left, until the remaining members cover its shards',
                     ', '.join(newly))
        return kept

    def amend(self, **fields):
        """Publish the last payload again with ``fields`` changed."""
        with self._lock:
            if self._payload is None:
                return
            self._payload = dict(self._payload, **fields)
            payload = self._payload
        self._membership.publish(payload)

    @property
    def payload_bytes(self):
        """Size of what this member published last, as JSON."""
        return len(json.dumps(self._payload)) if self._payload else 0

    def cluster_capacity(self):
        """``{resource_class: {'total': n, 'free': n}}`` of the cluster."""
        with self._lock:
            return {rc: dict(counts) for rc, counts in self._capacity.items()}

    def published(self):
        """``{member_id: payload}``: what every member published last."""
        with self._lock:
            others = dict(self._others)
            if self._payload is not None:
                others[self._membership.member_id] = self._payload
        return others

    def offer(self):
        """What this member offers placement, read at one time.

        :returns: ``(capacity, waiting)``: ``{resource_class: {'total': n,
            'free': n}}`` with the cluster's total and the free nodes of
            the shards this member offers, and ``{placement resource
            class: units}`` of this member's builds that wait for a node.
            A claim moves both in one step.
        """
        with self._lock:
            capacity = {rc: {'total': counts['total'],
                             'free': self._offered.get(rc, 0)}
                        for rc, counts in self._capacity.items()}
            return capacity, _units(self._waiting)

    def cluster_traits(self):
        """The traits of usable nodes, over every member's shards."""
        with self._lock:
            return self._traits


def total(shard_capacity):
    """The sum over the shards of ``{shard: {resource_class: counts}}``."""
    return _add({}, shard_capacity.values())


def _add(totals, shard_counts):
    for counts in shard_counts:
        for rc, count in counts.items():
            entry = totals.setdefault(rc, {'total': 0, 'free': 0})
            for field in _COUNTS:
                entry[field] += count.get(field, 0)
    return totals


def _nodes(capacity):
    return {rc: counts['total'] for rc, counts in capacity.items()}


def waiting_of(payload):
    """Units per placement class a member's builds wait for."""
    return _units(payload.get('waiting') or {})


def _units(waiting):
    """``{instance: {class: units}}`` added up per class."""
    units = {}
    for resources in waiting.values():
        for name, count in resources.items():
            units[name] = units.get(name, 0) + count
    return units


def _uncovered(payload, live):
    """Shards of ``payload`` that no live payload counted since."""
    at = payload.get('at', 0)
    return {shard for shard in payload.get('shards') or ()
            if not any(shard in (other.get('shards') or ())
                       and other.get('at', 0) >= at for other in live)}


def _sum(payloads, offers, own_claims=None):
    """``(totals, traits, offered)`` of the payloads.

    ``offered``: ``{resource_class: free}`` over the shards for which
    ``offers(shard)``, less this member's claims (``own_claims``) from
    shards it does not offer that their owners have not counted yet.
    """
    own_claims = own_claims or {}
    freshest = {}
    traits = set()
    taken = {}
    for payload in payloads:
        traits.update(payload.get('traits') or ())
        at = payload.get('at', 0)
        for shard, counts in (payload.get('shards') or {}).items():
            if shard not in freshest or at > freshest[shard][0]:
                freshest[shard] = (at, counts, payload.get('counted') or {})
        taken.update(payload.get('taken') or {})
    totals = _add({}, (entry[1] for entry in freshest.values()))
    offered_shards = {shard for shard in freshest if offers(shard)}
    offered = {rc: counts['free'] for rc, counts in _add(
        {}, (freshest[shard][1] for shard in offered_shards)).items()}
    # Free nodes per (shard, class) that a claim may still take off.
    left = {}
    for node, claim in taken.items():
        shard, rc = claim.get('shard'), claim.get('resource_class')
        at, counts, counted = freshest.get(shard, (None, {}, {}))
        if (at is None or claim.get('at', 0) <= at
                or counted.get(node) == claim.get('at')):
            # Counted by the shard's owner since (or not counted at all).
            continue
        key = (shard, rc)
        left.setdefault(key, (counts.get(rc) or {}).get('free', 0))
        if left[key] > 0:
            left[key] -= 1
            totals[rc]['free'] -= 1
            if shard in offered_shards:
                offered[rc] -= 1
            elif node in own_claims and offered.get(rc, 0) > 0:
                # A node of another host's shards: that host offers it
                # until it reads this claim, while the build leaves this
                # member's waiting at once.  Offered one less here until
                # the owner counts it, so that the offers are low for a
                # while, never high.
                offered[rc] -= 1
    return totals, traits, offered
