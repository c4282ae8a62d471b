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

"""Claims: latency from a warm pool (1), and contention (2).

Both run on one fleet of 10,000 nodes (2,500 of class ``gold``, the rest
``silver``, over 32 shard keys) and K = 4 reservation services, each a
participant process (participant.py) with one Reserver per claim mode
(allocation, PATCH), coordinated through Redis.

**Latency** (``claims``).  Round by round, one participant at a time (in
turn), the three operations run alone, in an order that rotates: a raw
``PATCH instance_uuid`` of a silver node (and its undoing, not timed), a
claim by allocation, a claim by PATCH, both from the warm pool.  Every
claim is checked in Ironic and released, neither timed.  Reported: p50
and p99 of each, and their ratios to the raw PATCH, with the spread of
the ratio over blocks of consecutive rounds.

**Contention** (``contention``).  4 processes x 8 threads claim gold
nodes until 2,000 claims succeeded (a Redis counter) or the strategy's
time budget ran out, whichever comes first; claims/s is what was done
over the time it took.  Strategies, one after the other, in an order
that puts this project's two modes at both ends:

``ours:allocation``, ``ours:patch``
    ``Reserver.claim`` (ready pool, then the other shards).
``naive``
    list the available, unassociated gold nodes out of maintenance
    (``fields=uuid``), pick one at random, PATCH instance_uuid; on 409,
    start over.
``allocation-api``
    ``POST /v1/allocations`` with only the resource class, polled as our
    claimer polls; a failed one is deleted and made again.
``metalsmith``
    metalsmith's ``reserve_node``: list with details, filter client-side,
    allocation with the survivors as ``candidate_nodes``, openstacksdk's
    wait (a fetch, then one every 2 s), ``GET`` the node.

A conflict is an atomic write that lost: a 409 to a claim, or an
allocation that ended in ``error``.  After each strategy Ironic is
scanned (double bookings: a node claimed by two successful claims, a
success whose node Ironic shows as another instance's, an instance on two
nodes) and every claim is released; claims whose answer was lost are
found in the scan and released too.  Ironic must then hold no claim and
no allocation, and at the end equal the snapshot taken before.
"""

import collections
import statistics
import time
import uuid

import common

TITLE = 'Claim latency from a warm pool vs a raw PATCH instance_uuid'
CONTENTION_TITLE = ('Contention: 4 processes x 8 threads, strategies side '
                    'by side')

FLEET, QUICK_FLEET = 10000, 2000
GOLD_NODES, QUICK_GOLD_NODES = 2500, 500
ROUNDS, QUICK_ROUNDS = 160, 30
WARMUP = 2
# Untimed refresh of every pool this often (released nodes come back).
REFRESH_EVERY = 50
MODES = ('allocation', 'patch')
P50_GOAL, P99_GOAL = 1.3, 3.0
PROFILE_CLAIMS = 20

THREADS = 8
TARGET, QUICK_TARGET = 2000, 400
# Seconds per strategy (the whole run must fit in 20 minutes): this
# project's claims get near the target; the alternatives take 5-80 s per
# claim under this load and reach their steady rate within theirs (an
# attempt under way at the end finishes, so metalsmith's run lasts about
# 80 s whatever its budget).
BUDGETS = {'ours:allocation': 75, 'ours:patch': 75, 'naive': 30,
           'allocation-api': 30, 'metalsmith': 30}
QUICK_BUDGETS = {'ours:allocation': 12, 'ours:patch': 12, 'naive': 8,
                 'allocation-api': 8, 'metalsmith': 8}
STRATEGIES = ('ours:allocation', 'naive', 'allocation-api', 'metalsmith',
              'ours:patch')
OURS = ('ours:allocation', 'ours:patch')
# Per service: 16 clients in all stay clear of the connection resets that
# Ironic's API server (10 threads, backlog 5) gives above about 10.
RELEASE_THREADS = 4
CONFLICT_GOAL = 0.05
THROUGHPUT_GOAL = 2.0
# Throughput is also reported over this many equal windows of each run.
WINDOWS = 5


class BenchError(Exception):
    """A check failed: the numbers mean nothing."""


# -- the shared fleet and services --------------------------------------------

class Setup(object):
    """The claims fleet, its K services, and Ironic before anything ran."""

    def __init__(self, bench):
        started = time.monotonic()
        quick = bench.args.quick
        self.count = QUICK_FLEET if quick else FLEET
        self.gold_count = gold = QUICK_GOLD_NODES if quick else GOLD_NODES
        self.uuids = bench.fleet(
            self.count, updated=True,
            resource_class=lambda i: (common.GOLD if i < gold
                                      else common.OTHER))
        self.gold = self.uuids[:gold]
        self.other = self.uuids[gold:]
        self.group = common.Group(bench, modes=MODES)
        common.say('%d services started (both modes) in %.1f s'
                   % (len(self.group), self.group.start_seconds))
        self.before = bench.nodes.snapshot()
        self.seconds = time.monotonic() - started

    def stop(self):
        self.group.stop()


def setup(bench):
    if 'claims' not in bench.cache:
        bench.cache['claims'] = Setup(bench)
    return bench.cache['claims']


def check_unchanged(bench, state):
    changes = _diff(state.before, bench.nodes.snapshot())
    if changes:
        raise BenchError('Ironic is not as it started: %d changes, first %s'
                         % (len(changes), changes[0]))


def _diff(before, after):
    from ironic_multi.testing import ironic_nodes

    return ironic_nodes.diff_snapshots(before, after)


# -- 1. latency ---------------------------------------------------------------

def measure(bench):
    state = setup(bench)
    rounds = QUICK_ROUNDS if bench.args.quick else ROUNDS
    operations = ('raw',) + MODES
    seconds = {op: [] for op in operations}
    requests = {op: [] for op in operations}
    stages = {op: collections.Counter() for op in MODES}
    group = state.group.members
    total = len(group) * WARMUP + rounds
    common.say('%d rounds (after %d warm-up) of raw PATCH, claim by '
               'allocation, claim by PATCH, rotating' % (rounds,
                                                         len(group) * WARMUP))
    for index, order in common.rotations(operations, total):
        if index and index % REFRESH_EVERY == 0:
            state.group.broadcast(op='refresh')
        member = group[index % len(group)]
        answer = member.call(op='latency', order=order,
                             raw_node=state.other[index % len(state.other)])
        for op, outcome in answer.items():
            if not outcome['ok']:
                raise BenchError('%s: claim %s got node %s, which Ironic '
                                 'does not show as its' % (member.name, op,
                                                           outcome['node']))
            if index >= len(group) * WARMUP:
                seconds[op].append(outcome['seconds'])
                requests[op].append(outcome['requests'])
                if op != 'raw':
                    stages[op][outcome.get('stage', '?')] += 1
    check_unchanged(bench, state)

    results = {'nodes': state.count, 'gold_nodes': state.gold_count,
               'services': len(group), 'rounds': rounds,
               'warmup_rounds': len(group) * WARMUP,
               'operations': {}, 'notes': [
                   'one operation at a time, each from the services in '
                   'turn; ratios to the raw PATCH of the same rounds; '
                   'spread: the same ratio over 5 blocks of consecutive '
                   'rounds']}
    if state.count != FLEET:
        results['notes'].append('quick run: %d nodes instead of %d'
                                % (state.count, FLEET))
    rows = []
    goals = []
    missed = set()
    for op in operations:
        stats = common.summary(seconds[op], scale=1000.0)
        entry = {'ms': stats,
                 'requests_median': statistics.median(requests[op])}
        if op != 'raw':
            entry['claims_won_by_stage'] = dict(stages[op])
        if op != 'raw':
            entry['p50_ratio'] = common.ratio(seconds[op], seconds['raw'],
                                              q=50)
            entry['p99_ratio'] = common.ratio(seconds[op], seconds['raw'],
                                              q=99)
        results['operations'][op] = entry
        name = {'raw': 'raw PATCH instance_uuid',
                'allocation': 'Reserver.claim, allocation',
                'patch': 'Reserver.claim, PATCH'}[op]
        rows.append([name, stats['p50'], stats['p99'], stats['min'],
                     stats['max'],
                     common.spread_text(entry['p50_ratio'])
                     if op != 'raw' else '1',
                     common.spread_text(entry['p99_ratio'])
                     if op != 'raw' else '1',
                     entry['requests_median'], stats['n']])
        if op != 'raw':
            for q, limit in (('p50', P50_GOAL), ('p99', P99_GOAL)):
                value = entry['%s_ratio' % q]
                goals.append(common.goal(
                    'claim by %s, %s vs raw PATCH' % (op, q),
                    '<= %.1fx' % limit,
                    '%sx (%.1f ms vs %.1f ms)' % (
                        common.spread_text(value), stats[q],
                        results['operations']['raw']['ms'][q]),
                    value['ratio'] <= limit))
                if value['ratio'] > limit:
                    missed.add(op)
    if missed:
        results['profile'] = {}
        for mode in sorted(missed):
            common.say('profiling %d claims by %s (pyinstrument)'
                       % (PROFILE_CLAIMS, mode))
            profile = group[0].call(op='profile', what='claim', mode=mode,
                                    count=PROFILE_CLAIMS)
            results['profile'][mode] = {
                'tool': 'pyinstrument, in the service, %d claims one '
                        'after another' % PROFILE_CLAIMS,
                'text': _trim(profile['text'])}
        check_unchanged(bench, state)
    chart = {'kind': 'bar', 'title': 'claim latency (ms)',
             'x': ['p50', 'p99'], 'ylabel': 'ms',
             'series': {row[0]: [row[1], row[2]] for row in rows}}
    headers = ['operation', 'p50 ms', 'p99 ms', 'min ms', 'max ms',
               'p50 ratio (spread)', 'p99 ratio (spread)', 'requests',
               'samples']
    return common.result(TITLE, headers, rows, results, goals, chart)


def _trim(text, lines=70):
    kept = text.splitlines()
    if len(kept) > lines:
        kept = kept[:lines] + ['... (%d more lines)' % (len(kept) - lines)]
    return '\n'.join(kept)


# -- 2. contention ------------------------------------------------------------

def measure_contention(bench):
    import redis

    from ironic_multi.testing import coordination

    state = setup(bench)
    quick = bench.args.quick
    target = QUICK_TARGET if quick else TARGET
    budgets = QUICK_BUDGETS if quick else BUDGETS
    board = redis.Redis.from_url(coordination.REDIS_URL) \
        if bench.coordination_url.startswith('redis') else None
    if board is None:
        raise BenchError('contention needs Redis for its shared counter')
    api_pid = common.ironic_api_pid(bench.server)
    runs = {}
    for strategy in STRATEGIES:
        common.say('%s: %d x %d threads until %d claims or %d s'
                   % (strategy, len(state.group), THREADS, target,
                      budgets[strategy]))
        if strategy in OURS:
            # Released nodes come back to the pools: not timed.
            state.group.broadcast(op='refresh',
                                  modes=[strategy.split(':')[1]])
        counter = 'ironic-multi-bench:%s' % uuid.uuid4().hex
        board.set(counter, 0)
        command = dict(op='contend', strategy=strategy, threads=THREADS,
                       target=target, budget=budgets[strategy],
                       counter=counter, redis_url=coordination.REDIS_URL)
        started = time.monotonic()
        if strategy in OURS:
            # What Ironic's API spends its CPU on while ours claim.
            answers, profile = common.spy(
                api_pid, lambda: state.group.broadcast(**command),
                focus='ironic/')
        else:
            answers, profile = state.group.broadcast(**command), None
        wall = time.monotonic() - started
        board.delete(counter)
        run = _summarise(strategy, answers, wall, budgets[strategy], target)
        run['double_bookings'], orphans = _scan(bench, answers)
        if profile:
            run['ironic_profile'] = profile
        _release(bench, state, strategy, answers, orphans)
        run['lost_answers_released'] = len(orphans)
        runs[strategy] = run
        common.say('%s: %d claims in %.1f s = %.2f/s, %.3f conflicts per '
                   'claim, p99 %.2f s' % (
                       strategy, run['claims'], run['elapsed'],
                       run['claims_per_second'],
                       run['conflicts_per_claim'] or 0,
                       run['latency_s']['p99'] or 0))
    check_unchanged(bench, state)
    return _contention_report(runs, target, budgets, state)


def _summarise(strategy, answers, wall, budget, target):
    successes = [s for a in answers for s in a['successes']]
    failures = collections.Counter()
    for a in answers:
        failures.update(a['failures'])
    conflicts = sum(a['conflicts'] for a in answers)
    requests = sum(a['requests'] for a in answers)
    elapsed = max(a['elapsed'] for a in answers)
    claims = len(successes)
    # Throughput over equal windows of the run: its spread.
    window = elapsed / WINDOWS
    per_window = [0] * WINDOWS
    for success in successes:
        per_window[min(int(success[3] / window), WINDOWS - 1)] += 1
    won, lost = collections.Counter(), collections.Counter()
    for a in answers:
        won.update(a.get('stages', {}).get('won', {}))
        lost.update(a.get('stages', {}).get('lost_batches', {}))
    return {
        'strategy': strategy, 'claims': claims, 'target': target,
        'claims_won_by_stage': dict(won),
        'batches_lost_by_stage': dict(lost),
        'budget_s': budget, 'elapsed': round(elapsed, 2),
        'wall': round(wall, 2),
        'claims_per_second': round(claims / elapsed, 3) if elapsed else 0,
        'claims_per_second_windows': [round(n / window, 2)
                                      for n in per_window],
        'conflicts': conflicts,
        'conflicts_per_claim': (round(conflicts / claims, 4) if claims
                                else None),
        'failures': dict(failures),
        'requests_per_claim': round(requests / claims, 2) if claims
        else None,
        'node_records_per_claim': (round(sum(a['records'] for a in answers)
                                         / claims, 1) if claims else None),
        'latency_s': common.summary([s[2] for s in successes], digits=3),
        'per_service_claims': [len(a['successes']) for a in answers],
        'reached_target': claims >= target,
    }


def _scan(bench, answers):
    """Double bookings in Ironic after a run, and claims nobody knows of.

    :returns: ``({'kind': count}, [[instance, node]])``: the second are
        claims Ironic holds that no participant reported (an answer lost
        on the way back, a timed-out attempt that went through after all).
    """
    won = [(s[0], s[1]) for a in answers for s in a['successes']]
    holders = {n['uuid']: n['instance_uuid'] for n in bench.nodes.list_nodes(
        fields=('uuid', 'instance_uuid'), associated=True)}
    by_node = collections.Counter(node for _instance, node in won)
    instances = collections.Counter(holders.values())
    reported = {instance for instance, _node in won}
    found = {
        'node_claimed_twice': sum(n - 1 for n in by_node.values() if n > 1),
        'success_not_in_ironic': sum(1 for instance, node in won
                                     if holders.get(node) != instance),
        'instance_on_two_nodes': sum(n - 1 for n in instances.values()
                                     if n > 1),
    }
    found['total'] = sum(found.values())
    orphans = [[instance, node] for node, instance in holders.items()
               if instance not in reported]
    return found, orphans


def _release(bench, state, strategy, answers, orphans):
    commands = [{'op': 'release', 'threads': RELEASE_THREADS,
                 'checked': True,
                 'claims': [[s[0], s[1], strategy] for s in a['successes']]}
                for a in answers]
    started = time.monotonic()
    state.group.each(commands)
    for instance, node in orphans:
        bench.nodes.request('DELETE', '/v1/allocations/%s' % instance,
                            expect=(204, 404))
        holder = bench.nodes.get_node(node, ['instance_uuid'])
        if holder['instance_uuid'] == instance:
            bench.nodes.request('PATCH', '/v1/nodes/%s' % node, json=[
                {'op': 'remove', 'path': '/instance_uuid'}])
    # Failed allocations that a lost answer left behind.
    for allocation in bench.nodes.list_allocations():
        bench.nodes.request('DELETE', '/v1/allocations/%s'
                            % allocation['uuid'], expect=(204, 404))
    held = bench.nodes.list_nodes(fields=('uuid',), associated=True)
    allocations = bench.nodes.list_allocations()
    if held or allocations:
        raise BenchError('after releasing %s: %d nodes still held, %d '
                         'allocations left' % (strategy, len(held),
                                               len(allocations)))
    common.say('released in %.1f s' % (time.monotonic() - started))


def _counts(counter):
    return ', '.join('%s %d' % kv for kv in sorted(counter.items())) or '-'


def _contention_report(runs, target, budgets, state):
    alternatives = [s for s in STRATEGIES if s not in OURS]
    best = max(alternatives, key=lambda s: runs[s]['claims_per_second'])
    best_rate = runs[best]['claims_per_second']
    headers = ['strategy', 'claims', 'seconds', 'claims/s',
               'in 5 windows', 'x best alt.', 'conflicts /claim', 'p50 s',
               'p99 s', 'requests /claim', 'records /claim', 'double',
               'stopped by']
    rows = []
    for strategy in STRATEGIES:
        run = runs[strategy]
        windows = run['claims_per_second_windows']
        run['vs_best_alternative'] = (round(run['claims_per_second']
                                            / best_rate, 2)
                                      if best_rate else None)
        rows.append([
            strategy, run['claims'], run['elapsed'],
            run['claims_per_second'],
            '%.1f-%.1f' % (min(windows), max(windows)),
            run['vs_best_alternative'], run['conflicts_per_claim'],
            run['latency_s']['p50'], run['latency_s']['p99'],
            run['requests_per_claim'], run['node_records_per_claim'],
            run['double_bookings']['total'],
            'target' if run['reached_target']
            else '%d s' % run['budget_s']])
    goals = []
    for strategy in OURS:
        run = runs[strategy]
        goals.append(common.goal(
            '%s conflicts per successful claim' % strategy,
            '<= %.2f' % CONFLICT_GOAL,
            '%s (%d conflicts, %d claims)' % (
                run['conflicts_per_claim'], run['conflicts'], run['claims']),
            run['conflicts_per_claim'] is not None
            and run['conflicts_per_claim'] <= CONFLICT_GOAL))
        goals.append(common.goal(
            '%s throughput vs the best alternative (%s)' % (strategy, best),
            '>= %.1fx' % THROUGHPUT_GOAL,
            '%.1fx (%.2f vs %.2f claims/s)' % (
                run['vs_best_alternative'] or 0, run['claims_per_second'],
                best_rate),
            (run['vs_best_alternative'] or 0) >= THROUGHPUT_GOAL))
    profile = {}
    for strategy in OURS:
        run = runs[strategy]
        if all(g['met'] for g in goals if g['name'].startswith(strategy)):
            continue
        won = _counts(run['claims_won_by_stage'])
        lost = _counts(run['batches_lost_by_stage'])
        lines = ['claims won by stage: %s' % won,
                 'candidate batches lost to a race, by stage: %s' % lost,
                 'claims per service: %s' % run['per_service_claims'],
                 'failures: %s' % (run['failures'] or 'none')]
        ironic = run.get('ironic_profile') or {}
        lines += ['', 'Ironic\'s API during the run (py-spy):',
                  ironic.get('text') or ironic.get('error') or '-']
        profile[strategy] = {'tool': 'claim stages from the claim '
                                     'strategy\'s log records; py-spy on '
                                     'Ironic\'s API process',
                             'text': '\n'.join(lines)}
    doubles = sum(runs[s]['double_bookings']['total'] for s in STRATEGIES)
    goals.append(common.goal('double bookings, every strategy (scan of '
                             'Ironic after each)', '0', str(doubles),
                             doubles == 0))
    results = {
        'strategies': runs, 'order': list(STRATEGIES), 'target': target,
        'budgets_s': budgets, 'threads_per_service': THREADS,
        'services': len(state.group), 'fleet_nodes': state.count,
        'matching_nodes': state.gold_count,
        'best_alternative': best,
        'notes': [
            'each strategy claims until %d claims succeed (shared Redis '
            'counter) or its time budget ends (%s); claims/s = claims / '
            'seconds taken, the attempts under way at the end included'
            % (target, ', '.join('%s %d s' % kv for kv in budgets.items())),
            'conflicts: 409s to claim writes plus allocations that ended '
            'in error; our allocation claims offer 8 candidates, so '
            'Ironic resolves a taken candidate inside one allocation',
            'metalsmith polls its allocation as openstacksdk does (every '
            '2 s); allocation-api polls as our claimer does',
        ],
    }
    if profile:
        results['profile'] = profile
    if state.count != FLEET:
        results['notes'].append(
            'quick run: %d nodes (%d matching) instead of %d (%d), target '
            '%d instead of %d' % (state.count, state.gold_count, FLEET,
                                  GOLD_NODES, target, TARGET))
    chart = {'kind': 'bar', 'title': 'successful claims per second, '
                                     '4 x 8 threads',
             'x': list(STRATEGIES), 'ylabel': 'claims/s', 'log': True,
             'series': {'claims/s': [runs[s]['claims_per_second']
                                     for s in STRATEGIES]}}
    return common.result(CONTENTION_TITLE, headers, rows, results, goals,
                         chart)
