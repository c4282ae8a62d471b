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

"""Reserve a node for an instance: the one entry point of the layer.

A :class:`Reserver` joins the coordination group, places the backend's
shard keys on the ring, keeps the ready pool of the shards it owns, and
claims in this order, each step only if the previous found nothing free:

1. the ready pool of the owned shards (no Ironic listing);
2. the shards of the other hosts, ring successors first (a query each);
3. every node, read fresh (the pool may be stale; new shard keys).

The ring only keeps services out of each other's way; the backend's
atomic claim is what makes a reservation safe.
"""

import random
import threading
import time

from futurist import periodics
from oslo_log import log as logging
from stevedore import driver as stevedore_driver

from ironic_multi.conf import CONF
from ironic_multi import exception
from ironic_multi.reservation import membership as membership_mod
from ironic_multi.reservation import ring as ring_mod
from ironic_multi.reservation import states

LOG = logging.getLogger(__name__)

BACKENDS_NAMESPACE = 'ironic_multi.reservation.backends'

# Reservations in these states hold a node; asking again returns them.
_HOLDING = frozenset([states.State.CLAIMED, states.State.DEPLOYING,
                      states.State.ACTIVE])


def load_backend(conf=CONF, name=None):
    """The reservation backend named ``name`` (by default from config)."""
    name = name or conf.ironic_multi.reservation_backend
    try:
        manager = stevedore_driver.DriverManager(
            BACKENDS_NAMESPACE, name, invoke_on_load=True,
            invoke_args=(conf,))
    except stevedore_driver.NoMatches:
        known = stevedore_driver.ExtensionManager(BACKENDS_NAMESPACE).names()
        raise exception.BackendNotFound(name=name,
                                        known=', '.join(sorted(known)))
    return manager.driver


class Reserver(object):
    """Claims and releases nodes for instances on behalf of one host."""

    def __init__(self, conf=CONF, host=None, backend=None, membership=None):
        self.conf = conf
        self._opts = conf.ironic_multi
        self.backend = backend or load_backend(conf)
        self.membership = membership or membership_mod.Membership(host=host)
        self.ring = None
        self._worker = None
        self._worker_thread = None
        self._refresh_lock = threading.Lock()

    @property
    def api(self):
        """The IronicAPI of the ``ironic`` backend."""
        return self.backend.api

    # -- life -------------------------------------------------------------

    def start(self, background=True):
        """Join the group, read the owned shards, start refreshing."""
        self.backend.start()
        self.membership.start()
        self.ring = ring_mod.ShardRing(self.membership)
        self.refresh()
        if background:
            self._start_worker()

    def stop(self):
        if self._worker is not None:
            self._worker.stop()
            self._worker_thread.join(timeout=10)
            self._worker = self._worker_thread = None
        self.membership.stop()
        self.backend.stop()

    def _start_worker(self):
        @periodics.periodic(self._opts.pool_refresh_interval,
                            run_immediately=False)
        def refresh_pool():
            try:
                self.refresh()
            except exception.IronicMultiError as e:
                # The next pass retries; claims still work from the pool
                # and from fresh queries meanwhile.
                LOG.warning('Refreshing the ready pool failed: %s', e)

        self._worker = periodics.PeriodicWorker([(refresh_pool, (), {})])
        self._worker_thread = threading.Thread(
            target=self._worker.start, name='ironic-multi-refresh',
            daemon=True)
        self._worker_thread.start()

    def refresh(self):
        """Re-read the ring, refresh the pool, publish capacity.

        Members and shard keys are read anew; the pool of the owned shards
        is refreshed and their capacity published to the other members.

        :returns: the number of node records read from the backend.
        """
        with self._refresh_lock:
            owned = self.ring.refresh(self.backend.shard_keys())
            read = self.backend.refresh(owned)
            owned = self.ring.owned()
            self.membership.publish({
                'capacity': self.backend.capacity(owned),
                'traits': sorted(self.backend.usable_traits(owned))})
        return read

    # -- capacity -----------------------------------------------------------

    def owned_shards(self):
        return self.ring.owned()

    def local_capacity(self):
        """``{resource_class: {'total': n, 'free': n}}`` of owned shards."""
        return self.backend.capacity(self.ring.owned())

    def cluster_traits(self):
        """The traits of usable nodes, over what every member published."""
        return {trait for payload in self.membership.published().values()
                for trait in payload.get('traits') or ()}

    def cluster_capacity(self):
        """The sum of what every live member published."""
        totals = {}
        for payload in self.membership.published().values():
            for rc, counts in (payload.get('capacity') or {}).items():
                entry = totals.setdefault(rc, {'total': 0, 'free': 0})
                entry['total'] += counts.get('total', 0)
                entry['free'] += counts.get('free', 0)
        return totals

    # -- claims ---------------------------------------------------------------

    def claim(self, instance_uuid, requirements):
        """Reserve a node matching ``requirements`` for ``instance_uuid``.

        Idempotent: an instance that already holds a node gets it back.

        :raises NoNodeAvailable: nothing matches anywhere.
        :raises ClaimTimeout: ``claim_timeout`` passed first; no
            reservation is left behind.
        """
        started = time.monotonic()
        deadline = started + self._opts.claim_timeout
        with self.backend.bounded(deadline):
            return self._claim(instance_uuid, requirements, started,
                               deadline)

    def _claim(self, instance_uuid, requirements, started, deadline):
        # No lookup first: the backend's claim is idempotent (Ironic names
        # the instance in its conflict), so only a claim that found no
        # node pays for asking whether the instance holds one already.
        tried = set()
        for stage, candidates in self._candidates(requirements):
            fresh = [n for n in candidates if n['uuid'] not in tried]
            random.shuffle(fresh)  # racing services pick different nodes
            size = self._opts.claim_candidates
            for start in range(0, len(fresh), size):
                if time.monotonic() >= deadline:
                    raise exception.ClaimTimeout(
                        instance=instance_uuid,
                        timeout=self._opts.claim_timeout)
                batch = fresh[start:start + size]
                try:
                    reservation = self.backend.claim(
                        batch, instance_uuid, requirements, deadline)
                except exception.NodeAlreadyClaimed as e:
                    LOG.debug('Claim for %(instance)s lost a race in '
                              '%(stage)s: %(error)s',
                              {'instance': instance_uuid, 'stage': stage,
                               'error': e})
                    tried.update(n['uuid'] for n in batch)
                    continue
                LOG.info('Reserved node %(node)s for instance %(instance)s '
                         'from %(stage)s in %(seconds).3f s',
                         {'node': reservation.node_uuid,
                          'instance': instance_uuid, 'stage': stage,
                          'seconds': time.monotonic() - started})
                return reservation
        existing = self.backend.lookup(instance_uuid)
        if existing is not None and existing.state in _HOLDING:
            return existing
        raise exception.NoNodeAvailable(instance=instance_uuid,
                                        requirements=requirements.describe())

    def _candidates(self, requirements):
        """``(stage, nodes)`` in the order the class docstring gives."""
        owned = self.ring.owned()
        yield 'the ready pool', self.backend.ready_nodes(requirements, owned)
        for host in self.ring.successors(self.ring.host):
            shards = self.ring.owned_by(host)
            if shards:
                yield ('shards of %s' % host,
                       self.backend.search(requirements, shards))
        yield 'all nodes', self.backend.search(requirements, None)

    def release(self, instance_uuid):
        """Release the node of ``instance_uuid``; idempotent."""
        return self.backend.release(instance_uuid)

    def lookup(self, instance_uuid):
        return self.backend.lookup(instance_uuid)
