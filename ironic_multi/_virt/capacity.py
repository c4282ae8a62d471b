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

"""What the one compute node tells placement: inventory and traits.

Every service reports the **whole** cluster's nodes, one inventory per
Ironic resource class, and offers the free nodes of the shards it owns
(``free`` below; see :mod:`ironic_multi._reservation.capacity`).
Placement subtracts the allocations against this service's provider
(``used``); ``reserved`` hides the rest of what is not offered::

    total    = nodes of the class that can serve an instance (all shards)
    reserved = total - free - used            (clamped to 0..total)
    capacity - used = total - reserved - used = free

so the providers' free counts add up to the cluster's true free count,
and an allocation takes its unit off the one provider it lands on at
once, in placement (had every provider offered every free node, a burst
could be allocated K times the free nodes before the services told each
other).  With max_unit 1 every instance takes one node.

``used`` is what placement itself counts on the provider
(:func:`allocations_in_placement`), not what the instances on the host
should hold: Nova drops the allocation of an instance whose rebuild
failed on its own host (it treats the failure as an evacuation's), and
the instance, still on the host, would otherwise count one node free too
many for good.  The instances' flavors (:func:`used_by_flavors`) stand in
when placement cannot be read.

Nova keeps the allocation of a build it gave up on (ERROR) until the
server is deleted, but its node went back to the pool.  Such ``idle``
units hold nothing in Ironic: ``total`` grows by them, so that they take
no free node away from the scheduler::

    total    = nodes + idle
    reserved = nodes - free - (used - idle)   (clamped to 0..nodes)

A build the scheduler allocated holds no node until this service claims
one, seconds later in a burst; meanwhile ``free`` still counts that
node.  So the builds that wait for a node here (``waiting``, see
:class:`WaitingBuilds`) are hidden too::

    reserved = nodes - free - (used - idle) + waiting
    capacity - used = free - waiting

which a claim from the own shards does not move (its node leaves
``free`` as its build leaves ``waiting``).
"""

import copy
import re
import threading
import time

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
import os_traits
from oslo_log import log as logging

from ironic_multi._reservation import requirements

LOG = logging.getLogger(__name__)

_RESOURCES = 'resources:'
_CUSTOM = 'CUSTOM_'
_TRAIT_NAME = re.compile(r'^[A-Z0-9_]{1,255}$')
# Traits the resource tracker manages itself (driver capabilities,
# COMPUTE_NODE, COMPUTE_STATUS_DISABLED, OWNER_NOVA): kept as they are.
_NOVA_OWNED = ('COMPUTE_', 'OWNER_')
_STANDARD_TRAITS = frozenset(os_traits.get_traits())


def used_by_flavors(flavors):
    """``{resource class: units}`` that ``flavors`` hold in placement.

    Nova allocates what each flavor's ``resources:CUSTOM_*`` extra specs
    say, so this counts exactly the allocations on this provider.
    """
    used = {}
    for flavor in flavors:
        for key, value in (flavor.get('extra_specs') or {}).items():
            name = key[len(_RESOURCES):]
            if not (key.startswith(_RESOURCES) and name.startswith(_CUSTOM)):
                continue
            try:
                amount = int(value)
            except (TypeError, ValueError):
                continue
            used[name] = used.get(name, 0) + amount
    return used


def allocations_in_placement(client, provider_uuid):
    """``{consumer: {resource class: units}}`` against the provider, or None.

    :param client: Nova's SchedulerReportClient (the compute manager's).
    :returns: None when placement cannot say (logged at DEBUG).
    """
    found = _read(client, provider_uuid, 'allocations')
    if found is None:
        return None
    return {consumer: dict(allocation.get('resources') or {})
            for consumer, allocation in found.items()}


def usages_in_placement(client, provider_uuid):
    """``{resource class: units}`` placement counts used, or None.

    One small read: what :func:`allocations_in_placement` adds up.
    """
    found = _read(client, provider_uuid, 'usages')
    if found is None:
        return None
    return {name: units for name, units in found.items() if units}


def _read(client, provider_uuid, what):
    """The ``what`` of ``GET /resource_providers/{uuid}/{what}``, or None."""
    url = '/resource_providers/%s/%s' % (provider_uuid, what)
    try:
        answer = client.get(url)
    except Exception as e:
        LOG.debug('Cannot read the %(what)s of provider %(provider)s: '
                  '%(error)s',
                  {'what': what, 'provider': provider_uuid, 'error': e})
        return None
    if not answer:
        LOG.debug('Cannot read the %(what)s of provider %(provider)s: '
                  'HTTP %(status)s', {'what': what, 'provider': provider_uuid,
                                      'status': answer.status_code})
        return None
    return answer.json()[what]


def add_up(allocations):
    """``{resource class: units}`` of an iterable of allocations."""
    used = {}
    for resources in allocations:
        for name, units in resources.items():
            if units:
                used[name] = used.get(name, 0) + units
    return used


# Seconds a consumer said to hold its node is taken to, before its
# allocation arrives: an adoption run moves one instance after another.
EXPECTED_FOR = 600


class WaitingBuilds(object):
    """Which allocations against this provider hold no node yet.

    A consumer seen for the first time is a build that waits for a node
    until this service claims one for it (``claimed``).  The instances
    on the host at the start hold theirs (:meth:`hold`); failing that,
    the consumers there at the first read are taken to hold theirs.  One
    that waits longer than ``confirm_after`` seconds is looked up
    (``holds(uuid)``, True, False or None when unknown): an instance
    adopted from another host holds its node without a claim here.

    A consumer whose allocation is about to leave (:meth:`leaves`: its
    claim failed and it reschedules, or it is being destroyed) neither
    waits nor counts as in use, for at most ``confirm_after`` seconds.

    :param holds: ``holds(instance uuid)``.
    """

    def __init__(self, holds, confirm_after):
        self._holds = holds
        self._confirm_after = confirm_after
        # The refresh, the capacity follower and the builds' threads all
        # update it.
        self._lock = threading.Lock()
        self._held = None
        # {consumer: monotonic time it was first seen, or last looked up}
        self._since = {}
        # {consumer: monotonic time it was said to leave}
        self._leaving = {}
        # Those of them the last update found in placement.
        self._left_at_update = frozenset()
        # {consumer said to hold its node: monotonic time it was said},
        # until its allocation is here: an adoption tells before it moves.
        self._expected = {}

    def hold(self, uuids):
        """These consumers hold their nodes (the host's instances).

        Also those whose allocations move here next (an adoption): they
        hold their nodes once they arrive, within ``EXPECTED_FOR``.
        """
        with self._lock:
            self._held = set(self._held or ()) | set(uuids)
            now = time.monotonic()
            self._expected.update((uuid, now) for uuid in uuids)

    def leaves(self, uuid):
        """The allocation of ``uuid`` leaves placement soon."""
        with self._lock:
            self._leaving[uuid] = time.monotonic()

    def update(self, allocations, idle, claimed):
        """``{consumer: resources}`` of the builds waiting for a node.

        :param allocations: ``{consumer: {resource class: units}}`` on
            this provider now.
        :param idle: consumers that hold no node and never will.
        :param claimed: consumers this service claimed a node for lately.
        """
        with self._lock:
            return self._update(allocations, idle, claimed)

    def _update(self, allocations, idle, claimed):
        consumers = set(allocations)
        if self._held is None:
            self._held = set(consumers)
        now = time.monotonic()
        self._expected = {uuid: since
                          for uuid, since in self._expected.items()
                          if now - since < EXPECTED_FOR}
        self._held = ((self._held | set(claimed) | set(self._expected))
                      & consumers)
        self._leaving = {uuid: since
                         for uuid, since in self._leaving.items()
                         if uuid in consumers
                         and now - since < self._confirm_after}
        self._left_at_update = frozenset(self._leaving)
        self._since = {uuid: self._since.get(uuid, now)
                       for uuid in (consumers - self._held - set(idle)
                                    - set(self._leaving))}
        for uuid, since in sorted(self._since.items()):
            if now - since < self._confirm_after:
                continue
            if self._holds(uuid):
                self._held.add(uuid)
                del self._since[uuid]
            else:
                self._since[uuid] = now
        return {uuid: dict(allocations[uuid]) for uuid in self._since}

    def leaving(self):
        """The consumers of the last :meth:`update` that leave soon.

        Not those said to leave since: a build thread may call
        :meth:`leaves` between an update and this call, for a consumer
        that the update's allocations do not hold.
        """
        with self._lock:
            return set(self._left_at_update)


def inventory(cluster, used, idle=None, waiting=None, leaving=None):
    """Placement inventory of the compute node.

    :param cluster: ``{ironic resource class: {'total': n, 'free': n}}``:
        the cluster's nodes, and the free nodes this service offers (the
        Reserver's ``offer()``).
    :param used: ``{placement resource class: units}`` allocated to this
        service's instances.
    :param idle: the part of ``used`` that holds no node and never will
        (builds Nova gave up on).
    :param waiting: ``{placement resource class: units}`` of this
        service's builds that wait for a node.
    :param leaving: the part of ``used`` about to leave placement (see
        :class:`WaitingBuilds`): it holds no free node, and when it
        leaves this provider's offer must not grow.
    :returns: ``{placement resource class: inventory dict}``.
    """
    idle = idle or {}
    waiting = waiting or {}
    leaving = leaving or {}
    counts = {}
    for ironic_rc, count in cluster.items():
        if not ironic_rc:
            continue
        # Classes that normalize alike ("gold-1", "gold_1") are one in
        # placement.
        name = requirements.normalize_resource_class(ironic_rc)
        total, free = counts.get(name, (0, 0))
        counts[name] = (total + int(count.get('total', 0)),
                        free + int(count.get('free', 0)))
    result = {}
    for name in sorted(set(counts) | {n for n, u in used.items() if u}):
        total, free = counts.get(name, (0, 0))
        unused = min(idle.get(name, 0), used.get(name, 0))
        in_use = used.get(name, 0) - unused
        # Placement refuses to drop (or shrink below use) an inventory
        # that allocations hold: keep room for our own instances.
        reported = max(total, in_use) + unused
        if not reported:
            continue
        staying = in_use - min(leaving.get(name, 0), in_use)
        # Never below what the allocations that stay use (placement
        # warns when below what they all use): the capacity is then
        # right once the leaving ones have left.
        reserved = min(max(total - free - staying + waiting.get(name, 0),
                           0), reported - staying - unused)
        result[name] = {
            'total': reported,
            'reserved': reserved,
            'min_unit': 1,
            'max_unit': 1,
            'step_size': 1,
            'allocation_ratio': 1.0,
        }
    return result


# Placement microversion of the inventory calls (reserved may equal total).
INVENTORY_VERSION = '1.26'
# Writes of one inventory: a write that conflicts (an allocation moved
# the provider's generation) is read and written again.  In a burst the
# allocations move it several times a second.
_WRITES = 6


class InventoryConflict(nova_exception.ResourceProviderUpdateFailed):
    """Every write of the inventory met a generation moved since its read."""


def change_inventory(client, context, provider, change):
    """Read a provider's inventory, ``change`` it, write it back.

    Read from placement, not from the report client's cache: the
    provider's generation moves with every allocation against it.
    Written without the resource tracker's lock, which its builds hold
    for most of a second each in a burst; the generation keeps the two
    writers apart (a conflict is read and written again).

    :param client: Nova's SchedulerReportClient.
    :param change: ``change(inventories)`` returns the inventories to
        write (``{resource class: inventory}``); when they are what
        placement has, nothing is written.
    :returns: whether placement's inventory was written.
    :raises ResourceProviderUpdateFailed: placement refused it, or could
        not be read; :class:`InventoryConflict` when every write met a
        newer generation.
    """
    url = '/resource_providers/%s/inventories' % provider
    for attempt in range(1, _WRITES + 1):
        got = client.get(url, version=INVENTORY_VERSION,
                         global_request_id=context.global_id)
        if not got:
            raise nova_exception.ResourceProviderUpdateFailed(
                url=url, error='HTTP %s reading it' % got.status_code)
        body = got.json()
        inventories = change(copy.deepcopy(body['inventories']))
        if inventories == body['inventories']:
            return False
        put = client.put(url, {
            'resource_provider_generation':
                body['resource_provider_generation'],
            'inventories': inventories},
            version=INVENTORY_VERSION, global_request_id=context.global_id)
        if put.status_code == 200:
            _keep_cache_in_step(client, provider, put.json())
            return True
        if put.status_code == 409 and attempt == _WRITES:
            raise InventoryConflict(url=url, error='HTTP 409 %d times: %s'
                                    % (_WRITES, put.text))
        if put.status_code != 409:
            raise nova_exception.ResourceProviderUpdateFailed(
                url=url, error='HTTP %s %s' % (put.status_code, put.text))
        LOG.debug('Inventory of provider %s changed while it was written; '
                  'reading it again', provider)


def _keep_cache_in_step(client, provider, written):
    """Put what was written into the report client's provider cache.

    The resource tracker's next update then finds nothing to change
    (rather than a conflict, which Nova logs as an error).  The cache is
    not dropped: the resource tracker may be reading it in another
    thread.  Its generation is left as it was, older than placement's: a
    write of an inventory the resource tracker computed before this one
    then conflicts and is redone, instead of undoing this one.
    """
    tree = getattr(client, '_provider_tree', None)
    if tree is not None and tree.exists(provider):
        tree.update_inventory(provider, written['inventories'])


def tell_placement(client, context, provider, inventory):
    """Set the compute node's inventory in placement now.

    :returns: whether it had to change.
    :raises ResourceProviderUpdateFailed: see :func:`change_inventory`.
    """
    return change_inventory(client, context, provider,
                            lambda current: inventory)


def provider_traits(current, node_traits):
    """The provider's traits: Nova's own ones plus those of the nodes.

    Traits that are neither standard (os-traits) nor well-formed custom
    ones are dropped: placement would refuse the whole update.
    """
    kept = {t for t in current if t.startswith(_NOVA_OWNED)}
    valid = set()
    for trait in node_traits:
        if (os_traits.is_custom(trait) and _TRAIT_NAME.match(trait)
                or trait in _STANDARD_TRAITS):
            valid.add(trait)
        else:
            LOG.warning('Ignoring trait %s of an Ironic node: placement '
                        'does not know it', trait)
    return kept | valid


def flavors_on_host(host):
    """Flavors of the instances Nova places on ``host`` (its allocations).

    Read from Nova's database (through the conductor), as the resource
    tracker does: placement holds one allocation per such instance.
    """
    context = nova_context.get_admin_context()
    found = objects.InstanceList.get_by_host(context, host,
                                             expected_attrs=['flavor'])
    return [{'extra_specs': dict(inst.flavor.extra_specs or {})}
            for inst in found]
