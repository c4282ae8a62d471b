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

"""One chaos run, from the cloud's start to the verdict.

1. A multi-process cloud with every fault point (a database of its own,
   the computes' Ironic proxy, each compute's own link to etcd), and
   other deployers' nodes seeded on its Ironic.
2. The workload and the faults, seeded, at the same time; the observer
   samples Nova and Ironic throughout.
3. The faults stop; everything is started, healed and resumed; every
   server must settle.
4. A compute is killed and stays down: its instances must be adopted.
5. The leaks must go within a housekeeping pass; then the final checks
   against Nova's API, placement and Ironic, and the logs.
6. Every server is deleted: every node this group held must come back.
"""

import collections
import dataclasses
import os
import signal
import threading
import time

from oslo_log import log as logging

from ironic_multi._reservation import membership
from ironic_multi.testing.chaos import faults as faults_mod
from ironic_multi.testing.chaos import foreign
from ironic_multi.testing.chaos import history as history_mod
from ironic_multi.testing.chaos import invariants
from ironic_multi.testing.chaos import logscan
from ironic_multi.testing.chaos import observer as observer_mod
from ironic_multi.testing.chaos import schedule
from ironic_multi.testing.chaos import workload as workload_mod
from ironic_multi.testing import checks
from ironic_multi.testing.cloud import cloud as cloud_mod

LOG = logging.getLogger(__name__)

# The computes' options: short enough that a run sees every rule act.
MEMBERSHIP_TIMEOUT = 20
HOUSEKEEPING_INTERVAL = 10
ORPHAN_GRACE = 10
COMPUTE_OPTIONS = {'ironic_multi': {
    'housekeeping_interval': HOUSEKEEPING_INTERVAL,
    'orphan_grace_period': ORPHAN_GRACE,
    'health_poll_interval': 5,
    'request_poll_interval': 1,
    # The group serves the conductor group of the cloud's conductor (the
    # default one).  Unset, it would serve every group: the seeded node of
    # another conductor group, which carries this group's mark, would be
    # the group's own, and its housekeeper would try (and Ironic refuse,
    # as no conductor serves that group) to release it every pass.
    'conductor_group': '',
}}
# Nova's instance_build_timeout on the computes: a build whose RPC
# messages were lost ends in ERROR within the operations' bound
# (workload.BOUND, with the periodic's minute).  The cloud's 60 s set
# live builds to ERROR under load (two of a run here, ACTIVE seconds
# later), and left the task 'spawning' on them: a CI run ended with two
# such servers.  A build that really hangs still shows, in BUILD.
BUILD_TIMEOUT = 180
# Seconds of workload before the first fault: servers to act on.
LEAD = 20
# Seconds for everything to settle once the faults stop.
SETTLE_TIMEOUT = 360
# Seconds a leak may take to go: a pass after the grace period, and the
# tear down it starts.
LEAK_TIMEOUT = ORPHAN_GRACE + 3 * HOUSEKEEPING_INTERVAL + 60
CAPACITY_TIMEOUT = 120
# What Nova logs when a build fails before any driver has it and its own
# error handling cannot save the failure (its database is away): the
# compute manager reverts the task state, or the conductor logs an ERROR
# (under the boot's request, not the instance).
NOVA_STRANDED = 'Successfully reverted task state from'
# What a compute manager logs when its error handling could not revert the
# task of a failed action (its database was away): the server keeps the
# task (REBOOT, powering-off) with nobody working on it.
NOVA_TASK_STRANDED = 'Failed to revert task state for instance'
NOVA_CONDUCTOR_ERROR = ' ERROR '
NOVA_CONDUCTOR_LOG = 'nova-conductor.log'
# Seconds a node may stay locked by Ironic's conductor once the faults
# stop: fake hardware's tasks take a second or two.
STALE_LOCK_SECONDS = 30
# Seconds after the faults before a build in BUILD with no host, and
# Nova's line about it, is taken as stranded: Nova retries nothing of it.
STRANDED_AFTER = 30
# Seconds between two looks for stranded builds while operations end.
STRANDED_POLL = 5


@dataclasses.dataclass
class Options:
    """What a run is made of.

    :ivar minutes: minutes of faults (the workload runs ``LEAD`` seconds
        longer).
    :ivar reduced: one fault of each kind, and no more.
    """

    seed: int
    minutes: float = 8.0
    computes: int = 3
    nodes: int = 36
    reduced: bool = False
    output: str = 'chaos-results'
    log_dir: str = None


@dataclasses.dataclass
class Result:
    history: history_mod.History
    errors: dict
    untyped: list
    png: str = None
    json: str = None

    @property
    def violations(self):
        return self.history.violations

    @property
    def passed(self):
        return not self.violations


class ChaosRun(object):
    """Runs :class:`Options` on a new cloud; :meth:`run` gives a Result."""

    def __init__(self, options):
        if options.log_dir is None:
            # Kept for a look after the run.
            options = dataclasses.replace(options, log_dir=os.path.join(
                options.output, 'logs-%s' % options.seed))
        self.options = options
        self.history = history_mod.History(options.seed)
        self.window = options.minutes * 60
        # {server id: evidence} of builds Nova itself stranded.
        self.stranded = {}

    def plans(self, computes):
        """The faults and the operations of this run's seed."""
        faults = schedule.plan_faults(
            self.options.seed, self.window, computes, MEMBERSHIP_TIMEOUT,
            reduced=self.options.reduced)
        return faults

    def run(self):
        options = self.options
        os.makedirs(options.output, exist_ok=True)
        history = self.history
        history.phase('start the cloud')
        with cloud_mod.Cloud(
                computes=options.computes, nodes=options.nodes,
                log_dir=options.log_dir, private_database=True,
                ironic_proxy=True, coordination_proxies=True,
                membership_timeout=MEMBERSHIP_TIMEOUT,
                instance_build_timeout=BUILD_TIMEOUT,
                compute_options=COMPUTE_OPTIONS) as cloud:
            self.cloud = cloud
            history.cloud = {'start_seconds': round(cloud.start_seconds, 1),
                             'rss_mib': round(cloud.rss() / 2 ** 20),
                             'logs': cloud.log_dir}
            history.phase('seed other deployers')
            self.foreigners = foreign.seed(
                cloud.ironic, resource_class=cloud.layout.groups[1]
                .resource_class, shard=cloud.layout.shards[0],
                group=cloud.coordination_group, host=cloud.computes[0])
            self.foreigners.remember(cloud.ironic)
            with observer_mod.Observer(
                    cloud, history, self.foreigners) as observer, \
                    faults_mod.Supervisor(cloud, history) as supervisor:
                self.observer = observer
                self.supervisor = supervisor
                self.workload = workload_mod.Workload(
                    cloud, history, observer, options.seed)
                try:
                    self._chaos()
                    self._settle()
                    self._takeover()
                    self._check()
                    self._clean_up()
                finally:
                    self.workload.close()
            errors = logscan.errors(cloud.log_dir, since=history.wall)
            self._leadership(cloud.log_dir)
        return self._verdict(errors)

    # -- 2. chaos -----------------------------------------------------------

    def _chaos(self):
        cloud, history = self.cloud, self.history
        _wait_for(lambda: self.observer.latest, 60, 'a first look')
        fault_plan = self.plans(len(cloud.computes))
        operation_plan = schedule.plan_operations(
            self.options.seed, self.window + LEAD,
            sorted(f.name for f in cloud.layout.flavors))
        self.injector = faults_mod.Injector(cloud, history, self.workload,
                                            self.observer, self.supervisor)
        stopping = threading.Event()
        history.phase('workload')
        workload = threading.Thread(
            target=self.workload.run, args=(operation_plan, stopping),
            name='chaos-workload', daemon=True)
        workload.start()
        if stopping.wait(LEAD):
            return
        history.phase('faults')
        injector = threading.Thread(
            target=self.injector.run, args=(fault_plan, stopping),
            name='chaos-faults', daemon=True)
        injector.start()
        try:
            time.sleep(self.window)
        finally:
            # Interrupted too: no operation or fault starts any more.
            stopping.set()
        workload.join()
        injector.join()

    # -- 3. settle ----------------------------------------------------------

    def _settle(self):
        cloud, history = self.cloud, self.history
        history.phase('settle')
        # A kill fault waits for the boot and the delete it acts on, and
        # each of those is judged by its own bound: a fault may run that
        # long past its planned end (a boot took 104 s on a loaded
        # machine) before it counts as a hang of its own.
        late = self.injector.join(
            timeout=workload_mod.BOUND + workload_mod.API_TIMEOUT)
        if late:
            history.violation(invariants.BOUNDED, 'faults still running '
                              'after the run: %s' % ', '.join(late))
        self._heal()
        self._free_stale_ironic_locks()
        self._wait_for_operations()
        cloud.wait_for_computes(cloud.computes)
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            servers = self._servers()
            stranded = self._stranded_by_nova(servers)
            unsettled = invariants.check_settled(
                [s for s in servers if s['id'] not in stranded])
            if not unsettled or time.monotonic() > deadline:
                break
            time.sleep(2)
        self._excuse(stranded)
        self._record(unsettled)
        history.recovery('everything settled after the faults',
                         history.clock() - _phase_start(history, 'settle'))

    def _wait_for_operations(self):
        """Until every operation ended, except builds Nova stranded.

        An operation ends by itself within its bound; a stranded build
        would take all of it, so once Nova has said so the wait ends.
        """
        healed = time.monotonic()
        deadline = healed + workload_mod.BOUND + workload_mod.API_TIMEOUT
        while not self.workload.wait(timeout=STRANDED_POLL):
            if time.monotonic() > deadline:
                LOG.warning('Operations still running %d s after the '
                            'faults', deadline - healed)
                return
            if time.monotonic() - healed < STRANDED_AFTER:
                continue
            try:
                stranded = self._stranded_by_nova(self._servers())
            except Exception as e:
                # Nova's API is not back yet: the operations still end
                # within their own bounds.
                LOG.debug('Cannot look for stranded builds: %s', e)
                continue
            if stranded:
                self.workload.give_up(stranded)

    def _heal(self):
        """Every process running, every link healed, no proxy fault."""
        cloud = self.cloud
        cloud.ironic_proxy.clear_faults()
        for host in cloud.computes:
            cloud.heal(host)
        for name, service in list(cloud.services.items()):
            if not service.running:
                LOG.info('Starting %s again after the faults', name)
                cloud.start(name, wait=name not in (
                    cloud.compute_service(h) for h in cloud.computes))
            elif name.startswith(cloud_mod.COMPUTE_BINARY):
                # A stopped one would not say: wake it up all the same.
                service.send_signal(signal.SIGCONT)

    def _free_stale_ironic_locks(self):
        """Restart Ironic if its conductor keeps locks it no longer uses.

        A conductor that loses its database in the middle of a task
        cannot write the release of the node's lock, and frees its own
        locks only when it starts again (Ironic frees the locks of dead
        conductors only): Ironic refuses every change to the node with
        409 until then, the group's release included.  What an operator
        does about it (doc/source/failures.rst), the run does too, and
        says so; the nodes' leaks and marks are checked after.
        """
        def locked():
            return {n['uuid']: n['reservation']
                    for n in self.cloud.ironic.list_nodes(
                        fields=('uuid', 'reservation'))
                    if n.get('reservation')}

        stale = locked()
        deadline = time.monotonic() + STALE_LOCK_SECONDS
        while stale and time.monotonic() < deadline:
            time.sleep(2)
            now = locked()
            stale = {node: holder for node, holder in stale.items()
                     if now.get(node) == holder}
        if not stale:
            return
        lost = logscan.count(self.cloud.log_dir, 'DBConnectionError',
                             pattern='ironic.log')
        for node, holder in sorted(stale.items()):
            self.history.excused.append({
                'subject': 'node %s' % node,
                'why': 'Ironic\'s conductor %s kept it locked %d s after '
                       'the faults; Ironic restarted, as an operator would'
                       % (holder, STALE_LOCK_SECONDS),
                'evidence': 'ironic.log: %d DBConnectionError line(s) in '
                            'the run' % lost})
        LOG.warning('Ironic keeps %d node(s) locked after the faults (%s): '
                    'restarting it', len(stale), ', '.join(sorted(stale)))
        with self.supervisor.down('ironic'):
            self.cloud.restart('ironic')

    def _stranded_by_nova(self, servers):
        """``{server id: evidence}`` of what Nova itself stranded.

        Builds it left in BUILD (below), and actions whose task it could
        not revert: the driver's call failed (typed), and the compute
        manager's error handling could not write the task's end while the
        database restarted.  The server keeps its task, the action's event
        never ends, and only an operator's reset ends it.

        A build that fails while Nova's database restarts can leave its
        server in BUILD with no host for good: the compute manager could
        not save the build's start (or its reschedule failed) and reverted
        the task state, or the conductor failed on it (``Failed to
        schedule instances``, or its RPC server's ``Exception during
        message handling``) and could not save that either: the server
        stays ``scheduling``, its instance never reached a cell, and the
        conductor's ERROR under the boot's request ID names it.  Nothing
        of this driver's is involved (no host, hence no driver), and only
        an operator's reset ends it.  Each needs Nova's line about it.
        """
        tasks = {s['id'] for s in servers
                 if s['status'] != 'BUILD' and s.get('task_state')}
        found = logscan.lines_about(self.cloud.log_dir, tasks,
                                    NOVA_TASK_STRANDED) if tasks else {}
        candidates = {s['id'] for s in servers
                      if s['status'] == 'BUILD' and not s.get('host')
                      and s.get('task_state') in (None, 'scheduling')}
        if not candidates:
            return found
        found.update(logscan.lines_about(self.cloud.log_dir, candidates,
                                         NOVA_STRANDED))
        requests = {op['create_request']: op['server']
                    for op in self.history.operations
                    if op.get('create_request')
                    and op['server'] in candidates - set(found)}
        unscheduled = logscan.lines_about(
            self.cloud.log_dir, set(requests), NOVA_CONDUCTOR_ERROR,
            pattern=NOVA_CONDUCTOR_LOG)
        found.update((requests[request], line)
                     for request, line in unscheduled.items())
        return found

    def _excuse(self, stranded):
        """Say what Nova stranded, with why; :meth:`_forgive` drops it."""
        self.stranded.update(stranded)
        for server_id, evidence in sorted(stranded.items()):
            self.history.excused.append({
                'subject': 'server %s' % server_id, 'evidence': evidence,
                'why': 'Nova left it in BUILD or in its task: its own '
                       'error handling failed while its database was '
                       'away (nothing of the driver\'s is pending)'})

    def _forgive(self):
        """Out of the violations: liveness ones about servers Nova stranded.

        Each later check finds them again (still BUILD, their boots never
        ended), so they go at the verdict; the stranding itself stays in
        ``history.excused``, with Nova's reason.  A safety invariant is
        never forgiven, whichever server it names.
        """
        self.history.violations[:] = [
            v for v in self.history.violations
            if v['invariant'] in invariants.SAFETY
            or not any(s in v['detail'] for s in self.stranded)]

    def _with_nova_lines(self, found, servers):
        """``found``, each detail with Nova's last lines about its server.

        The logs go with the cloud: a run that failed on a CI machine
        still says what Nova last did with a server that did not settle.
        """
        ids = [s['id'] for s in servers]
        with_lines = []
        for invariant, detail in found:
            lines = [line for server_id in ids if server_id in detail
                     for line in logscan.last_lines_about(
                         self.cloud.log_dir, server_id)]
            with_lines.append((invariant, '\n    '.join([detail] + lines)))
        return with_lines

    def _servers(self):
        return workload_mod.server_dicts(
            self.cloud.connection(cloud_mod.ADMIN_CLOUD).compute)

    def _record(self, found):
        self.observer.report(found)

    # -- 4. takeover --------------------------------------------------------

    def _takeover(self):
        """Kill the compute with the most servers; keep it down."""
        cloud, history = self.cloud, self.history
        history.phase('takeover')
        servers = [s for s in self._servers() if s['status'] == 'ACTIVE']
        per_host = collections.Counter(s['host'] for s in servers)
        if not per_host:
            history.violation(invariants.SETTLED, 'no ACTIVE server left '
                              'to take over')
            return
        victim = per_host.most_common(1)[0][0]
        moving = [s['id'] for s in servers if s['host'] == victim]
        with self.supervisor.down(cloud.compute_service(victim)):
            self._kill_for_good(victim, moving)
        cloud.wait_for_computes([victim])

    def _kill_for_good(self, victim, moving):
        cloud, history = self.cloud, self.history
        record = history.fault('kill-takeover', target=victim)
        killed = time.monotonic()
        cloud.kill(cloud.compute_service(victim), signal.SIGKILL)
        bound = (cloud.service_down_time + cloud.takeover_down_after
                 + 4 * cloud.pool_refresh_interval + 90)
        deadline = killed + bound
        while time.monotonic() < deadline:
            hosts = {s['id']: s['host'] for s in self._servers()
                     if s['id'] in moving}
            if victim not in hosts.values():
                history.recovery('takeover after a kill',
                                 time.monotonic() - killed,
                                 '%d instance(s) of %s' % (len(moving),
                                                           victim))
                break
            time.sleep(0.5)
        else:
            history.violation(invariants.SETTLED, 'instances of %s not '
                              'adopted %d s after its kill' % (victim,
                                                               bound))
        cloud.start(cloud.compute_service(victim), wait=False)
        history.end(record)

    # -- 5. checks ----------------------------------------------------------

    def _check(self):
        cloud, history = self.cloud, self.history
        history.phase('housekeeping')
        foreign_nodes = self.foreigners.node_uuids
        started = time.monotonic()
        deadline = started + LEAK_TIMEOUT
        while True:
            leaks = invariants.check_leaks(self._servers(),
                                           cloud.ironic.list_nodes(),
                                           foreign_nodes)
            if not leaks or time.monotonic() > deadline:
                break
            time.sleep(2)
        self._record(leaks)
        history.recovery('leaks gone', time.monotonic() - started)
        history.phase('checks')
        servers = self._servers()
        nodes = cloud.ironic.list_nodes(fields=observer_mod.NODE_FIELDS)
        self._record(self._with_nova_lines(
            invariants.check_settled(servers), servers))
        self._record(invariants.check_host_marks(
            servers, nodes, cloud.coordination_group))
        self._record(self.foreigners.check(cloud.ironic))
        self._record(self._capacity())
        self._record(self._untyped_faults(servers))

    def _untyped_faults(self, servers):
        """The instance faults of the ERROR servers that are not typed."""
        found = []
        for server in servers:
            if server['status'] != 'ERROR':
                continue
            fault = (self.workload.server(server['id']) or {}).get('fault')
            if fault and logscan.classify_fault(fault) == logscan.UNTYPED:
                found.append((invariants.TYPED_ERRORS, 'server %s: fault '
                              '%s' % (server['name'], fault.get('message'))))
        return found

    def _capacity(self):
        """Placement against Ironic, once the computes have reported."""
        deadline = time.monotonic() + CAPACITY_TIMEOUT
        while True:
            truth = checks.ironic_truth(self.cloud.ironic.list_nodes(
                fields=checks.NODE_FIELDS))
            wrong = checks.compare_capacity(
                truth, self.observer.placement_views())
            if not wrong or time.monotonic() > deadline:
                return invariants.check_capacity(wrong)
            time.sleep(2)

    # -- 6. clean up --------------------------------------------------------

    def _clean_up(self):
        cloud, history = self.cloud, self.history
        history.phase('delete everything')
        servers = self._servers()
        for server in servers:
            self.workload.submit(self.workload.delete, server['id'],
                                 'clean-up')
        self.workload.wait()
        deadline = time.monotonic() + LEAK_TIMEOUT
        while True:
            leaks = invariants.check_leaks(
                self._servers(), cloud.ironic.list_nodes(),
                self.foreigners.node_uuids)
            if not leaks or time.monotonic() > deadline:
                break
            time.sleep(2)
        self._record(leaks)
        # The whole run's writes, once: Ironic refuses some of them (a
        # node of a conductor group no conductor serves), and refused
        # they are still attempts.
        self._record(self.foreigners.check(cloud.ironic, cloud.log_dir))

    # -- the verdict --------------------------------------------------------

    def _leadership(self, log_dir):
        """Handovers: from a fault on the leader's host to a new leader.

        The new leader is any other member: another host's, or the same
        host's restarted process (a member id is a process's).  A kill
        fault that found nothing to kill caused nothing, and a handover
        after a later fault on the same host is that fault's.
        """
        history = self.history
        events = logscan.leadership(log_dir)
        history.leadership = [
            {'t': history.at_wall(wall), 'member': member, 'event': kind}
            for wall, member, kind in events]
        acted = [f for f in history.faults if f.get('target') and not (
            f['kind'] in schedule.KILLS and f.get('killed_at') is None)]
        for fault in acted:
            at = history.wall + (fault.get('killed_at') or fault['start'])
            leader = _leader_at(events, at)
            if leader is None or membership.host_of(leader) != fault[
                    'target']:
                continue
            after = [(wall, member) for wall, member, kind in events
                     if wall > at and kind == 'leads' and member != leader]
            if not after:
                continue
            wall, member = after[0]
            if any(later['target'] == fault['target']
                   and at < history.wall + later['start'] < wall
                   for later in acted):
                continue
            history.recovery('leadership handover after %s'
                             % fault['kind'], wall - at,
                             'from %s to %s' % (leader, member))

    def _verdict(self, errors):
        # An operation whose thread died (a harness error) never ended.
        for op in self.history.operations:
            if op.get('end') is None:
                self.history.violation(invariants.BOUNDED, '%s of %s (%s): '
                                       'never ended' % (
                                           op['kind'], op.get('server'),
                                           op.get('origin')))
        self._record(self.observer.watched())
        self.history.looks = {'good': self.observer.looks,
                              'failed': self.observer.failed_looks,
                              'longest_blind': round(
                                  self.observer.longest_blind, 1)}
        self._forgive()
        untyped = [e for e in errors if logscan.classify(e) ==
                   logscan.UNTYPED]
        for invariant, detail in invariants.check_typed(untyped):
            self.history.violation(invariant, detail)
        result = Result(self.history, logscan.summary(errors), untyped)
        base = os.path.join(self.options.output,
                            'chaos-%s' % self.options.seed)
        result.json = base + '.json'
        self.history.save(result.json, errors=[e.as_dict() for e in errors],
                          options=dataclasses.asdict(self.options),
                          cloud=getattr(self.history, 'cloud', None),
                          leadership=getattr(self.history, 'leadership',
                                             []),
                          looks=getattr(self.history, 'looks', None))
        from ironic_multi.testing.chaos import timeline
        result.png = base + '.png'
        timeline.draw(result.png, self.history, passed=result.passed)
        return result


def _leader_at(events, at):
    leader = None
    for wall, member, kind in events:
        if wall > at:
            break
        if kind == 'leads':
            leader = member
        elif member == leader:
            leader = None
    return leader


def _phase_start(history, name):
    return next(p['t'] for p in history.phases if p['name'] == name)


def _wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise cloud_mod.CloudError('No %s within %d s' % (what, timeout))
        time.sleep(0.5)
