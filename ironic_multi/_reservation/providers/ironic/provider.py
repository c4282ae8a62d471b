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

"""Real Ironic nodes: the one provider that talks to Ironic.

It reads the nodes of the owned shards into a ready pool, claims with one
atomic write (:mod:`.claims`), deploys and tears down (:mod:`.deploy`),
powers nodes (:mod:`.power`), rescues them (:mod:`.rescue`), opens their
consoles (:mod:`.console`) and sends them NMIs (:mod:`.nmi`), all through
one :class:`~.client.IronicAPI`.
"""

import dataclasses
import datetime
import time

from oslo_log import log as logging

from ironic_multi._reservation import filters
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import claims
from ironic_multi._reservation.providers.ironic import client
from ironic_multi._reservation.providers.ironic import console
from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import nmi
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import pool as ready_pool
from ironic_multi._reservation.providers.ironic import power
from ironic_multi._reservation.providers.ironic import rescue
from ironic_multi._reservation.providers.ironic import states
from ironic_multi._reservation.providers.ironic import versions
from ironic_multi._reservation.providers.ironic import volumes
from ironic_multi._reservation import shards
from ironic_multi import exception

LOG = logging.getLogger(__name__)

_BASE_FIELDS = ('uuid', 'name', 'resource_class', 'properties', 'traits',
                'instance_uuid', 'provision_state', 'maintenance',
                'retired', 'power_state', 'conductor_group', 'extra')
# Not ``allocation_uuid``: Ironic 39 answers HTTP 500 when it is in
# ``fields``.  An allocation sets instance_uuid anyway.
_FEATURE_FIELDS = {'owner': ('owner',), 'lessee': ('lessee',),
                   'shards': ('shard',)}
# What a reservation is built from; instance_info holds the host mark.
_RESERVATION_FIELDS = ('uuid', 'instance_uuid', 'instance_info',
                       'provision_state', 'power_state', 'resource_class',
                       'shard')
_NODE_FIELDS = ('uuid', 'resource_class', 'properties', 'power_state',
                'provision_state', 'maintenance', 'conductor_group')
# What says whether a node is this group's to give a shard key.
_SHARDING_FIELDS = ('uuid', 'instance_uuid', 'instance_info',
                    'conductor_group', 'shard')
_ALLOCATION_FIELDS = ('uuid', 'node_uuid', 'state', 'extra')
_HEALTH_FIELDS = ('uuid', 'instance_uuid', 'provision_state', 'power_state',
                  'maintenance', 'maintenance_reason', 'last_error')
# Up to this many nodes, a health check reads each; beyond, it lists.
_HEALTH_GETS = 10
_TROUBLE_FIELDS = ('uuid', 'instance_uuid', 'provision_state',
                   'provision_updated_at', 'maintenance',
                   'maintenance_reason', 'last_error', 'extra',
                   'conductor_group')
# Marks a node that a conflict showed to be taken, by whom we do not know;
# the next refresh brings the truth.
_TAKEN = 'taken'
# Where failures and quarantine are written on a node: ``extra``, so that
# they survive restarts and tear downs, and every service sees them.
# ``group`` there names the group that wrote them: the only one that
# recovers or quarantines the node.  ``pin`` is the node's
# ``provision_updated_at`` when they were written: Ironic stamps it at
# every change of provision state, whoever makes it, so marks whose pin
# is still the node's stamp describe the state the node is in, and marks
# whose pin is not are history (the node moved on since: another
# deployer may have deployed it).
_MARKS = 'ironic_multi'
_PIN = 'pin'
_QUARANTINE_PREFIX = 'ironic-multi quarantine: '


def _marks(node):
    """The node's marks, to read (claims read them for every pool node)."""
    return (node.get('extra') or {}).get(_MARKS) or {}


# The marks a failure writes (record_failure), and a success forgets.
_FAILURE_MARKS = ('failures', 'last_failure', 'reason')


# Seconds for which a claim's answer stands in for the deploy's check that
# the node still holds the instance: about the time of that check itself.
_CLAIM_ANSWER_TRUSTED = 1.0


def _has_failures(marks):
    return any(marks.get(key) for key in _FAILURE_MARKS)


class IronicProvider(base.NodeProvider):
    name = 'ironic'
    features = frozenset([base.Feature.VIFS, base.Feature.REBUILD,
                          base.Feature.SOFT_POWER, base.Feature.CONFIGDRIVE,
                          base.Feature.SHARD_ASSIGNMENT, base.Feature.RESCUE,
                          base.Feature.SERIAL_CONSOLE,
                          base.Feature.GRAPHICAL_CONSOLE,
                          base.Feature.CRASH_DUMP,
                          base.Feature.VOLUME_BOOT])

    def __init__(self, conf, api=None):
        super().__init__(conf)
        self.api = api or client.IronicAPI(conf)
        self._opts = conf.ironic_multi
        self.pool = ready_pool.ReadyPool(
            read_full=self._read_nodes, read_changed=self._read_changed,
            read_recent=self._read_recent,
            shard_of=self.shard_of,
            full_interval=self._opts.pool_full_refresh_interval,
            keep=lambda node: states.in_conductor_group(
                node, self._opts.conductor_group))
        self._ready = (filters.ReadyFilter(self._why_not_ready),)
        self._cooling = (filters.ReadyFilter(self._why_cooling),)
        # On the pool's copies: free, matching, then (the costly check,
        # which reads each node's marks) not cooling down after a failure.
        self._pool_filters = ((filters.ReadyFilter(states.why_not_ready),)
                              + self.filters + self._cooling)
        self._claimer = claims.Claimer(
            self.api, self.group, self._opts.use_allocations,
            self._opts.claim_timeout,
            on_taken=lambda node: self.pool.mark_taken(node, _TAKEN),
            on_gone=self.pool.forget)
        self._tenancy = filters.OwnerFilter()
        self._deployer = deploy.Deployer(self.api, conf)
        # {instance uuid: (the node as its claim wrote it, monotonic time
        # of the answer)} from a claim that wrote the deploy's
        # instance_info, until that deploy or a release.  Whether the
        # answer holds the deployment is the deployer's to check.
        self._written = {}
        self._power = power.PowerControl(self.api, conf)
        self._rescuer = rescue.Rescuer(self.api, conf)
        self._consoles = console.Consoles(self.api, conf)
        self._fields = None
        self._shard_keys = (None, 0)

    def start(self):
        self._check_access()

    def _check_access(self):
        """Find out now whether these credentials can work, and say why not.

        Ironic's default policies show a project-scoped service user no
        node and refuse it the shard listing (403): nothing can work.  With
        ``rbac_service_role_elevated_access`` it sees every node, but an
        allocation it makes is owner-restricted to its own project, so
        allocations find no node: claims then go by PATCH.
        """
        if self.api.supports('shards'):
            try:
                self.api.list_shards()
            except exception.IronicAPIError as e:
                if e.status_code not in (401, 403):
                    raise
                raise exception.ConfigInvalid(reason=(
                    'the [ironic] credentials may not list Ironic\'s shards '
                    '(HTTP %d): authenticate system-scoped ([ironic] '
                    'system_scope = all, with a system role), or enable '
                    'Ironic\'s [DEFAULT] rbac_service_role_elevated_access '
                    'for a project-scoped service user' % e.status_code))
        if self._claimer.by_allocation and self.api.token_scope() == 'project':
            LOG.warning('The [ironic] credentials are project-scoped: Ironic '
                        'would restrict every allocation to that project\'s '
                        'nodes, so claims set instance_uuid by PATCH instead. '
                        'To claim with allocations, authenticate '
                        'system-scoped ([ironic] system_scope = all); to '
                        'silence this, set [ironic_multi] use_allocations = '
                        'False.')
            self._claimer.use_allocations = False

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

    def _read_nodes(self, shards, **filters):
        """Nodes of ``shards`` (None: all), filtered."""
        filters.setdefault('conductor_group', self._opts.conductor_group)
        if shards is None:
            return self.api.list_nodes(fields=self.fields, **filters)
        if not self.api.supports('shards'):
            return [n for n in self.api.iter_nodes(fields=self.fields,
                                                   **filters)
                    if self.shard_of(n) in shards]
        nodes = self.api.list_nodes(fields=self.fields, shard=sorted(shards),
                                    **filters)
        fallback = self.keys.fallback_among(shards)
        if fallback:
            nodes += [n for n in self.api.iter_nodes(
                fields=self.fields, sharded=False, **filters)
                if self.shard_of(n) in fallback]
        return nodes

    def _read_changed(self, mark):
        # One listing over all nodes, of every conductor group: the pool
        # keeps those of its shards and group, and drops those that left.
        # Pages grow: a quiet cloud's changes fit in the first.
        horizon = self._listing_horizon()
        pages = self.api.iter_node_pages(
            detail=True, page_size=25, grow_to=client.PAGE_SIZE,
            sort_key='updated_at', sort_dir='asc', marker=mark.uuid)
        used, nodes = [mark], []
        try:
            for page in pages:
                if nodes:
                    # Ironic listed this page after the last node read.
                    used.append(ready_pool.Mark(nodes[-1]['uuid'],
                                                nodes[-1]['updated_at']))
                nodes.extend(page)
        except exception.IronicAPIError as e:
            if e.status_code not in (400, 404):
                raise
            # The mark's node is gone.
            raise ready_pool.MarkMoved(mark, read=len(nodes))
        # Ironic compared with each mark as it was when asked: read them
        # back, a moved one may have hidden changes.
        for read, used_mark in enumerate(used, start=len(nodes) + 1):
            try:
                now = self.api.get_node(used_mark.uuid)['updated_at']
            except exception.NodeNotFound:
                now = None
            if now != used_mark.updated_at:
                raise ready_pool.MarkMoved(used_mark, read=read)
        return nodes, len(nodes) + len(used), horizon

    def _read_recent(self):
        # The newest changes (on PostgreSQL, nodes never updated may come
        # first instead) and the oldest one (PostgreSQL puts those last):
        # a first page each, which never pages past a null.  Of every
        # conductor group, as the incremental listing that starts there.
        horizon = self._listing_horizon()
        recent = []
        for direction, limit in (('desc', 25), ('asc', 1)):
            recent += next(self.api.iter_node_pages(
                detail=True, page_size=limit, sort_key='updated_at',
                sort_dir=direction))
        return recent, horizon

    def _listing_horizon(self):
        """What a listing about to start misses is stamped after this.

        Ironic's clock now, less the clock skew allowed between its hosts
        (their stamps may lag the clock that answers this).
        """
        return self.api.server_time() - datetime.timedelta(
            seconds=self._opts.pool_clock_skew)

    def shard_keys(self):
        # Every shard key means listing every unsharded node: read them with
        # each full refresh of the pool, not with each incremental one.
        # Keys that appear in between are found by the claims' last stage,
        # which searches every node.
        cached, read_at = self._shard_keys
        if (cached is not None and time.monotonic() - read_at
                < self._opts.pool_full_refresh_interval):
            return dict(cached)
        counts = self._read_shard_keys()
        self._shard_keys = (counts, time.monotonic())
        return dict(counts)

    def _read_shard_keys(self):
        counts = {}
        if self.api.supports('shards'):
            counts = {name: count
                      for name, count in self.api.list_shards().items()
                      if name != 'None'}
            unsharded = self.api.iter_nodes(fields=['uuid'], sharded=False)
        else:
            unsharded = self.api.iter_nodes(fields=['uuid'])
        for node in unsharded:
            key = self.keys.fallback_of(node['uuid'])
            counts[key] = counts.get(key, 0) + 1
        return counts

    def assign_shards(self, count, dry_run=False):
        if not self.api.supports('shards'):
            raise exception.IronicVersionUnsupported(
                server_max=versions.format(self.api.version), required='1.82',
                feature='shard assignment')
        keys = shards.ShardKeys(count)
        assigned, skipped = {}, {}
        for node in self.api.iter_nodes(
                fields=_SHARDING_FIELDS, sharded=False,
                conductor_group=self._opts.conductor_group):
            why = self._not_ours_to_shard(node)
            if why:
                skipped[node['uuid']] = why
            else:
                assigned[node['uuid']] = keys.fallback_of(node['uuid'])
        if not dry_run:
            for node_uuid, key in sorted(assigned.items()):
                # Read again right before the write: claimed meanwhile?
                node = self.api.get_node(node_uuid, fields=_SHARDING_FIELDS)
                why = (self._not_ours_to_shard(node)
                       or (node.get('shard') and 'given a shard key '
                                                 'meanwhile'))
                if why:
                    skipped[node_uuid] = why
                    continue
                self.api.patch_node(node_uuid, [
                    {'op': 'add', 'path': '/shard', 'value': key}])
            for node_uuid in skipped:
                assigned.pop(node_uuid, None)
            LOG.info('Assigned shard keys to %d node(s)', len(assigned))
        if skipped:
            LOG.info('Left %(count)d node(s) without a shard key: they '
                     'are not group %(group)s\'s to change',
                     {'count': len(skipped), 'group': self.group})
        return assigned, skipped

    def _not_ours_to_shard(self, node):
        """Why this group must not write the node's shard key, or None.

        A node of another conductor group, or one that an instance holds
        without this group's mark, is someone else's.
        """
        if not states.in_conductor_group(node, self._opts.conductor_group):
            return 'in conductor group %r' % (node.get('conductor_group')
                                              or '')
        if not node.get('instance_uuid'):
            return None
        mark = ownership.of(node)
        if mark is None and self.api.supports('allocations'):
            # An allocation claim carries the mark until the deploy.
            mark = ownership.of_allocation(
                self.api.get_allocation(node['instance_uuid']) or {})
        if mark is None or mark['group'] != self.group:
            return 'held by instance %s without the mark of group %s' % (
                node['instance_uuid'], self.group)
        return None

    def bounded(self, deadline):
        return self.api.bounded(deadline)

    def refresh(self, shards):
        return self.pool.refresh(shards)

    def flush(self):
        self.pool.flush()
        self._shard_keys = (None, 0)

    def describe(self):
        return self.pool.describe()

    def nodes(self, shards):
        return self.pool.nodes(shards)

    def _in_service(self, shards):
        """Nodes of ``shards`` not taken out of service by their failures."""
        return [n for n in self.pool.nodes(shards) if not self._why_barred(n)]

    def capacity(self, shards):
        return states.count_capacity(self._in_service(shards), self.shard_of)

    def usable_traits(self, shards):
        return {trait for node in self._in_service(shards)
                if states.is_usable(node)
                for trait in node.get('traits') or ()}

    def _why_barred(self, node, marks=None):
        marks = _marks(node) if marks is None else marks
        return self.failed_too_often(marks.get('failures', 0))

    def _why_cooling(self, node):
        marks = _marks(node)
        barred = self._why_barred(node, marks)
        if barred:
            return barred
        last = marks.get('last_failure')
        if last and time.time() - last < self._opts.failure_cooldown:
            return 'failed %d s ago' % (time.time() - last)
        return None

    def _why_not_ready(self, node):
        return states.why_not_ready(node) or self._why_cooling(node)

    def ready_nodes(self, requirements, shards):
        return filters.match(self._pool_nodes(requirements, shards),
                             requirements, self._pool_filters)

    def ready_candidates(self, requirements, shards):
        # At 10^5 nodes a pool class holds thousands: filtering only the
        # nodes a claim draws saves it more than its PATCH costs.
        return filters.matching(
            filters.shuffled(self._pool_nodes(requirements, shards)),
            requirements, self._pool_filters)

    def _pool_nodes(self, requirements, shards):
        # The pool's nodes of the class asked for: the pool keeps each
        # class apart.
        return self.pool.nodes(shards, filters.requested_classes(
            self.pool.resource_classes(), requirements))

    def search(self, requirements, shards):
        nodes = self._read_nodes(
            shards, provision_state=states.AVAILABLE, associated=False,
            maintenance=False)
        return filters.match(nodes, requirements, self._ready + self.filters)

    # -- reservations -------------------------------------------------------

    def claim(self, candidates, instance_uuid, requirements, deadline,
              claimer=None, deployment=None):
        if not candidates:
            raise exception.NodeAlreadyClaimed(
                node='-', instance=instance_uuid, reason='no candidates')
        with self.api.bounded(deadline):
            return self._claim(list(candidates), instance_uuid,
                               requirements, deadline, claimer, deployment)

    def _claim(self, candidates, instance_uuid, requirements, deadline,
               claimer, deployment):
        # A claim by PATCH writes the deploy's instance_info too: one
        # conductor round trip less per boot.  The pool's copy gives the
        # local_gb; the deploy writes it again if the claim's answer says
        # otherwise.
        also = deployment and (lambda node: deploy.instance_info_patch(
            deployment, node=node))
        while True:
            claimed = self._claimer.claim(candidates, instance_uuid,
                                          requirements.required_traits,
                                          deadline, claimer, self.consumer,
                                          also=also)
            self.pool.mark_taken(claimed.node_uuid, instance_uuid)
            # The pool's copy of the node may be minutes old: the node is
            # checked again as it is now (a PATCH answers with it).  An
            # earlier attempt's node was checked by that attempt.
            node = claimed.node or self.api.get_node(claimed.node_uuid,
                                                     fields=self.fields)
            wrong = None if claimed.earlier else self._wrong_claim(
                node, requirements)
            if not wrong:
                break
            LOG.warning('Node %(node)s is %(why)s: releasing it for '
                        '%(instance)s', {'node': claimed.node_uuid,
                                         'why': wrong,
                                         'instance': instance_uuid})
            self._claimer.release(instance_uuid, claimed.node_uuid,
                                  deadline)
            self.pool.forget(claimed.node_uuid)
            candidates = [n for n in candidates
                          if n['uuid'] != claimed.node_uuid]
            if not candidates:
                raise exception.NodeAlreadyClaimed(
                    node=claimed.node_uuid, instance=instance_uuid,
                    reason=wrong)
        if claimed.earlier:
            # An earlier attempt's node: its state is Ironic's to tell.
            return self.lookup(instance_uuid)
        if deployment is not None and claimed.node is not None:
            self._written[instance_uuid] = (claimed.node, time.monotonic())
        return self._reservation(dict(node, instance_uuid=instance_uuid),
                                 mark=ownership.mark(self.group, claimer,
                                                     self.consumer))

    def _wrong_claim(self, node, requirements):
        """Why the node just claimed must not serve, or None.

        What the pool's copy may no longer say: the node went into
        maintenance, left the conductor group, changed its provision state
        (the claim itself only sets ``instance_uuid``), or its tenancy.
        """
        if node.get('maintenance'):
            return 'in maintenance'
        if not states.in_conductor_group(node, self._opts.conductor_group):
            return 'in conductor group %r, not %r' % (
                node.get('conductor_group') or '', self._opts.conductor_group)
        if node.get('provision_state') not in (None, states.AVAILABLE):
            return 'provision state is %s' % node['provision_state']
        return self._tenancy.reason(node, requirements)

    def release(self, instance_uuid):
        # Bounded like a claim: a release is its undoing.
        deadline = time.monotonic() + self._opts.claim_timeout
        with self.api.bounded(deadline):
            self._written.pop(instance_uuid, None)
            reservation = self.lookup(instance_uuid)
            if reservation is None:
                return None
            self._claimer.release(instance_uuid, reservation.node_uuid,
                                  deadline)
        if reservation.node_uuid:
            self.pool.forget(reservation.node_uuid)
        LOG.info('Released node %(node)s of instance %(instance)s',
                 {'node': reservation.node_uuid, 'instance': instance_uuid})
        return reservation.released()

    def lookup(self, instance_uuid):
        node = self.api.node_by_instance(instance_uuid,
                                         fields=_RESERVATION_FIELDS)
        allocation = None
        if self.api.supports('allocations') and (
                node is None or ownership.of(node) is None):
            # An allocation claim carries its mark in the allocation until
            # the node has it.
            allocation = self.api.get_allocation(instance_uuid)
        if node is not None:
            return self._reservation(node, allocation=allocation)
        if allocation is None:
            return None
        return self._failed_claim(allocation)

    def reservations(self):
        allocations = {}
        if self.api.supports('allocations'):
            allocations = {a['uuid']: a for a in self.api.list_allocations(
                fields=_ALLOCATION_FIELDS)}
        # Nodes of other conductor groups are other services' to manage.
        found = [self._reservation(node,
                                   allocation=allocations.get(
                                       node['instance_uuid']))
                 for node in self.api.iter_nodes(
                     fields=_RESERVATION_FIELDS, associated=True,
                     conductor_group=self._opts.conductor_group)]
        # Failed allocations reserve no node, but hold the instance's UUID
        # until deleted.
        found += [self._failed_claim(a) for a in allocations.values()
                  if a.get('state') == 'error' and not a.get('node_uuid')]
        return found

    @staticmethod
    def _failed_claim(allocation):
        state = (lifecycle.State.ERROR if allocation['state'] == 'error'
                 else lifecycle.State.REQUESTED)
        mark = ownership.of_allocation(allocation) or {}
        return lifecycle.Reservation(
            instance_uuid=allocation['uuid'], node_uuid=None, state=state,
            group=mark.get('group'), claimer=mark.get('claimer'),
            consumer=mark.get('consumer'))

    def _reservation(self, node, allocation=None, mark=None):
        info = node.get('instance_info') or {}
        mark = (mark or ownership.of(node)
                or (allocation and ownership.of_allocation(allocation))
                or {})
        return lifecycle.Reservation(
            instance_uuid=node['instance_uuid'], node_uuid=node['uuid'],
            state=states.reservation_state(node), shard=self.shard_of(node),
            resource_class=node.get('resource_class'),
            host=info.get(deploy.HOST_KEY),
            power_state=states.power_state(node),
            group=mark.get('group'), claimer=mark.get('claimer'),
            consumer=mark.get('consumer'),
            node_state=node.get('provision_state'),
            holds_image=states.holds_image(node.get('provision_state')))

    def node(self, reservation):
        # From Ironic: the pool holds only the owned shards' nodes, and an
        # instance's node may be in any shard.
        return self.api.get_node(reservation.node_uuid, fields=_NODE_FIELDS)

    def own(self, instance_uuid):
        reservation = self.lookup(instance_uuid)
        if reservation is None or reservation.node_uuid is None:
            return None
        if reservation.group is not None:
            if not reservation.owned_by(self.group):
                raise exception.ForeignReservation(
                    instance=instance_uuid, node=reservation.node_uuid,
                    group=reservation.group, ours=self.group)
            return reservation
        node = self._holding(reservation.node_uuid, instance_uuid)
        if node is None:
            return None
        if ownership.of(node) is not None:
            # Marked since the lookup: look again.
            return self.own(instance_uuid)
        if not self._patch_held(node, ownership.mark_patch(
                node, ownership.mark(self.group, consumer=self.consumer))):
            return None
        LOG.info('Marked node %(node)s of instance %(instance)s, claimed '
                 'before ownership marks, as group %(group)s\'s',
                 {'node': reservation.node_uuid, 'instance': instance_uuid,
                  'group': self.group})
        return dataclasses.replace(reservation, group=self.group,
                                   consumer=self.consumer)

    def _holding(self, node_uuid, instance_uuid, fields=None):
        """The node as it is now, or None unless it holds the instance.

        :param fields: what to read (:data:`~.deploy.HOLDER_FIELDS` by
            default).
        """
        try:
            node = self.api.get_node(node_uuid,
                                     fields=fields or deploy.HOLDER_FIELDS)
        except exception.NodeNotFound:
            return None
        return node if node.get('instance_uuid') == instance_uuid else None

    def _patch_held(self, node, patch):
        """Apply a guarded ``patch`` to ``node`` (as read).

        :returns: False when the guard refused it: the node no longer
            holds its instance, or no longer under the mark it was read
            with.
        """
        try:
            self.api.patch_node(node['uuid'], patch)
            return True
        except exception.IronicAPIError as e:
            if e.status_code != 400:
                raise
            why = e
        except exception.NodeConflict as e:
            # A conflict is also a locked node: only a new holder says the
            # guard refused it.
            if self._holding(node['uuid'],
                             node['instance_uuid']) is not None:
                raise
            why = e
        LOG.warning('Node %(node)s no longer holds instance %(instance)s '
                    'as it did: left alone (%(error)s)',
                    {'node': node['uuid'], 'instance': node['instance_uuid'],
                     'error': why})
        return False

    # -- what is done to a reserved node ---------------------------------

    def deploy(self, reservation, deployment, should_stop=None):
        answer, at = self._written.pop(reservation.instance_uuid,
                                       (None, 0))
        # The deploy's guarded write also checks that the node still holds
        # the instance before VIFs and the provision request.  The claim's
        # answer stands in for it only right after the claim: a deploy
        # that waited for its turn writes (and checks) again.
        fresh = time.monotonic() - at <= _CLAIM_ANSWER_TRUSTED
        written = self._deployer.deploy(
            reservation.node_uuid, deployment, should_stop,
            self._mark(reservation), written=answer if fresh else None)
        # Ironic's answer to the deploy's write holds the node's marks:
        # most nodes have no failures, and need no read of them to clear.
        # A tear down's note alone stays: the housekeeper forgets it once
        # the node is healthy, outside of any boot's time.
        if _has_failures(_marks(written)):
            try:
                self.clear_failures(reservation.node_uuid)
            except exception.IronicMultiError as e:
                # The instance runs: old marks only cool the node down.
                LOG.warning('Node %(node)s deployed, but its failure marks '
                            'could not be cleared: %(error)s',
                            {'node': reservation.node_uuid, 'error': e})
        return reservation.moved_to(lifecycle.State.DEPLOYING).moved_to(
            lifecycle.State.ACTIVE)

    def teardown(self, reservation, vifs=(), wait=True, deadline=None):
        return self._deployer.teardown(reservation.node_uuid,
                                       reservation.instance_uuid, vifs,
                                       wait=wait, deadline=deadline)

    def rebuild(self, reservation, deployment):
        self._deployer.rebuild(reservation.node_uuid, deployment,
                               self._mark(reservation))

    def _mark(self, reservation):
        """The mark of ``reservation`` for a node that has none yet.

        The allocation's (claimer, consumer) where it has one; the
        consumer this provider serves for a claim made before marks.
        """
        return ownership.mark(self.group, reservation.claimer,
                              reservation.consumer or self.consumer)

    def power(self, reservation, action, timeout=None):
        self._power.apply(reservation.node_uuid, action, timeout)

    # Whether the node has the interface for each is the node's business:
    # a node without one is refused (NodeCannot), and nothing is done.

    def check(self, reservation, feature):
        super().check(reservation, feature)
        if feature == base.Feature.RESCUE:
            self._rescuer.check(reservation.node_uuid,
                                reservation.instance_uuid)
        elif feature in (base.Feature.SERIAL_CONSOLE,
                         base.Feature.GRAPHICAL_CONSOLE):
            self._consoles.check(reservation.node_uuid,
                                 reservation.instance_uuid)

    def rescue(self, reservation, password):
        self._rescuer.rescue(reservation.node_uuid,
                             reservation.instance_uuid, password)

    def unrescue(self, reservation):
        self._rescuer.unrescue(reservation.node_uuid,
                               reservation.instance_uuid)

    def console(self, reservation, kind):
        return self._consoles.console(reservation.node_uuid,
                                      reservation.instance_uuid, kind)

    def crash_dump(self, reservation):
        nmi.inject(self.api, reservation.node_uuid,
                   reservation.instance_uuid, self.group)

    def volume_connectors(self, reservation):
        return volumes.connectors(self.api, reservation.node_uuid)

    def attach_vif(self, reservation, vif_id):
        self._vif('attach', self.api.attach_vif, reservation, vif_id)

    def detach_vif(self, reservation, vif_id):
        self._vif('detach', self.api.detach_vif, reservation, vif_id)

    @staticmethod
    def _vif(action, call, reservation, vif_id):
        try:
            call(reservation.node_uuid, vif_id)
        except exception.IronicMultiError as e:
            raise exception.VifActionFailed(
                action=action, vif=vif_id, node=reservation.node_uuid,
                reason=e)

    def health(self, reservations):
        if len(reservations) > _HEALTH_GETS:
            # One listing instead of a request per node.
            nodes = {n['uuid']: n for n in self.api.iter_nodes(
                fields=_HEALTH_FIELDS, associated=True,
                conductor_group=self._opts.conductor_group)}
            read = nodes.get
        else:
            read = self._node_or_none
        found = {}
        for reservation in reservations:
            node = read(reservation.node_uuid)
            found[reservation.instance_uuid] = base.NodeHealth(
                instance_uuid=reservation.instance_uuid,
                node_uuid=reservation.node_uuid,
                power_state=(lifecycle.PowerState.UNKNOWN if node is None
                             else states.power_state(node)),
                problem=_problem(node, reservation.instance_uuid))
        return found

    def _node_or_none(self, node_uuid):
        try:
            return self.api.get_node(node_uuid, fields=_HEALTH_FIELDS)
        except exception.NodeNotFound:
            return None

    def _held_marked(self, reservation, fields=None):
        """``(node, its mark or None)`` for a host mark change.

        :raises ReservationNotFound: the node no longer holds the instance.
        :raises ForeignReservation: another group's mark is on it.
        """
        node = self._holding(reservation.node_uuid,
                             reservation.instance_uuid, fields)
        if node is None:
            raise exception.ReservationNotFound(
                instance=reservation.instance_uuid)
        mark = ownership.of(node)
        if mark is not None and mark['group'] != self.group:
            raise exception.ForeignReservation(
                instance=reservation.instance_uuid,
                node=reservation.node_uuid, group=mark['group'],
                ours=self.group)
        return node, mark

    def _patch_host_mark(self, reservation, node, patch, host):
        """Apply the guarded ``patch`` with ``host`` as the host mark."""
        host_mark = {'op': 'add', 'value': host,
                     'path': '/instance_info/%s' % deploy.HOST_KEY}
        if not self._patch_held(node, patch + [host_mark]):
            raise exception.ReservationNotFound(
                instance=reservation.instance_uuid)

    def mark_host(self, reservation, host):
        node, mark = self._held_marked(reservation)
        if mark is None:
            # Claimed by allocation (the allocation carries the mark), or
            # before marks: the caller made sure it is this group's.
            patch = ownership.mark_patch(node, self._mark(reservation))
        else:
            patch = [ownership.guard(reservation.instance_uuid, self.group)]
        self._patch_host_mark(reservation, node, patch, host)

    def disown(self, reservation, host):
        node, mark = self._held_marked(
            reservation, deploy.HOLDER_FIELDS + ('allocation_uuid',))
        # An Ironic allocation carries a mark too, and the in-tree driver
        # would never delete it: only the node's tear down ends it.
        if node.get('allocation_uuid'):
            raise exception.NodeCannot(
                node=reservation.node_uuid, action='go to the in-tree driver',
                reason='Ironic allocation %s claims it, and only its tear '
                       'down ends it' % node['allocation_uuid'])
        if mark is None:
            # Handed over already: a run that stopped half way.
            patch = [ownership.holder_guard(reservation.instance_uuid)]
        else:
            patch = [ownership.guard(reservation.instance_uuid, self.group),
                     {'op': 'remove', 'path': '%s/%s' % (
                         ownership.PATH, reservation.instance_uuid)}]
        self._patch_host_mark(reservation, node, patch, host)
        LOG.info('Handed node %(node)s of instance %(instance)s to the '
                 'in-tree driver on host %(host)s',
                 {'node': reservation.node_uuid,
                  'instance': reservation.instance_uuid, 'host': host})

    # -- failures and quarantine -----------------------------------------

    def _write_marks(self, node_uuid, marks):
        patch = ({'op': 'add', 'path': '/extra/%s' % _MARKS, 'value': marks}
                 if marks else
                 {'op': 'remove', 'path': '/extra/%s' % _MARKS})
        self.api.patch_node(node_uuid, [patch])
        self.pool.forget(node_uuid)

    def _change_marks(self, node_uuid, change):
        """Read the node's marks, ``change(marks)``, write them back.

        The marks name this group from then on, pinned to the node's
        provision state as read (a state that changes between the read
        and the write leaves them pinned to the older one: history, which
        the failed-node rules leave alone).  Only for nodes this group
        holds or just held: the callers say which.  Another group's marks
        are history of when that group held the node: they count for
        nothing here, and are replaced.
        """
        node = self.api.get_node(node_uuid,
                                 fields=['extra', 'provision_updated_at'])
        marks = dict(_marks(node))
        before = dict(marks)
        if marks.get('group') not in (None, self.group):
            marks = {}
        marks.pop(_PIN, None)
        change(marks)
        if any(value is not None for key, value in marks.items()
               if key != 'group'):
            marks.update(group=self.group,
                         **{_PIN: node.get('provision_updated_at')})
        else:
            marks = {}
        if marks != before:
            self._write_marks(node_uuid, marks)
        return marks

    def record_failure(self, node_uuid, reason):
        def fail(marks):
            marks.update(failures=marks.get('failures', 0) + 1,
                         last_failure=time.time(), reason=str(reason)[:255])
        marks = self._change_marks(node_uuid, fail)
        LOG.warning('Node %(node)s failed (%(count)d in a row): %(reason)s',
                    {'node': node_uuid, 'count': marks['failures'],
                     'reason': reason})
        return marks['failures']

    def clear_failures(self, node_uuid):
        def clear(marks):
            # ``torn_down``: the note of a tear down that earlier versions
            # wrote; history now.
            for key in _FAILURE_MARKS + ('torn_down',):
                marks.pop(key, None)
        self._change_marks(node_uuid, clear)

    def troubled_nodes(self):
        # Failure marks live in ``extra``, which Ironic cannot filter on:
        # one listing of every node's few fields, once per housekeeping
        # pass, finds them and the nodes in failed states.
        found = (_troubled(node) for node in self.api.iter_nodes(
            fields=_TROUBLE_FIELDS,
            conductor_group=self._opts.conductor_group))
        return [node for node in found if node is not None]

    def troubled_node(self, node_uuid):
        try:
            node = self.api.get_node(node_uuid, fields=_TROUBLE_FIELDS)
        except exception.NodeNotFound:
            return None
        if not states.in_conductor_group(node, self._opts.conductor_group):
            return None
        return _troubled(node)

    def _ours(self, node_uuid):
        """The node as it is now, if this group's failed-node rules may act.

        :raises ForeignNode: another group's marks, or none.
        :raises NodeNotOurs: this group's marks, but the node is not the
            group's to act on now (:func:`_why_left_alone`).
        """
        node = self.api.get_node(node_uuid,
                                 fields=_TROUBLE_FIELDS + ('instance_info',))
        group = _marks(node).get('group')
        if group != self.group:
            raise exception.ForeignNode(node=node_uuid, group=group or '-',
                                        ours=self.group)
        why = _why_left_alone(node, self.group)
        if why:
            raise exception.NodeNotOurs(node=node_uuid, ours=self.group,
                                        reason=why)
        return node

    def recover(self, node_uuid, deadline=None):
        node = self._ours(node_uuid)
        state = node['provision_state']
        if node.get('instance_uuid'):
            # Its instance's own business: a tear down of it, not this.
            raise exception.NodeConflict(node=node_uuid,
                                         reason='it holds an instance')
        if state in (states.ERROR, states.DEPLOYFAIL):
            # A failed tear down (or deploy): tear down again, and see how
            # it ends.  The marks (the caller counted this try) follow the
            # node to the state a failure leaves it in: still this group's.
            try:
                self._deployer.undeploy(node, deadline)
            except exception.TeardownFailed as e:
                reason = ('recovery from %s failed: %s' % (state, e))[:255]
                self._change_marks(node_uuid,
                                   lambda marks: marks.update(reason=reason))
                raise
        elif state == states.CLEANFAIL:
            # Cleaning failed: manage it, then clean it again.  Its end is
            # not waited for (cleaning may take hours): a failure of it is
            # pinned to nothing, and left for an operator.
            self.api.set_provision_state(node_uuid, 'manage')
            self.api.set_provision_state(node_uuid, 'provide')
        else:
            raise exception.NodeConflict(
                node=node_uuid, reason='provision state is %s, not a failed '
                                       'one' % state)
        LOG.info('Asked Ironic to recover node %(node)s from %(state)s',
                 {'node': node_uuid, 'state': state})

    def quarantine(self, node_uuid, reason):
        self._ours(node_uuid)
        self.api.set_maintenance(node_uuid, _QUARANTINE_PREFIX + reason)
        self._change_marks(node_uuid, lambda marks: marks.update(
            quarantined_at=time.time(), reason=str(reason)[:255]))

    def unquarantine(self, node_uuid):
        node = self._ours(node_uuid)
        if not _returnable(node):
            raise exception.NodeConflict(
                node=node_uuid, reason='provision state is %s: lifting its '
                                       'quarantine would not return it to '
                                       'service' % node['provision_state'])
        self._write_marks(node_uuid, {})
        self.api.unset_maintenance(node_uuid)


def _troubled(node):
    """The node as a TroubledNode, or None when it is not troubled."""
    marks = _marks(node)
    failed = node.get('provision_state') in states.FAILED
    if not (failed or marks):
        return None
    return base.TroubledNode(
        node_uuid=node['uuid'], failures=marks.get('failures', 0),
        last_failure=marks.get('last_failure'),
        reason=marks.get('reason') or node.get('last_error'),
        failed_state=node['provision_state'] if failed else None,
        quarantined_at=marks.get('quarantined_at'),
        holder=node.get('instance_uuid'),
        group=marks.get('group'),
        left_alone=_why_left_alone(node) if marks else None,
        returnable=_returnable(node))


def _why_left_alone(node, group=None):
    """Why the marking group must not act on the node now, or None.

    The group's failed-node rules (recover, quarantine, return) act only
    on a node that holds no instance but one under ``group``'s ownership
    mark, holds no deployment of anyone else's, is not in maintenance but
    for the group's own quarantine, and whose marks are pinned to its
    provision state: nothing happened to it since the group wrote them.
    Whatever else the node went through, someone else may have deployed
    it meanwhile.

    :param node: the node as read; with ``instance_info`` for a node that
        holds an instance, else that instance counts as someone else's.
    """
    marks = _marks(node)
    state = node.get('provision_state')
    holder = node.get('instance_uuid')
    if holder and (group is None
                   or (ownership.of(node) or {}).get('group') != group):
        return 'it holds instance %s' % holder
    if state not in states.AT_REST:
        return ('it is %s: %s' % (state, 'busy' if holder else
                                  'another deployer\'s deployment, or busy'))
    if node.get('maintenance') and not _our_quarantine(node, marks):
        return 'it is in maintenance set by someone else (%s)' % (
            node.get('maintenance_reason') or 'no reason given')
    if _PIN not in marks or marks[_PIN] != node.get('provision_updated_at'):
        return ('its provision state changed since this group marked it: '
                'the marks are history')
    return None


def _our_quarantine(node, marks):
    return bool(marks.get('quarantined_at')) and (
        node.get('maintenance_reason') or '').startswith(_QUARANTINE_PREFIX)


def _returnable(node):
    """Whether lifting its quarantine returns the node to service."""
    return (not node.get('instance_uuid')
            and node.get('provision_state') in states.RETURNABLE)


def _problem(node, instance_uuid):
    if node is None:
        return 'gone'
    if node.get('instance_uuid') != instance_uuid:
        return 'no longer holds the instance'
    if node.get('maintenance'):
        return 'maintenance: %s' % (node.get('maintenance_reason') or '-')
    if node.get('provision_state') in states.FAILED:
        return 'provision error: %s' % (node.get('last_error')
                                        or node['provision_state'])
    return None
