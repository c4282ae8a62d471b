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

"""End to end: boots per minute through Nova, both drivers, 3 computes.

Each sample is one set of Nova's in-process services (API, conductor,
scheduler, placement, 3 computes; ``ironic_multi.testing.nova_services``)
on the bench's Ironic with a fresh fleet of 200 nodes over 3 shard keys
(``s0``, ``s1``, ``s2``), the same for both drivers:

``in-tree``
    Nova's ``ironic.IronicDriver``, each compute with its own ``[ironic]
    shard`` (``compute1`` owns ``s0``...): the mode upstream recommends.
    One compute node and placement provider per Ironic node.
``ironic-multi``
    ``ironic_multi.IronicMultiDriver``: the shard keys go on its hash ring,
    each compute offers its own shards' free nodes, a claim in Ironic
    picks the node.  Coordination: the bench's URL (Redis when it runs)
    with a group of the sample's own, else a ``file://`` directory.

B servers are POSTed at once (no waiting: each build runs in its
compute's build pool), and the sample's time runs from the first POST
until every server is ACTIVE or ERROR.  Boots per minute = ACTIVE servers
/ that time.  Both drivers poll Ironic every second while they wait for
a deploy (``[ironic] api_retry_interval``, an integer, and
``[ironic_multi] state_poll_interval``; both default to 2 s).  Samples
alternate (ours, in-tree, ours, in-tree...); the result is the ratio of
the medians.

Reschedules are counted from Nova's instance actions: every build
attempt on a compute records a ``compute__do_build_and_run_instance``
event of the server's ``create`` action, so a server built at its n-th
attempt was rescheduled n - 1 times (reported per sample and in total,
with the servers that needed any).  Checked, or the numbers mean
nothing: every ACTIVE server holds exactly one Ironic node, active, whose
``instance_uuid`` is the server, and no node holds two.
"""

import collections
import contextlib
import logging
import statistics
import time
import uuid

from ironic_multi.testing import nova_services

TITLE = ('End to end: boots per minute through Nova, ironic-multi vs '
         'in-tree IronicDriver (3 computes, 200 nodes)')

OURS = 'ironic-multi'
IN_TREE = 'in-tree'
DRIVERS = {OURS: nova_services.IRONIC_MULTI_DRIVER,
           IN_TREE: nova_services.IN_TREE_DRIVER}
COMPUTES = 3
NODES = 200
SHARDS = ['s%d' % i for i in range(COMPUTES)]
RESOURCE_CLASS = nova_services.RESOURCE_CLASS
# Servers booted per sample, and samples per driver.
SERVERS = 20
SAMPLES = 3
QUICK_SERVERS = 10
QUICK_SAMPLES = 1
# Seconds between a driver's reads of a node it deploys (both drivers).
POLL_INTERVAL = 1
SETTLE_TIMEOUT = 900


class BenchError(Exception):
    """A check failed: the numbers mean nothing."""


def measure(bench):
    quick = bench.args.quick
    servers = QUICK_SERVERS if quick else SERVERS
    samples = QUICK_SAMPLES if quick else SAMPLES
    runs = {OURS: [], IN_TREE: []}
    for index in range(samples):
        order = (OURS, IN_TREE) if index % 2 == 0 else (IN_TREE, OURS)
        for name in order:
            runs[name].append(_sample(bench, name, servers))
    return _report(runs, servers)


@contextlib.contextmanager
def _coordination(bench):
    """``(url, flags)`` for our driver: the bench's backend, a new group.

    The bench's coordination URL (Redis when it runs) with a group of the
    sample's own, deleted afterwards; without one, NovaServices' own
    ``file://`` directory.
    """
    url = getattr(bench, 'coordination_url', None)
    if not url or url.startswith('file:'):
        yield None, None
        return
    group = 'bench-boots-%s' % uuid.uuid4().hex[:8]
    try:
        yield url, {'ironic_multi': {'coordination_group': group}}
    finally:
        with contextlib.suppress(Exception):
            from ironic_multi.testing import coordination
            coordination.delete_group(url, group)


def _sample(bench, name, servers):
    bench.fleet(NODES, shard=lambda i: SHARDS[i % len(SHARDS)],
                resource_class=RESOURCE_CLASS,
                properties=nova_services.IN_TREE_NODE_PROPERTIES)
    with _coordination(bench) as (url, flags), nova_services.NovaServices(
            bench.nodes, driver=DRIVERS[name], computes=COMPUTES,
            shards=SHARDS, coordination_url=url, flags=flags,
            log_level=logging.INFO, STATE_POLL_INTERVAL=POLL_INTERVAL,
            API_RETRY_INTERVAL=POLL_INTERVAL) as nova:
        result = {'driver': name, 'servers': servers,
                  'coordination': (url or 'file://').split(':', 1)[0],
                  'start_seconds': round(nova.start_seconds, 2)}
        if name == OURS:
            result['owned_shards'] = {
                host: sorted(nova.driver_of(compute).reserver
                             .owned_shards())
                for host, compute in sorted(nova.computes.items())}
        started = time.monotonic()
        posted = nova.post_servers(servers)
        result['post_seconds'] = round(time.monotonic() - started, 2)
        settled = nova.wait_for_servers(posted, timeout=SETTLE_TIMEOUT,
                                        poll=1.0)
        seconds = time.monotonic() - started
        active = [s for s in settled if s['status'] == 'ACTIVE']
        attempts = {s['id']: nova.build_attempts(s['id']) for s in settled}
        _check(nova, active)
        rescheduled = {i: len(a) - 1 for i, a in attempts.items()
                       if len(a) > 1}
        result.update(
            seconds=round(seconds, 2),
            active=len(active),
            errors=len(settled) - len(active),
            boots_per_minute=round(len(active) / seconds * 60.0, 2),
            reschedules=sum(rescheduled.values()),
            servers_rescheduled=len(rescheduled),
            attempts_histogram=dict(sorted(collections.Counter(
                len(a) for a in attempts.values()).items())),
            active_per_host=dict(sorted(collections.Counter(
                s['OS-EXT-SRV-ATTR:host'] for s in active).items())),
            error_faults=sorted(collections.Counter(
                s['fault']['message'][:120] for s in settled
                if s['status'] == 'ERROR').items()),
            boot_latency=_latencies(active))
    return result


def _check(nova, active):
    """Every ACTIVE server on its own active node, as Ironic says."""
    nodes = nova.ironic.list_nodes()
    holders = collections.Counter(n['instance_uuid'] for n in nodes
                                  if n['instance_uuid'])
    twice = [i for i, n in holders.items() if n > 1]
    if twice:
        raise BenchError('servers holding more than one node: %s' % twice)
    by_instance = {n['instance_uuid']: n for n in nodes
                   if n['instance_uuid']}
    for server in active:
        node = by_instance.get(server['id'])
        if node is None or node['provision_state'] != 'active':
            raise BenchError('ACTIVE server %s has node %s' % (
                server['id'], node))


def _latencies(servers):
    """Seconds from ``created`` to ``launched_at`` (1 s resolution)."""
    def parse(stamp):
        return time.mktime(time.strptime(stamp[:19], '%Y-%m-%dT%H:%M:%S'))

    values = sorted(parse(s['OS-SRV-USG:launched_at']) - parse(s['created'])
                    for s in servers if s.get('OS-SRV-USG:launched_at'))
    if not values:
        return {}
    return {'median': statistics.median(values), 'min': values[0],
            'max': values[-1]}


def _median(runs, key):
    return statistics.median(r[key] for r in runs)


def _spread(runs, key):
    values = [r[key] for r in runs]
    return '%s-%s' % (min(values), max(values))


def _report(runs, servers):
    ours = _median(runs[OURS], 'boots_per_minute')
    in_tree = _median(runs[IN_TREE], 'boots_per_minute')
    headers = ['driver', 'boots/min (median)', 'boots/min spread',
               'seconds (median)', 'active', 'errors', 'reschedules',
               'servers rescheduled', 'boot latency s (median)', 'samples']
    rows = []
    for name in (OURS, IN_TREE):
        samples = runs[name]
        rows.append([
            name, round(_median(samples, 'boots_per_minute'), 1),
            _spread(samples, 'boots_per_minute'),
            round(_median(samples, 'seconds'), 1),
            sum(r['active'] for r in samples),
            sum(r['errors'] for r in samples),
            sum(r['reschedules'] for r in samples),
            sum(r['servers_rescheduled'] for r in samples),
            statistics.median(r['boot_latency'].get('median', 0)
                              for r in samples),
            len(samples)])
    ratio = ours / in_tree
    rows.append(['ratio ours/in-tree', round(ratio, 2), '', '', '', '', '',
                 '', '', ''])
    results = {
        'ratio_boots_per_minute': round(ratio, 3),
        'servers_per_sample': servers, 'nodes': NODES,
        'computes': COMPUTES, 'shards': SHARDS,
        'poll_interval_seconds': POLL_INTERVAL,
        'samples': runs,
        'note': 'no goal is stated for this comparison: ratio and '
                'reschedule counts are the result',
    }
    chart = {
        'kind': 'bar',
        'title': 'Boots per minute, %d servers on %d nodes, %d computes '
                 '(median of samples)' % (servers, NODES, COMPUTES),
        'x': [OURS, IN_TREE],
        'series': {'boots/min': [round(ours, 1), round(in_tree, 1)]},
        'ylabel': 'boots per minute',
    }
    return {'title': TITLE, 'headers': headers, 'rows': rows,
            'results': results, 'goals': [], 'chart': chart}
