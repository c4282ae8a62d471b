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

"""Where a claim looks for a node, in which order, within which bound.

Each step only if the previous found nothing free:

1. the ready pool of the owned shards (no listing of the source);
2. the shards of the other hosts, ring successors first (a query each);
3. every node of the ring's scope, read fresh (the pool may be stale;
   new shard keys).

Candidates are offered in shuffled batches, so that racing services pick
different nodes; the provider's atomic claim decides.  They are drawn
lazily: a claim looks at the few nodes it offers, not at every node of a
pool of thousands.  The whole claim, listings included, is bounded by
``claim_timeout``.
"""

import threading
import time

from oslo_log import log as logging

from ironic_multi._reservation import filters
from ironic_multi._reservation import lifecycle
from ironic_multi import exception

LOG = logging.getLogger(__name__)


class ClaimStrategy(object):
    """Claims for one host through a provider, guided by the ring.

    :param provider: the node provider.
    :param ring: the host's started :class:`~.ring.ShardRing`.
    :param batch_size: candidates per attempt (``claim_candidates``).
    :param timeout: seconds one claim may take (``claim_timeout``).
    :param stats: a :class:`~.stats.Stats` for claims, races and latency.
    :param claimer: the member id the claims' ownership marks name.
    """

    def __init__(self, provider, ring, batch_size, timeout, stats,
                 claimer=None):
        self._provider = provider
        self._claimer = claimer
        self._ring = ring
        self._batch_size = batch_size
        self._timeout = timeout
        self._stats = stats
        # Nodes another claim of this service is offering right now: its
        # threads would otherwise race each other for the same nodes.
        self._in_flight = set()
        self._lock = threading.Lock()

    def claim(self, instance_uuid, requirements, deployment=None):
        """Reserve a node matching ``requirements`` for ``instance_uuid``.

        Idempotent: an instance that already holds a node gets it back.

        :param deployment: what the deploy will write, for the provider to
            write with the claim where it can.

        :raises NoNodeAvailable: nothing matches anywhere.
        :raises ClaimTimeout: the bound passed first; no reservation is
            left behind.
        """
        started = time.monotonic()
        deadline = started + self._timeout
        with self._provider.bounded(deadline):
            for stage, candidates in self._candidates(requirements,
                                                      instance_uuid,
                                                      deadline):
                reservation = self._try(stage, candidates, instance_uuid,
                                        requirements, deadline, deployment)
                if reservation is not None:
                    self._stats.count('claims')
                    self._stats.observe('claim',
                                        time.monotonic() - started)
                    LOG.info('Reserved node %(node)s for instance '
                             '%(instance)s from %(stage)s in %(seconds).3f s',
                             {'node': reservation.node_uuid,
                              'instance': instance_uuid, 'stage': stage,
                              'seconds': time.monotonic() - started})
                    return reservation
            # No lookup before: the provider's claim is idempotent, so only
            # a claim that found no node asks whether the instance holds
            # one already.
            existing = self._provider.lookup(instance_uuid)
        if existing is not None and existing.state in lifecycle.HOLDING:
            return existing
        self._stats.count('no node available')
        raise exception.NoNodeAvailable(instance=instance_uuid,
                                        requirements=requirements.describe())

    def _try(self, stage, candidates, instance_uuid, requirements, deadline,
             deployment):
        for batch, mine in self._batches(candidates):
            try:
                self._check(deadline, instance_uuid)
                return self._provider.claim(batch, instance_uuid,
                                            requirements, deadline,
                                            claimer=self._claimer,
                                            deployment=deployment)
            except exception.NodeAlreadyClaimed as e:
                self._stats.count('claim races lost')
                LOG.debug('Claim for %(instance)s lost a race in %(stage)s: '
                          '%(error)s', {'instance': instance_uuid,
                                        'stage': stage, 'error': e})
            finally:
                with self._lock:
                    self._in_flight.difference_update(mine)
        return None

    def _batches(self, candidates):
        """``(batch, marked)`` pairs; ``marked`` are now on offer by us.

        A batch holds the next nodes that no other claim of this service
        offers now.  Those on offer are put aside, and raced for all the
        same once the others are spent (marking only those no longer on
        offer by then).
        """
        on_offer, batch = [], []
        for node in candidates:
            with self._lock:
                if node['uuid'] in self._in_flight:
                    on_offer.append(node)
                    continue
                self._in_flight.add(node['uuid'])
            batch.append(node)
            if len(batch) == self._batch_size:
                yield batch, {n['uuid'] for n in batch}
                batch = []
        if batch:
            yield batch, {n['uuid'] for n in batch}
        for start in range(0, len(on_offer), self._batch_size):
            batch = on_offer[start:start + self._batch_size]
            with self._lock:
                marked = {n['uuid'] for n in batch} - self._in_flight
                self._in_flight.update(marked)
            yield batch, marked

    def _candidates(self, requirements, instance_uuid, deadline):
        """``(stage, fresh nodes)`` in the order the module gives."""
        tried = set()

        def fresh(nodes):
            for node in nodes:
                if node['uuid'] not in tried:
                    tried.add(node['uuid'])
                    yield node

        yield 'the ready pool', fresh(self._provider.ready_candidates(
            requirements, self._ring.owned()))
        for host in self._ring.successors(self._ring.host):
            shards = self._ring.owned_by(host)
            if shards:
                self._check(deadline, instance_uuid)
                yield ('shards of %s' % host, fresh(filters.shuffled(
                    self._provider.search(requirements, shards))))
        self._check(deadline, instance_uuid)
        yield 'all nodes', fresh(filters.shuffled(
            self._provider.search(requirements, self._ring.scope)))

    def _check(self, deadline, instance_uuid):
        if time.monotonic() >= deadline:
            raise exception.ClaimTimeout(instance=instance_uuid,
                                         timeout=self._timeout)
