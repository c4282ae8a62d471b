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

"""Placement against Ironic through bursts, on the multi-process cloud.

Two clouds of :class:`ironic_multi.testing.cloud.Cloud` (ours with K = 3
computes, in-tree with one), one after the other, both with Nova's
default ``update_resources_interval`` (60 s) and ours with its default
``pool_refresh_interval`` (30 s): what a deployment runs, not the tests'
short intervals.  Each gets bursts at exactly full capacity (as many
servers as nodes) and at twice that, in turn.

Through each burst a sampler reads, every 0.5 s, Ironic's free nodes
(available, no instance) and what placement offers the scheduler: one
``GET /allocation_candidates`` for one node, whose provider summaries
give each provider's free units (capacity - used).  Placement offers
the providers' free units added up (one over its capacity offers
nothing): ours each offer the free nodes of their own shards, in-tree's
one unit per free node.  (Before each of ours offered only its own
shards, every provider offered every free node, and this bench took the
highest provider's count for ours: a build could go to any.)

A sample *over-reports* when placement offers more than Ironic had free
just before (Ironic is read first): a build sent on it can only fail its
claim and reschedule.  It *under-reports* when placement offers less:
ours hides the nodes that builds already sent to a compute will claim
(they are spoken for), and in-tree hides a node from its allocation
until its spawn writes the instance on the node.  Reschedules
are counted from Nova's instance actions: every build a compute began
(``compute__do_build_and_run_instance``) but the last one of an ACTIVE
server.  The goals (issue 29): over-reporting in at most 2 % of the
samples, no reschedule at full capacity, and at 2x no more than the
in-tree driver's.
"""

import collections
import statistics
import threading
import time

import cloudboots

OURS, IN_TREE = cloudboots.OURS, cloudboots.IN_TREE

TITLE = ('Placement against Ironic through bursts at full and 2x capacity '
         '(update_resources_interval 60 s): ironic-multi (K=3) vs in-tree')

CLOUDS = {name: cloudboots.CLOUDS[name] for name in (OURS, IN_TREE)}
# Nova's and this driver's defaults.
UPDATE_RESOURCES_INTERVAL = 60
POOL_REFRESH_INTERVAL = 30
# Bursts per cloud, in this order: x1 is full capacity.
BURSTS = (('x1', 1), ('x2', 2))
SAMPLES = 2
QUICK_SAMPLES = 1
PERIOD = 0.5
RESOURCE_CLASS = 'CUSTOM_GOLD'
BUILD_EVENT = 'compute__do_build_and_run_instance'
GOAL_OVER_REPORTED = 0.02
# Over-reported samples kept whole in the results, per burst.
OVER_SAMPLES_KEPT = 5


def measure(bench):
    samples = QUICK_SAMPLES if bench.args.quick else SAMPLES
    runs = {name: [] for name in CLOUDS}
    for name in CLOUDS:
        print('capacity: %s' % name, flush=True)
        runs[name] = _measure_cloud(name, samples)
    return _report(runs)


def _measure_cloud(name, samples):
    driver, computes, options = CLOUDS[name]
    runs = []
    with cloudboots.cloud_mod.Cloud(
            computes=computes, layout=cloudboots.layout(computes),
            compute_driver=driver, compute_options=options,
            nova_options=cloudboots.NOVA_OPTIONS,
            update_resources_interval=UPDATE_RESOURCES_INTERVAL,
            pool_refresh_interval=POOL_REFRESH_INTERVAL,
            log_dir=cloudboots.log_dir('capacity-%s' % name)) as cloud:
        print('%s cloud ready in %.0f s' % (name, cloud.start_seconds),
              flush=True)
        flavor = cloud.flavors['gold']
        for number in range(samples):
            for burst, times in BURSTS:
                run = dict(_burst(cloud, flavor, times * cloudboots.NODES),
                           burst=burst, sample=number + 1)
                print('%s %s sample %d: %s' % (name, burst, number + 1,
                                               _brief(run)), flush=True)
                runs.append(run)
    return runs


def _burst(cloud, flavor, servers):
    sampler = _Sampler(cloud)
    sampler.start()
    started = time.monotonic()
    try:
        posted = cloudboots.post_burst(cloud, flavor, servers)
        settled, active_at, _errors = cloudboots.wait_settled(
            cloud, posted, started)
    finally:
        samples = sampler.stop()
    cloudboots.check_nodes(cloud, active_at)
    failed_builds = _failed_builds(cloud, posted, active_at)
    cloudboots.delete_burst(cloud, posted, ironic=True)
    over = [s for s in samples if s['offered'] > s['ironic']]
    under = [s for s in samples if s['offered'] < s['ironic']]
    return {'servers': servers, 'active': len(active_at),
            'error': len(settled) - len(active_at),
            'samples': len(samples), 'over_reported': len(over),
            'under_reported': len(under),
            'most_over': max((s['offered'] - s['ironic'] for s in over),
                             default=0),
            # The first few, whole: which provider offered what, and the
            # nodes' states then.
            'over_samples': over[:OVER_SAMPLES_KEPT],
            'reschedules': sum(failed_builds.values()),
            'servers_rescheduled': sum(1 for n in failed_builds.values()
                                       if n)}


class _Sampler(object):
    """Ironic's free nodes and placement's offer, every PERIOD s."""

    def __init__(self, cloud):
        self._cloud = cloud
        self._stopped = threading.Event()
        self._samples = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stopped.set()
        self._thread.join(30)
        return self._samples

    def _run(self):
        placement = self._cloud.connection().placement
        while not self._stopped.is_set():
            began = time.monotonic()
            # Ironic first: a claim between the two reads then lowers
            # placement's offer, never Ironic's count alone.
            nodes = self._cloud.ironic.list_nodes()
            ironic = sum(1 for n in nodes
                         if n['provision_state'] == 'available'
                         and not n['instance_uuid'] and not n['maintenance'])
            offers = self._offers(placement)
            offered = self._offered(offers)
            # What an over-report is made of, to tell its cause.
            states = collections.Counter(
                '%s%s' % (n['provision_state'],
                          '+instance' if n['instance_uuid'] else '')
                for n in nodes)
            self._samples.append({'offered': offered, 'ironic': ironic,
                                  'at': round(time.monotonic(), 1),
                                  'offers': offers,
                                  'states': dict(states)})
            self._stopped.wait(max(0, PERIOD - (time.monotonic() - began)))

    @staticmethod
    def _offered(offers):
        """What placement offers the scheduler, from ``_offers()``.

        The providers' free units added up (placement names only those
        with a free unit).
        """
        return sum(offers.values())

    def _offers(self, placement):
        """``{provider: free units}`` placement offers for one node."""
        return cloudboots.cloud_mod.offers(placement, RESOURCE_CLASS)


def _failed_builds(cloud, posted, active):
    """``{server id: builds a compute began that did not end ACTIVE}``.

    Each build a compute began is one ``compute__do_build_and_run_instance``
    event; a build that rescheduled ends that event well (Nova returns,
    it does not raise), so every build but an ACTIVE server's last one
    failed.
    """
    compute = cloud.connection().compute
    failed = {}
    for server_id in posted:
        builds = 0
        for action in compute.server_actions(server_id):
            if action.action != 'create':
                continue
            found = compute.get_server_action(action.request_id, server_id)
            builds += sum(1 for event in found.events or ()
                          if event['event'] == BUILD_EVENT)
        failed[server_id] = builds - (1 if server_id in active else 0)
    return failed


def _brief(run):
    return ('%(active)d/%(servers)d ACTIVE, %(over_reported)d of '
            '%(samples)d samples over-reported (by up to %(most_over)d), '
            '%(under_reported)d under, %(reschedules)d reschedules' % run)


def _pooled(runs, burst):
    mine = [r for r in runs if r['burst'] == burst]
    samples = sum(r['samples'] for r in mine)
    over = sum(r['over_reported'] for r in mine)
    return {'samples': samples, 'over_reported': over,
            'over_share': over / samples if samples else 0.0,
            'under_share': (sum(r['under_reported'] for r in mine) / samples
                            if samples else 0.0),
            'most_over': max((r['most_over'] for r in mine), default=0),
            'reschedules': [r['reschedules'] for r in mine],
            'servers': sum(r['servers'] for r in mine),
            'active': sum(r['active'] for r in mine)}


def _report(runs):
    pooled = {name: {burst: _pooled(samples, burst)
                     for burst, _times in BURSTS}
              for name, samples in runs.items()}
    rows = []
    for name, bursts in pooled.items():
        for burst, p in bursts.items():
            rows.append([name, burst, '%d/%d' % (p['active'], p['servers']),
                         '%d' % p['samples'],
                         '%.1f %%' % (100 * p['over_share']),
                         '%d' % p['most_over'],
                         '%.1f %%' % (100 * p['under_share']),
                         ', '.join(str(n) for n in p['reschedules'])])
    ours, in_tree = pooled[OURS], pooled[IN_TREE]
    ours_x2 = statistics.median(ours['x2']['reschedules'])
    in_tree_x2 = statistics.median(in_tree['x2']['reschedules'])
    over = max(ours[b]['over_share'] for b, _t in BURSTS)
    goals = [
        {'name': 'ironic-multi samples over-reported (both bursts)',
         'target': '<= %d %%' % (100 * GOAL_OVER_REPORTED),
         'measured': '%.1f %%' % (100 * over),
         'met': over <= GOAL_OVER_REPORTED},
        {'name': 'ironic-multi reschedules at full capacity',
         'target': '0', 'measured': str(max(ours['x1']['reschedules'])),
         'met': max(ours['x1']['reschedules']) == 0},
        {'name': 'ironic-multi reschedules at 2x, median vs in-tree',
         'target': '<= in-tree (%s)' % in_tree_x2,
         'measured': str(ours_x2), 'met': ours_x2 <= in_tree_x2},
    ]
    return {
        'title': TITLE,
        'headers': ['configuration', 'burst', 'ACTIVE', 'samples',
                    'over-reported', 'most over', 'under-reported',
                    'reschedules per sample'],
        'rows': rows,
        'results': {
            'pooled': pooled,
            'notes': ['%d nodes; bursts of %s servers; placement and Ironic '
                      'sampled every %.1f s from the first POST until every '
                      'server settled; update_resources_interval %d s on '
                      'both, pool_refresh_interval %d s on ours' % (
                          cloudboots.NODES,
                          ' and '.join('%d' % (t * cloudboots.NODES)
                                       for _b, t in BURSTS), PERIOD,
                          UPDATE_RESOURCES_INTERVAL, POOL_REFRESH_INTERVAL)]},
        'samples': runs,
        'goals': goals,
        'chart': {
            'kind': 'bar',
            'title': 'Samples where placement offered more than Ironic had',
            'x': ['%s %s' % (name, burst) for name in pooled
                  for burst, _t in BURSTS],
            'series': {'over-reported %': [
                round(100 * pooled[name][burst]['over_share'], 1)
                for name in pooled for burst, _t in BURSTS]},
            'ylabel': '% of samples',
        },
    }
