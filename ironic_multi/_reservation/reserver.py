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

"""The reservation layer's one entry point: a :class:`Reserver` per host.

A Reserver joins the coordination group, places the provider's shard keys
on the ring, keeps the provider's cache of the shards it owns fresh,
publishes their capacity, and claims and releases nodes.  Everything done
to a reserved node afterwards (deploy, power, VIFs, tear down) goes
through it as well, keyed by instance: the virt driver never meets a
node provider, let alone Ironic.  In the background it refreshes, polls
the health of its instances' nodes and, when it leads the group, keeps
house.

The ring only keeps services out of each other's way; the provider's
atomic claim is what makes a reservation safe.  Each claim carries the
group's ownership mark: the Reserver acts on its own initiative only on
what its group marked, and Nova's requests about an instance never reach
a node that another group marked.
"""

import threading
import time

from oslo_log import log as logging

from ironic_multi._reservation import board
from ironic_multi._reservation import capacity as capacity_mod
from ironic_multi._reservation import claims
from ironic_multi._reservation import health as health_mod
from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation import leader
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation import member_watch
from ironic_multi._reservation import membership as membership_mod
from ironic_multi._reservation import providers
from ironic_multi._reservation.providers import base
from ironic_multi._reservation import ring as ring_mod
from ironic_multi._reservation import stats as stats_mod
from ironic_multi._reservation import throttle as throttle_mod
from ironic_multi._reservation import worker as worker_mod
from ironic_multi import conf as im_conf
from ironic_multi import exception

LOG = logging.getLogger(__name__)

_POWER_AFTER = {base.PowerAction.ON: lifecycle.PowerState.ON,
                base.PowerAction.OFF: lifecycle.PowerState.OFF,
                base.PowerAction.SOFT_OFF: lifecycle.PowerState.OFF,
                base.PowerAction.REBOOT: lifecycle.PowerState.ON,
                base.PowerAction.SOFT_REBOOT: lifecycle.PowerState.ON}


class Reserver(object):
    """Claims, uses and releases nodes on behalf of one host.

    :param conf: a ConfigOpts with ironic-multi's options registered.
    :param host: the compute service host (the stable part of the member
        id); the machine's host name by default.
    :param provider: the node provider; loaded by name from ``conf``.
    :param membership: the coordination group member; made from ``conf``.
    """

    def __init__(self, conf, host=None, provider=None, membership=None):
        im_conf.check(conf, host=host)
        self.conf = conf
        self._opts = opts = conf.ironic_multi
        self.provider = provider or providers.load_provider(conf)
        self.membership = (membership
                           or membership_mod.Membership.from_conf(conf, host))
        self.host = self.membership.host
        self.stats = stats_mod.Stats()
        self.ring = ring_mod.ShardRing(self.membership, opts.ring_partitions,
                                       scope=im_conf.shard_scope(conf))
        # Long enough for the survivors to notice a member left and to
        # refresh the shards they take over from it.
        self.capacity = capacity_mod.CapacityBoard(
            self.membership, retain_seconds=(
                opts.membership_timeout + 2 * opts.pool_refresh_interval),
            ring=self.ring)
        self.group = self.provider.group
        self._claims = claims.ClaimStrategy(
            self.provider, self.ring, opts.claim_candidates,
            opts.claim_timeout, self.stats,
            claimer=self.membership.member_id)
        self.health = health_mod.HealthPoll(
            self.provider, self.host, max_age=2 * opts.health_poll_interval)
        self.throttle = throttle_mod.DeployThrottle(
            opts.max_concurrent_deploys, opts.deploy_queue_timeout)
        self.leadership = leader.Leadership(self.membership, 'housekeeper')
        self.housekeeper = housekeeper_mod.Housekeeper(
            conf, self.provider, capacity=self.cluster_capacity,
            stats=self.stats, fence=self.leadership.confirm,
            members=self.membership.members)
        self.desk = board.Desk(self.host, {
            'flush': self._serve_flush,
            'housekeeping': self._serve_housekeeping},
            on_answer=self._publish_answers)
        self._periodics = []
        self._extra = {}
        self._worker = None
        self._member_watch = None
        self._refresh_lock = threading.Lock()
        # Held while joining the group, so that a stop() never races a
        # join; once _stopping is set nothing joins again.
        self._join_lock = threading.Lock()
        self._stopping = False
        # One pass at a time: the periodic one and the operator's.
        self._housekeeping_lock = threading.Lock()
        # The refresh and the operator requests run in threads of their
        # own and both publish: the newest answers must not be overwritten.
        self._publish_lock = threading.Lock()
        self._listeners = []
        self._capacity_listeners = []
        # Follows every change of the cluster's capacity, one at a time.
        self._follower = worker_mod.OnDemand(
            'ironic-multi-capacity-%s' % self.host, self._follow_capacity)
        self._refreshed_at = None
        # What tells this service's consumer from another's (set_consumers).
        self._identity = None
        # Which nodes this service serves: every member must serve the same.
        self.serves = im_conf.serves(conf)
        self._peers = im_conf.peers(conf)
        self.publish_extra(serves=self.serves)

    # -- life -------------------------------------------------------------

    def start(self, background=True):
        """Join the group, read the owned shards, start the periodics.

        Bounded by ``membership_timeout`` when the coordination backend
        does not answer: the service then starts alone, owning every shard
        (claims stay safe: the provider decides them), and tries to join
        at every refresh.
        """
        self.provider.start()
        self._join()
        try:
            self.check_same_nodes()
        except exception.ConfigInvalid:
            self.stop()
            raise
        self.refresh()
        self._check_scope_found()
        self.check_one_consumer()
        if background:
            # Each pass in a thread of its own: a housekeeping pass waiting
            # for a tear down, or a takeover, must not hold up the refresh,
            # the capacity published with it, the health poll or the
            # operator's requests.
            self._worker = worker_mod.Worker('ironic-multi-%s' % self.host)
            self._worker.add('refresh', self.refresh,
                             self._opts.pool_refresh_interval)
            self._worker.add('ring watch', self.watch_ring,
                             self._opts.ring_poll_interval)
            self._worker.add('health poll', self.health.poll,
                             self._opts.health_poll_interval)
            self._worker.add('housekeeping', self._periodic_housekeeping,
                             self._opts.housekeeping_interval)
            self._worker.add('operator requests', self.serve_requests,
                             self._opts.request_poll_interval)
            for periodic in self._periodics:
                self._worker.add(*periodic)
            self._worker.start()
            self._follower.start()
            # Where the backend streams the group's changes, a join or a
            # leave moves the keys at once, not at the next poll, and
            # another member's claim is counted as it is published.
            self._member_watch = member_watch.MemberWatch(
                self.membership, self.watch_ring,
                on_payload=self._others_published)
            self._member_watch.start()

    def add_periodic(self, name, function, interval):
        """Run ``function()`` every ``interval`` s, in a thread of its own.

        Only before :meth:`start`; for the virt driver's own periodic work
        (takeover).  It runs alongside the other periodics and Nova's
        calls, never twice at once.
        """
        self._periodics.append((name, function, interval))

    def publish_extra(self, **fields):
        """Publish ``fields`` with the capacity from now on (JSON).

        The virt driver publishes the inventory it reports to placement,
        for ``ironic-multi-manage capacity``.
        """
        # A new dict: the refresh may be reading the old one.
        self._extra = dict(self._extra, **fields)

    def add_request_handler(self, op, handler):
        """Serve operator requests ``op``; see :class:`~.board.Desk`."""
        self.desk.handlers[op] = handler

    def leave(self):
        """Leave the coordination group for good; the rest goes on.

        The other members take this host's shard keys at once.  Claims in
        progress go on (they fall back to every node), and a housekeeping
        pass still running stops at its next action: it is no longer the
        leader.  Safe to call twice, and before :meth:`stop`.
        """
        with self._join_lock:
            self._stopping = True
        self.leadership.resign()
        watch, self._member_watch = self._member_watch, None
        if watch is not None:
            watch.stop()
        self.membership.stop()

    def stop(self):
        # Leave the group first: not when the work in progress ends (a
        # housekeeping pass or a tear down can take minutes).
        self.leave()
        self._follower.stop()
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        self.provider.stop()

    def _join(self):
        try:
            with self._join_lock:
                if self._stopping:
                    return
                self.membership.start(
                    timeout=self._opts.membership_timeout)
        except exception.CoordinationUnavailable as e:
            LOG.warning('Cannot join the coordination group (%(error)s): '
                        'host %(host)s goes on alone, owning every shard, '
                        'and tries again at each refresh. Capacity reported '
                        'to placement is this host\'s view only until it '
                        'joins.', {'error': e, 'host': self.host})

    def on_refresh(self, listener):
        """Call ``listener(reserver)`` after each refresh, in its thread.

        For work that belongs with the refresh and not with a caller's
        request: the virt driver computes its inventory there.
        """
        self._listeners.append(listener)

    def on_capacity_change(self, listener):
        """Call ``listener(reserver)`` when the cluster's capacity changed.

        After each refresh, and as soon as a claim of any member is
        published, in a thread of its own, never twice at once: for the
        virt driver to tell placement at once rather than at Nova's next
        periodic.  Only before :meth:`start`.
        """
        self._capacity_listeners.append(listener)

    def capacity_changed(self):
        """Have the capacity listeners follow a change seen elsewhere."""
        self._follower.ask()

    def _follow_capacity(self):
        for listener in self._capacity_listeners:
            listener(self)

    def _others_published(self):
        """Another member's payload changed: sum again, follow a change."""
        try:
            changed = self.capacity.reread()
        except exception.CoordinationUnavailable as e:
            LOG.debug('Cannot read the payloads of the group: %s', e)
            return
        if changed:
            self._follower.ask()

    def watch_ring(self):
        """Refresh at once when a host joined or left the ring.

        One read of the group's members per ``ring_poll_interval``: a
        service that stops leaves the group within a second, and its shard
        keys should move then, not at the next pool refresh.

        :returns: whether the hosts had changed.
        """
        try:
            hosts = self.ring.live_hosts()
        except exception.CoordinationUnavailable as e:
            LOG.debug('Ring watch: %s', e)
            return False
        if hosts == self.ring.hosts:
            watch = self._member_watch
            if watch is None or not watch.streaming:
                # No stream tells of the other members' claims.
                self._others_published()
            return False
        LOG.info('Ring hosts changed (%(before)d to %(after)d): refreshing '
                 'now', {'before': len(self.ring.hosts),
                         'after': len(hosts)})
        self.refresh()
        return True

    def refresh(self):
        """Re-read the ring, refresh the cache, publish capacity.

        With the coordination backend down, the last ring is kept and the
        cache refreshed all the same.

        :returns: the number of node records read from the provider.
        """
        with self._refresh_lock:
            if self._stopping:
                return 0
            keys = self.provider.shard_keys()
            if not self.membership.started:
                self._join()
            try:
                self.ring.refresh(keys)
            except exception.CoordinationUnavailable as e:
                LOG.warning('Keeping the last shard ring: %s', e)
            # A claim after this is not in the counts: see capacity.py.
            counted_at = time.time()
            read = self.provider.refresh(self.ring.owned())
            owned = self.ring.owned()
            self._refreshed_at = time.time()
            with self._publish_lock:
                self.capacity.publish(
                    self.provider.capacity(owned),
                    self.provider.usable_traits(owned),
                    {'host': self.host, 'stats': self.stats.snapshot(),
                     'deploys': {'running': self.throttle.running,
                                 'waiting': self.throttle.waiting},
                     'leads': self.leadership.leading,
                     'pool': self.provider.describe(),
                     'answers': self.desk.answers, **self._extra},
                    counted_at=counted_at)
            for listener in self._listeners:
                listener(self)
        self._follower.ask()
        return read

    # -- operator requests ------------------------------------------------

    def serve_requests(self):
        """Start the operator requests addressed to this service.

        Each runs in a thread of its own (:class:`~.board.Desk`) and
        publishes its answer when it ends.
        """
        self.desk.serve(self.membership.published())

    def _publish_answers(self, _seen):
        # Every answer so far, read under the lock, not the list the
        # request's thread saw: two requests that end at once reach it in
        # either order, and the one that publishes last must not take
        # back the other's answer with an older list.
        with self._publish_lock:
            self.capacity.amend(answers=self.desk.answers)

    def _serve_flush(self, request):
        self.provider.flush()
        return {'read': self.refresh()}

    def _serve_housekeeping(self, request):
        report = self.housekeep(dry_run=request['args'].get('dry_run',
                                                            False))
        return None if report is None else report.as_dict()

    # -- housekeeping -----------------------------------------------------

    def set_consumers(self, consumers, identity=None):
        """Tell the housekeeper how to ask the consumer about instances.

        ``consumers(instance_uuids) -> {uuid: state}``; see
        :class:`~.housekeeper.Housekeeper`.

        :param identity: what tells this consumer from another (a Nova
            cell), published to the group.  A group serves one consumer:
            a member of another would find this one's instances unknown,
            and take them for orphans.  While the live members publish
            different identities, the consumer counts as one that cannot
            be asked.
        """
        self._identity = identity
        # Every claim's mark names it from now on: the housekeeper then
        # knows which consumer may say that an instance is gone.
        self.provider.consumer = identity
        if identity is not None:
            self.publish_extra(consumer=identity)
        self.housekeeper.consumers = (
            consumers if consumers is None or identity is None
            else self._one_consumer(consumers, identity))
        self.housekeeper.consumer = identity
        self.housekeeper.consumers_of_hosts = self._consumers_of_hosts

    def _one_consumer(self, consumers, identity):
        def ask(instance_uuids):
            others = self.foreign_consumers(identity)
            if others:
                raise exception.ConfigInvalid(
                    reason=self._many_consumers(identity, others))
            return consumers(instance_uuids)
        return ask

    def _many_consumers(self, identity, others):
        return ('the members of coordination group %s serve different '
                'consumers (Nova cells, told apart by their [DEFAULT] '
                'transport_url): %s has %s, %s. Give each cell an '
                '[ironic_multi] coordination_group of its own' % (
                    self.group, self.host, identity, ', '.join(
                        '%s has %s' % item
                        for item in sorted(others.items()))))

    def check_one_consumer(self):
        """Log an ERROR if members serve other consumers (Nova cells).

        Called at start, to say it at once.  Housekeeping then leaves
        orphans and failed claims alone at each pass: a cell's instances
        look unknown to another cell.

        :returns: ``{host: identity}`` of the members serving others.
        """
        if self._identity is None:
            return {}
        try:
            others = self.foreign_consumers(self._identity)
        except Exception as e:
            LOG.warning('Cannot check that coordination group %(group)s '
                        'serves one Nova cell only: %(error)s',
                        {'group': self.group, 'error': e})
            return {}
        if others:
            LOG.error('Housekeeping will release no orphan and delete no '
                      'failed claim: %s',
                      self._many_consumers(self._identity, others))
        return others

    def check_same_nodes(self):
        """Refuse to serve other nodes than the live members of the group.

        Members that serve other conductor groups or shard keys would each
        report the group's capacity as theirs while claiming from their
        own nodes only.  Skipped when the coordination backend does not
        answer; a member starting at the same time may be missed.

        :raises ConfigInvalid: naming the member and how it differs.
        """
        try:
            published = self.membership.published()
        except exception.CoordinationUnavailable as e:
            LOG.warning('Cannot check that the members of coordination group '
                        '%(group)s serve the same nodes: %(error)s',
                        {'group': self.group, 'error': e})
            return
        for member, payload in sorted(published.items()):
            host = payload.get('host') or membership_mod.host_of(member)
            if (membership_mod.is_operator(member) or host == self.host
                    or 'serves' not in payload):
                # An operator, this service's predecessor, or a member
                # that has not published yet.
                continue
            if payload['serves'] != self.serves:
                raise exception.ConfigInvalid(
                    option='[ironic_multi] coordination_group', reason=(
                        'host %s of coordination group %s serves %s, this '
                        'host (%s) serves %s: the services of a coordination '
                        'group must serve the same nodes; give each '
                        'conductor group or shard key its own '
                        '[ironic_multi] coordination_group' % (
                            host, self.group, _describe(payload['serves']),
                            self.host, _describe(self.serves))))
            if self._peers is not None and host not in self._peers:
                raise exception.ConfigInvalid(
                    option='[ironic] peer_list', reason=(
                        '[ironic] peer_list (%s) does not name host %s, a '
                        'live service of coordination group %s that shares '
                        'its nodes: add it, or remove peer_list' % (
                            ', '.join(sorted(self._peers)), host,
                            self.group)))

    def _check_scope_found(self):
        scope = self.ring.scope
        if scope is not None and not scope & set(self.provider.shard_keys()):
            LOG.warning('No node carries the shard key of [ironic] shard '
                        '(%s): this service reserves no node until one '
                        'does', ', '.join(sorted(scope)))

    def foreign_consumers(self, identity):
        """``{host: identity}`` of live members serving another consumer."""
        return {host: consumer
                for host, consumer in self._consumers_of_hosts().items()
                if consumer != identity}

    def _consumers_of_hosts(self):
        """``{host: identity}`` of the live members that publish one."""
        return {payload.get('host', membership_mod.host_of(member)):
                payload['consumer']
                for member, payload in self.membership.published().items()
                if payload.get('consumer') is not None}

    def housekeep(self, dry_run=False):
        """A housekeeping pass if this member leads; its report or None.

        :raises HousekeepingRunning: a pass is running here already (the
            periodic one, or one the operator asked for).
        """
        if not self._housekeeping_lock.acquire(blocking=False):
            raise exception.HousekeepingRunning(host=self.host)
        try:
            if not self.leadership.try_lead():
                LOG.debug('Another member keeps house')
                return None
            return self.housekeeper.run(dry_run=dry_run)
        finally:
            self._housekeeping_lock.release()

    def _periodic_housekeeping(self):
        try:
            self.housekeep()
        except exception.HousekeepingRunning:
            LOG.info('Periodic housekeeping pass skipped: the one the '
                     'operator asked for is still running')

    # -- what the cluster has ---------------------------------------------

    def owned_shards(self):
        return self.ring.owned()

    def local_capacity(self):
        """``{resource_class: {'total': n, 'free': n}}`` of owned shards."""
        return capacity_mod.total(self.provider.capacity(self.ring.owned()))

    def cluster_capacity(self):
        """The cluster's capacity as of the last refresh (no round trip)."""
        return self.capacity.cluster_capacity()

    def offer(self):
        """What this service offers placement; see ``CapacityBoard.offer``.

        As of the last refresh or change (no round trip).
        """
        return self.capacity.offer()

    def set_offering(self, offering):
        """Offer this service's shards' free nodes to placement, or not.

        Not while Nova has the compute service disabled: the scheduler
        sends it no build, so the ring's next host offers them.  The
        capacity listeners follow a change.
        """
        try:
            with self._publish_lock:
                changed = self.capacity.set_offering(offering)
        except exception.CoordinationUnavailable as e:
            LOG.warning('Cannot tell the other members that this service '
                        '%s its nodes: %s', 'offers' if offering else
                        'no longer offers', e)
            changed = True
        if changed:
            self._follower.ask()

    def builds_waiting(self, waiting):
        """Publish this member's builds that wait for a node.

        :param waiting: ``{instance uuid: {placement resource class:
            units}}``: the allocations against this service that hold no
            node yet.  They come off this service's offer (:meth:`offer`),
            as their nodes will; a claim takes its build off at once.
        :returns: whether they changed (counted here even if the
            coordination backend is down).
        """
        try:
            with self._publish_lock:
                return self.capacity.set_waiting(waiting)
        except exception.CoordinationUnavailable as e:
            LOG.debug('Cannot publish the builds waiting for a node: %s', e)
            return True

    def claimed_lately(self):
        """The instances this member claimed a node for lately."""
        return self.capacity.claimed_lately()

    def cluster_traits(self):
        """The cluster's usable traits as of the last refresh."""
        return self.capacity.cluster_traits()

    @property
    def features(self):
        """The optional features of the node provider."""
        return self.provider.features

    # -- reservations -----------------------------------------------------

    def claim(self, instance_uuid, requirements, deployment=None):
        """Reserve a node matching ``requirements`` for ``instance_uuid``.

        :param deployment: what :meth:`deploy` will get next, if known:
            the provider may write it with the claim.

        See :class:`~.claims.ClaimStrategy`.  The claim is published to
        the group at once: every member counts its node as taken.
        """
        reservation = self._claims.claim(instance_uuid, requirements,
                                         deployment)
        self._announce(reservation)
        return reservation

    def _announce(self, reservation):
        try:
            with self._publish_lock:
                self.capacity.took(reservation.node_uuid, reservation.shard,
                                   reservation.resource_class,
                                   reservation.instance_uuid)
        except exception.CoordinationUnavailable as e:
            LOG.warning('Cannot publish the claim of node %(node)s: the '
                        'other members count it at its owner\'s next '
                        'refresh (%(error)s)',
                        {'node': reservation.node_uuid, 'error': e})
        self._follower.ask()

    def release(self, instance_uuid):
        """Release the node of ``instance_uuid``; idempotent.

        Never a node that another host has adopted since.

        :raises ForeignReservation: another group marked it.
        """
        reservation = self.provider.lookup(instance_uuid)
        if reservation is not None and not self._ours(reservation):
            return None
        self.health.forget(instance_uuid)
        return self.provider.release(instance_uuid)

    def lookup(self, instance_uuid):
        """The reservation of ``instance_uuid``, or None."""
        return self.provider.lookup(instance_uuid)

    def own(self, instance_uuids):
        """Mark the nodes of the consumer's own instances as this group's.

        The upgrade from a version without ownership marks: the consumer
        names the instances it has on this host; their nodes, claimed
        unmarked, get this group's mark, and from then on the housekeeper
        looks after them.  A node another group marked is left alone.

        :returns: the instances whose nodes were marked now.
        """
        wanted = set(instance_uuids)
        marked = []
        # One listing, and a write only where a mark is missing.
        for reservation in sorted(self.provider.reservations(),
                                  key=lambda r: r.instance_uuid):
            if (reservation.instance_uuid in wanted
                    and reservation.node_uuid is not None
                    and reservation.group is None):
                self.provider.own(reservation.instance_uuid)
                marked.append(reservation.instance_uuid)
        if marked:
            LOG.warning('Host %(host)s marked %(count)d node(s) claimed '
                        'before ownership marks as group %(group)s\'s: '
                        '%(instances)s',
                        {'host': self.host, 'count': len(marked),
                         'group': self.group,
                         'instances': ', '.join(marked)})
        return marked

    def node(self, instance_uuid):
        """The node dict of this host's instance (see NodeProvider.node).

        :raises ReservationNotFound: it holds no node here.
        """
        return self.provider.node(self._held(instance_uuid))

    def instances(self):
        """``{instance_uuid: reservation}`` of this host's instances."""
        return self.provider.instances(self.host)

    def _ours(self, reservation):
        """Whether a request about the instance may act on its node.

        The consumer asks about its own instance, so a node without any
        mark is one claimed before marks, and is acted on.

        :raises ForeignReservation: another group marked the node.
        """
        if reservation.group not in (None, self.group):
            raise exception.ForeignReservation(
                instance=reservation.instance_uuid,
                node=reservation.node_uuid, group=reservation.group,
                ours=self.group)
        # A service that comes back after another adopted its instances
        # must leave them alone.
        if reservation.host in (None, self.host):
            return True
        LOG.warning('Instance %(instance)s belongs to host %(owner)s now; '
                    '%(host)s leaves it alone',
                    {'instance': reservation.instance_uuid,
                     'owner': reservation.host, 'host': self.host})
        return False

    def _held(self, instance_uuid):
        reservation = self.provider.lookup(instance_uuid)
        if (reservation is None or reservation.node_uuid is None
                or not self._ours(reservation)):
            raise exception.ReservationNotFound(instance=instance_uuid)
        return reservation

    # -- what is done to a reserved node ---------------------------------

    def deploy(self, reservation, deployment, should_stop=None):
        """Deploy the claimed node of ``reservation``; wait for it.

        Waits for a turn first (``max_concurrent_deploys``).  A failure is
        marked on the node: it cools down, and the housekeeper
        quarantines it after repeated failures.

        :raises NotSupported: the deployment boots from volumes, which the
            provider cannot do; nothing was done.
        """
        if deployment.volume_targets:
            self.provider.require(base.Feature.VOLUME_BOOT)
        reservation.moved_to(lifecycle.State.DEPLOYING)
        with self.throttle.turn('deploy of %s' % reservation.instance_uuid):
            started = time.monotonic()
            try:
                deployed = self.provider.deploy(reservation, deployment,
                                                should_stop)
            except exception.DeployFailed as e:
                self.stats.count('deploy failures')
                self._mark_failure(reservation.node_uuid, e)
                raise
        self.stats.observe('deploy', time.monotonic() - started)
        return deployed

    def _mark_failure(self, node_uuid, error):
        try:
            self.provider.record_failure(node_uuid, str(error))
        except exception.IronicMultiError as e:
            LOG.warning('Could not mark the failure of node %(node)s: '
                        '%(error)s', {'node': node_uuid, 'error': e})

    def teardown(self, instance_uuid, vifs=()):
        """Undo the deploy of ``instance_uuid``, if it holds a node here.

        :returns: the reservation, or None when it holds none (or one that
            another host adopted).
        """
        reservation = self.provider.lookup(instance_uuid)
        if (reservation is None or reservation.node_uuid is None
                or not self._ours(reservation)):
            return None
        self.health.forget(instance_uuid)
        try:
            self.provider.teardown(reservation, vifs)
        except exception.TeardownFailed as e:
            self._mark_failure(reservation.node_uuid, e)
            raise
        return reservation

    def rebuild(self, instance_uuid, deployment):
        reservation = self._held(instance_uuid)
        reservation.moved_to(lifecycle.State.DEPLOYING)
        with self.throttle.turn('rebuild of %s' % instance_uuid):
            self.provider.rebuild(reservation, deployment)

    def power(self, instance_uuid, action, timeout=None):
        self.provider.power(self._held(instance_uuid), action, timeout)
        self.health.expect(instance_uuid, _POWER_AFTER[action])

    def power_state(self, instance_uuid):
        """The power of the instance's node; None without a node.

        From the health poll when it is fresh, else from the provider.
        """
        found = self.health.latest(instance_uuid)
        if found is not None:
            return found.power_state
        reservation = self.provider.lookup(instance_uuid)
        return None if reservation is None else reservation.power_state

    # Nova's requests about its instance: only on a node this group
    # holds for it, read from the provider right before (_held).

    def check(self, instance_uuid, feature):
        """Raise unless the instance's node can do ``feature`` (reads only).

        See :meth:`~.providers.base.NodeProvider.check`.
        """
        self.provider.check(self._held(instance_uuid), feature)

    def rescue(self, instance_uuid, password):
        self.provider.rescue(self._held(instance_uuid), password)

    def unrescue(self, instance_uuid):
        self.provider.unrescue(self._held(instance_uuid))

    def console(self, instance_uuid, kind):
        """Where the console of ``kind`` of the instance's node is served.

        :returns: a :class:`~.providers.base.Console`.
        """
        return self.provider.console(self._held(instance_uuid), kind)

    def crash_dump(self, instance_uuid):
        self.provider.crash_dump(self._held(instance_uuid))

    def attach_vif(self, instance_uuid, vif_id):
        self.provider.attach_vif(self._held(instance_uuid), vif_id)

    def volume_connectors(self, instance_uuid):
        """``(node dict, volume connectors)`` of the instance's node.

        The node as :meth:`node` gives it (its ``properties`` name the
        CPU architecture a volume connector reports).

        :raises NotSupported: the provider cannot boot from volumes.
        :raises ReservationNotFound: it holds no node here.
        """
        self.provider.require(base.Feature.VOLUME_BOOT)
        reservation = self._held(instance_uuid)
        return (self.provider.node(reservation),
                self.provider.volume_connectors(reservation))

    def detach_vif(self, instance_uuid, vif_id):
        reservation = self.provider.lookup(instance_uuid)
        if (reservation is not None and reservation.node_uuid is not None
                and self._ours(reservation)):
            self.provider.detach_vif(reservation, vif_id)

    def adopt(self, instance_uuid):
        """Make this host the owner of an instance (a takeover).

        A node claimed before ownership marks gets this group's mark: the
        consumer put the instance on a host of this group.

        :returns: the reservation as it was before.
        :raises ReservationNotFound: the instance holds no node.
        :raises ForeignReservation: another group marked the node.
        """
        reservation = self.provider.lookup(instance_uuid)
        if reservation is None or reservation.node_uuid is None:
            raise exception.ReservationNotFound(instance=instance_uuid)
        if not reservation.owned_by(self.group):
            self.provider.own(instance_uuid)
        self.provider.mark_host(reservation, self.host)
        LOG.info('Host %(host)s adopted instance %(instance)s (node '
                 '%(node)s) from %(previous)s',
                 {'host': self.host, 'instance': instance_uuid,
                  'node': reservation.node_uuid,
                  'previous': reservation.host})
        return reservation

    def give_back(self, instance_uuid, host):
        """Undo :meth:`adopt`: the node is marked for ``host`` again.

        For an adoption that Nova refused half way: the node must name
        the host Nova still routes the instance to.  Only a node marked
        for this host is given back.

        :raises ReservationNotFound: the instance holds no node of this
            host's.
        """
        reservation = self.provider.lookup(instance_uuid)
        if (reservation is None or reservation.node_uuid is None
                or reservation.host != self.host
                or not reservation.owned_by(self.group)):
            raise exception.ReservationNotFound(instance=instance_uuid)
        self.provider.mark_host(reservation, host)
        LOG.info('Host %(host)s gave instance %(instance)s (node %(node)s) '
                 'back to %(previous)s',
                 {'host': self.host, 'instance': instance_uuid,
                  'node': reservation.node_uuid, 'previous': host})

    def disown(self, reservation, host):
        """Hand the reservation's node to Nova's in-tree driver on ``host``.

        Undoes :meth:`adopt` of ``migrate apply``: the node loses this
        group's mark and is marked for ``host``.

        :param reservation: as :meth:`lookup` found it.
        :raises ReservationNotFound: it holds no node (any more).
        :raises ForeignReservation: another group marked the node.
        :raises NodeCannot: an Ironic allocation claims the node.
        :raises NotSupported: the provider has no Ironic nodes.
        """
        if reservation.node_uuid is None:
            raise exception.ReservationNotFound(
                instance=reservation.instance_uuid)
        self.provider.disown(reservation, host)


def _describe(serves):
    """``conductor group 'g1' and shard key s1``, for messages."""
    group, shard = serves.get('conductor_group'), serves.get('shard')
    return '%s and %s' % (
        'every conductor group' if group is None
        else 'conductor group %r' % group,
        'every shard key' if shard is None else 'shard key %s' % shard)
