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

"""Capacity periodic: one whole ``update_available_resource``, both drivers.

Nova's own code on both sides, in one set of Nova's in-process services
(``ironic_multi.testing.nova_services``) with placement, on the bench's
Ironic and the same N nodes, all in one shard key:

``in-tree``
    a compute service with Nova's ``ironic.IronicDriver``, ``[ironic]
    shard`` set to that key (the mode upstream recommends), so it owns all
    N nodes.  Its periodic is its node cache refresh (listing the shard,
    timed on its own too as ``get_available_nodes``), then the resource
    tracker's update of N compute nodes and N placement providers.  It
    starts on a shard key of its own with one seed node (Nova's test
    services want a compute node per started compute) and is then
    pointed at the fleet's, so that its **first pass** (creating the N
    compute nodes and providers) is timed alone; **steady** passes
    follow.
``ironic-multi``
    a compute service with ``ironic_multi.IronicMultiDriver``: its capacity
    comes from the Reserver's refresh (incremental: the nodes changed
    since the last one), which runs on its own timer; the periodic then
    reports one compute node.  Both are timed, separately, and the goal
    is judged on their **sum** (refresh + periodic), the whole cost of
    keeping placement current.  Its full read (every
    ``pool_full_refresh_interval``, 600 s by default) is part of the
    service start, reported separately.

The in-tree resource tracker's cost per node grows with N on this kind
of machine (first pass: 84 ms per node at 1,000 nodes, 140 ms at 5,000;
steady: 25 ms per node at 1,000): at 5,000 nodes the first pass took
12 minutes, far beyond the bench's time budget.  So the in-tree periodic
is measured whole up to ``IRONIC_MULTI_BENCH_PERIODIC_FULL`` nodes
(default 1,000; 100 in quick runs).  At larger sizes its node cache
refresh is still measured, side by side with ours, and its steady pass
is given a **lower bound**: that refresh plus N times the per-node
resource tracker cost measured at the largest whole size (the per-node
cost does not fall as N grows).  Our ratio to it is then an upper bound
(``<=`` in the table), and a goal is only met if the bound meets it.
``IRONIC_MULTI_BENCH_PERIODIC_FULL=10000`` measures everything (hours).

Between rounds a few nodes are changed in Ironic (an ``extra`` field), as
in a live cloud, so that the incremental refresh has something to read.
Rounds alternate which driver goes first.  Each size gets fresh Nova
services (the in-tree first pass needs a Nova that has never seen the
nodes).  Checked, or the numbers mean nothing: the in-tree driver lists
the N nodes, and after a whole pass has one provider per node with one
unit each; ours reports the N nodes as its total.
"""

import collections
import logging
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from oslo_config import cfg

from ironic_multi.testing import nova_services

TITLE = ('Capacity periodic: update_available_resource, ironic-multi '
         'vs in-tree IronicDriver')

OURS = 'multi'
IN_TREE = 'in-tree'
SHARD = 'bench-periodic'
# The in-tree compute's shard while it starts: one seed node.
SEED_SHARD = 'bench-periodic-seed'
RESOURCE_CLASS = nova_services.RESOURCE_CLASS
PLACEMENT_RC = 'CUSTOM_BAREMETAL'
SIZES = (1000, 5000, 10000)
QUICK_SIZES = (100,)
# Rounds of (ours, in-tree node cache refresh), order alternating.
ROUNDS = 4
QUICK_ROUNDS = 3
# Steady whole in-tree passes per size measured whole (after its first).
STEADY = 2
# Largest size whose in-tree periodic is measured whole.
FULL_ENV = 'IRONIC_MULTI_BENCH_PERIODIC_FULL'
FULL_UP_TO = 1000
QUICK_FULL_UP_TO = 100
# Nodes changed in Ironic before each round.
TOUCHED = 10
# In-tree providers whose inventory is read back after the first pass.
CHECKED_PROVIDERS = 20
# Ours refreshes on its own timer (the background worker) and re-reads
# everything every pool_full_refresh_interval: neither may run while the
# bench times, so both are pushed out of the run (when the options exist).
QUIET = {'pool_refresh_interval': 86400,
         'pool_full_refresh_interval': 86400}
GOAL_RATIO = 0.01
# "Flat as N grows": ours at the largest size within this factor of ours
# at the smallest.
FLAT_FACTOR = 1.5
# Profiles (py-spy, every thread): ours at the largest size; the in-tree
# periodic at the largest size measured whole, if not larger than this
# (a profiled pass is one more pass: 25 s at 1,000 nodes).
PROFILE_IN_TREE_UP_TO = 500
PROFILE_TOP = 12
PROFILE_RATE = 100
# Passes of ours in its profile: one is too short for 100 samples/s.
PROFILE_REPEAT = 20
QUICK_PROFILE_REPEAT = 10


class BenchError(Exception):
    """A check failed: the numbers mean nothing."""


def measure(bench):
    quick = bench.args.quick
    sizes = QUICK_SIZES if quick else SIZES
    rounds = QUICK_ROUNDS if quick else ROUNDS
    full_up_to = int(os.environ.get(
        FULL_ENV, QUICK_FULL_UP_TO if quick else FULL_UP_TO))
    whole = [n for n in sizes if n <= full_up_to] or [sizes[0]]
    results = []
    for count in sizes:
        results.append(_measure_size(
            bench, count, rounds, whole=count in whole,
            profile_ours=(count == sizes[-1]
                          and (QUICK_PROFILE_REPEAT if quick
                               else PROFILE_REPEAT)),
            profile_in_tree=(count == whole[-1]
                             and count <= PROFILE_IN_TREE_UP_TO)))
    return _report(results, quick, full_up_to)


# -- one size ---------------------------------------------------------------

def _quiet_flags():
    """Our driver's refresh timers out of the way, if it has them."""
    nova_services.register_options()
    options = {}
    for name, value in QUIET.items():
        try:
            getattr(nova_services.CONF.ironic_multi, name)
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError, AttributeError):
            continue
        options[name] = value
    return {'ironic_multi': options} if options else None


def _timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def _touch(bench, nodes, label):
    for node in random.sample(nodes, min(TOUCHED, len(nodes))):
        bench.nodes.request(
            'PATCH', '/v1/nodes/%s' % node,
            json=[{'op': 'add', 'path': '/extra/bench', 'value': label}])


def _measure_size(bench, count, rounds, whole, profile_ours,
                  profile_in_tree):
    """Measure both drivers on a fleet of ``count`` nodes.

    ``whole``: time in-tree passes whole (else only its node cache
    refresh); ``profile_ours``: passes of ours to profile (0: none);
    ``profile_in_tree``: profile one more in-tree pass.
    """
    built, uuids = _timed(
        bench.fleet, count + 1,
        shard=lambda i: SHARD if i < count else SEED_SHARD,
        resource_class=RESOURCE_CLASS,
        properties=nova_services.IN_TREE_NODE_PROPERTIES)
    if len(uuids) != count + 1:
        raise BenchError('fleet of %d has %d nodes' % (count + 1,
                                                       len(uuids)))
    uuids = uuids[:count]
    result = {'nodes': count, 'in_tree_whole': whole,
              'fleet_seconds': round(built, 2),
              'ours_refresh': [], 'ours_periodic': [], 'ours_total': [],
              'ours_records': [], 'in_tree_cache': [],
              'in_tree_steady': []}
    with nova_services.NovaServices(
            bench.nodes, computes=0, log_level=logging.INFO,
            flags=_quiet_flags()) as nova:
        result['ours_start'], _ = _timed(
            nova.start_compute, OURS,
            driver=nova_services.IRONIC_MULTI_DRIVER)
        nova.start_compute(IN_TREE, driver=nova_services.IN_TREE_DRIVER,
                           shard=SEED_SHARD)
        nova.compute_shards[IN_TREE] = SHARD
        reserver = nova.driver_of(nova.computes[OURS]).reserver
        in_tree_driver = nova.driver_of(nova.computes[IN_TREE])
        if whole:
            result['in_tree_first'], _ = _timed(
                nova.update_available_resource, IN_TREE)
            _check_in_tree(nova, uuids)

        def ours():
            refresh, records = _timed(reserver.refresh)
            periodic, _ = _timed(nova.update_available_resource, OURS)
            result['ours_refresh'].append(refresh)
            result['ours_periodic'].append(periodic)
            result['ours_total'].append(refresh + periodic)
            result['ours_records'].append(records)

        def in_tree_cache():
            seconds, listed = _timed(in_tree_driver.get_available_nodes)
            if len(listed) != count:
                raise BenchError('in-tree lists %d nodes, not %d'
                                 % (len(listed), count))
            result['in_tree_cache'].append(seconds)

        def in_tree():
            seconds, _ = _timed(nova.update_available_resource, IN_TREE)
            result['in_tree_steady'].append(seconds)

        for index in range(rounds):
            _touch(bench, uuids, 'round-%d' % index)
            runs = [ours, in_tree_cache]
            if whole and index < STEADY:
                runs.append(in_tree)
            if index % 2:
                runs.reverse()
            for run in runs:
                run()
        # Ours counts the seed node too.
        _check_ours(nova, count + 1)
        if profile_ours:
            result['profile_ours'] = _profile(
                lambda: _repeat_ours(bench, uuids, reserver, nova,
                                     profile_ours),
                ('refresh', 'update_available_resource'),
                keep=os.path.join(bench.workdir,
                                  'periodic-ours-%d.txt' % count))
        if profile_in_tree:
            _touch(bench, uuids, 'profile')
            result['profile_in_tree'] = _profile(
                lambda: nova.update_available_resource(IN_TREE),
                ('update_available_resource',),
                keep=os.path.join(bench.workdir,
                                  'periodic-in-tree-%d.txt' % count))
    return result


def _repeat_ours(bench, uuids, reserver, nova, passes):
    for index in range(passes):
        _touch(bench, uuids, 'profile-%d' % index)
        reserver.refresh()
        nova.update_available_resource(OURS)


def _check_in_tree(nova, uuids):
    """One provider per node, each with one unit of the resource class."""
    names = {p['name'] for p in nova.providers()}
    missing = set(uuids) - names
    if missing:
        raise BenchError('in-tree: %d of %d nodes have no provider'
                         % (len(missing), len(uuids)))
    for node in random.sample(uuids, min(CHECKED_PROVIDERS, len(uuids))):
        inventory = nova.case._get_provider_inventory(node)
        if inventory.get(PLACEMENT_RC, {}).get('total') != 1:
            raise BenchError('in-tree: provider of node %s has inventory %s'
                             % (node, inventory))


def _check_ours(nova, count):
    inventory = nova.provider_inventory(OURS).get(PLACEMENT_RC) or {}
    if inventory.get('total') != count:
        raise BenchError('ironic-multi reports %s, expected a total of %d'
                         % (inventory, count))


# -- profiles ---------------------------------------------------------------

def _profile(function, markers, keep=None):
    """Top functions of ``function``'s threads, from py-spy (if present).

    py-spy samples this process (every thread, waiting included) while
    ``function`` runs; only the stacks that pass through one of
    ``markers`` (function names) count, less those of a thread waiting
    for another (``Future.result``).  ``keep``: a path to copy py-spy's
    collapsed stacks to (flamegraph.pl input).  Returns ``{'samples': n,
    'inclusive': [[function, share]], 'leaf': [...]}`` or ``{'error':
    why}``.
    """
    spy = (shutil.which('py-spy', path=os.path.dirname(sys.executable))
           or shutil.which('py-spy'))
    if spy is None:
        return {'error': 'py-spy is not installed'}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'profile.txt')
        process = subprocess.Popen(
            [spy, 'record', '--pid', str(os.getpid()), '--format', 'raw',
             '--idle', '--nonblocking', '--rate', str(PROFILE_RATE),
             '--output', out],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # py-spy needs a moment to attach.
        time.sleep(1)
        try:
            function()
        finally:
            # py-spy writes its output on SIGINT (Ctrl-C), not on SIGTERM.
            process.send_signal(signal.SIGINT)
            _out, err = process.communicate(timeout=60)
        if not os.path.exists(out):
            return {'error': 'py-spy wrote nothing: %s'
                    % err.decode(errors='replace')[-300:]}
        with open(out) as f:
            lines = f.read().splitlines()
        if keep:
            shutil.copy(out, keep)
    inclusive = collections.Counter()
    leaf = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rpartition(' ')
        frames = [frame.split(' (')[0] for frame in stack.split(';')]
        starts = [i for i, frame in enumerate(frames)
                  if frame.split('.')[-1] in markers]
        if not starts or 'Future.result' in frames:
            continue
        # From the outermost marker down: what the callers above it
        # share says nothing.
        frames = frames[starts[0]:]
        count = int(count)
        total += count
        for frame in set(frames):
            inclusive[frame] += count
        leaf[frames[-1]] += count
    if not total:
        return {'error': 'no sample of %s' % ', '.join(markers)}

    def top(counter):
        return [[name, round(n / total, 3)]
                for name, n in counter.most_common(PROFILE_TOP)]

    result = {'samples': total, 'inclusive': top(inclusive),
              'leaf': top(leaf)}
    if keep:
        result['collapsed_stacks'] = keep
    return result


# -- the report -------------------------------------------------------------

def _median(values):
    return statistics.median(values)


def _spread(values):
    """``min-max``, as text."""
    if not values:
        return '-'
    return '%.3f-%.3f' % (min(values), max(values))


def _rt_per_node(sizes):
    """Seconds per node of the in-tree resource tracker, beyond the cache.

    From the largest size measured whole: (steady pass - node cache
    refresh) / nodes, medians.
    """
    measured = [s for s in sizes if s['in_tree_steady']]
    if not measured:
        return None, None
    basis = measured[-1]
    rest = _median(basis['in_tree_steady']) - _median(basis['in_tree_cache'])
    return max(rest, 0.0) / basis['nodes'], basis['nodes']


def _report(sizes, quick, full_up_to):
    per_node, basis = _rt_per_node(sizes)
    headers = ['nodes', 'in-tree first pass s', 'in-tree steady s',
               'in-tree steady spread', 'in-tree cache refresh s',
               'ours refresh s', 'ours periodic s', 'ours total s',
               'ours total spread', 'ratio total/steady',
               'ratio total/first', 'rounds']
    rows = []
    results = {'sizes': [], 'touched_per_round': TOUCHED,
               'in_tree_measured_whole_up_to': full_up_to,
               'in_tree_rt_seconds_per_node': (
                   round(per_node, 5) if per_node is not None else None),
               'in_tree_rt_per_node_measured_at': basis,
               'goal_basis': (
                   'ours = median of (Reserver.refresh() + '
                   'update_available_resource) per round; in-tree = '
                   'median steady update_available_resource (a lower '
                   'bound where not measured whole: our ratio is then an '
                   'upper bound)')}
    for size in sizes:
        count = size['nodes']
        total = _median(size['ours_total'])
        cache = _median(size['in_tree_cache'])
        if size['in_tree_steady']:
            steady = _median(size['in_tree_steady'])
            steady_text = '%.2f' % steady
        else:
            steady = cache + per_node * count
            steady_text = '>= %.1f (bound)' % steady
        first = size.get('in_tree_first')
        ratio = total / steady
        rows.append([
            count, '%.2f' % first if first else '-', steady_text,
            _spread(size['in_tree_steady']), round(cache, 3),
            round(_median(size['ours_refresh']), 4),
            round(_median(size['ours_periodic']), 4), round(total, 4),
            _spread(size['ours_total']),
            ('%.4f' if size['in_tree_steady'] else '<= %.4f (bound)')
            % ratio,
            '%.4f' % (total / first) if first else '-',
            len(size['ours_total'])])
        entry = dict(size)
        entry.update(
            in_tree_steady_median=round(steady, 3),
            in_tree_steady_lower_bound=not size['in_tree_steady'],
            ratio_total_to_steady=round(ratio, 5),
            ratio_refresh_to_steady=round(
                _median(size['ours_refresh']) / steady, 5),
            ratio_periodic_to_steady=round(
                _median(size['ours_periodic']) / steady, 5),
            ratio_total_to_first=(round(total / first, 5) if first
                                  else None),
            ratio_total_to_cache_refresh=round(total / cache, 5))
        for key in ('ours_refresh', 'ours_periodic', 'ours_total',
                    'in_tree_steady', 'in_tree_cache'):
            entry[key] = [round(v, 4) for v in size[key]]
        for key in ('ours_start', 'in_tree_first'):
            if key in size:
                entry[key] = round(size[key], 3)
        results['sizes'].append(entry)

    largest, smallest = results['sizes'][-1], results['sizes'][0]
    where = '%d nodes' % largest['nodes']
    bound = largest['in_tree_steady_lower_bound']
    goals = [{
        'name': 'whole periodic (ours refresh + periodic) <= %sx of the '
                'in-tree steady periodic at %s%s' % (
                    GOAL_RATIO, where,
                    ' (in-tree: lower bound)' if bound else ''),
        'target': '<= %s' % GOAL_RATIO,
        'measured': '%s%.4f (%.3f s vs %s%.1f s)' % (
            '<= ' if bound else '', largest['ratio_total_to_steady'],
            _median(largest['ours_total']), '>= ' if bound else '',
            largest['in_tree_steady_median']),
        'met': largest['ratio_total_to_steady'] <= GOAL_RATIO,
    }]
    if len(sizes) > 1:
        flat = (_median(largest['ours_total'])
                / _median(smallest['ours_total']))
        goals.append({
            'name': 'ours flat as N grows (%d -> %d nodes)' % (
                smallest['nodes'], largest['nodes']),
            'target': '<= %.1fx' % FLAT_FACTOR,
            'measured': '%.2fx (%.3f s -> %.3f s)' % (
                flat, _median(smallest['ours_total']),
                _median(largest['ours_total'])),
            'met': flat <= FLAT_FACTOR,
        })
    if quick:
        results['note'] = 'quick run: %s only' % where
    chart = {
        'kind': 'line',
        'title': 'One update_available_resource (s); in-tree steady '
                 'a lower bound above %d nodes' % full_up_to,
        'x': [s['nodes'] for s in sizes],
        'series': {
            'in-tree steady': [s['in_tree_steady_median']
                               for s in results['sizes']],
            'in-tree node cache refresh': [
                round(_median(s['in_tree_cache']), 3) for s in sizes],
            'ironic-multi refresh + periodic': [
                round(_median(s['ours_total']), 4) for s in sizes],
        },
        'ylabel': 'seconds',
    }
    return {'title': TITLE, 'headers': headers, 'rows': rows,
            'results': results, 'goals': goals, 'chart': chart}
