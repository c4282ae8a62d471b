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

"""Scale: 100,000 nodes, K = 4 services.

100,000 nodes (a quarter of class ``gold``, in every shard) over 32 shard
keys, copied in bulk with an ``updated_at``; K = 4 services in processes
of their own, each with a reservation service per claim mode (PATCH, the
default, and allocation), Redis coordination.  Measured:

- memory per service: VmRSS of its process (``/proc/PID/status``) after
  its imports and before it read a node, after its first full read, and
  at the end (and the peak, VmHWM);
- full refresh (flush, then refresh: every service at once), against
  a raw paged listing of the same nodes (the same shards, fields and
  page size; every service at once), the two in turn; and incremental
  refresh on a quiet cloud, per service;
- claim latency from the warm pool in both modes, interleaved with a raw
  ``PATCH instance_uuid`` as in ``claims``;
- the published capacity: the JSON size of what each member publishes
  through the coordination group (``membership.published()``).

``--quick`` uses 10,000 nodes.
"""

import collections
import statistics

import common

TITLE = 'Scale: 100,000 nodes, K = 4 services'

NODES, QUICK_NODES = 100000, 10000
GOLD_SHARE = 4          # one node in 4 is gold
# Each full pass at 100,000 nodes is about 45 s with K services: two of
# each (refresh, raw listing), in turn.
FULL_ROUNDS, QUICK_FULL_ROUNDS = 2, 3
INCREMENTAL_ROUNDS = 3
CLAIM_ROUNDS, QUICK_CLAIM_ROUNDS = 24, 16
MODES = ('patch', 'allocation')
# The mode whose pool is refreshed and profiled (the pool does not
# depend on the claim mode).
MODE = 'patch'
# The goals of the issue: claims within 1.3x a raw PATCH, a full refresh
# within 1.2x a raw listing of the same nodes.
CLAIM_GOAL, REFRESH_GOAL = 1.3, 1.2
OPTIONS = {'pool_refresh_interval': 86400,
           'pool_full_refresh_interval': 86400}
PROFILE_CLAIMS = 10


def measure(bench):
    quick = bench.args.quick
    count = QUICK_NODES if quick else NODES
    uuids = bench.fleet(count, updated=True, resource_class=lambda i: (
        common.GOLD if _gold(i) else common.OTHER))
    fleet_seconds = bench.fleets[-1]['seconds']
    other = [u for i, u in enumerate(uuids) if not _gold(i)]
    group = common.Group(bench, modes=MODES, options=OPTIONS)
    bench.cache['scale'] = group
    try:
        return _measure(bench, group, count, other, fleet_seconds, quick)
    finally:
        bench.forget()


def _gold(index):
    """One node in GOLD_SHARE, in every shard (node i is in shard i % 32)."""
    return (index // common.SHARD_COUNT) % GOLD_SHARE == 0


def _measure(bench, group, count, other, fleet_seconds, quick):
    members = group.members
    common.say('%d services started in %.1f s (each read its shards)'
               % (len(members), group.start_seconds))
    memory = {'before_read_kib': [m.started['rss_before_kib']
                                  for m in members],
              'after_start_kib': [m.rss_kib() for m in members]}
    owned = [len(a[MODE]['owned']) for a in group.settled]

    full, listed, incremental = [], [], []
    for _, order in common.rotations(
            ('refresh', 'list'), QUICK_FULL_ROUNDS if quick else FULL_ROUNDS):
        for what in order:
            if what == 'refresh':
                full.append([a[MODE] for a in group.broadcast(
                    op='refresh', flush=True, modes=[MODE])])
            else:
                listed.append(group.broadcast(op='rawlist', mode=MODE))
        common.say('full refresh: %s s per service, %d records; raw '
                   'listing: %s s' % (
                       ', '.join('%.1f' % a['seconds'] for a in full[-1]),
                       sum(a['served'] for a in full[-1]),
                       ', '.join('%.1f' % a['seconds'] for a in listed[-1])))
    api_pid = common.ironic_api_pid(bench.server)

    def incrementals():
        for _ in range(INCREMENTAL_ROUNDS):
            incremental.append([a[MODE] for a in
                                group.broadcast(op='refresh',
                                                modes=[MODE])])

    _, ironic_incremental = common.spy(api_pid, incrementals,
                                       focus='ironic/')
    common.say('incremental refresh: %s s (slowest service of each pass)'
               % ', '.join('%.2f' % max(a['seconds'] for a in run)
                           for run in incremental))
    pool_nodes = [a['read'] for a in full[-1]]

    rounds = QUICK_CLAIM_ROUNDS if quick else CLAIM_ROUNDS
    seconds = {op: [] for op in ('raw',) + MODES}
    stages = collections.Counter()

    def claims():
        for index, order in common.rotations(('raw',) + MODES, rounds):
            member = members[index % len(members)]
            answer = member.call(op='latency', order=order,
                                 raw_node=other[index % len(other)])
            for op, outcome in answer.items():
                if not outcome['ok']:
                    raise RuntimeError('claim got node %s, which Ironic '
                                       'does not show as its'
                                       % outcome['node'])
                seconds[op].append(outcome['seconds'])
                if op != 'raw':
                    stages[outcome.get('stage', '?')] += 1

    _, ironic_claims = common.spy(api_pid, claims, focus='ironic/')
    common.say('%d claims each: p50 %s (raw PATCH %.0f ms)' % (
        rounds, ', '.join('%s %.0f ms' % (mode, 1000 * statistics.median(
            seconds[mode])) for mode in MODES),
        1000 * statistics.median(seconds['raw'])))
    claim_profiles = {mode: members[0].call(op='profile', what='claim',
                                            mode=mode, count=PROFILE_CLAIMS)
                      for mode in MODES}
    published = [a[MODE] for a in group.broadcast(op='published')]
    memory['end_kib'] = [m.rss_kib() for m in members]
    memory['peak_kib'] = [m.hwm_kib() for m in members]
    profiles = {
        'claim_%s' % mode: {
            'tool': 'pyinstrument, in a service, %d claims one after '
                    'another' % PROFILE_CLAIMS,
            'text': '\n'.join(profile['text'].splitlines()[:60])}
        for mode, profile in claim_profiles.items()}
    profiles.update({
        'ironic_during_claims': {
            'tool': 'py-spy on Ironic\'s API process (CPU only) during '
                    'the claim rounds',
            'text': ironic_claims.get('text') or ironic_claims.get('error')},
        'ironic_during_incremental': {
            'tool': 'py-spy on Ironic\'s API process (CPU only) during '
                    'the incremental refreshes',
            'text': (ironic_incremental.get('text')
                     or ironic_incremental.get('error'))},
    })
    return _report(count, fleet_seconds, group, owned, pool_nodes, memory,
                   full, listed, incremental, seconds, profiles, published,
                   quick, dict(stages))


def _report(count, fleet_seconds, group, owned, pool_nodes, memory, full,
            listed, incremental, seconds, profiles, published, quick,
            stages):
    services = len(group)
    full_seconds = [a['seconds'] for run in full for a in run]
    listed_seconds = [a['seconds'] for run in listed for a in run]
    # Paired: service i's refresh and its listing of the same round.
    refresh_ratio = common.ratio(full_seconds, listed_seconds)
    incremental_seconds = [a['seconds'] for run in incremental for a in run]
    grown = [after - before for after, before in
             zip(memory['after_start_kib'], memory['before_read_kib'])]
    per_node = [1024.0 * g / n for g, n in zip(grown, pool_nodes) if n]
    latency = {op: common.summary(v, scale=1000.0)
               for op, v in seconds.items()}
    ratios = {mode: {'p50': common.ratio(seconds[mode], seconds['raw'],
                                         q=50),
                     'p99': common.ratio(seconds[mode], seconds['raw'],
                                         q=99)}
              for mode in MODES}
    capacity = published[0]['cluster_capacity']
    total = sum(counts.get('total', 0) for counts in capacity.values())
    mib = lambda kib: round(kib / 1024.0, 1)
    rows = [
        ['memory per service, before reading nodes (MiB)',
         mib(statistics.median(memory['before_read_kib'])),
         '%s-%s' % (mib(min(memory['before_read_kib'])),
                    mib(max(memory['before_read_kib'])))],
        ['memory per service, pool full (MiB)',
         mib(statistics.median(memory['end_kib'])),
         '%s-%s' % (mib(min(memory['end_kib'])),
                    mib(max(memory['end_kib'])))],
        ['memory per service, peak (MiB)',
         mib(statistics.median(memory['peak_kib'])),
         '%s-%s' % (mib(min(memory['peak_kib'])),
                    mib(max(memory['peak_kib'])))],
        ['RSS growth per node read (bytes)',
         round(statistics.median(per_node)),
         '%d-%d' % (min(per_node), max(per_node))],
        ['nodes per service (pool)', statistics.median(pool_nodes),
         '%d-%d' % (min(pool_nodes), max(pool_nodes))],
        ['full refresh per service (s)',
         round(statistics.median(full_seconds), 2),
         '%.2f-%.2f' % (min(full_seconds), max(full_seconds))],
        ['raw paged listing of the same nodes, per service (s)',
         round(statistics.median(listed_seconds), 2),
         '%.2f-%.2f' % (min(listed_seconds), max(listed_seconds))],
        ['full refresh / raw listing, p50 (spread)',
         common.spread_text(refresh_ratio), ''],
        ['incremental refresh per service (s)',
         round(statistics.median(incremental_seconds), 3),
         '%.3f-%.3f' % (min(incremental_seconds),
                        max(incremental_seconds))],
        ['raw PATCH p50 / p99 (ms)',
         '%s / %s' % (latency['raw']['p50'], latency['raw']['p99']),
         '%s-%s' % (latency['raw']['min'], latency['raw']['max'])],
    ]
    for mode in MODES:
        rows += [
            ['claim by %s p50 / p99 (ms)' % mode,
             '%s / %s' % (latency[mode]['p50'], latency[mode]['p99']),
             '%s-%s' % (latency[mode]['min'], latency[mode]['max'])],
            ['claim by %s / raw PATCH, p50 (spread)' % mode,
             common.spread_text(ratios[mode]['p50']), ''],
            ['claim by %s / raw PATCH, p99 (spread)' % mode,
             common.spread_text(ratios[mode]['p99']), '']]
    rows += [
        ['published payload per member (bytes)',
         statistics.median(p['bytes'] for p in published),
         '%d-%d' % (min(p['bytes'] for p in published),
                    max(p['bytes'] for p in published))],
        ['published payloads, all members (bytes)',
         published[0]['all_bytes'], '%d members' % published[0]['members']],
    ]
    results = {
        'nodes': count, 'services': services, 'modes': MODES,
        'shards': common.SHARD_COUNT,
        'fleet_seconds': fleet_seconds,
        'start_seconds': round(group.start_seconds, 1),
        'owned_shards': owned, 'pool_nodes': pool_nodes,
        'memory_kib': memory,
        'pool_bytes_per_node': [round(v) for v in per_node],
        'full_refresh': [[{k: a[k] for k in ('seconds', 'read', 'served',
                                             'listings')} for a in run]
                         for run in full],
        'raw_listing': listed,
        'full_refresh_ratio': refresh_ratio,
        'incremental_refresh': [[{k: a[k] for k in ('seconds', 'read',
                                                    'served', 'listings')}
                                 for a in run] for run in incremental],
        'claim_ms': latency, 'claim_ratios': ratios,
        'claim_rounds': len(seconds['raw']),
        'claims_won_by_stage': stages,
        'published': published,
        'cluster_total': total,
        'profile': profiles,
        'notes': [
            'K services read their shards at once (full), then refresh '
            'with nothing changed (incremental); seconds are per service',
            'a raw listing: the same shards, fields and page size as the '
            'full refresh, every service at once, the two in turn',
            'claims one at a time, the services in turn, in both modes '
            'interleaved with a raw PATCH (rotating order)',
            'memory: VmRSS from /proc; RSS growth per node = (RSS after '
            'the first full read - RSS before it) / nodes read: the pool '
            'and what reading it left allocated'],
    }
    if quick:
        results['notes'].append('quick run: %d nodes instead of %d'
                                % (count, NODES))
    goals = [common.goal('claim by %s p50 / raw PATCH' % mode,
                         '<= %.1fx' % CLAIM_GOAL,
                         common.spread_text(ratios[mode]['p50']),
                         ratios[mode]['p50']['ratio'] <= CLAIM_GOAL)
             for mode in MODES]
    goals.append(common.goal('full refresh / raw paged listing, p50',
                             '<= %.1fx' % REFRESH_GOAL,
                             common.spread_text(refresh_ratio),
                             refresh_ratio['ratio'] <= REFRESH_GOAL))
    if total != count:
        goals.append(common.goal('cluster capacity reported by the members',
                                 '= %d nodes' % count, str(total), False))
    title = 'per service at %d nodes, K = %d (seconds, log)' % (count,
                                                                services)
    chart = {'kind': 'bar', 'log': True, 'title': title,
             'x': ['full refresh', 'raw listing', 'incremental refresh',
                   'claim (patch)', 'claim (allocation)', 'raw PATCH'],
             'ylabel': 'seconds',
             'series': {
                 'p50': [round(statistics.median(full_seconds), 3),
                         round(statistics.median(listed_seconds), 3),
                         round(statistics.median(incremental_seconds), 3)]
                 + [latency[op]['p50'] / 1000.0
                    for op in MODES + ('raw',)],
                 'max': [round(max(full_seconds), 3),
                         round(max(listed_seconds), 3),
                         round(max(incremental_seconds), 3)]
                 + [latency[op]['max'] / 1000.0
                    for op in MODES + ('raw',)]}}
    headers = ['at %d nodes, K = %d' % (count, services), 'p50 / value',
               'range over services / samples']
    return common.result(TITLE, headers, rows, results, goals, chart)
