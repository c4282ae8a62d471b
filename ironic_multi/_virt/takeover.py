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

"""Takeover: a live compute service adopts the instances of a lost one.

Nova routes every action on an instance to ``instance.host``; while that
compute service is down the instance cannot be rebooted, stopped or
deleted properly (a delete is "local": the node stays deployed).  Nova's
in-tree Ironic driver needs the service forced down plus one
``nova-manage db ironic_compute_node_move`` per node.  Here a live service
adopts every instance of the lost host at once, moving three things:

1. the instance's placement allocation, from the lost host's resource
   provider to the adopter's;
2. the host mark of the instance's node (``Reserver.adopt``): from then on
   the lost service, should it come back, leaves the node alone (the
   Reserver refuses to power, tear down or release another host's node,
   and the driver lists only the instances marked for its host);
3. the Nova instance's ``host``, ``node`` and ``compute_id``: from then on
   Nova routes the instance's actions to the adopter.

**Which hosts are lost.**  A nova-compute service is this driver's when
Nova has its compute node under the UUID this driver derives from the host
name (``host.compute_node_uuid``), named after the host, of hypervisor
type ``ironic``: only this driver registers that node, so no other
driver's host (libvirt, Nova's own Ironic driver) is ever taken over.  It
is lost when Nova reports it forced down (``[ironic_multi]
takeover_forced_down``), or down by its heartbeats for more than
``takeover_down_after`` seconds (counted from the moment Nova starts
reporting it down: last heartbeat plus ``service_down_time``), *and* it
has no live member in the coordination group.  A nova-compute that
restarts joins the group before it serves RPC, but sends its first
heartbeat to Nova seconds later: Nova still reports it down while it
builds again, and ending its tasks then would make two services manage
one instance.  The adopter asks the group again before each write, and
stops once the host is back.  (A nova-compute stuck while its
coordination heartbeat goes on is not taken over either: stop it, and
its membership ends.)  A lost
host without instances needs nothing: adopting it finds none.  Instances
whose node this service's provider cannot see are skipped, so a host of
another Ironic is never half adopted.

**Who adopts.**  Exactly one live service per lost host, chosen without
talking: the owner of the lost host's name on the shard ring, leaving out
the hosts Nova reports down (the lost host may still heartbeat in the
coordination group when only its nova-compute is stuck).  Every service
reads the same services table and the same group, so they agree; for the
moments when they do not (a member joining), a tooz lock per lost host
makes adoptions of one host run one at a time, and the second one finds
nothing left on the lost host.  A service that Nova reports down itself
adopts nothing.  An operator request (``ironic-multi-manage instances
adopt --from HOST [--to HOST]``) is served by the ``--to`` host, or else
by the same ring owner.

**Which instances.**  Those Nova has on the lost host.  First, the
adopter ends what the lost host left unfinished: an instance still
building, or in the middle of a task (``task_state`` set), can never
progress there (Nova's own ``instance_build_timeout`` runs on the lost
host too), and its user would wait for ever.  It is set to ERROR with no
task, and gets an instance fault (``openstack server show``) from the
Nova exception its compute manager would have raised (a build aborted, a
termination, reboot or power action failed) saying which host was lost
during which task.  The write expects the states it read: an instance
whose task changed meanwhile is left for the next run.  Then it is
adopted like any other, so that the user's next request (delete, hard
reboot, rebuild) goes to a live service, which can act on the node.
Except:

- an instance holding no node this service can see (a build that failed
  or never claimed one, a delete that released it): it stays on the lost
  host, in ERROR when its task was ended, and Nova deletes it by itself
  while its host is down;
- an instance whose node is marked for a third host (adopted by another
  service since, or a mistake): never stolen;
- an instance whose node carries another coordination group's ownership
  mark: not this group's to move.  A node claimed before ownership marks
  gets this group's mark as it is adopted: Nova put its instance on a
  host of this group.

**Fenced.**  Adoptions of a lost host run under the group's lock for that
host, and the adopter asks the backend before each write (a task ended,
an instance adopted) whether it still holds it: a service cut off from
the coordination backend, or paused past the lock's expiry, stops at
once, and whoever holds the lock now goes on.

A locked instance is adopted like any other: its lock guards it against
its users' actions, not against a change of compute service.  Neutron
ports need nothing: Ironic binds them to the node, not to the compute
host.
"""

import collections
import time

from keystoneauth1 import exceptions as ks_exc
from nova.compute import task_states
from nova.compute import utils as compute_utils
from nova.compute import vm_states
from nova import conf as nova_conf
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.scheduler.client import report
from nova import servicegroup
from oslo_log import log as logging
from oslo_utils import timeutils
import tooz

from ironic_multi._reservation import leader
from ironic_multi._reservation import membership as membership_mod
from ironic_multi._virt import capacity
from ironic_multi._virt import host as host_mod
from ironic_multi._virt import migration
from ironic_multi import exception

LOG = logging.getLogger(__name__)
CONF = nova_conf.CONF

BINARY = 'nova-compute'
# The group's lock around the adoption of one lost host.
LOCK_NAME = 'takeover.%s'
# Seconds an operator's request waits for another service's takeover of
# the same host to end (each periodic pass takes the lock, if only to
# find nothing left to adopt); the periodic task itself never waits.
REQUEST_LOCK_WAIT = 5
LOCK_RETRY = 0.25
# The reason in the fault of a task that a takeover ended.
_LOST = 'compute host %s was lost (%s) during %s'
# The fields of a Nova instance that an adoption moves.
_MOVED = ('host', 'node', 'compute_id')
# Why the in-tree driver's instances are adopted, in the log.
_MIGRATED = 'moved from Nova\'s in-tree Ironic driver'
# Why a host is not taken over: its nova-compute process lives.
_IN_THE_GROUP = ('it is a live member of the coordination group (its '
                 'nova-compute runs)')

# What a service knows of Nova's compute services in one look:
# ``services`` {host: Service}; ``down`` the hosts Nova reports down
# (forced or by heartbeat); ``lost`` {host: why} the hosts of this
# driver to take over.
Survey = collections.namedtuple('Survey', 'services down lost')

# Errors that end the adoption of one instance, not of the host.
INSTANCE_ERRORS = (exception.IronicMultiError, nova_exception.NovaException,
                   ks_exc.ClientException)

# The Nova exception that tells a user which task of theirs a lost host
# left unfinished (the one its compute manager raises when the task
# fails); tasks not listed get a plain NovaException.
_BUILD = nova_exception.BuildAbortException
_INTERRUPTED = dict(
    [(task, _BUILD) for task in task_states.rebuild_states]
    + [(task, nova_exception.InstanceRebootFailure) for task in
       task_states.soft_reboot_states + task_states.hard_reboot_states]
    + [(task_states.DELETING, nova_exception.InstanceTerminationFailure),
       (task_states.SOFT_DELETING,
        nova_exception.InstanceTerminationFailure),
       (task_states.POWERING_OFF, nova_exception.InstancePowerOffFailure),
       (task_states.POWERING_ON, nova_exception.InstancePowerOnFailure),
       (task_states.RESCUING, nova_exception.InstanceRescueFailure),
       (task_states.UNRESCUING, nova_exception.InstanceUnRescueFailure),
       (task_states.SUSPENDING, nova_exception.InstanceSuspendFailure),
       (task_states.RESUMING, nova_exception.InstanceResumeFailure)])


# Why a takeover waited for the group's lock of a host in vain.
_ADOPTING_NOW = 'another service is adopting them now'


def enabled(conf):
    """Whether the automatic takeover runs (the periodic is registered)."""
    opts = conf.ironic_multi
    return bool(opts.takeover_forced_down or opts.takeover_down_after)


def moved_allocations(current, source, target):
    """The PUT /allocations payload with ``source``'s part on ``target``.

    :param current: the consumer's ``GET /allocations/{uuid}`` (1.28+).
    :param source: the lost host's resource provider.
    :param target: the adopter's resource provider.

    Allocations against other providers (sharing providers) stay as they
    are; the consumer generation guards against a concurrent change.
    """
    allocations = {}
    for provider, allocation in sorted(
            (current.get('allocations') or {}).items()):
        key = target if provider == source else provider
        resources = allocations.setdefault(key, {'resources': {}})[
            'resources']
        for resource_class, amount in allocation['resources'].items():
            resources[resource_class] = (resources.get(resource_class, 0)
                                         + amount)
    return {'allocations': allocations,
            'consumer_generation': current.get('consumer_generation'),
            'project_id': current['project_id'],
            'user_id': current['user_id']}


def unfinished(instance):
    """Whether the instance is building, or in the middle of a task."""
    return (instance.task_state is not None
            or instance.vm_state == vm_states.BUILDING)


def interrupted(instance, source, why):
    """The Nova exception for the instance's task, lost with ``source``.

    :param why: why the host counts as lost ("forced down", ...).
    """
    task = instance.task_state
    reason = _LOST % (source, why, task or 'the build')
    if instance.vm_state == vm_states.BUILDING:
        return _BUILD(instance_uuid=instance.uuid, reason=reason)
    fault = _INTERRUPTED.get(task)
    if fault is _BUILD:
        return _BUILD(instance_uuid=instance.uuid, reason=reason)
    if fault is not None:
        return fault(reason=reason)
    return nova_exception.NovaException(
        message='Task of instance %s ended: %s' % (instance.uuid, reason))


class _Everyone(object):
    """Contains every host: when the group cannot be read."""

    def __contains__(self, host):
        return True


def first_line(error):
    """An error's message without the traceback a remote one carries."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _source_rp(instance, source, in_tree):
    """The provider an instance's allocation moves from.

    The in-tree driver's compute node and provider are its node's.
    """
    return instance.node if in_tree else host_mod.compute_node_uuid(source)


def _moving(current, source):
    """``{resource class: units}`` that ``source`` holds for the consumer."""
    allocation = (current.get('allocations') or {}).get(source)
    return dict(allocation['resources']) if allocation else {}


class Takeover(object):
    """Adoption of lost hosts' instances by the service of ``host``.

    :param reserver: this service's Reserver (``ring``, ``membership``,
        ``lookup``, ``adopt``).
    :param host: this service's host; its compute node is named after it.
    :param conf: the ConfigOpts with ``[ironic_multi]`` registered.
    :param report_client: a placement SchedulerReportClient, or a callable
        returning one (or None): the compute manager's, whose provider
        cache is then told about the inventory change; Nova's singleton
        by default.
    :param on_adopted: called with the report after an adoption that moved
        instances (the driver recomputes its inventory).
    :param on_arriving: called with the UUIDs of the instances about to be
        adopted, before any of their allocations moves here (the driver's
        inventory then knows that they hold nodes).
    """

    def __init__(self, reserver, host, conf=CONF, report_client=None,
                 on_adopted=None, on_arriving=None):
        self._reserver = reserver
        self.host = host
        self._conf = conf
        self._report_client = report_client
        self._on_adopted = on_adopted
        self._on_arriving = on_arriving
        self._servicegroup = None
        # Hosts whose compute node is known to be this driver's.
        self._drivers_hosts = set()
        # {lost host: skipped} of the last run, to warn about changes only.
        self._last_skipped = {}
        # Hosts down in Nova but live in the group, to log changes only.
        self._back = set()

    # -- who is lost -------------------------------------------------------

    def _servicegroup_api(self):
        if self._servicegroup is None:
            self._servicegroup = servicegroup.API()
        return self._servicegroup

    def survey(self, context):
        """Nova's compute services: which are down, which are lost.

        One read of the services table (through the conductor), plus one
        of the compute node of each down host until it is found to be
        this driver's.
        """
        opts = self._conf.ironic_multi
        services = {service.host: service for service in
                    objects.ServiceList.get_by_binary(
                        context, BINARY, include_disabled=True)}
        now = timeutils.utcnow().replace(tzinfo=None)
        down, lost = set(), {}
        members = None
        for host, service in sorted(services.items()):
            if self._servicegroup_api().service_is_up(service):
                continue
            down.add(host)
            if host == self.host:
                continue
            if service.forced_down and opts.takeover_forced_down:
                why = 'forced down'
            else:
                seconds = _down_for(service, now)
                if not (opts.takeover_down_after and seconds is not None
                        and seconds >= opts.takeover_down_after):
                    continue
                why = 'down for %d s' % seconds
            if not self.drivers_host(context, host):
                continue
            if members is None:
                members = self._member_hosts()
            if host in members:
                self._note_back(host, why)
                continue
            lost[host] = why
        self._back &= down
        return Survey(services, frozenset(down), lost)

    def _member_hosts(self):
        """The hosts with a live member in the group.

        Every host when the group cannot be read: nobody is lost until it
        can be.
        """
        try:
            return {membership_mod.host_of(m)
                    for m in self._reserver.membership.members()}
        except (tooz.ToozError, exception.CoordinationUnavailable) as e:
            LOG.warning('Cannot list the coordination group (%s): no host '
                        'is taken over until it can be', e)
            return _Everyone()

    def _note_back(self, host, why):
        if host not in self._back:
            self._back.add(host)
            LOG.info('Host %(host)s is %(why)s in Nova, but a live member '
                     'of the coordination group (it restarted and has not '
                     'reported to Nova yet, or only its nova-compute is '
                     'stuck): its instances stay with it',
                     {'host': host, 'why': why})

    def lost_hosts(self, context):
        """Hosts of this driver whose instances a live service must adopt.

        Forced down (with ``takeover_forced_down``), or down for more than
        ``takeover_down_after`` seconds; sorted.
        """
        return sorted(self.survey(context).lost)

    def drivers_host(self, context, host):
        """Whether Nova has this driver's compute node for ``host``."""
        if host in self._drivers_hosts:
            return True
        try:
            node = objects.ComputeNode.get_by_uuid(
                context, host_mod.compute_node_uuid(host))
        except nova_exception.ComputeHostNotFound:
            return False
        if (node.host == host and node.hypervisor_hostname == host
                and node.hypervisor_type == host_mod.HYPERVISOR_TYPE):
            self._drivers_hosts.add(host)
            return True
        return False

    def adopter(self, source, down=()):
        """The live host that adopts the instances of ``source``.

        The owner of the host's name on the shard ring, leaving out the
        hosts Nova reports down; None when no host is left.
        """
        return self._reserver.ring.owner(source,
                                         ignore=set(down) | {source})

    def in_tree_adopter(self, source, down=()):
        """The live host that moves the in-tree instances of ``source``.

        ``source`` itself when its nova-compute runs this driver now (a
        switch in place); else its owner on the ring, as for a lost host.
        """
        if source in self._member_hosts():
            return source
        return self.adopter(source, down)

    # -- the periodic and the operator request ----------------------------

    def run(self, context=None):
        """Adopt the instances of every lost host this service should take.

        The periodic task (``takeover_forced_down`` or
        ``takeover_down_after`` set); returns the reports.
        """
        context = context or nova_context.get_admin_context()
        survey = self.survey(context)
        if self.host not in survey.services or self.host in survey.down:
            LOG.debug('Host %s is not up in Nova: it adopts nothing',
                      self.host)
            return []
        reports = []
        for source, why in sorted(survey.lost.items()):
            adopter = self.adopter(source, survey.down)
            if adopter != self.host:
                LOG.debug('Host %(source)s is %(why)s; %(adopter)s adopts '
                          'its instances', {'source': source, 'why': why,
                                            'adopter': adopter})
                continue
            try:
                reports.append(self.adopt(context, source, why))
            except exception.TakeoverRefused as e:
                LOG.info('%s', e)
        return reports

    def serve(self, request):
        """The operator request ``adopt`` (``instances adopt``).

        Without a host named in the request only the ring owner of the
        lost host answers (the others return None: no answer).

        :raises TakeoverRefused: the host to adopt from is this one, is
            not a compute service of this driver, or Nova reports it up
            and not forced down; or Nova reports this host down.
        """
        return self._serve_safely(request)

    def serve_migration(self, request):
        """The operator request ``migrate-apply`` (``migrate apply``).

        As ``adopt``, from a host of Nova's in-tree Ironic driver: each
        instance that :func:`.migration.refusals` finds nothing against
        moves to this driver, with its node left as it is.
        """
        return self._serve_safely(request, in_tree=True)

    def _serve_safely(self, request, in_tree=False):
        args = request.get('args') or {}
        source = args.get('from')
        if not source:
            raise self._refused(source, 'the request names no host')
        try:
            return self._serve(request, source, in_tree)
        except exception.IronicMultiError:
            raise
        except Exception as e:
            # The operator gets an answer, not a timeout.
            LOG.exception('Adopting the instances of %s failed', source)
            raise self._refused(source, 'it failed: %s' % e)

    def _serve(self, request, source, in_tree):
        context = nova_context.get_admin_context()
        survey = self.survey(context)
        if in_tree:
            return self._serve_in_tree(request, context, source, survey)
        if (request.get('host') is None
                and self.adopter(source, survey.down) != self.host):
            return None
        if source == self.host:
            raise self._refused(source, 'a host cannot adopt its own '
                                        'instances')
        self._check_source(context, source, survey)
        if not self.drivers_host(context, source):
            raise self._refused(source, 'its compute node is not one of '
                                        'this driver\'s')
        self._check_lost(source, survey)
        return self.adopt(context, source, wait=REQUEST_LOCK_WAIT)

    def _serve_in_tree(self, request, context, source, survey):
        # A host switched to this driver in place (its nova-compute now
        # runs this driver, under the same host name) moves its own
        # instances; a host whose service stays stopped is adopted, as a
        # lost one is, by its ring owner.
        acting = self.in_tree_adopter(source, survey.down)
        switched = acting == source
        if request.get('host') is None and acting != self.host:
            return None
        # A host without in-tree compute nodes (any more) is no error:
        # the run finds nothing to move, as a run after the last one must.
        self._check_source(context, source, survey)
        if switched and source != self.host:
            raise self._refused(source, 'its nova-compute runs this driver '
                                        'now: it moves its own instances '
                                        '(--to %s)' % source)
        if not switched:
            self._check_lost(source, survey)
        return self.adopt(context, source, why=_MIGRATED,
                          wait=REQUEST_LOCK_WAIT, in_tree=True)

    def _check_source(self, context, source, survey):
        if self.host in survey.down:
            raise self._refused(source, 'Nova reports %s down' % self.host)
        if source not in survey.services:
            raise self._refused(source, 'Nova has no %s service on host %s'
                                % (BINARY, source))

    def _check_lost(self, source, survey):
        # No override: a service Nova reports up may be running, and two
        # services must never manage one instance.  Forcing it down in
        # Nova is the operator's statement that it is not.
        if source not in survey.down:
            raise self._refused(
                source, 'Nova reports it up and not forced down; stop it '
                        'and force it down first (openstack compute '
                        'service set --down %s %s)' % (source, BINARY))
        if source in self._member_hosts():
            raise self._refused(source, _IN_THE_GROUP + '; stop it first')

    def _refused(self, source, reason):
        return exception.TakeoverRefused(host=self.host, source=source,
                                         reason=reason)

    # -- adoption ---------------------------------------------------------

    def adopt(self, context, source, why='Nova reports it down', wait=0,
              in_tree=False):
        """Adopt every instance Nova has on ``source``; idempotent.

        :param why: why ``source`` counts as lost, for the instance faults
            of the tasks it left unfinished.
        :returns: ``{'host', 'from', 'adopted': [uuid], 'ended': {uuid:
            the fault message}, 'skipped': {uuid: reason}, 'seconds'}``
            (JSON).
        :param wait: seconds to wait for another service's takeover of
            ``source`` to end.
        :param in_tree: ``source`` runs Nova's in-tree Ironic driver: each
            instance's allocation is against its node's provider, and an
            instance that :func:`.migration.refusals` finds anything
            against is skipped (its task is never ended).
        :raises TakeoverRefused: ``source`` is this host, or another
            service is adopting its instances right now.
        """
        started = time.monotonic()
        if source == self.host and not in_tree:
            raise self._refused(source, 'a host cannot adopt its own '
                                        'instances')
        lock = self.lock(source, wait)
        try:
            result = self._adopt(context, source, lock, why, in_tree)
        finally:
            self.release(lock)
        result['seconds'] = round(time.monotonic() - started, 3)
        self._log(result)
        if result['adopted'] and self._on_adopted is not None:
            self._on_adopted(result)
        return result

    def lock(self, source, wait=0, busy=_ADOPTING_NOW):
        """The group's lock of ``source``'s instances, within ``wait`` s.

        :param busy: the refusal's reason while another run holds it.
        :raises TakeoverRefused:
        """
        # Tries without blocking, again and again: a blocking acquire
        # would outlive the membership's call bound whenever another
        # service holds the lock.
        membership = self._reserver.membership
        deadline = time.monotonic() + wait
        lock = None
        while True:
            try:
                lock = lock or membership.lock(LOCK_NAME % source)
                if leader.take(membership, lock,
                               'the takeover lock of %s' % source):
                    return lock
            except (tooz.ToozError, exception.CoordinationUnavailable) as e:
                raise self._refused(
                    source, 'cannot take the group\'s lock: %s' % e)
            if time.monotonic() >= deadline:
                raise self._refused(source, busy)
            time.sleep(LOCK_RETRY)

    def _fence(self, source, lock):
        """Before each write: the lock is ours, ``source`` still gone.

        This host's own in-tree instances have no other service to come
        back: only the lock is checked.

        :raises TakeoverRefused: the backend says the lock is not ours, or
            ``source`` has a live member in the group again (it came
            back), or the backend cannot say.
        """
        self.still_locked(source, lock)
        if source != self.host and source in self._member_hosts():
            raise self._refused(source, _IN_THE_GROUP)

    def still_locked(self, source, lock):
        """Raise TakeoverRefused unless the backend says the lock is ours."""
        try:
            owned = self._reserver.membership.call(
                'checking the takeover lock of %s' % source,
                leader.still_owner, lock)
        except (tooz.ToozError, exception.CoordinationUnavailable) as e:
            raise self._refused(source, 'cannot confirm the group\'s lock: '
                                        '%s' % e)
        if not owned:
            raise self._refused(source, 'the group\'s lock is no longer '
                                        'this service\'s')

    def release(self, lock):
        leader.give_up(self._reserver.membership, lock, 'a takeover lock')

    def _adopt(self, context, source, lock, why, in_tree=False):
        result = {'host': self.host, 'from': source, 'adopted': [],
                  'ended': {}, 'skipped': {}}
        skipped = result['skipped']
        if in_tree:
            # Only those on the in-tree driver's compute nodes: a host
            # switched in place has this driver's instances too.
            compute_nodes = migration.in_tree_nodes(context)
            instances = migration.in_tree_instances(context, [source],
                                                    compute_nodes)
            # Those of source, and those its instances are on (the ring
            # of the in-tree driver may have moved them to another host):
            # each is removed once it holds nothing.
            held = {instance.node for instance in instances}
            compute_nodes = [cn for cn in compute_nodes
                             if cn.host == source
                             or cn.hypervisor_hostname in held]
        else:
            instances = objects.InstanceList.get_by_host(context, source,
                                                         expected_attrs=[])
        if not instances and not in_tree:
            return result
        node = objects.ComputeNode.get_by_uuid(
            context, host_mod.compute_node_uuid(self.host))
        client = self.client()
        plans = []
        for instance in sorted(instances, key=lambda i: i.uuid):
            if in_tree:
                try:
                    reservation, current, reason = self._check_in_tree(
                        context, client, instance, source)
                except INSTANCE_ERRORS as e:
                    reservation, reason = None, 'cannot read it: %s' % (
                        first_line(e))
                if reason is None:
                    plans.append((instance, reservation, current))
                else:
                    skipped[instance.uuid] = reason
                continue
            if unfinished(instance):
                # A write to Nova: the fence first.
                self._fence(source, lock)
                try:
                    result['ended'][instance.uuid] = self._end_task(
                        context, instance, source, why)
                except INSTANCE_ERRORS as e:
                    skipped[instance.uuid] = 'cannot end its task: %s' % (
                        first_line(e))
                    continue
            try:
                reservation, reason = self._check(instance, source)
                if reason is None:
                    plans.append((instance, reservation,
                                  client.get_allocs_for_consumer(
                                      context, instance.uuid)))
            except INSTANCE_ERRORS as e:
                reason = 'cannot read it: %s' % first_line(e)
            if reason is not None:
                skipped[instance.uuid] = reason
        needed = collections.Counter()
        for instance, _reservation, current in plans:
            needed.update(_moving(current, _source_rp(instance, source,
                                                      in_tree)))
        if plans:
            if self._on_arriving is not None:
                # Told before their allocations move here: one seen here
                # before its instance is would look like a build waiting
                # for a node, and take its unit off the room made below.
                self._on_arriving([instance.uuid
                                   for instance, _r, _c in plans])
            # Placement's inventory is the first write: the fence first.
            self._fence(source, lock)
            self._make_room(context, client, node.uuid, needed)
        for instance, reservation, current in plans:
            # A takeover is as destructive as it gets for the lost host:
            # stop at the first doubt about the lock, or the host's end.
            self._fence(source, lock)
            try:
                self._adopt_one(context, client, instance, reservation,
                                current, source, node,
                                _source_rp(instance, source, in_tree))
            except INSTANCE_ERRORS as e:
                LOG.warning('Adopting instance %(instance)s from %(source)s '
                            'failed: %(error)s', {'instance': instance.uuid,
                                                  'source': source,
                                                  'error': first_line(e)})
                skipped[instance.uuid] = first_line(e)
            else:
                result['adopted'].append(instance.uuid)
        if in_tree:
            result['removed'] = self._remove_empty(context, client, source,
                                                   lock, compute_nodes)
        return result

    def _remove_empty(self, context, client, source, lock, compute_nodes):
        """Remove those of the in-tree ``compute_nodes`` that hold nothing.

        No instance on it (of its host or of ``source``), no allocation
        against its provider: the provider goes first (placement refuses
        while an allocation appears), then, once it is gone, the compute
        node.  Left there, the scheduler could pick a provider that no
        driver serves.
        """
        removed = []
        for compute_node in compute_nodes:
            self._fence(source, lock)
            name = compute_node.hypervisor_hostname
            try:
                if (any(objects.InstanceList.get_uuids_by_host_and_node(
                        context, host, name)
                        for host in {compute_node.host, source})
                        or client.get_allocations_for_resource_provider(
                            context, compute_node.uuid).allocations):
                    continue
                client.delete_resource_provider(context, compute_node)
                # Nova's client says nothing of a provider in use.
                if client.get('/resource_providers/%s' % compute_node.uuid,
                              global_request_id=context.global_id):
                    continue
                compute_node.destroy()
            except INSTANCE_ERRORS as e:
                LOG.warning('Cannot remove compute node %(node)s of the '
                            'in-tree driver on %(source)s: %(error)s',
                            {'node': compute_node.uuid, 'source': source,
                             'error': first_line(e)})
                continue
            removed.append(compute_node.uuid)
        if removed:
            LOG.info('Removed %(count)d empty compute node(s) of the in-tree '
                     'driver on %(source)s: %(nodes)s',
                     {'count': len(removed), 'source': source,
                      'nodes': ', '.join(removed)})
        return removed

    def _end_task(self, context, instance, source, why):
        """Set to ERROR an instance the lost host left unfinished.

        As Nova's compute manager does when a task fails: no task, ERROR,
        an instance fault.  The save expects the states read, so that a
        concurrent change (the lost host back, an operator's reset) wins.

        :returns: the fault's message.
        """
        fault = interrupted(instance, source, why)
        task, vm_state = instance.task_state, instance.vm_state
        instance.vm_state = vm_states.ERROR
        instance.task_state = None
        instance.save(expected_task_state=[task],
                      expected_vm_state=[vm_state])
        message = fault.format_message()
        LOG.warning('Instance %(instance)s set to ERROR: %(message)s',
                    {'instance': instance.uuid, 'message': message})
        compute_utils.add_instance_fault_from_exc(context, instance, fault)
        return message

    def _check(self, instance, source):
        """``(reservation, None)``, or ``(None, why it is skipped)``."""
        reservation = self._reserver.lookup(instance.uuid)
        if reservation is None or reservation.node_uuid is None:
            return None, 'it holds no node that %s can see' % self.host
        if reservation.group not in (None, self._reserver.group):
            return None, ('its node %s carries the mark of group %s'
                          % (reservation.node_uuid, reservation.group))
        if reservation.host not in (None, source, self.host):
            return None, ('its node %s is marked for host %s'
                          % (reservation.node_uuid, reservation.host))
        return reservation, None

    def _check_in_tree(self, context, client, instance, source):
        """``(reservation, allocation, None)`` or ``(.., why it stays)``."""
        reservation, current, reasons = migration.examine(
            context, self._reserver, client, instance, source, self.host,
            self._conf.ironic_multi.conductor_group)
        return reservation, current, '; '.join(reasons) or None

    def _adopt_one(self, context, client, instance, reservation, current,
                   source, node, source_rp):
        # The order makes a run that crashed half way repaired by the next
        # run (an error half way gives back what moved, below):
        # - Nova's instance.host moves last: it is how a run finds the
        #   instances still to adopt (InstanceList.get_by_host), and once
        #   it moves Nova sends the instance's actions here, where the node
        #   must be ours already.
        # - The host mark moves before it, for that reason, and after the
        #   allocation: placement is the step most likely to refuse
        #   (capacity, a concurrent change), and refusing first leaves the
        #   instance untouched; a mark moved without the allocation would
        #   leave the instance to a host that cannot act on the node
        #   (Nova still routes to the lost one) for longer.
        # - The allocation move reads what placement has and replaces only
        #   the lost host's provider: done twice, it finds nothing to move.
        self.move_allocation(
            context, client, instance.uuid, current, source_rp, node.uuid,
            make_room=lambda: self._make_room(
                context, client, node.uuid, _moving(current, source_rp)))
        before = {field: getattr(instance, field) for field in _MOVED
                  if instance.obj_attr_is_set(field)}
        try:
            if (reservation.host != self.host
                    or not reservation.owned_by(self._reserver.group)):
                self._reserver.adopt(instance.uuid)
            instance.host = self.host
            instance.node = node.hypervisor_hostname
            instance.compute_id = node.id
            # A task started meanwhile (an action cast to the lost host)
            # makes Nova refuse: it keeps routing the instance there.
            instance.save(expected_task_state=[None])
        except Exception:
            if self.in_nova_on(context, instance.uuid) != source:
                # The save landed (its answer was lost), or nobody can
                # tell: what moved stays, and a next run repairs the rest
                # if the host stays lost.
                raise
            # Nova still routes the instance to the lost host: the node
            # and the allocation go back with it.  Left here, they would
            # outlive the lost host's return, and the instance would have
            # no manager: that host refuses a node marked for another, and
            # Nova sends nothing here.  A later run adopts the instance if
            # the host stays lost.
            for field, value in before.items():
                setattr(instance, field, value)
            self._give_back(context, client, instance.uuid, source,
                            source_rp, node.uuid)
            raise
        LOG.info('Host %(host)s adopted instance %(instance)s (node '
                 '%(node)s) from %(source)s',
                 {'host': self.host, 'instance': instance.uuid,
                  'node': reservation.node_uuid, 'source': source})

    @staticmethod
    def in_nova_on(context, instance_uuid):
        """The instance's host in Nova's database now; None if unknown."""
        try:
            return objects.Instance.get_by_uuid(
                context, instance_uuid, expected_attrs=[]).host
        except Exception as e:
            LOG.warning('Cannot read instance %(instance)s again: %(error)s',
                        {'instance': instance_uuid, 'error': first_line(e)})
            return None

    def _give_back(self, context, client, consumer, source, source_rp,
                   target_rp):
        """Undo the moves of an adoption that did not reach Nova; logged.

        The node's host mark goes back if it had moved here, and the
        allocation if it had moved to this host's provider.
        """
        try:
            try:
                self._reserver.give_back(consumer, source)
            except exception.ReservationNotFound:
                pass  # Not marked for this host: nothing moved.
            self.move_allocation(
                context, client, consumer,
                client.get_allocs_for_consumer(context, consumer),
                target_rp, source_rp)
        except INSTANCE_ERRORS as e:
            LOG.error('Instance %(instance)s stays on %(source)s in Nova, '
                      'but its node or allocation could not be given back '
                      'to it (%(error)s): adopt it again with '
                      '"ironic-multi-manage instances adopt --from '
                      '%(source)s" once %(source)s is stopped',
                      {'instance': consumer, 'source': source,
                       'error': first_line(e)})

    def move_allocation(self, context, client, consumer, current, source,
                        target, make_room=None):
        """Move the consumer's allocation from ``source`` to ``target``.

        Retried once, with a fresh read, on a consumer generation conflict;
        and once after ``make_room()`` when placement refuses it: the
        target's own inventory refresh may have put back the ``reserved``
        units :meth:`_make_room` took off for the instances still moving.
        :returns: whether anything moved.
        """
        conflicts = refusals = 0
        while True:
            if source not in (current.get('allocations') or {}):
                return False
            payload = moved_allocations(current, source, target)
            try:
                if client.put_allocations(context, consumer, payload):
                    return True
            except nova_exception.AllocationUpdateFailed:
                conflicts += 1
                if conflicts == 2:
                    raise
                current = client.get_allocs_for_consumer(context, consumer)
                continue
            if make_room is None or refusals:
                raise nova_exception.AllocationUpdateFailed(
                    consumer_uuid=consumer,
                    error='placement refused to move it to provider %s'
                          % target)
            refusals += 1
            LOG.info('Placement refused to move the allocation of '
                     '%(consumer)s to provider %(target)s: making room '
                     'again, then one more try',
                     {'consumer': consumer, 'target': target})
            make_room()

    def _make_room(self, context, client, provider, needed):
        """Lower the adopter's ``reserved`` by the units being adopted.

        ``reserved`` holds what the cluster uses outside this host
        (``capacity.inventory``): the lost host's instances are counted
        there until they become this host's.  Without this, placement
        would refuse to move them onto a provider with fewer free units
        than the instances moving (a full cluster).  The next inventory
        refresh computes the same value.  A failure is logged: the moves
        then say what placement refused.
        """
        if not needed:
            return

        def lowered(inventories):
            for resource_class, units in needed.items():
                inventory = inventories.get(resource_class)
                if inventory:
                    inventory['reserved'] = max(
                        0, inventory['reserved'] - units)
            return inventories

        try:
            capacity.change_inventory(client, context, provider, lowered)
        except nova_exception.ResourceProviderUpdateFailed as e:
            LOG.warning('Cannot make room on provider %(provider)s for the '
                        'adopted instances: %(error)s',
                        {'provider': provider, 'error': e})

    def client(self):
        client = self._report_client
        if callable(client):
            client = client()
        return client or report.report_client_singleton()

    def _log(self, result):
        source = result['from']
        if (result['adopted'] or result['ended']
                or result['skipped'] != self._last_skipped.get(source)):
            LOG.warning('Host %(host)s adopted %(count)d instances of '
                        '%(source)s in %(seconds).3f s; ended the tasks of '
                        '%(ended)d; skipped %(skipped)s',
                        {'host': self.host, 'count': len(result['adopted']),
                         'source': source, 'seconds': result['seconds'],
                         'ended': len(result['ended']),
                         'skipped': result['skipped'] or 'none'})
        else:
            LOG.debug('Host %(host)s found nothing to adopt on %(source)s',
                      {'host': self.host, 'source': source})
        self._last_skipped[source] = dict(result['skipped'])


def _down_for(service, now):
    """Seconds Nova has reported ``service`` down by heartbeat, or None.

    Nova's servicegroup reports a service down ``service_down_time``
    seconds after its last heartbeat (``last_seen_up``, else when it was
    created).
    """
    last = service.last_seen_up or service.created_at
    if last is None:
        return None
    seconds = ((now - last.replace(tzinfo=None)).total_seconds()
               - CONF.service_down_time)
    return seconds if seconds > 0 else None
