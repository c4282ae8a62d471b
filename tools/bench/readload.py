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

"""Ironic read load: node records read per refresh period, K services.

N nodes over 32 shard keys, K = 4 services (participant processes, Redis
coordination), each refreshing the ready pool of the shards it owns.  Two
fleets, one after the other, same N:

``updated``
    every copy has an ``updated_at`` (a day back): nodes changed once
    since they were enrolled;
``null``
    every other copy has a null ``updated_at``, as the bulk-copy helper
    leaves it (never updated since creation, as after a database import):
    N/2 such nodes, 5,000 of 10,000 as in the measurement the issue
    quotes (half, not all: where no node was ever updated there is no
    mark to list changes after, and every refresh reads in full until
    the first change).

Round by round, in a rotating order, on a quiet cloud:

``in-tree``
    what Nova's in-tree driver reads every period: each service lists its
    whole group (Nova's node fields).  One service's listing is measured
    (in turn), times K: every one reads the same.
``full``
    every service flushes its pool and refreshes (a full read of its
    shards), all at once.
``incremental``
    every service refreshes again, nothing having changed.
``10 changed``
    10 nodes get a new ``extra`` value, then every service refreshes
    (``updated`` fleet only: with null ``updated_at`` it reads what an
    incremental pass reads).

Counted, summed over the K services: the records the pools consumed
(``Reserver.refresh()``) and the records Ironic served (node listings,
whole pages, counted on the wire): the goals are judged on the second.
"""

import random
import statistics
import time

import common

TITLE = ('Ironic read load per refresh period, K = 4 services, vs the '
         'in-tree driver')

NODES, QUICK_NODES = 10000, 2000
ROUNDS = {'updated': 3, 'null': 2}
QUICK_ROUNDS = {'updated': 2, 'null': 1}
FLEETS = ('updated', 'null')
OPERATIONS = {'updated': ('in-tree', 'full', 'incremental', '10 changed'),
              'null': ('in-tree', 'full', 'incremental')}
CHANGED = 10
PROFILED = ('full', 'incremental')
FULL_GOAL, INCREMENTAL_GOAL = 1.2, 0.05
MODE = 'patch'
# The services never refresh on their own timers while measured; a full
# read comes only from a flush.
OPTIONS = {'pool_refresh_interval': 86400,
           'pool_full_refresh_interval': 86400}


def measure(bench):
    quick = bench.args.quick
    count = QUICK_NODES if quick else NODES
    rounds = QUICK_ROUNDS if quick else ROUNDS
    fleets = {}
    for kind in FLEETS:
        fleets[kind] = _measure_fleet(bench, kind, count, rounds[kind])
    return _report(fleets, count, quick)


def _measure_fleet(bench, kind, count, rounds):
    columns = {'resource_class': common.GOLD}
    if kind == 'null':
        # Copies alternate: updated_at a day back, or null.
        updated = _stamps(count)
        columns['updated_at'] = lambda i: updated(i) if i % 2 else None
    uuids = bench.fleet(count, updated=kind == 'updated', **columns)
    group = common.Group(bench, modes=(MODE,), options=OPTIONS)
    bench.cache['readload'] = group
    common.say('%s: %d services started in %.1f s' % (
        kind, len(group), group.start_seconds))
    operations = OPERATIONS[kind]
    runs = {op: [] for op in operations}
    profiles = {}
    try:
        for index, order in common.rotations(operations, rounds):
            last = index == rounds - 1
            for op in order:
                # The last round's passes are profiled as they run:
                # pyinstrument in one service, py-spy on Ironic's API.
                sample, profile = _run(bench, group, uuids, op, index,
                                       profile=last and op in PROFILED)
                runs[op].append(sample)
                if profile:
                    profiles[op] = profile
            common.say('%s round %d: %s' % (kind, index + 1, ', '.join(
                '%s %d records %.1f s' % (op, runs[op][-1]['served'],
                                          runs[op][-1]['seconds'])
                for op in operations)))
        entry = {'rounds': rounds, 'operations': {},
                 'null_updated_at': (count - 2) // 2 if kind == 'null'
                 else 0}
        for op, samples in runs.items():
            entry['operations'][op] = _summarise(samples, count)
        missed = {
            'full': entry['operations']['full']['served_over_n'] > FULL_GOAL,
            'incremental': entry['operations']['incremental'][
                'served_over_n'] > INCREMENTAL_GOAL}
        if any(missed.values()):
            entry['profile'] = {op: profiles[op] for op, miss
                                in missed.items() if miss}
    finally:
        bench.forget()
    return entry


def _stamps(count):
    """``updated_at`` values a day back, 1 s apart, as fleet() sets."""
    import datetime

    base = (datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            - datetime.timedelta(days=1, seconds=count))
    return lambda i: (base + datetime.timedelta(seconds=i)).isoformat(' ')


def _run(bench, group, uuids, op, index, profile=False):
    """One pass: ``(sample, profile or None)``."""
    if op == 'in-tree':
        member = group.members[index % len(group)]
        one = member.call(op='inlist')
        return {'read': one['records'] * len(group),
                'served': one['served'] * len(group),
                'listings': one['listings'] * len(group),
                'seconds': one['seconds'],
                'per_service': [one['seconds']]}, None
    if op == '10 changed':
        for node in random.sample(uuids, CHANGED):
            bench.nodes.request('PATCH', '/v1/nodes/%s' % node, json=[
                {'op': 'add', 'path': '/extra/bench',
                 'value': 'round-%d-%f' % (index, time.time())}])
    commands = [{'op': 'refresh', 'flush': op == 'full',
                 'profile': profile and i == 0}
                for i in range(len(group))]
    if profile:
        answers, ironic = common.spy(common.ironic_api_pid(bench.server),
                                     lambda: group.each(commands),
                                     focus='ironic/')
    else:
        answers, ironic = group.each(commands), None
    answers = [a[MODE] for a in answers]
    seconds = [a['seconds'] for a in answers]
    sample = {'read': sum(a['read'] for a in answers),
              'served': sum(a['served'] for a in answers),
              'listings': sum(a['listings'] for a in answers),
              'seconds': max(seconds), 'per_service': seconds}
    if not profile:
        return sample, None
    return sample, {
        'service': {'tool': 'pyinstrument in one service, during the '
                            'pass (every service refreshing at once)',
                    'seconds': answers[0]['seconds'],
                    'text': _trim(answers[0]['profile'])},
        'ironic': {'tool': 'py-spy on Ironic\'s API process (CPU only) '
                           'during the pass',
                   'text': ironic.get('text') or ironic.get('error')},
    }


def _summarise(samples, count):
    served = [s['served'] for s in samples]
    read = [s['read'] for s in samples]
    seconds = [s['seconds'] for s in samples]
    return {
        'samples': len(samples),
        'served_median': round(statistics.median(served)),
        'served_range': [min(served), max(served)],
        'served_over_n': round(statistics.median(served) / count, 4),
        'read_median': round(statistics.median(read)),
        'read_over_n': round(statistics.median(read) / count, 4),
        'listings_median': round(statistics.median(
            s['listings'] for s in samples)),
        'seconds': common.summary(seconds, digits=3),
        'per_service_seconds': [[round(v, 3) for v in s['per_service']]
                                for s in samples],
    }


def _trim(text, lines=60):
    kept = text.splitlines()
    if len(kept) > lines:
        kept = kept[:lines] + ['... (%d more lines)' % (len(kept) - lines)]
    return '\n'.join(kept)


def _report(fleets, count, quick):
    headers = ['fleet', 'pass', 'records served (K services)', 'x N',
               'records consumed', 'listings', 'seconds p50 (slowest '
               'service)', 'seconds range', 'rounds']
    rows = []
    goals = []
    for kind, entry in fleets.items():
        kind_label = kind if kind == 'updated' else 'null (%d)' % (
            entry['null_updated_at'])
        for op in OPERATIONS[kind]:
            stats = entry['operations'][op]
            low, high = stats['served_range']
            rows.append([
                kind_label, op,
                '%d (%d-%d)' % (stats['served_median'], low, high),
                stats['served_over_n'], stats['read_median'],
                stats['listings_median'], stats['seconds']['p50'],
                '%s-%s' % (stats['seconds']['min'], stats['seconds']['max']),
                stats['samples']])
        for op, limit in (('full', FULL_GOAL),
                          ('incremental', INCREMENTAL_GOAL)):
            stats = entry['operations'][op]
            in_tree = entry['operations']['in-tree']['served_median']
            goals.append(common.goal(
                '%s pass, %s, records served over K services'
                % (op, 'updated_at set' if kind == 'updated'
                   else '%d of the nodes with a null updated_at'
                   % entry['null_updated_at']),
                '<= %s x N' % limit,
                '%.3f x N (%d of N = %d; in-tree: %d, %.1f x N; %.1f s)' % (
                    stats['served_over_n'], stats['served_median'], count,
                    in_tree, in_tree / count, stats['seconds']['p50']),
                stats['served_over_n'] <= limit))
    results = {
        'nodes': count, 'services': common.SERVICES,
        'shards': common.SHARD_COUNT, 'fleets': fleets,
        'notes': [
            'records served: node records in the listings Ironic sent '
            '(whole pages, counted on the wire), summed over the K '
            'services; consumed: what Reserver.refresh() reports',
            'in-tree: one service lists all N nodes with Nova\'s fields '
            '(measured, in turn), times K services',
            'seconds: the slowest service of a pass (they run at once)'],
    }
    if quick:
        results['notes'].append('quick run: %d nodes instead of %d'
                                % (count, NODES))
    profiles = {kind: entry['profile'] for kind, entry in fleets.items()
                if 'profile' in entry}
    if profiles:
        results['profile'] = profiles
    chart = {
        'kind': 'bar', 'log': True,
        'title': 'node records read per period, K = 4 services, N = %d'
                 % count,
        'x': ['%s, %s' % (kind, op) for kind in FLEETS
              for op in ('in-tree', 'full', 'incremental')],
        'ylabel': 'records (log)',
        'series': {'records served': [
            fleets[kind]['operations'][op]['served_median']
            for kind in FLEETS for op in ('in-tree', 'full', 'incremental')]},
    }
    return common.result(TITLE, headers, rows, results, goals, chart)
