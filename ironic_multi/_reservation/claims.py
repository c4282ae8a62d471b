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
different nodes; the provider's atomic claim decides.  The whole claim,
listings included, is bounded by ``claim_timeout``.
"""

import random
import threading
import time

from oslo_log import log as logging

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
        random.shuffle(candidates)
        while candidates:
            self._check(deadline, instance_uuid)
            batch, mine, candidates = self._take(candidates)
            try:
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

    def _take(self, candidates):
        """``(batch, marked, rest)``: ``marked`` are now on offer by us.

        The batch holds the first nodes that no other claim of this service
        offers now; when every one is on offer, it races for them all the
        same (and marks none).  The rest keeps its order.
        """
        with self._lock:
            free = [n for n in candidates if n['uuid'] not in self._in_flight]
            batch = (free or candidates)[:self._batch_size]
            taken = {n['uuid'] for n in batch}
            marked = taken - self._in_flight
            self._in_flight.update(marked)
        return batch, marked, [n for n in candidates
                               if n['uuid'] not in taken]

    def _candidates(self, requirements, instance_uuid, deadline):
        """``(stage, fresh nodes)`` in the order the module gives."""
        tried = set()

        def fresh(nodes):
            nodes = [n for n in nodes if n['uuid'] not in tried]
            tried.update(n['uuid'] for n in nodes)
            return nodes

        yield 'the ready pool', fresh(self._provider.ready_nodes(
            requirements, self._ring.owned()))
        for host in self._ring.successors(self._ring.host):
            shards = self._ring.owned_by(host)
            if shards:
                self._check(deadline, instance_uuid)
                yield ('shards of %s' % host,
                       fresh(self._provider.search(requirements, shards)))
        self._check(deadline, instance_uuid)
        yield 'all nodes', fresh(self._provider.search(requirements,
                                                       self._ring.scope))

    def _check(self, deadline, instance_uuid):
        if time.monotonic() >= deadline:
            raise exception.ClaimTimeout(instance=instance_uuid,
                                         timeout=self._timeout)
