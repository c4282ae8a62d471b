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

"""Reserve real Ironic nodes.

The claim is one atomic write in Ironic, never a lock of our own: an
Allocation whose UUID is the instance UUID (API 1.52), or else the node's
``instance_uuid`` set by PATCH.  Ironic refuses both with a conflict when
the node (or the instance) is taken, so no interleaving of services can
give one node to two instances, and one instance never holds two nodes.
"""

import time

from oslo_log import log as logging

from ironic_multi import exception
from ironic_multi.ironic import client as ironic_client
from ironic_multi.reservation.backends import base
from ironic_multi.reservation import filters
from ironic_multi.reservation import pool as ready_pool
from ironic_multi.reservation import ring
from ironic_multi.reservation import states

LOG = logging.getLogger(__name__)

_BASE_FIELDS = ('uuid', 'name', 'resource_class', 'properties', 'traits',
                'instance_uuid', 'provision_state', 'maintenance',
                'power_state', 'conductor_group')
# Not ``allocation_uuid``: Ironic 39 answers HTTP 500 when it is in
# ``fields``.  An allocation sets instance_uuid anyway.
_FEATURE_FIELDS = {'owner': ('owner',), 'lessee': ('lessee',),
                   'shards': ('shard',)}
# Marks a node that a conflict showed to be taken, by whom we do not know;
# the next refresh brings the truth.
_TAKEN = 'taken'
_ALLOCATION_POLL = 0.05
_ALLOCATION_POLL_MAX = 1.0


class IronicBackend(base.Backend):
    name = 'ironic'

    def __init__(self, conf, api=None):
        super().__init__(conf)
        self.api = api or ironic_client.IronicAPI(conf)
        self._opts = conf.ironic_multi
        self.pool = ready_pool.ReadyPool(
            read_full=self._read_nodes, read_changed=self._read_changed,
            shard_of=self.shard_of,
            full_interval=self._opts.pool_full_refresh_interval)
        self._fields = None

    # -- reading ----------------------------------------------------------

    @property
    def fields(self):
        if self._fields is None:
            fields = list(_BASE_FIELDS)
            for feature, extra in _FEATURE_FIELDS.items():
                if self.api.supports(feature):
                    fields.extend(extra)
            self._fields = tuple(fields)
        return self._fields

    def shard_of(self, node):
        return node.get('shard') or ring.fallback_shard(
            node['uuid'], self._opts.fallback_shard_count)

    def _split(self, shards):
        """Real shard keys and the fallback keys of unsharded nodes."""
        virtual = {ring.fallback_shard_name(i)
                   for i in range(self._opts.fallback_shard_count)}
        shards = set(shards)
        return sorted(shards - virtual), shards & virtual

    def _read_nodes(self, shards, **filters):
        """Nodes of ``shards`` (both kinds; None: all), filtered."""
        filters.setdefault('conductor_group', self._opts.conductor_group)
        if shards is None:
            return self.api.list_nodes(fields=self.fields, **filters)
        real, virtual = self._split(shards)
        nodes = []
        if real and self.api.supports('shards'):
            nodes += self.api.list_nodes(fields=self.fields, shard=real,
                                         **filters)
        if virtual or not self.api.supports('shards'):
            sharded = {'sharded': False} if self.api.supports('shards') else {}
            nodes += [n for n in self.api.iter_nodes(fields=self.fields,
                                                     **sharded, **filters)
                      if self.shard_of(n) in virtual]
        return nodes

    def _read_changed(self, shards):
        # One query newest-first over all nodes: shard filtering happens in
        # the pool, and most refreshes stop on the first page.
        return self.api.iter_nodes(
            detail=True, page_size=25, sort_key='updated_at',
            sort_dir='desc', conductor_group=self._opts.conductor_group)

    def shard_keys(self):
        counts = {}
        if self.api.supports('shards'):
            counts = {name: count
                      for name, count in self.api.list_shards().items()
                      if name != 'None'}
            unsharded = self.api.iter_nodes(fields=['uuid'], sharded=False)
        else:
            unsharded = self.api.iter_nodes(fields=['uuid'])
        for node in unsharded:
            key = self.shard_of({'uuid': node['uuid']})
            counts[key] = counts.get(key, 0) + 1
        return counts

    def bounded(self, deadline):
        return self.api.bounded(deadline)

    def refresh(self, shards):
        return self.pool.refresh(shards)

    def flush(self):
        self.pool.flush()

    def nodes(self, shards):
        return self.pool.nodes(shards)

    def capacity(self, shards):
        return ready_pool.count_capacity(self.pool.nodes(shards))

    def ready_nodes(self, requirements, shards):
        return filters.match(self.pool.ready(shards), requirements)

    def search(self, requirements, shards):
        nodes = self._read_nodes(
            shards, provision_state='available', associated=False,
            maintenance=False)
        return filters.match(nodes, requirements)

    # -- claiming ---------------------------------------------------------

    def claim(self, candidates, instance_uuid, requirements, deadline):
        if not candidates:
            raise exception.NodeAlreadyClaimed(
                node='-', instance=instance_uuid, reason='no candidates')
        if self._opts.use_allocations and self.api.supports('allocations'):
            reservation = self._claim_by_allocation(
                candidates, instance_uuid, requirements, deadline)
        else:
            reservation = self._claim_by_patch(candidates, instance_uuid,
                                               deadline)
        self.pool.mark_taken(reservation.node_uuid, instance_uuid)
        return reservation

    def _claim_by_patch(self, candidates, instance_uuid, deadline):
        for node in candidates:
            try:
                self.api.claim_node(node['uuid'], instance_uuid,
                                    deadline=deadline)
            except exception.NodeAlreadyClaimed as e:
                if instance_uuid in str(e.reason):
                    # The instance holds another node already (a retried
                    # spawn, or an earlier answer that was lost).
                    existing = self.lookup(instance_uuid)
                    if existing is not None:
                        return existing
                LOG.debug('Node %(node)s was taken: %(reason)s',
                          {'node': node['uuid'], 'reason': e.reason})
                self.pool.mark_taken(node['uuid'], _TAKEN)
                continue
            except exception.RequestOutcomeUnknown as e:
                LOG.warning('Claim of node %(node)s for %(instance)s: '
                            '%(error)s; reading it back',
                            {'node': node['uuid'], 'instance': instance_uuid,
                             'error': e})
                holder = self.api.get_node(
                    node['uuid'], fields=['instance_uuid'])['instance_uuid']
                if holder != instance_uuid:
                    continue
            return self._reservation(dict(node, instance_uuid=instance_uuid))
        raise exception.NodeAlreadyClaimed(
            node=','.join(n['uuid'] for n in candidates),
            instance=instance_uuid, reason='every candidate is taken')

    def _claim_by_allocation(self, candidates, instance_uuid, requirements,
                             deadline):
        # An allocation asks for one resource class: offer the candidates
        # of the first candidate's class (all of them match anyway).
        resource_class = candidates[0].get('resource_class')
        same_class = [n['uuid'] for n in candidates
                      if n.get('resource_class') == resource_class]
        allocation = self._create_allocation(
            instance_uuid, same_class, resource_class,
            requirements.required_traits, deadline)
        allocation = self._wait_allocation(allocation, deadline)
        if allocation['state'] == 'active':
            node = next((n for n in candidates
                         if n['uuid'] == allocation['node_uuid']), None)
            if node is None:
                # An allocation of an earlier attempt, on another node.
                node = self.api.get_node(allocation['node_uuid'],
                                         fields=self.fields)
            return self._reservation(dict(node, instance_uuid=instance_uuid))
        # Delete the failed allocation so that the instance UUID is free
        # for the next attempt.
        self.api.delete_allocation(instance_uuid)
        for node_uuid in same_class:
            self.pool.mark_taken(node_uuid, _TAKEN)
        raise exception.NodeAlreadyClaimed(
            node=','.join(same_class), instance=instance_uuid,
            reason=allocation.get('last_error') or allocation['state'])

    def _create_allocation(self, instance_uuid, node_uuids, resource_class,
                           traits, deadline):
        try:
            return self.api.create_allocation(
                instance_uuid, node_uuids, resource_class=resource_class,
                traits=traits, deadline=deadline)
        except (exception.RequestOutcomeUnknown,
                exception.AllocationFailed) as e:
            # Lost answer, or an allocation of this instance already exists
            # (a retried spawn): the UUID makes reading it back exact.
            existing = self.api.get_allocation(instance_uuid)
            if existing is None:
                if isinstance(e, exception.AllocationFailed):
                    raise
                return self._create_allocation(
                    instance_uuid, node_uuids, resource_class, traits,
                    deadline)
            return existing

    def _wait_allocation(self, allocation, deadline):
        delay = _ALLOCATION_POLL
        while allocation['state'] == 'allocating':
            if time.monotonic() + delay > deadline:
                # Do not leave an allocation behind that may still succeed.
                self.api.delete_allocation(allocation['uuid'])
                raise exception.ClaimTimeout(
                    instance=allocation['uuid'],
                    timeout=self._opts.claim_timeout)
            time.sleep(delay)
            delay = min(delay * 2, _ALLOCATION_POLL_MAX)
            allocation = self.api.get_allocation(allocation['uuid'])
            if allocation is None:
                raise exception.NodeAlreadyClaimed(
                    node='?', instance='?',
                    reason='the allocation disappeared')
        return allocation

    # -- releasing and recovery ---------------------------------------------

    def release(self, instance_uuid):
        reservation = self.lookup(instance_uuid)
        if reservation is None:
            return None
        if self.api.supports('allocations'):
            # Also clears instance_uuid of the node it allocated.
            self.api.delete_allocation(instance_uuid)
        if reservation.node_uuid:
            node = self.api.get_node(reservation.node_uuid,
                                     fields=['instance_uuid'])
            if node['instance_uuid'] == instance_uuid:
                self.api.patch_node(reservation.node_uuid, [
                    {'op': 'remove', 'path': '/instance_uuid'}])
            self.pool.mark_released(reservation.node_uuid)
        LOG.info('Released node %(node)s of instance %(instance)s',
                 {'node': reservation.node_uuid, 'instance': instance_uuid})
        return reservation.moved_to(states.State.RELEASING).moved_to(
            states.State.RELEASED)

    def lookup(self, instance_uuid):
        node = self.api.node_by_instance(instance_uuid, fields=self.fields)
        if node is not None:
            return self._reservation(node)
        if not self.api.supports('allocations'):
            return None
        allocation = self.api.get_allocation(instance_uuid)
        if allocation is None:
            return None
        state = (states.State.ERROR if allocation['state'] == 'error'
                 else states.State.REQUESTED)
        return base.Reservation(instance_uuid=instance_uuid, node_uuid=None,
                                state=state)

    def reservations(self):
        return [self._reservation(node) for node in
                self.api.iter_nodes(fields=self.fields, associated=True)]

    def _reservation(self, node):
        return base.Reservation(
            instance_uuid=node['instance_uuid'], node_uuid=node['uuid'],
            state=states.from_ironic_node(node), shard=self.shard_of(node),
            resource_class=node.get('resource_class'))
