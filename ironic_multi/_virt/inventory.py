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


"""Keeping this compute node's inventory in placement current.

:mod:`.capacity` says what the inventory is; an :class:`InventoryReporter`
says when it is computed and written:

- at each refresh of the reservation layer (the resource tracker writes
  it at its periodic, from :meth:`InventoryReporter.update_provider_tree`,
  with no round trip under its lock);
- at once, when this provider's offer changes (a claim from its shards
  by any member, the ring moved, Nova disabled a service) or when an
  allocation is about to leave it (a destroy, a build that found no
  node): Nova's periodic comes every 60 s by default, and meanwhile this
  provider would offer a node that is gone;
- when placement's usage of this provider moved without a claim (a build
  that failed here left with its allocation).
"""

import threading

from nova import context as nova_context
import os_traits
from oslo_log import log as logging

from ironic_multi._reservation import worker
from ironic_multi._virt import capacity
from ironic_multi._virt import consumers
from ironic_multi._virt import host as host_mod
from ironic_multi import conf
from ironic_multi import exception

LOG = logging.getLogger(__name__)
CONF = conf.CONF
# A build waits for a node between the scheduler's allocation and its
# claim; one that seems to wait longer is looked up in Ironic (an
# instance adopted from another host holds its node without a claim
# here), at most once per this many seconds.
CONFIRM_WAITING_AFTER = 60


class InventoryReporter(object):
    """The inventory of ``host``'s compute node, told to placement.

    :param reserver: the started service's Reserver.
    :param client: returns the compute manager's placement client (None
        when there is none).
    """

    def __init__(self, host, reserver, client):
        self._host = host
        self._provider = host_mod.compute_node_uuid(host)
        self._reserver = reserver
        self._client = client
        self.inventory = None
        # Whether the resource tracker reported this compute node once:
        # before that, placement may not know its provider yet.
        self._reported = False
        # What placement counted used when the inventory was computed.
        self._used = None
        # Instances Nova gave up on whose nodes are back in the pool.
        self._nodeless = set()
        self.waiting = capacity.WaitingBuilds(self._holds_node,
                                              CONFIRM_WAITING_AFTER)
        # One computation at a time, in the order they read: an inventory
        # computed before another's must not be written after it.
        self._telling = threading.RLock()
        # Calls of tell() made so far, the last one the latest write
        # began after, and whether a write is under way.
        self._turns = threading.Condition()
        self._asked = self._covered = 0
        self._writing = False
        # Whether the service is enabled, as last told (set_host_enabled
        # or the COMPUTE_STATUS_DISABLED trait).
        self._offering = True
        self._offering_lock = threading.Lock()

    def start(self):
        """Follow the reservation layer's refreshes and changes."""
        self._reserver.on_refresh(self.refresh)
        self._reserver.on_capacity_change(self.tell)
        # What placement counts used on this provider moves without any
        # claim: a build that failed here leaves with its allocation.
        self._reserver.add_periodic(
            'placement usages', self.follow_usages,
            CONF.ironic_multi.placement_poll_interval)

    def refresh(self, reserver=None):
        """Compute the inventory, in the refresh's thread.

        The cluster's free count and this host's use are read together, so
        they agree: placement's own count of this host's allocations moves
        the free count between refreshes.  And nothing here runs under the
        resource tracker's lock, where builds queue.
        """
        reserver = reserver or self._reserver
        with self._telling:
            allocations = None
            client = self._client()
            if client is not None:
                allocations = capacity.allocations_in_placement(
                    client, self._provider)
            if allocations is None:
                used, idle, leaving = capacity.used_by_flavors(
                    capacity.flavors_on_host(self._host)), {}, {}
            else:
                used = capacity.add_up(allocations.values())
                nodeless = self._idle(allocations)
                idle = capacity.add_up(allocations[uuid] for uuid in nodeless)
                reserver.builds_waiting(self.waiting.update(
                    allocations, nodeless, reserver.claimed_lately()))
                leaving = capacity.add_up(
                    allocations[uuid] for uuid in self.waiting.leaving()
                    if uuid not in nodeless)
            self._used = used
            offered, waiting = reserver.offer()
            self.inventory = capacity.inventory(offered, used, idle,
                                                waiting, leaving)
            reserver.publish_extra(inventory=self.inventory)

    def tell(self, reserver=None):
        """Tell placement this provider's offer now, not at the periodic.

        A claim from this service's shards (by any member) takes a node
        off its offer; left to Nova's ``update_available_resource``
        (every 60 s by default), this provider would offer it meanwhile,
        and a build sent here would have to reschedule.
        """
        client = self._reported_client()
        if client is None:
            return
        # A burst of calls (builds that found no node, destroys) makes
        # two writes, not one each: a call made during a write waits for
        # the next, which covers every call made before it began.
        with self._turns:
            self._asked += 1
            mine = self._asked
            while self._writing:
                self._turns.wait()
                if self._covered >= mine:
                    return
            self._writing = True
            covering = self._asked
        try:
            self._tell_now(client, reserver)
        finally:
            with self._turns:
                self._covered = covering
                self._writing = False
                self._turns.notify_all()

    def _tell_now(self, client, reserver):
        with self._telling:
            self.refresh(reserver)
            inventory = self.inventory
            try:
                told = capacity.tell_placement(
                    client, nova_context.get_admin_context(),
                    self._provider, inventory)
            except capacity.InventoryConflict as e:
                # A burst of allocations on this provider: try again as
                # soon as this pass ends, not at the next periodic.
                LOG.debug('Placement\'s inventory moved under every write '
                          '(%s); writing it again', e)
                self._reserver.capacity_changed()
                return
            except Exception as e:
                LOG.warning('Cannot tell placement this provider\'s offer '
                            'now (%s); the next periodic update of the '
                            'resources does', e)
                return
        if told:
            LOG.debug('Told placement this provider\'s offer: %s',
                      inventory)

    def hold(self, instance_uuids):
        """These instances hold their nodes: none of them is a build."""
        self.waiting.hold(instance_uuids)

    def allocation_leaves(self, instance):
        """Tell placement now: the instance's allocation leaves next.

        Nova deletes it once the failed build or the destroy returns.
        Placement's count of this provider's use then drops at once,
        while its node is not free (cleaning, or never claimed because
        none was free): told only later, this provider would offer one
        node too many meanwhile.
        """
        self.waiting.leaves(instance.uuid)
        try:
            self.tell()
        except Exception:
            # Not at the cost of the build's or the destroy's own outcome.
            LOG.warning('Cannot tell placement the capacity now; the next '
                        'change or periodic does', exc_info=True,
                        instance=instance)

    def follow_usages(self):
        """Compute the inventory again when placement's usage moved.

        ``reserved`` hides what the cluster uses, less this provider's
        usage as it was: an allocation that left since (a build that
        failed here, rescheduled or given up) would show one node free
        that is not, until the next periodic.  And a build allocated here
        waits for a node from now on.  One small read per
        ``placement_poll_interval``.
        """
        client = self._reported_client()
        if client is None:
            return
        usages = capacity.usages_in_placement(client, self._provider)
        if usages is not None and usages != self._used:
            self._reserver.capacity_changed()

    def update_provider_tree(self, provider_tree, nodename):
        # No network round trip here, under the resource tracker's lock:
        # the inventory comes from the last refresh (the first one, in
        # init_host, made it).
        if self.inventory is None:
            self.refresh()
        provider_tree.update_inventory(nodename, self.inventory)
        self._reported = True
        traits = provider_tree.data(nodename).traits
        # The resource tracker keeps the trait in step with the service's
        # disabled flag: a service disabled while it was down, or whose
        # set_host_enabled call was lost, is told here.
        self.offering(os_traits.COMPUTE_STATUS_DISABLED not in traits)
        provider_tree.update_traits(nodename, capacity.provider_traits(
            traits, self._reserver.cluster_traits()))

    def offering(self, enabled):
        """Nova enabled or disabled this compute service.

        The scheduler sends a disabled service no build, so its shards'
        free nodes are offered by the next host of the ring instead.
        Published from a thread of its own: no round trip under the
        resource tracker's lock.
        """
        with self._offering_lock:
            if enabled == self._offering:
                return None
            self._offering = enabled
        LOG.info('Compute service %(host)s %(state)s: %(what)s',
                 {'host': self._host,
                  'state': 'enabled' if enabled else 'disabled',
                  'what': 'offering its shards\' free nodes' if enabled
                  else 'the ring\'s next host offers its shards\' free '
                       'nodes'})
        return worker.in_daemon_thread('ironic-multi-offering',
                                       self._reserver.set_offering, enabled)

    def _reported_client(self):
        """The placement client, once the resource tracker reported.

        Before its first report placement may not know this compute
        node's provider yet: None.
        """
        return self._client() if self._reported else None

    def _holds_node(self, instance_uuid):
        """Whether the instance holds a node; None when unknown."""
        try:
            return self._reserver.lookup(instance_uuid) is not None
        except exception.IronicMultiError as e:
            LOG.debug('Cannot look up the node of instance %(uuid)s: '
                      '%(error)s', {'uuid': instance_uuid, 'error': e})
            return None

    def _idle(self, allocations):
        """The consumers whose allocation holds no node, and never will.

        Builds Nova gave up on; each one's node is looked up once (a
        release may still be on its way), and then no more while it stays
        given up.  When Nova cannot say, none: the allocations then count
        as nodes in use, the safe side.
        """
        try:
            given_up = consumers.given_up(allocations)
        except Exception as e:
            LOG.debug('Cannot ask Nova which builds failed: %s', e)
            return set()
        self._nodeless &= given_up
        for uuid in sorted(given_up - self._nodeless):
            if self._holds_node(uuid) is False:
                self._nodeless.add(uuid)
        return set(self._nodeless)
