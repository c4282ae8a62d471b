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


"""The sandbox's scenario, phase by phase, on a real Ironic and Nova.

1. Ironic (fake hardware) with the fleet of :mod:`.fleet`, enrolled
   through its API;
2. Nova's in-process services with K compute services loading the driver
   by its nova.conf name;
3. wave 1: servers of mixed flavors posted at once through Nova's API,
   the bronze class oversubscribed;
4. one compute service stopped and forced down: its shard keys move to
   the survivors, and its instances are adopted by one of them;
5. wave 2 on the survivors;
6. some servers deleted;
7. a capacity refresh, then every check.

Everything it starts is entered on the caller's ExitStack, so that it
stops on any way out (Ctrl-C included).  What it finds goes into
:attr:`Scenario.results`, the JSON report.
"""

import collections
import concurrent.futures
import logging
import random
import signal
import threading
import time
import uuid

from nova.tests.functional.api import client as api_client
from nova import utils as nova_utils
from oslo_utils import timeutils

from ironic_multi._reservation import membership
from ironic_multi._reservation import worker as worker_mod
from ironic_multi._sandbox import sampler as sampler_mod
from ironic_multi.testing import checks
from ironic_multi.testing import coordination
from ironic_multi.testing import fleet
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server
from ironic_multi.testing import nova_services

LOG = logging.getLogger(__name__)

# Nova validates capabilities extra specs from 2.86 on and refuses
# boot_mode (ComputeCapabilitiesFilter's host-state keys only); operators
# set them with an older microversion.
CAPABILITIES_MICROVERSION = '2.85'
POLL = 0.5
# Seconds the survivors get to adopt a stopped service's instances: their
# takeover runs every pool_refresh_interval (1 s here).
TAKEOVER_TIMEOUT = 60
# Seconds the compute services get to stop at the end.
STOP_TIMEOUT = 30
ENROLL_THREADS = 2
# The services' timers, short so that the defaults finish in minutes.
FLAGS = {
    'ironic_multi': {
        'pool_refresh_interval': 1,
        'request_poll_interval': 1,
    },
    'filter_scheduler': {
        # Hosts that weigh the same (all of them here: one compute node
        # each, reporting the same cluster) are picked at random, not in
        # order.
        'shuffle_best_same_weighed_hosts': True,
        # A claim that finds no node (the oversubscribed class) counts as
        # a failed build of the service, and Nova's BuildFailureWeigher
        # would then steer every later boot away from that service, for
        # every class, until one of its builds succeeds: with one compute
        # node per service reporting the whole cluster, such a failure
        # says nothing about the service.
        'build_failure_weight_multiplier': 0,
    },
}
MEMBERSHIP_TIMEOUT = 3
STATE_POLL_INTERVAL = 0.2


class SandboxError(Exception):
    """The scenario could not go on."""


class Interrupted(KeyboardInterrupt):
    """A signal that ends the run, raised in the main thread like Ctrl-C."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Scenario(object):
    """One run; :meth:`run` fills :attr:`results`.

    ``SERVICES`` names what it runs, in messages; ``VICTIM`` is the
    compute service it prefers to stop.

    :param args: the parsed command line.
    :param layout: a :class:`.fleet.Layout`.
    :param display: a :class:`.display.Display`.
    :param clock: seconds since the sandbox started.
    """

    SERVICES = 'Nova\'s services and Ironic'
    VICTIM = 'compute2'

    def __init__(self, args, layout, display, clock):
        self.args = args
        #: Where to look when something goes wrong.
        self.logs = getattr(args, 'nova_log', None)
        #: ``{name: pid}`` of the server processes it started, checked
        #: after the clean-up.
        self.processes = {}
        self.layout = layout
        self.display = display
        self.clock = clock
        self.rng = random.Random(args.seed)
        self.server = self.ironic = self.nova = self.sampler = None
        self.providers = {}
        # The compute services up: replaced, never changed in place (other
        # threads read it); changed under the lock.
        self.live = frozenset()
        self._live_lock = threading.Lock()
        self.flavor_ids = {}
        self.servers = {}   # id -> record (dict)
        self.deleted = set()
        self.victim = None
        self.results = {'problems': []}
        self.signalled = None

    # -- helpers --------------------------------------------------------

    def problem(self, text):
        self.results['problems'].append(text)
        self.display.say('[problem] %s' % text)

    def _reserver(self, host):
        return self.nova.driver_of(self.nova.computes[host]).reserver

    def _deadline(self):
        return time.monotonic() + self.args.timeout

    def interrupt(self, signum):
        """Note a signal that ends the run (its handler calls this)."""
        self.signalled = signum

    def _pause(self, seconds):
        # A signal handler's exception can be lost: code running in the
        # main thread when it fires may swallow it (a Ctrl-C during a boot
        # wave was once outlived by the run).  The note is not lost.
        if self.signalled is not None:
            raise Interrupted(self.signalled)
        time.sleep(seconds)

    # -- the phases -----------------------------------------------------

    def run(self, stack):
        self.start_ironic(stack)
        self.enroll()
        url, group = self.start_coordination(stack)
        self.start_nova(stack, url, group)
        self.sampler = stack.enter_context(sampler_mod.Sampler(
            self.read_sample, self.args.sample_period, self.clock))
        # Nova's test services run no periodic task of their own.
        periodic = worker_mod.Worker('sandbox-resource-periodic')
        periodic.add('resource periodic', self.resource_periodic,
                     self.args.resource_interval, run_immediately=True)
        stack.enter_context(periodic)
        self.create_flavors()
        self.boot_wave(0)
        self.stop_compute()
        self.count_what_moved()
        self.boot_wave(1)
        self.delete_some()
        self.settle()
        self.collect()

    def start_ironic(self, stack):
        phase = self.display.phase('Ironic (fake hardware)')
        self.server = stack.enter_context(
            ironic_server.IronicServer(db_kind=self.args.db))
        self.processes['Ironic'] = self.server.pid
        self.ironic = ironic_nodes.IronicNodes(self.server)
        self.results['ironic'] = {
            'endpoint': self.server.endpoint, 'pid': self.server.pid,
            'database': self.server.db_kind,
            'config_path': self.server.config_path,
            'start_seconds': round(self.server.start_seconds, 1)}
        phase.done('API %s, %s database' % (ironic_server.API_VERSION,
                                            self.server.db_kind))
        self.display.say('Ironic ready at %s (pid %d, %s database, '
                         'config %s) in %.1f s', self.server.endpoint,
                         self.server.pid, self.server.db_kind,
                         self.server.config_path, self.server.start_seconds)

    def enroll(self):
        specs = self.layout.node_specs()
        phase = self.display.phase('Enroll nodes through the API',
                                   total=len(specs))
        started = time.monotonic()
        pool = concurrent.futures.ThreadPoolExecutor(ENROLL_THREADS)
        try:
            futures = [pool.submit(self.ironic.enroll_nodes, 1,
                                   resource_class=group.resource_class,
                                   properties=group.properties,
                                   traits=group.traits, shard=shard,
                                   owner=group.owner, name_prefix=group.name)
                       for group, shard in specs]
            for future in concurrent.futures.as_completed(futures):
                future.result()
                phase.advance()
        finally:
            # On Ctrl-C, do not wait for the enrollments not yet begun.
            pool.shutdown(wait=True, cancel_futures=True)
        seconds = time.monotonic() - started
        phase.done('%d racks, %.1f s' % (len(self.layout.shards), seconds))
        self.results['fleet'] = [
            {'group': g.name, 'resource_class': g.resource_class,
             'nodes': g.count, 'description': g.describe()}
            for g in self.layout.groups]
        self.display.say(
            'Enrolled %d nodes in %.1f s: %s', len(specs), seconds,
            '; '.join('%s %d (%s)' % (g.name, g.count, g.describe())
                      for g in self.layout.groups))

    def start_coordination(self, stack):
        wanted = self.args.coordination_url
        group = 'sandbox-%s' % uuid.uuid4().hex[:8]
        if wanted in (None, '', 'file'):
            url = None
        elif wanted == 'redis':
            if not coordination.redis_available():
                raise SandboxError('no Redis answers on %s:%d'
                                   % coordination.REDIS)
            url = coordination.REDIS_URL
        elif wanted == 'etcd':
            url = stack.enter_context(coordination.EtcdServer()).url
            self.display.say('etcd of its own at %s', url)
        else:
            url = wanted
        if url is not None and not url.startswith('file:'):
            # Servers that outlive the sandbox keep no group of ours.
            stack.callback(coordination.delete_group, url, group)
        self.results['coordination'] = {
            'url': membership.redact(url) if url
            else 'file:// (a temporary directory)', 'group': group}
        return url, group

    def start_nova(self, stack, url, group):
        computes = self.layout.computes
        phase = self.display.phase('Nova services, %d computes' % computes)
        flags = {name: dict(options) for name, options in FLAGS.items()}
        flags['ironic_multi']['coordination_group'] = group
        flags['ironic_multi']['takeover_forced_down'] = True
        self.nova = stack.enter_context(nova_services.NovaServices(
            self.ironic, driver=nova_services.IRONIC_MULTI_DRIVER,
            computes=computes, coordination_url=url, flags=flags,
            log_level=logging.INFO, MEMBERSHIP_TIMEOUT=MEMBERSHIP_TIMEOUT,
            STATE_POLL_INTERVAL=STATE_POLL_INTERVAL))
        self.results['nova'] = {'start_seconds':
                                round(self.nova.start_seconds, 1)}
        # Nova's test services keep their log in memory: saved before
        # they stop, whatever the way out.
        stack.callback(self._save_nova_log)
        stack.callback(self._stop_computes)
        for host in sorted(self.nova.computes):
            self.providers[host] = self.nova._get_provider_uuid_by_host(
                host)
        self.live = frozenset(self.providers)
        self.project_id = self.nova.api_fixture.project_id
        phase.done('%s in %.1f s' % (', '.join(sorted(self.live)),
                                     self.nova.start_seconds))
        self.display.say(
            'Nova API, conductor, scheduler, placement and %d compute '
            'services with compute_driver = %s, coordination %s',
            computes, nova_services.IRONIC_MULTI_DRIVER,
            self.results['coordination']['url'])

    def _stop_computes(self):
        """Stop the compute services up, and wait for their drivers.

        Nova stops a service's manager (the driver's cleanup_host) in a
        thread of its own, without waiting for it in its test services;
        the harness's own clean-up then stops each driver again, and two
        stops of one driver at once can fail.  Waiting here for the first
        to finish leaves the later ones nothing to do.
        """
        with self._live_lock:
            hosts, self.live = sorted(self.live), frozenset()
        for host in hosts:
            self.nova.stop_compute(host)
        deadline = time.monotonic() + STOP_TIMEOUT
        for host in hosts:
            reserver = self._reserver(host)
            while (reserver.membership.started
                   and time.monotonic() < deadline):
                time.sleep(0.05)

    def _save_nova_log(self):
        path = self.results['nova']['log'] = self.args.nova_log
        with open(path, 'w') as f:
            f.write(self.nova.stdlog.logger.output)

    def create_flavors(self):
        api = self.nova.api_fixture.admin_api
        with nova_utils.temporary_mutation(
                api, microversion=CAPABILITIES_MICROVERSION):
            for flavor in self.layout.flavors:
                self.flavor_ids[flavor.name] = self.nova._create_flavor(
                    name=flavor.name, extra_spec=flavor.extra_specs,
                    **fleet.FLAVOR_SIZE)
        with nova_utils.temporary_mutation(api, microversion='2.35'):
            self.image = api.get_images()[0]['id']

    # -- boots ----------------------------------------------------------

    def boot_wave(self, index):
        names = self.layout.waves[index]
        label = 'wave %d' % (index + 1)
        if not names:
            return
        phase = self.display.phase(
            'Boot %s: %d servers at once' % (label, len(names)),
            total=len(names))
        counters = collections.Counter(names)
        self.display.say('%s: posting %d servers (%s) on %s', label,
                         len(names), ', '.join(
                             '%d %s' % (n, f) for f, n in
                             sorted(counters.items())),
                         ', '.join(sorted(self.live)))
        self.sampler.mark('%s posted' % label)
        posted = []
        serial = collections.Counter(
            r['flavor'] for r in self.servers.values())
        for name in names:
            serial[name] += 1
            server, = self.nova.post_servers(
                1, flavor_id=self.flavor_ids[name],
                name='%s-%d' % (name, serial[name]), image_uuid=self.image)
            self.servers[server['id']] = {
                'id': server['id'], 'name': '%s-%d' % (name, serial[name]),
                'flavor': name, 'wave': index + 1,
                'posted_at': self.clock()}
            posted.append(server)
        settled = self._wait_settled(posted, phase)
        # The harness agrees (and returns at once now).
        self.nova.wait_for_servers(posted, timeout=self.args.timeout)
        for server in settled:
            self._record_build(server)
        states = collections.Counter(s['status'] for s in settled)
        phase.done(', '.join('%d %s' % (n, s)
                             for s, n in sorted(states.items())))
        by_host = collections.Counter(
            s['OS-EXT-SRV-ATTR:host'] for s in settled
            if s['status'] == 'ACTIVE')
        self.display.say(
            '%s settled: %s; ACTIVE per compute: %s', label,
            ', '.join('%d %s' % (n, s) for s, n in sorted(states.items())),
            ', '.join('%s %d' % hn for hn in sorted(by_host.items())))

    def _wait_settled(self, servers, phase):
        deadline = self._deadline()
        pending = {s['id'] for s in servers}
        settled = {}
        while pending:
            for server_id in sorted(pending):
                server = self.nova.api.get_server(server_id)
                if _settled(server):
                    pending.discard(server_id)
                    settled[server_id] = server
                    self.servers[server_id]['settled_at'] = self.clock()
            states = collections.Counter(s['status']
                                         for s in settled.values())
            phase.update(completed=len(settled), status=', '.join(
                '%d %s' % (n, s) for s, n in sorted(states.items())))
            if not pending:
                break
            if time.monotonic() > deadline:
                raise SandboxError('%d servers not ACTIVE or ERROR after '
                                   '%d s' % (len(pending), self.args.timeout))
            self._pause(POLL)
        return [settled[s['id']] for s in servers]

    def _record_build(self, server):
        record = self.servers[server['id']]
        record['status'] = server['status']
        record['host'] = record['placed_on'] = server.get(
            'OS-EXT-SRV-ATTR:host')
        record['attempts'] = self.nova.build_attempts(server['id'])
        if server['status'] == 'ERROR':
            record['fault'] = server.get('fault', {}).get('message')
            record['placed_on'] = None
        seconds = self._build_seconds(server['id'])
        if seconds is None:
            seconds = record['settled_at'] - record['posted_at']
        record['boot_seconds'] = round(seconds, 2)

    def _build_seconds(self, server_id):
        """From the create action's start to its last build's end."""
        api = self.nova.api
        for action in api.get_instance_actions(server_id):
            if action['action'] != 'create':
                continue
            details = api.get_instance_action_details(
                server_id, action['request_id'])
            ends = [e['finish_time'] for e in details.get('events', ())
                    if e['event'] == nova_services.BUILD_EVENT
                    and e.get('finish_time')]
            if not ends or not details.get('start_time'):
                return None
            start = timeutils.parse_isotime(details['start_time'])
            end = max(timeutils.parse_isotime(t) for t in ends)
            return (end - start).total_seconds()
        return None

    # -- a compute service stops ----------------------------------------

    def _owners(self, hosts):
        """``{shard: owner}`` as the hosts' reservers see it now.

        None when they disagree (a refresh is under way).
        """
        views = []
        for host in hosts:
            ring = self._reserver(host).ring
            views.append({shard: ring.owner(shard)
                          for shard in self.layout.shards})
        if any(view != views[0] for view in views):
            return None
        return views[0]

    def _why_apart(self):
        """Which live services are out of the coordination group."""
        alone = [host for host in sorted(self.live)
                 if not self._reserver(host).membership.started]
        if not alone:
            return ''
        return ': %s not in coordination group %s at %s (see %s)' % (
            ', '.join(alone), self.results['coordination']['group'],
            self.results['coordination']['url'], self.logs)

    def _choose_victim(self, owners):
        active = collections.Counter(
            r['host'] for r in self.servers.values()
            if r.get('status') == 'ACTIVE')
        shards = collections.Counter(owners.values())
        if active[self.VICTIM] and shards[self.VICTIM]:
            return self.VICTIM
        return max(sorted(self.live),
                   key=lambda h: (bool(shards[h]), active[h], shards[h]))

    def stop_compute(self):
        owners = None
        deadline = self._deadline()
        while owners is None:
            owners = self._owners(sorted(self.live))
            if owners is None and time.monotonic() > deadline:
                raise SandboxError('the compute services do not agree on '
                                   'the shard ring%s' % self._why_apart())
            if owners is None:
                self._pause(0.2)
        victim = self.victim = self._choose_victim(owners)
        survivors = sorted(self.live - {victim})
        mine = sorted(r['id'] for r in self.servers.values()
                      if r.get('status') == 'ACTIVE'
                      and r['host'] == victim)
        phase = self.display.phase('Stop %s' % victim,
                                   total=3)
        self.display.say(
            'Stopping %s, which owns %s and hosts %d servers', victim,
            ', '.join(sorted(s for s, h in owners.items() if h == victim))
            or 'no shard key', len(mine))
        self.sampler.mark('%s stopped, forced down' % victim)
        stopped = time.monotonic()
        with self._live_lock:
            self.live = self.live - {victim}
            self.nova.stop_compute(victim)
        self.nova.force_down(victim)
        forced = time.monotonic()
        phase.update(completed=1, status='stopped, forced down')

        # The survivors' own refreshes (every pool_refresh_interval) see
        # it leave; nothing is refreshed for them.
        while True:
            after = self._owners(survivors)
            if after is not None and self._ring_left(victim, survivors,
                                                     after):
                break
            if time.monotonic() > deadline:
                raise SandboxError('%s\'s shard keys did not move to %s'
                                   % (victim, ', '.join(survivors)))
            self._pause(0.1)
        shard_seconds = time.monotonic() - stopped
        self.sampler.mark('shards moved')
        moved = sorted(s for s in owners if owners[s] != after[s])
        phase.update(completed=2, status='%d shard keys moved in %.1f s'
                     % (len(moved), shard_seconds))
        self.display.say(
            'Shard keys of %s moved in %.1f s: %s', victim, shard_seconds,
            ', '.join('%s -> %s' % (s, after[s]) for s in moved) or 'none')
        self.results['ring'] = {
            'victim': victim, 'before': owners, 'after': after,
            'moved': moved, 'seconds': round(shard_seconds, 2),
            'survivors': survivors}
        self.results['takeover'] = self._takeover(mine, survivors, forced,
                                                  phase)
        phase.done('%s down; %s' % (victim, self.results['takeover']
                                    ['summary']))

    def _ring_left(self, victim, survivors, owners):
        """Whether ``victim`` is off every survivor's ring."""
        return victim not in owners.values() and all(
            victim not in self._reserver(h).ring.hosts for h in survivors)

    def _takeover(self, mine, survivors, forced, phase):
        deadline = time.monotonic() + min(self.args.timeout, TAKEOVER_TIMEOUT)
        hosts = {}
        while True:
            for server_id in mine:
                host = self.nova.api.get_server(server_id)[
                    'OS-EXT-SRV-ATTR:host']
                if host in survivors:
                    hosts[server_id] = host
            phase.update(status='%d of %d instances adopted'
                         % (len(hosts), len(mine)))
            if len(hosts) == len(mine):
                break
            if time.monotonic() > deadline:
                self.problem('%d of %d servers of %s were not adopted '
                             'within %d s (see %s)' % (
                                 len(mine) - len(hosts), len(mine),
                                 self.victim, time.monotonic() - forced,
                                 self.logs))
                break
            self._pause(0.2)
        seconds = time.monotonic() - forced
        self.sampler.mark('instances adopted')
        for server_id, host in hosts.items():
            self.servers[server_id]['host'] = host
            self.servers[server_id]['adopted_by'] = host
        self.display.say(
            '%d servers of %s adopted %.1f s after it was forced down: %s',
            len(hosts), self.victim, seconds, ', '.join(
                '%s -> %s' % (self.servers[s]['name'], h)
                for s, h in sorted(hosts.items())) or 'none to adopt')
        return {'instances': mine,
                'adopted': hosts, 'seconds': round(seconds, 2),
                'summary': '%d instances adopted in %.1f s'
                           % (len(hosts), seconds)}

    def count_what_moved(self):
        """The survivors report what they took over, before wave 2.

        The nodes of the shard keys they took, and the traits of those
        nodes, reach placement at their next refresh and resource report
        (placement trails Ironic by design); until then the scheduler may
        find no survivor with room.  A wave posted the moment the
        adoptions end failed so once (NoValidHost).
        """
        self.nova.refresh_capacity(hosts=sorted(self.live))
        self.sampler.mark('survivors reported')

    # -- deletes --------------------------------------------------------

    def delete_some(self):
        # Servers whose compute service runs: a server of a stopped
        # service would be deleted locally by Nova's API, its node left
        # to the housekeeper.
        candidates = sorted(
            (r for r in self.servers.values()
             if r.get('status') == 'ACTIVE' and r['host'] in self.live),
            key=lambda r: r['name'])
        count = max(1, round(len(candidates) / 3)) if candidates else 0
        adopted = [r for r in candidates if r.get('adopted_by')]
        chosen = adopted[:1]
        rest = [r for r in candidates if r not in chosen]
        chosen += self.rng.sample(rest, max(0, count - len(chosen)))
        phase = self.display.phase('Delete %d servers' % len(chosen),
                                   total=len(chosen))
        self.display.say('Deleting %s', ', '.join(
            r['name'] for r in sorted(chosen, key=lambda r: r['name'])))
        self.sampler.mark('deletes posted')
        started = time.monotonic()
        for record in chosen:
            self.nova.api.delete_server(record['id'])
        pending = {r['id'] for r in chosen}
        deadline = self._deadline()
        while pending:
            for server_id in sorted(pending):
                try:
                    self.nova.api.get_server(server_id)
                except api_client.OpenStackApiNotFoundException:
                    pending.discard(server_id)
                    self.deleted.add(server_id)
                    self.servers[server_id]['deleted'] = True
                    phase.advance()
            if not pending:
                break
            if time.monotonic() > deadline:
                raise SandboxError('%d servers not deleted after %d s'
                                   % (len(pending), self.args.timeout))
            self._pause(POLL)
        phase.done('in %.1f s' % (time.monotonic() - started))
        self.sampler.mark('%d deleted' % len(chosen))

    # -- a kept cloud (--keep) ------------------------------------------

    #: The ``[ironic_multi]`` options the operator CLI shares with the
    #: compute services.
    MANAGE_OPTIONS = ('node_provider', 'coordination_url',
                      'coordination_group', 'membership_timeout',
                      'ring_partitions', 'fallback_shard_count',
                      'pool_refresh_interval', 'request_poll_interval')

    def manage_options(self):
        """What ironic-multi-manage needs to reach this cloud."""
        opts = nova_services.CONF.ironic_multi
        return {'ironic': {'auth_type': 'none',
                           'endpoint_override': self.server.endpoint},
                'ironic_multi': {name: getattr(opts, name)
                                 for name in self.MANAGE_OPTIONS}}

    def describe_cloud(self):
        """Lines saying what runs while the cloud is kept."""
        stopped = sorted(set(self.providers) - self.live)
        return [
            'The sandbox\'s cloud stays up: Ironic (noauth) at %s, %d nodes; '
            'compute services %s up%s; coordination group %s at %s.  Nova\'s '
            'API runs in this process only.' % (
                self.server.endpoint, self.layout.nodes,
                ', '.join(sorted(self.live)),
                ' (%s stopped)' % ', '.join(stopped) if stopped else '',
                self.results['coordination']['group'],
                self.results['coordination']['url'])]

    # -- the end --------------------------------------------------------

    def resource_periodic(self):
        """Each live compute's update_available_resource.

        As its service's own periodic task runs it every
        ``update_resources_interval``: it reports the driver's inventory
        to placement.
        """
        with self._live_lock:
            for host in sorted(self.live):
                self.nova.update_available_resource(host)

    def settle(self):
        phase = self.display.phase('Refresh capacity, check', total=None)
        self.nova.refresh_capacity(hosts=sorted(self.live))
        self.sampler.mark('capacity refreshed')
        self.sampler.sample_now()
        phase.done()

    def read_placement(self, nova=None):
        """``{host: {class: view}}`` of each live compute's provider.

        ``nova``: whose placement client to use (the sampler's thread
        has one of its own).
        """
        nova = nova or self.nova
        views = {}
        classes = [checks.placement_class(rc)
                   for rc in self.layout.resource_classes()]
        for host in sorted(self.live):
            provider = self.providers[host]
            inventory = nova._get_provider_inventory(provider)
            usages = nova._get_provider_usages(provider)
            views[host] = {name: checks.placement_view(
                inventory.get(name), usages.get(name, 0))
                for name in classes}
        return views

    def read_ironic(self, nodes=None):
        return (nodes or self.ironic).list_nodes(fields=checks.NODE_FIELDS)

    def read_sample(self):
        # A session of the sampler's own: requests' sessions are not
        # meant to be shared between threads.
        if not hasattr(self, '_sampler_nodes'):
            self._sampler_nodes = ironic_nodes.IronicNodes(self.server)
        truth = checks.ironic_truth(self.read_ironic(self._sampler_nodes))
        return {'ironic': truth, 'placement': self.read_placement()}

    def collect(self):
        nodes = self.read_ironic()
        truth = checks.ironic_truth(nodes)
        placement = self.read_placement()
        wrong = checks.compare_capacity(truth, placement)
        self.results['capacity'] = {
            'ironic': truth, 'placement': placement,
            'mismatches': [{'hosts': h, 'class': c, 'placement_free': p,
                            'ironic_free': i} for h, c, p, i in wrong]}
        for hosts, name, seen, free in wrong:
            self.problem('placement\'s free %s over %s adds up to %s, '
                         'Ironic has %d free' % (name, hosts, seen, free))

        servers = []
        for record in self.servers.values():
            if record['id'] in self.deleted:
                continue
            server = self.nova.api.get_server(record['id'])
            record['status'] = server['status']
            record['host'] = server.get('OS-EXT-SRV-ATTR:host')
            servers.append(server)
        flavors = {r['id']: self.layout.flavor(r['flavor'])
                   for r in self.servers.values()}
        found = checks.audit(servers, nodes, flavors, self.project_id)
        self.results['audit'] = found
        self.results['double_bookings'] = len(found['double_bookings'])
        for key, label in (('double_bookings', 'double booking'),
                           ('leaked', 'node held for no ACTIVE server'),
                           ('other_project', 'server on another project\'s '
                                             'node'),
                           ('mismatched', 'server on a node that does not '
                                          'fit its flavor')):
            for text in found[key]:
                self.problem('%s: %s' % (label, text))
        node_of = {n['instance_uuid']: n for n in nodes
                   if n.get('instance_uuid')}
        for record in self.servers.values():
            node = node_of.get(record['id'])
            record['node'] = node['name'] if node else None
            if record.get('status') == 'ERROR' and record['id'] not in (
                    self.deleted):
                allocation = self.nova.server_allocation(record['id'])
                if allocation:
                    self.problem('ERROR server %s holds a placement '
                                 'allocation: %s' % (record['name'],
                                                     allocation))
        self._check_outcome()
        self.results['other_project_nodes'] = sorted(
            n['name'] for n in nodes if n.get('owner'))

    def _check_outcome(self):
        """Only the oversubscribed flavor's surplus may end in ERROR."""
        states = collections.Counter(
            (r['flavor'], r['status']) for r in self.servers.values())
        errors = sum(n for (_f, s), n in states.items() if s == 'ERROR')
        bronze_errors = states[(self.layout.oversubscribed, 'ERROR')]
        if errors != bronze_errors or errors != self.layout.surplus:
            self.problem(
                'expected exactly %d ERROR servers, all %s (more servers '
                'than nodes), got: %s' % (
                    self.layout.surplus, self.layout.oversubscribed,
                    ', '.join('%s %s %d' % (f, s, n) for (f, s), n
                              in sorted(states.items()) if s != 'ACTIVE')
                    or 'none'))


def _settled(server):
    return (server['status'] in nova_services.SETTLED
            and server['OS-EXT-STS:task_state'] is None
            and (server['status'] != 'ERROR' or 'fault' in server))
