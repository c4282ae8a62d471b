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

"""The observer: Nova and Ironic sampled all through a chaos run.

Every ``period`` seconds, in a thread of its own: Nova's servers, every
Ironic node (straight from Ironic, not through the computes' fault
proxy), Nova's servers again, checked by
:func:`~.invariants.check_sample`; the other deployers' nodes every few
looks; placement's free counts every other look.  A look records what
it found before it reads anything more; a look that fails (a service
restarting) is counted, and the run's verdict judges how many failed and
how long the observer went without a good look
(:func:`~.invariants.check_watched`).
"""

import threading
import time

from oslo_log import log as logging

from ironic_multi.testing.chaos import invariants
from ironic_multi.testing.chaos import workload as workload_mod
from ironic_multi.testing import checks
from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing import ironic_nodes

LOG = logging.getLogger(__name__)

NODE_FIELDS = ('uuid', 'name', 'instance_uuid', 'provision_state',
               'power_state', 'maintenance', 'resource_class', 'owner',
               'lessee', 'instance_info', 'extra', 'conductor_group',
               'traits', 'properties')
PERIOD = 2.0
FOREIGN_EVERY = 3
PLACEMENT_EVERY = 2


class Observer(object):
    """Samples the cloud into the history, flags violations at once.

    ``latest`` is the last look: ``{'servers': [...], 'nodes': [...]}``.
    """

    def __init__(self, cloud, history, foreigners=None, period=PERIOD):
        self.cloud = cloud
        self.history = history
        self.foreigners = foreigners
        self.period = period
        self.latest = None
        self.looks = self.failed_looks = 0
        # The longest time without a good look, and when the last was.
        self.longest_blind = 0.0
        self._last_good = None
        self._last_nodes = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run,
                                        name='chaos-observer', daemon=True)
        self._seen = set()
        self._ironic = ironic_nodes.admin_nodes(cloud.ironic_server)
        self._connection = None
        # The connections placement_views() reads with, one per thread:
        # the faults and the workload ask from their own threads, while
        # the observer's thread drops its look's connection after a failure.
        self._placement = threading.local()
        self.classes = cloud.layout.resource_classes()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self):
        self._last_good = time.monotonic()
        while not self._stop.is_set():
            good = self.looks
            try:
                self.look()
            except Exception as e:
                # A look that recorded its sample before a later read
                # failed (placement, the foreign nodes) was a good one.
                if self.looks == good:
                    self.failed_looks += 1
                LOG.warning('A look at the cloud failed (%d failed so '
                            'far): %s', self.failed_looks, e)
                # New clients after a failure: a restarted service may
                # have closed their connections for good.
                self._connection = None
            self._stop.wait(self.period)
        self._blind_until(time.monotonic())

    def _blind_until(self, now):
        self.longest_blind = max(self.longest_blind, now - self._last_good)
        self._last_good = now

    def watched(self):
        """Violations of :data:`~.invariants.WATCHED` so far."""
        return invariants.check_watched(self.looks, self.failed_looks,
                                        self.longest_blind)

    def look(self):
        """One sample; returns the violations it found."""
        if self._connection is None:
            self._connection = self.cloud.connection(
                cloud_mod.ADMIN_CLOUD, shared=False)
        compute = self._connection.compute
        before = workload_mod.server_dicts(compute)
        nodes = self._ironic.list_nodes(fields=NODE_FIELDS)
        after = workload_mod.server_dicts(compute)
        self.latest = {'servers': after, 'nodes': nodes}
        foreign = self.foreigners.node_uuids if self.foreigners else ()
        found = invariants.check_sample(before, nodes, after,
                                        self._last_nodes, foreign)
        # Recorded before anything more is read: a read that fails below
        # must not lose them.
        self.report(found)
        self.looks += 1
        if self._last_good is not None:
            self._blind_until(time.monotonic())
        if self.foreigners and self.looks % FOREIGN_EVERY == 0:
            foreign_found = self.foreigners.check(self._ironic)
            self.report(foreign_found)
            found += foreign_found
        placement = None
        if self.looks % PLACEMENT_EVERY == 0:
            placement = self.placement_free()
        counts = {}
        for server in after:
            counts[server['status']] = counts.get(server['status'], 0) + 1
        self.history.sample({
            'free': workload_mod.node_truth(nodes),
            'placement': placement, 'servers': counts,
            'held': sum(1 for n in nodes if n.get('instance_uuid'))})
        return found

    def report(self, found):
        """Record each violation once (a lasting one is seen every look)."""
        for invariant, detail in found:
            if (invariant, detail) not in self._seen:
                self._seen.add((invariant, detail))
                LOG.error('Violation of "%s": %s', invariant, detail)
                self.history.violation(invariant, detail)

    def placement_views(self):
        """``{host: {placement class: view}}`` of every compute's provider.

        Through a connection of the calling thread's own.
        """
        connection = getattr(self._placement, 'connection', None)
        if connection is None:
            connection = self._placement.connection = self.cloud.connection(
                cloud_mod.ADMIN_CLOUD, shared=False)
        try:
            return self._views(connection.placement)
        except Exception:
            # A new one next time: placement may have closed it for good.
            self._placement.connection = None
            raise

    def _views(self, placement):
        views = {}
        for provider in placement.resource_providers():
            if provider.name not in self.cloud.computes:
                continue
            inventories = {i.resource_class: {'total': i.total,
                                              'reserved': i.reserved}
                           for i in placement.resource_provider_inventories(
                               provider)}
            usages = placement.get(
                '/resource_providers/%s/usages' % provider.id).json().get(
                    'usages', {})
            views[provider.name] = {
                checks.placement_class(rc): checks.placement_view(
                    inventories.get(checks.placement_class(rc)),
                    usages.get(checks.placement_class(rc), 0))
                for rc in self.classes}
        return views

    def placement_free(self):
        """``{resource class: the providers' free counts added up}``.

        Each offers its own shards' free nodes; one over its capacity
        offers nothing.
        """
        views = self.placement_views()
        free = {}
        for rc in self.classes:
            name = checks.placement_class(rc)
            # A compute that has not reported yet has no inventory.
            offered = checks.offered(
                {h: v for h, v in views.items() if v.get(name)}, name)
            if offered is not None:
                free[rc] = offered
        return free
