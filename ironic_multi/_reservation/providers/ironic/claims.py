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

"""The one atomic write that reserves an Ironic node, and its undoing.

The claim is never a lock of our own: an Allocation whose UUID is the
instance UUID (API 1.52), or else the node's ``instance_uuid`` set by
PATCH.  Ironic refuses both with a conflict when the node (or the
instance) is taken, so no interleaving of services can give one node to
two instances, and one instance never holds two nodes.  Either write
carries the group's ownership mark (:mod:`.ownership`).  A write whose
answer was lost is settled by reading back, never by assuming.

A release is guarded by the mark: deleting the instance's allocation
clears only the node that allocation holds, and the PATCH that clears
``instance_uuid`` is refused once the node no longer carries the
instance's mark, so a release that comes late never clears the next
claim of the node.
"""

import collections
import time

from oslo_log import log as logging

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# An allocation with a few candidates is decided in 10-20 ms: look early,
# then back off.
_ALLOCATION_POLL = 0.01
_ALLOCATION_POLL_MAX = 1.0
# Candidates offered to one allocation.  Ironic's conductor reads every
# candidate's row to pick one: thousands of them (a whole resource
# class's pool) made a claim several times slower than a PATCH.  The
# candidates come in the pool's order of preference; the next few are
# offered when all of these were taken.
_ALLOCATION_CANDIDATES = 8

Claimed = collections.namedtuple('Claimed',
                                 ['node_uuid', 'earlier', 'node'])
"""A claim's node; ``earlier`` when an earlier attempt had made it;
``node`` is the node as Ironic answered the claim, or None."""


class Claimer(object):
    """Claims and releases through one IronicAPI.

    :param api: the IronicAPI.
    :param group: the coordination group whose mark every claim writes.
    :param use_allocations: claim with allocations when Ironic has them.
    :param claim_timeout: ``[ironic_multi]claim_timeout``, for errors.
    :param on_taken: ``f(node_uuid)``, told of nodes a claim found taken.
    :param on_gone: ``f(node_uuid)``, told of nodes Ironic no longer has.
    """

    def __init__(self, api, group, use_allocations, claim_timeout, on_taken,
                 on_gone):
        if not group:
            raise exception.ConfigInvalid(
                reason='claims need a coordination group to mark them with')
        self._api = api
        self._group = group
        self.use_allocations = use_allocations
        self._claim_timeout = claim_timeout
        self._on_taken = on_taken
        self._on_gone = on_gone

    @property
    def by_allocation(self):
        return self.use_allocations and self._api.supports('allocations')

    def claim(self, candidates, instance_uuid, required_traits, deadline,
              claimer=None, consumer=None, also=None):
        """Reserve one of ``candidates`` (node dicts), marked as ours.

        :param claimer: the member id of the claiming service.
        :param consumer: the consumer the claim is for, if told.
        :param also: ``f(node dict) -> JSON patch operations`` that a claim
            by PATCH writes in the same request (an allocation cannot
            carry them).
        :returns: :data:`Claimed`.
        :raises NodeAlreadyClaimed: every candidate was taken.
        """
        mark = ownership.mark(self._group, claimer, consumer)
        if self.by_allocation:
            return self._by_allocation(candidates, instance_uuid,
                                       required_traits, deadline, mark)
        return self._by_patch(candidates, instance_uuid, deadline, mark,
                              also or (lambda node: ()))

    # -- PATCH instance_uuid ----------------------------------------------

    def _by_patch(self, candidates, instance_uuid, deadline, mark, also):
        for node in candidates:
            try:
                answer = self._api.claim_node(node['uuid'], instance_uuid,
                                              mark, deadline=deadline,
                                              also=also(node))
            except exception.InstanceAlreadyClaimed:
                # A retried spawn, or an earlier answer that was lost.
                existing = self._node_of(instance_uuid)
                if existing is not None:
                    return Claimed(existing, earlier=True, node=None)
                self._on_taken(node['uuid'])
                continue
            except exception.NodeNotFound:
                # Deleted from Ironic since the pool read it.
                LOG.info('Node %s is gone from Ironic', node['uuid'])
                self._on_gone(node['uuid'])
                continue
            except exception.NodeAlreadyClaimed as e:
                LOG.debug('Node %(node)s was taken: %(reason)s',
                          {'node': node['uuid'], 'reason': e.reason})
                self._on_taken(node['uuid'])
                continue
            except exception.RequestOutcomeUnknown as e:
                LOG.warning('Claim of node %(node)s for %(instance)s: '
                            '%(error)s; reading it back',
                            {'node': node['uuid'], 'instance': instance_uuid,
                             'error': e})
                if self._holder(node['uuid']) != instance_uuid:
                    continue
                answer = None
            return Claimed(node['uuid'], earlier=False, node=answer)
        raise exception.NodeAlreadyClaimed(
            node=','.join(n['uuid'] for n in candidates),
            instance=instance_uuid, reason='every candidate is taken')

    def _holder(self, node_uuid):
        try:
            return self._api.get_node(
                node_uuid, fields=['instance_uuid'])['instance_uuid']
        except exception.NodeNotFound:
            return None

    def _gone(self, node_uuid):
        try:
            self._api.get_node(node_uuid, fields=['uuid'])
        except exception.NodeNotFound:
            return True
        return False

    def _node_of(self, instance_uuid):
        node = self._api.node_by_instance(instance_uuid, fields=['uuid'])
        return None if node is None else node['uuid']

    # -- allocations ------------------------------------------------------

    def _by_allocation(self, candidates, instance_uuid, required_traits,
                       deadline, mark):
        # An allocation asks for one resource class: offer the candidates
        # of the first candidate's class (all of them match anyway), a few
        # at a time.
        resource_class = candidates[0].get('resource_class')
        same_class = [n for n in candidates
                      if n.get('resource_class') == resource_class]
        for start in range(0, len(same_class), _ALLOCATION_CANDIDATES):
            batch = same_class[start:start + _ALLOCATION_CANDIDATES]
            try:
                return self._allocate(batch, instance_uuid, required_traits,
                                      deadline, mark)
            except exception.NodeAlreadyClaimed:
                if (start + _ALLOCATION_CANDIDATES >= len(same_class)
                        or time.monotonic() >= deadline):
                    raise

    def _allocate(self, candidates, instance_uuid, required_traits,
                  deadline, mark):
        """One allocation among ``candidates``, all of one class."""
        resource_class = candidates[0].get('resource_class')
        same_class = [n['uuid'] for n in candidates]
        try:
            allocation, earlier = self._create_allocation(
                instance_uuid, same_class, resource_class, required_traits,
                deadline, mark)
        except exception.IronicAPIError as e:
            if e.status_code != 400:
                raise
            # Ironic refuses candidates it no longer has (400), without a
            # structured way to say which: ask about each.
            gone = [uuid for uuid in same_class if self._gone(uuid)]
            if not gone:
                raise
            for uuid in gone:
                self._on_gone(uuid)
            rest = [n for n in candidates if n['uuid'] not in gone]
            if not rest:
                raise exception.NodeAlreadyClaimed(
                    node=','.join(gone), instance=instance_uuid,
                    reason='the candidates are gone from Ironic')
            return self._allocate(rest, instance_uuid, required_traits,
                                  deadline, mark)
        allocation = self._wait_allocation(allocation, deadline)
        if allocation['state'] == 'active':
            return Claimed(allocation['node_uuid'], earlier, node=None)
        # Delete the failed allocation so that the instance UUID is free
        # for the next attempt.
        self._api.delete_allocation(instance_uuid)
        for node_uuid in same_class:
            self._on_taken(node_uuid)
        raise exception.NodeAlreadyClaimed(
            node=','.join(same_class), instance=instance_uuid,
            reason=allocation.get('last_error') or allocation['state'])

    def _create_allocation(self, instance_uuid, node_uuids, resource_class,
                           traits, deadline, mark):
        """``(allocation, made by an earlier attempt)``.

        A lost answer is read back (the UUID makes that exact) and, when
        the allocation was not made, sent again, until the deadline.
        """
        while True:
            try:
                return self._api.create_allocation(
                    instance_uuid, node_uuids, mark,
                    resource_class=resource_class, traits=traits,
                    deadline=deadline), False
            except exception.AllocationFailed:
                # An allocation of this instance exists: a retried spawn.
                existing = self._api.get_allocation(instance_uuid)
                if existing is None:
                    raise
                return existing, True
            except exception.RequestOutcomeUnknown as e:
                existing = self._api.get_allocation(instance_uuid)
                if existing is not None:
                    return existing, False
                if time.monotonic() >= deadline:
                    raise exception.ClaimTimeout(
                        instance=instance_uuid,
                        timeout=self._claim_timeout) from e
                LOG.warning('Allocation for %(instance)s: %(error)s; it was '
                            'not made, sending it again',
                            {'instance': instance_uuid, 'error': e})

    def _wait_allocation(self, allocation, deadline):
        delay = _ALLOCATION_POLL
        while allocation['state'] == 'allocating':
            if time.monotonic() + delay > deadline:
                # Do not leave an allocation behind that may still succeed.
                self._api.delete_allocation(allocation['uuid'])
                raise exception.ClaimTimeout(instance=allocation['uuid'],
                                             timeout=self._claim_timeout)
            time.sleep(delay)
            delay = min(delay * 2, _ALLOCATION_POLL_MAX)
            allocation = self._api.get_allocation(allocation['uuid'])
            if allocation is None:
                raise exception.NodeAlreadyClaimed(
                    node='?', instance='?',
                    reason='the allocation disappeared')
        return allocation

    # -- release ----------------------------------------------------------

    def release(self, instance_uuid, node_uuid, deadline):
        """Undo the claim of ``instance_uuid``, on ``node_uuid`` if known.

        Only ever clears the node's ``instance_uuid`` while it holds the
        instance and its mark: the removal is guarded by the mark
        (:func:`.ownership.release_patch`), so one that arrives after
        another release and a new claim is refused by Ironic.  A lost
        answer is read back, never assumed.
        """
        if self._api.supports('allocations'):
            # Also clears instance_uuid of the node it allocated, and of no
            # other: its UUID is the instance's.
            self._api.delete_allocation(instance_uuid)
        if not node_uuid:
            return
        while True:
            node = self._read_claim(node_uuid)
            if node is None or node.get('instance_uuid') != instance_uuid:
                return
            mark = ownership.of(node)
            if mark is None:
                # Claimed by a version without marks, or instance_info was
                # replaced by someone: nothing to guard the removal with.
                LOG.warning('Node %(node)s carries no ownership mark for '
                            '%(instance)s: releasing it unguarded',
                            {'node': node_uuid, 'instance': instance_uuid})
                patch = [{'op': 'remove', 'path': '/instance_uuid'}]
            else:
                patch = ownership.release_patch(instance_uuid, mark['group'])
            try:
                self._api.patch_node(node_uuid, patch, idempotent=False,
                                     deadline=deadline)
                return
            except exception.RequestOutcomeUnknown as e:
                error = e
            except exception.IronicAPIError as e:
                if e.status_code != 400 or mark is None:
                    raise
                # The guard failed: the mark went away after the read (a
                # concurrent release, perhaps a new claim).
                error = e
            if time.monotonic() >= deadline:
                raise exception.IronicUnavailable(
                    reason='release of node %s: %s' % (node_uuid, error))
            LOG.warning('Release of node %(node)s for %(instance)s: '
                        '%(error)s; reading it back',
                        {'node': node_uuid, 'instance': instance_uuid,
                         'error': error})

    def _read_claim(self, node_uuid):
        try:
            return self._api.get_node(node_uuid, fields=[
                'instance_uuid', 'instance_info'])
        except exception.NodeNotFound:
            return None
