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

"""Boots on the multi-process cloud: ours (K = 3), in-tree, fake.

Three clouds of :class:`ironic_multi.testing.cloud.Cloud`, alike but for
their computes (every service a process, RabbitMQ, the Nova API under
waitress behind Keystone), one after the other:

``ironic-multi``
    3 nova-compute processes with ``ironic_multi.IronicMultiDriver``.
``in-tree``
    one nova-compute with Nova's ``ironic.IronicDriver``, the layout its
    docs advise for a cloud of this size (one provider per node).
``fake``
    one nova-compute with Nova's ``fake.FakeDriver``: no Ironic at all,
    the floor of Nova's own cost for a boot.

One at a time: three clouds at once took more than the 151 connections
of a default MariaDB (the Nova API answered 500), and each would carry
the others' periodic load.  In two rounds, the second in the reverse
order (ours, in-tree, fake; then fake, in-tree, ours): the machine's
speed drifts over a run (another job starts or ends), and a drift that
one order gives to the first cloud the other gives to the last.  The
samples of both rounds are pooled; each round's ratios are reported
too, to show the spread.

Each sample POSTs a burst of B servers (5 at a time) with the demo
project's token and polls Nova's API every 0.5 s: a server's boot
latency runs from the start of its POST until it is first seen ACTIVE;
boots per minute = ACTIVE servers / (first POST to last ACTIVE).  After
each sample the servers are deleted and the sample waits until every
node is available again, in Ironic and in placement.  A first burst per
cloud warms it up and is not counted.  Where the time goes comes from
the computes' logs (:func:`_phases`).

Ironic's own deploy time is measured on the fake cloud's Ironic, which
its driver leaves idle: nodes provisioned straight through Ironic's API,
from ``deploy`` to ``active``, one at a time and as a burst of B at once
(what Ironic alone takes for the deploys of one sample).  The goals
(issue 29): ours within 1.2x of (fake p50 + Ironic's burst deploy p50),
and within 0.7x of in-tree's p50.
"""

import collections
import concurrent.futures
import glob
import logging
import os
import re
import shutil
import statistics
import time

from openstack import exceptions as openstack_exceptions

from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import nova as cloud_nova
from ironic_multi.testing import fleet

LOG = logging.getLogger(__name__)

TITLE = ('Boots on the multi-process cloud: ironic-multi (K=3) vs in-tree '
         'IronicDriver (K=1) vs fake.FakeDriver')

OURS, IN_TREE, FAKE = 'ironic-multi', 'in-tree', 'fake'
# Seconds between a driver's reads of a node it deploys: the same for
# both (Nova's [ironic] api_retry_interval is an integer; both default
# to 2 s).
POLL_INTERVAL = 1
# (compute_driver, computes, the computes' own options)
CLOUDS = {
    OURS: (cloud_nova.COMPUTE_DRIVER, 3,
           {'ironic_multi': {'state_poll_interval': POLL_INTERVAL}}),
    IN_TREE: (cloud_nova.IN_TREE_DRIVER, 1,
              {'ironic': {'api_retry_interval': POLL_INTERVAL}}),
    FAKE: (cloud_nova.FAKE_DRIVER, 1, {}),
}
# Every cloud's Nova: the scheduler picks at random among the hosts of
# the best weight, as Nova advises for Ironic (the in-tree driver's
# nodes weigh the same) and as ironic-multi needs (its services weigh the
# same: without it a burst went to one service, 66 of 72 builds).
NOVA_OPTIONS = {'filter_scheduler': {'shuffle_best_same_weighed_hosts': True}}
NODES = 16
# A burst of 12 on 16 nodes: the p95 of 60 boots per cloud is the 57th.
SERVERS = 12
# Per cloud and round: 6 samples of each cloud in all.
SAMPLES = 3
QUICK_SAMPLES = 1
ROUNDS = ((OURS, IN_TREE, FAKE), (FAKE, IN_TREE, OURS))
QUICK_ROUNDS = ROUNDS[:1]
# Bursts run first and not counted: the first burst of a new cloud was
# slower on every cloud (fake: p50 4.5 s, then 2.8 s).
WARMUPS = 1
POSTERS = 5
DEPLOYS = 5
SETTLE_TIMEOUT = 600
FAKE_FLAVOR = 'fake-small'
# Where a boot's time goes (see _phases).
PHASES = ('before build', 'build', 'spawn', 'claim')
GOAL_OF_FAKE_PLUS_DEPLOY = 1.2
GOAL_OF_IN_TREE = 0.7


class BenchError(Exception):
    """A check failed: the numbers mean nothing."""


def layout(computes):
    """One node group of gold nodes, one flavor with its class only."""
    return fleet.Layout(
        nodes=NODES, computes=computes, servers=SERVERS, seed=0,
        groups=(fleet.NodeGroup('gold', 'gold', NODES),),
        flavors=(fleet.Flavor('gold', 'gold', 'gold'),),
        shards=tuple('rack-%d' % i for i in range(1, 7)),
        waves=((), ()), surplus=0)


def measure(bench):
    samples = QUICK_SAMPLES if bench.args.quick else SAMPLES
    rounds = QUICK_ROUNDS if bench.args.quick else ROUNDS
    runs = {name: [] for name in CLOUDS}
    deploys = {'one at a time': [], 'burst': []}
    for index, order in enumerate(rounds):
        for name in order:
            print('round %d: %s' % (index + 1, name), flush=True)
            found, runs_of_round = _measure_cloud(
                name, samples, '%s-%d' % (name, index + 1))
            for kind, seconds in found.items():
                deploys[kind] += seconds
            for run in runs_of_round:
                runs[name].append(dict(run, round=index + 1))
    return _report(runs, deploys)


def _measure_cloud(name, samples, label):
    """``(Ironic's own deploys, samples)`` of a new cloud of ``name``.

    Its logs go to ``bench-LABEL``.
    """
    driver, computes, options = CLOUDS[name]
    found = {}
    runs = []
    with cloud_mod.Cloud(computes=computes, layout=layout(computes),
                         compute_driver=driver, compute_options=options,
                         nova_options=NOVA_OPTIONS,
                         log_dir=log_dir(label)) as cloud:
        print('%s cloud ready in %.0f s' % (name, cloud.start_seconds),
              flush=True)
        flavor = _flavor(cloud, name == FAKE)
        if name == FAKE:
            found = _ironic_deploys(cloud)
            print('Ironic alone: deploy p50 %.1f s one at a time, '
                  '%.1f s in a burst of %d' % (
                      statistics.median(found['one at a time']),
                      statistics.median(found['burst']), SERVERS),
                  flush=True)
        for index in range(WARMUPS + samples):
            run = _sample(cloud, flavor, ironic=name != FAKE)
            warmup = index < WARMUPS
            print('%s %s %d: %s' % (
                name, 'warm-up' if warmup else 'sample',
                index + 1 - (0 if warmup else WARMUPS), _brief(run)),
                flush=True)
            if not warmup:
                runs.append(run)
    return found, runs


def log_dir(label):
    """Where a cloud's logs stay: under tox's cloud-logs, else nowhere."""
    root = os.environ.get('IRONIC_MULTI_CLOUD_LOG_DIR')
    if not root:
        return None
    path = os.path.join(root, 'bench-%s' % label)
    shutil.rmtree(path, ignore_errors=True)
    return path


def _flavor(cloud, fake):
    if not fake:
        return cloud.flavors['gold']
    admin = cloud.connection()
    return admin.compute.create_flavor(name=FAKE_FLAVOR, ram=64, vcpus=1,
                                       disk=1, is_public=True).id


def _ironic_deploys(cloud):
    """Seconds of ``deploy`` to ``active`` in Ironic alone.

    ``{'one at a time': [...], 'burst': [...]}``: DEPLOYS nodes one after
    the other, then SERVERS nodes at once (each from its request).
    """
    nodes = [n['uuid'] for n in cloud.ironic.list_nodes()]
    single = []
    for node in nodes[:DEPLOYS]:
        single += _deploy(cloud, [node]).values()
    return {'one at a time': single,
            'burst': list(_deploy(cloud, nodes[:SERVERS]).values())}


def _deploy(cloud, nodes):
    """Deploy ``nodes`` at once, then tear them down; their seconds."""
    ironic = cloud.ironic
    requested = {}

    def deploy(node):
        ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
            {'op': 'add', 'path': '/instance_info/image_source',
             'value': cloud.image_id}])
        requested[node] = time.monotonic()
        ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                       expect=(202,), json={'target': 'active'})

    with concurrent.futures.ThreadPoolExecutor(POSTERS) as pool:
        list(pool.map(deploy, nodes))
    active = {}
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while len(active) < len(nodes):
        now = time.monotonic()
        for node in ironic.list_nodes():
            if node['uuid'] in requested and node['uuid'] not in active:
                if node['provision_state'] == 'active':
                    active[node['uuid']] = now - requested[node['uuid']]
                elif node['provision_state'] == 'deploy failed':
                    raise BenchError('Ironic failed to deploy %s'
                                     % node['uuid'])
        if now > deadline:
            raise BenchError('%d nodes not active after %d s' % (
                len(nodes) - len(active), SETTLE_TIMEOUT))
        time.sleep(0.5)
    for node in nodes:
        ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                       expect=(202,), json={'target': 'deleted'})
    for node in nodes:
        ironic.wait_for_node(node, provision_state='available')
    return active


def post_burst(cloud, flavor, count):
    """POST ``count`` servers, POSTERS at a time, as the demo project.

    :returns: ``{server id: monotonic time its POST started}``.
    """
    demo = cloud.connection(cloud_mod.DEMO_CLOUD).compute
    posted = {}

    def post(index):
        sent = time.monotonic()
        server = demo.create_server(
            name='bench-%d' % index, flavor_id=flavor,
            image_id=cloud.image_id, networks='none')
        posted[server.id] = sent

    with concurrent.futures.ThreadPoolExecutor(POSTERS) as pool:
        list(pool.map(post, range(count)))
    return posted


def wait_settled(cloud, posted, started):
    """Poll until every posted server is ACTIVE or ERROR.

    :returns: ``(settled {id: server}, active_at {id: monotonic time},
        failed polls)``.
    """
    admin = cloud.connection().compute
    active_at, settled = {}, {}
    deadline = started + SETTLE_TIMEOUT
    api_errors = 0
    while len(settled) < len(posted):
        now = time.monotonic()
        try:
            servers = list(admin.servers(details=True, all_projects=True))
        except openstack_exceptions.HttpException as e:
            # One failed poll is not a failed boot: counted, tried again.
            api_errors += 1
            LOG.warning('Listing the servers failed: %s', e)
            servers = []
        for server in servers:
            if server.id not in posted or server.id in settled:
                continue
            if server.status == 'ACTIVE' and not server.task_state:
                active_at[server.id] = now
                settled[server.id] = server
            elif server.status == 'ERROR':
                settled[server.id] = server
        if now > deadline:
            raise BenchError('%d servers not settled after %d s' % (
                len(posted) - len(settled), SETTLE_TIMEOUT))
        time.sleep(0.5)
    return settled, active_at, api_errors


def delete_burst(cloud, posted, ironic):
    """Delete the servers; wait until every node is free everywhere."""
    demo = cloud.connection(cloud_mod.DEMO_CLOUD).compute
    for server_id in posted:
        demo.delete_server(server_id)
    cloud.wait_for_deleted(list(posted))
    if ironic:
        _wait_for_available(cloud)


def _sample(cloud, flavor, ironic):
    started = time.monotonic()
    posted = post_burst(cloud, flavor, SERVERS)
    settled, active_at, api_errors = wait_settled(cloud, posted, started)
    seconds = max(active_at.values(), default=time.monotonic()) - started
    if ironic:
        check_nodes(cloud, active_at)
    latencies = {i: active_at[i] - posted[i] for i in active_at}
    phases = _phases(cloud, latencies)
    errors = collections.Counter(
        (s.fault or {}).get('message', '?')[:100]
        for s in settled.values() if s.status == 'ERROR')
    delete_burst(cloud, posted, ironic)
    # How the scheduler spread the burst over the compute services.
    per_host = collections.Counter(
        settled[i].compute_host for i in active_at)
    return {'servers': len(posted), 'active': len(active_at),
            'errors': dict(errors), 'api_errors': api_errors,
            'active_per_host': dict(sorted(per_host.items())),
            'seconds': round(seconds, 2),
            'boots_per_minute': round(len(active_at) / seconds * 60, 2)
            if seconds else 0,
            'latencies': sorted(round(v, 2) for v in latencies.values()),
            'phases': phases}


# What the computes log of each build: Nova's own timings, and the
# claim of ours.
_TOOK = re.compile(r'\[instance: (?P<id>[0-9a-f-]{36})\] Took '
                   r'(?P<s>[0-9.]+) seconds to (?P<what>spawn the instance|'
                   r'build instance)')
_RESERVED = re.compile(r'Reserved node \S+ for instance (?P<id>[0-9a-f-]{36})'
                       r' from .* in (?P<s>[0-9.]+) s')


def _phases(cloud, latencies):
    """``{phase: [seconds, ...]}`` of these servers, from the computes' logs.

    ``build``: the compute's whole build (resource claim, network, spawn);
    ``spawn``: the driver's spawn (for ours: the node's claim, then the
    deploy and the wait for it); ``claim``: ours only; ``before build``:
    the rest of the boot's latency (API, scheduler, conductor, RPC and
    the poll that saw it ACTIVE).
    """
    found = collections.defaultdict(dict)
    for path in glob.glob(os.path.join(cloud.log_dir, '%s-*.log'
                                       % cloud_mod.COMPUTE_BINARY)):
        with open(path, errors='replace') as f:
            for line in f:
                match = _TOOK.search(line)
                if match and match.group('id') in latencies:
                    what = match.group('what').split()[0]
                    found[match.group('id')][what] = float(match.group('s'))
                    continue
                match = _RESERVED.search(line)
                if match and match.group('id') in latencies:
                    found[match.group('id')]['claim'] = float(
                        match.group('s'))
    phases = collections.defaultdict(list)
    for server_id, took in found.items():
        for what, seconds in took.items():
            phases[what].append(round(seconds, 2))
        if 'build' in took:
            phases['before build'].append(
                round(latencies[server_id] - took['build'], 2))
    return dict(phases)


def _ratios_per_round(runs, deploy):
    """Both ratios of each round alone (Ironic's deploy pooled)."""
    rounds = sorted({run.get('round', 1) for samples in runs.values()
                     for run in samples})
    found = []
    for number in rounds:
        p50 = {name: _percentile([v for run in samples
                                  if run.get('round', 1) == number
                                  for v in run['latencies']], 50)
               for name, samples in runs.items()}
        found.append({
            'round': number,
            'ours_p50_over_in_tree': round(p50[OURS] / p50[IN_TREE], 2),
            'ours_p50_over_fake_plus_deploy': round(
                p50[OURS] / (p50[FAKE] + deploy), 2)})
    return found


def check_nodes(cloud, active_at):
    """Every ACTIVE server on one active node of its own."""
    held = cloud.held_nodes()
    twice = {i: n for i, n in held.items() if len(n) > 1}
    missing = [i for i in active_at if i not in held]
    if twice or missing:
        raise BenchError('nodes held twice: %s; ACTIVE without a node: %s'
                         % (twice, missing))


def _wait_for_available(cloud, timeout=SETTLE_TIMEOUT):
    """Until Ironic has every node available and placement says so.

    Placement, not a fixed sleep: the in-tree driver's compute picks
    nodes from its own cache, refreshed by the periodic that reports
    them to placement, and a node it still sees torn down fails the
    build ("Chosen ironic node is not available"); with one compute
    there is no other host to reschedule to.
    """
    deadline = time.monotonic() + timeout
    while True:
        nodes = cloud.ironic.list_nodes()
        busy = [n['uuid'] for n in nodes
                if n['instance_uuid'] or n['provision_state'] != 'available']
        if not busy and _placement_settled(cloud):
            return
        if time.monotonic() > deadline:
            raise BenchError('%d nodes not available after %d s (or not '
                             'yet in placement)' % (len(busy), timeout))
        time.sleep(1)


def _placement_settled(cloud):
    """Whether placement offers every node again.

    Ours: each compute's provider offers the free nodes of its own
    shards, every compute has reported; the in-tree driver: one provider
    per node, unreserved.  Either way they add up to the nodes.
    """
    free = [inventory.total - inventory.reserved
            for provider in cloud.provider_inventories().values()
            for resource_class, inventory in provider.items()
            if resource_class == 'CUSTOM_GOLD']
    if (cloud.compute_driver == cloud_nova.COMPUTE_DRIVER
            and len(free) != len(cloud.computes)):
        return False
    return sum(free) == NODES


def _seconds(value):
    return '-' if value is None else '%.1f' % value


def _brief(run):
    return '%d/%d ACTIVE in %.1f s, p50 %.1f s, per host %s' % (
        run['active'], run['servers'], run['seconds'],
        _percentile(run['latencies'], 50) or 0,
        run.get('active_per_host'))


def _percentile(values, pct):
    if not values:
        return None
    values = sorted(values)
    rank = round(pct / 100.0 * len(values) + 0.5)  # nearest rank
    index = min(len(values) - 1, max(0, rank - 1))
    return values[index]


def _report(runs, deploys):
    summary = {}
    for name, samples in runs.items():
        latencies = [v for s in samples for v in s['latencies']]
        summary[name] = {
            'p50': _percentile(latencies, 50),
            'p95': _percentile(latencies, 95),
            'boots_per_minute': statistics.median(
                s['boots_per_minute'] for s in samples),
            'active': sum(s['active'] for s in samples),
            'servers': sum(s['servers'] for s in samples),
            'active_per_host': dict(sum(
                (collections.Counter(s.get('active_per_host', {}))
                 for s in samples), collections.Counter())),
            'phases_p50': {
                phase: _percentile([v for s in samples
                                    for v in s['phases'].get(phase, ())], 50)
                for phase in PHASES},
        }
    single = statistics.median(deploys['one at a time'])
    deploy = statistics.median(deploys['burst'])
    ours, in_tree, fake = (summary[n] for n in (OURS, IN_TREE, FAKE))
    floor = fake['p50'] + deploy
    per_round = _ratios_per_round(runs, deploy)
    rows = [[name, '%d/%d' % (s['active'], s['servers']),
             '%.1f' % s['p50'], '%.1f' % s['p95'],
             '%.1f' % s['boots_per_minute']]
            + [_seconds(s['phases_p50'][p]) for p in PHASES]
            for name, s in summary.items()]
    for label, values in (('Ironic alone, one at a time',
                           deploys['one at a time']),
                          ('Ironic alone, burst of %d' % SERVERS,
                           deploys['burst'])):
        rows.append([label, '%d' % len(values),
                     '%.1f' % statistics.median(values),
                     '%.1f' % _percentile(values, 95), '-']
                    + ['-'] * len(PHASES))
    goals = [
        {'name': 'ironic-multi p50 / (fake p50 + Ironic burst deploy '
                 'p50)',
         'target': '<= %.1fx' % GOAL_OF_FAKE_PLUS_DEPLOY,
         'measured': '%.2fx' % (ours['p50'] / floor),
         'met': ours['p50'] / floor <= GOAL_OF_FAKE_PLUS_DEPLOY},
        {'name': 'ironic-multi p50 / in-tree p50',
         'target': '<= %.1fx' % GOAL_OF_IN_TREE,
         'measured': '%.2fx' % (ours['p50'] / in_tree['p50']),
         'met': ours['p50'] / in_tree['p50'] <= GOAL_OF_IN_TREE},
    ]
    return {
        'title': TITLE,
        'headers': ['configuration', 'ACTIVE', 'p50 (s)', 'p95 (s)',
                    'boots/min (median)'] + ['%s p50 (s)' % p
                                             for p in PHASES],
        'rows': rows,
        'results': {
            'summary': summary, 'ironic_deploy_seconds': deploys,
            'ratios': {
                'ours_p50_over_fake_plus_deploy': round(
                    ours['p50'] / floor, 2),
                'ours_p50_over_fake_plus_single_deploy': round(
                    ours['p50'] / (fake['p50'] + single), 2),
                'in_tree_p50_over_fake_plus_deploy': round(
                    in_tree['p50'] / floor, 2),
                'ours_p50_over_in_tree': round(
                    ours['p50'] / in_tree['p50'], 2),
                'ours_boots_per_minute_over_in_tree': round(
                    ours['boots_per_minute']
                    / in_tree['boots_per_minute'], 2),
            },
            'ratios_per_round': per_round,
            'notes': ['%d servers per sample, %d samples per cloud (after '
                      '%d warm-up per cloud started), one cloud at a time, '
                      'in %d round(s), the second in reverse order; %d '
                      'nodes per cloud; both drivers read a deploying node '
                      'every %d s' % (SERVERS, len(runs[OURS]), WARMUPS,
                                      len(per_round), NODES, POLL_INTERVAL),
                      'per round, ours p50 / in-tree p50: %s; ours p50 / '
                      '(fake p50 + Ironic burst deploy p50): %s' % (
                          ', '.join('%.2fx' % r['ours_p50_over_in_tree']
                                    for r in per_round),
                          ', '.join('%.2fx' % r[
                              'ours_p50_over_fake_plus_deploy']
                              for r in per_round)),
                      'phases (from the computes\' logs): before build = '
                      'API, scheduler, conductor, RPC and the 0.5 s poll; '
                      'build = the compute\'s build; spawn = the '
                      'driver\'s; claim = ours, within spawn'],
        },
        'samples': runs,
        'goals': goals,
        'chart': {
            'kind': 'bar',
            'title': 'Boot latency on the multi-process cloud, %d servers '
                     'per burst' % SERVERS,
            'x': list(summary) + ['Ironic deploy (burst)'],
            'series': {
                'p50': [s['p50'] for s in summary.values()] + [deploy],
                'p95': [s['p95'] for s in summary.values()]
                + [_percentile(deploys['burst'], 95)]},
            'ylabel': 'seconds',
        },
    }
