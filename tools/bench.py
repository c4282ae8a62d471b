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

"""Benchmarks of the reservation layer against one real Ironic.

Usage: bench.py [--nodes N] [--samples N] [--refresh-samples N] [--json FILE]

Everything runs side by side in one process on one Ironic (fake hardware)
and is reported as ratios to the cheapest atomic claim there is, a raw
``PATCH /instance_uuid``: absolute timings depend on the machine and its
load, ratios much less.  The operations are interleaved, one of each per
round, so that a change of load hits all of them alike.  Nothing is
compared with a time limit.  What is checked is correctness: every claim
returns a node that Ironic shows as the instance's, and Ironic ends as it
started; otherwise the exit status is 1.

The fleet is two enrolled template nodes copied in the database to
``--nodes`` nodes of resource class ``gold`` over 16 shard keys; the copies
get an ``updated_at`` a day back, as enrolled nodes have one.  A last pair
of refresh rows adds copies that were never updated (``updated_at`` null,
as after a database import): PostgreSQL sorts them first in the pool's
newest-first listing.
"""

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
import uuid
import warnings

# futurist imports eventlet, which warns on import; nothing here uses it.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from keystoneauth1 import session as ks_session  # noqa: E402
import requests  # noqa: E402

from ironic_multi.conf import CONF  # noqa: E402
from ironic_multi.ironic import client  # noqa: E402
from ironic_multi.reservation.backends import ironic as backend_mod  # noqa
from ironic_multi.reservation import pool as pool_mod  # noqa: E402
from ironic_multi.reservation import requirements as reqs  # noqa: E402
from ironic_multi.reservation import reserver as reserver_mod  # noqa: E402
from ironic_multi.testing import ironic_nodes  # noqa: E402
from ironic_multi.testing import ironic_server  # noqa: E402

SHARDS = ['shard-%02d' % i for i in range(16)]
RESOURCE_CLASS = 'gold'
WARMUP = 5
# The pool re-reads what changed in its look-back before the newest change
# it saw.  Changes measured alone in it make the incremental counts exact:
# the changed nodes, that newest change, and the record that stops the read.
SETTLE = pool_mod._OVERLAP.total_seconds() + 0.2
# Below this many ready nodes in the pool, claims would start searching
# Ironic: refresh first (not timed) so that every claim takes the same path.
LOW_POOL = 50


class BenchError(Exception):
    """A correctness check failed: the numbers mean nothing."""


class RequestCounter(object):
    """Counts the requests an IronicAPI sends, and the node records.

    The pool counts the records it consumes; Ironic may have served more
    (a whole page), which is what its database and the network pay for.
    """

    def __init__(self, api):
        self.reset()
        send = api._request

        def counted(method, url, *args, **kwargs):
            self.calls += 1
            answer = send(method, url, *args, **kwargs)
            if (method == 'GET' and url.startswith('/v1/nodes')
                    and isinstance(answer, dict) and 'nodes' in answer):
                self.listings += 1
                self.records += len(answer['nodes'])
            return answer

        # An instance attribute shadows the method of this API only.
        api._request = counted

    def reset(self):
        self.calls = self.listings = self.records = 0


def _ms(seconds):
    return round(seconds * 1000.0, 2)


def _stats(seconds):
    ordered = sorted(seconds)
    p90 = (statistics.quantiles(ordered, n=10)[-1] if len(ordered) > 1
           else ordered[0])
    return {'samples': len(ordered),
            'median_ms': _ms(statistics.median(ordered)),
            'p90_ms': _ms(p90)}


def _past(count):
    """``updated_at`` values of ``count`` copies, 1 s apart, a day ago.

    Older than any change the bench makes, as the nodes of a fleet that
    was enrolled and then left alone.
    """
    start = (datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - datetime.timedelta(days=1, seconds=count))
    return lambda i: (start + datetime.timedelta(seconds=i)).isoformat(' ')


class Bench(object):

    def __init__(self, args):
        self.args = args
        self.server = None
        self.ironic = None
        self.nodes = []
        self.templates = []
        self.operations = []
        self.refreshes = []
        self.reserver = None
        self.counter = None
        self.requirements = reqs.Requirements.from_request(
            {'extra_specs': {'resources:CUSTOM_%s' % RESOURCE_CLASS.upper():
                             '1'}})

    # -- fleet ----------------------------------------------------------------

    def build_fleet(self):
        started = time.monotonic()
        self.templates = self.ironic.enroll_nodes(
            2, resource_class=RESOURCE_CLASS, shard=SHARDS[0],
            name_prefix='template')
        self.nodes = self.clone(self.args.nodes - 2, updated=True)
        self.nodes += self.templates
        listed = self.ironic.list_nodes(fields=('uuid',))
        if len(listed) != self.args.nodes:
            raise BenchError('expected %d nodes, Ironic lists %d'
                             % (self.args.nodes, len(listed)))
        return time.monotonic() - started

    def clone(self, count, updated):
        """``count`` copies of the templates over every shard key."""
        # SQLite's driver takes no timestamp strings, and SQLite (as MySQL)
        # sorts nulls last when newest comes first: they do no harm there.
        stamp = (_past(count) if updated and self.server.db_kind != 'sqlite'
                 else None)
        uuids = []
        for index, template in enumerate(self.templates):
            # Copy i of this template is copy positions[i] of all.
            positions = range(index, count, 2)
            columns = {'shard': lambda i: SHARDS[positions[i] % len(SHARDS)]}
            if stamp:
                columns['updated_at'] = lambda i: stamp(positions[i])
            uuids += self.ironic.bulk_clone(template, len(positions),
                                            **columns)
        return uuids

    def touch(self, node_uuid, value):
        """Change a node in a way claims and snapshots ignore."""
        self.ironic.request(
            'PATCH', '/v1/nodes/%s' % node_uuid,
            json=[{'op': 'add', 'path': '/extra/bench', 'value': value}])

    # -- the participant ------------------------------------------------------

    def start_reserver(self, coordination_dir):
        CONF.set_override('coordination_url', 'file://' + coordination_dir,
                          group='ironic_multi')
        CONF.set_override('coordination_group', 'bench',
                          group='ironic_multi')
        api = client.IronicAPI(CONF, session=ks_session.Session(),
                               endpoint=self.server.endpoint)
        self.counter = RequestCounter(api)
        backend = backend_mod.IronicBackend(CONF, api=api)
        self.reserver = reserver_mod.Reserver(CONF, host='bench-1',
                                              backend=backend)
        # No background refresh: it would read Ironic while we time.
        self.reserver.start(background=False)
        owned = self.reserver.owned_shards()
        if owned != set(SHARDS):
            raise BenchError('the only participant owns %s, not every shard'
                             % sorted(owned))

    # -- a, b, c: one atomic write, and claims --------------------------------

    def raw_patch(self):
        session = requests.Session()
        session.headers.update(ironic_server.API_HEADERS)

        def run(i):
            node = self.nodes[i % len(self.nodes)]
            url = '%s/v1/nodes/%s' % (self.server.endpoint, node)
            instance = str(uuid.uuid4())
            started = time.perf_counter()
            answer = session.patch(url, json=[
                {'op': 'add', 'path': '/instance_uuid', 'value': instance}])
            elapsed = time.perf_counter() - started
            if answer.status_code != 200:
                raise BenchError('raw PATCH of %s: HTTP %d %s' % (
                    node, answer.status_code, answer.text[:300]))
            session.patch(url, json=[
                {'op': 'remove', 'path': '/instance_uuid'}]).raise_for_status()
            return elapsed, 1

        return run

    def claim(self, use_allocations):
        api = self.reserver.api
        pool = self.reserver.backend.pool

        def run(i):
            CONF.set_override('use_allocations', use_allocations,
                              group='ironic_multi')
            if len(pool.ready()) < LOW_POOL:
                # Released nodes leave the pool until a refresh.
                self.reserver.refresh()
            instance = str(uuid.uuid4())
            self.counter.reset()
            started = time.perf_counter()
            reservation = self.reserver.claim(instance, self.requirements)
            elapsed = time.perf_counter() - started
            calls = self.counter.calls
            node = reservation.node_uuid if reservation else None
            if not node:
                raise BenchError('claim %s returned no node' % instance)
            holder = api.get_node(node, fields=['instance_uuid'])
            if holder['instance_uuid'] != instance:
                raise BenchError('claim %s returned node %s, which Ironic '
                                 'shows as %s\'s' % (
                                     instance, node, holder['instance_uuid']))
            self.reserver.release(instance)
            if api.node_by_instance(instance, fields=['uuid']) is not None:
                raise BenchError('release of %s left its node' % instance)
            return elapsed, calls

        return run

    def bench_operations(self):
        operations = [
            ('raw PATCH instance_uuid', self.raw_patch()),
            ('Reserver.claim, allocations', self.claim(True)),
            ('Reserver.claim, PATCH (use_allocations=False)',
             self.claim(False)),
        ]
        timings = {name: [] for name, _run in operations}
        calls = {name: [] for name, _run in operations}
        try:
            for index in range(-WARMUP, self.args.samples):
                # Interleaved, in a rotating order: a change of load hits
                # every operation alike, and none always follows the same.
                shift = index % len(operations)
                for name, run in operations[shift:] + operations[:shift]:
                    elapsed, sent = run(index)
                    if index >= 0:
                        timings[name].append(elapsed)
                        calls[name].append(sent)
        finally:
            CONF.clear_override('use_allocations', group='ironic_multi')
        base = statistics.median(timings[operations[0][0]])
        for name, _run in operations:
            entry = dict(_stats(timings[name]), operation=name)
            entry['ratio'] = round(statistics.median(timings[name]) / base, 2)
            entry['requests'] = statistics.median_low(calls[name])
            self.operations.append(entry)

    # -- d: the ready pool ----------------------------------------------------

    def isolate(self):
        """Make the next change the only one in the pool's look-back."""
        time.sleep(SETTLE)
        self.touch(self.nodes[-1], 'newest-%s' % uuid.uuid4())
        self.reserver.refresh()
        time.sleep(SETTLE)

    def timed_refresh(self, kind, flush=False, changed=0, samples=None):
        pool = self.reserver.backend.pool
        runs = []
        for i in range(samples or self.args.refresh_samples):
            if changed:
                self.isolate()
                for node in self.nodes[10 * i:10 * i + changed]:
                    self.touch(node, '%s-%d' % (kind, i))
            if flush:
                pool.flush()
            self.counter.reset()
            started = time.perf_counter()
            read = self.reserver.refresh()
            elapsed = time.perf_counter() - started
            runs.append((read, self.counter.records, self.counter.listings,
                         elapsed))
        entry = {
            'kind': kind,
            'samples': len(runs),
            'records_read': statistics.median_low(r[0] for r in runs),
            'records_served': statistics.median_low(r[1] for r in runs),
            'listings': statistics.median_low(r[2] for r in runs),
            'median_ms': _ms(statistics.median(r[3] for r in runs)),
        }
        self.refreshes.append(entry)
        return entry

    def bench_refresh(self):
        # "No change" then reads only the newest change and the record
        # that stops the read.
        self.isolate()
        full = self.timed_refresh('full (initial)', flush=True)
        nothing = self.timed_refresh('incremental, no change')
        self.timed_refresh('incremental, 1 changed node', changed=1)
        self.timed_refresh('incremental, 10 changed nodes', changed=10)
        again = self.timed_refresh('full (again)', flush=True)
        for entry in (full, again):
            entry['vs_incremental'] = round(
                entry['median_ms'] / max(nothing['median_ms'], 0.001), 1)

    def bench_never_updated(self):
        count = len(self.clone(self.args.nodes // 4, updated=False))
        # What they cost is plain from one sample each.
        self.timed_refresh('full, +%d never-updated nodes' % count,
                           flush=True, samples=1)
        self.timed_refresh('incremental, no change, +%d never-updated'
                           % count, samples=1)
        return count

    # -- run ------------------------------------------------------------------

    def run(self):
        say = lambda text: print('... %s' % text, flush=True)
        started = time.monotonic()
        with ironic_server.IronicServer() as server, \
                tempfile.TemporaryDirectory(prefix='bench-coord-') as coord:
            self.server = server
            self.ironic = ironic_nodes.IronicNodes(server)
            print('Ironic %s on %s (%s), started in %.1f s'
                  % (ironic_server.API_VERSION, server.endpoint,
                     server.db_kind, server.start_seconds), flush=True)
            fleet_s = self.build_fleet()
            print('Fleet: %d nodes of class %s over %d shard keys, built in '
                  '%.1f s' % (len(self.nodes), RESOURCE_CLASS, len(SHARDS),
                              fleet_s), flush=True)
            before = self.ironic.snapshot()
            try:
                self.start_reserver(coord)
                say('claims: %d rounds of each operation after %d warm-up '
                    'rounds' % (self.args.samples, WARMUP))
                self.bench_operations()
                say('ready pool refreshes')
                self.bench_refresh()
                after = self.ironic.snapshot()
                if after != before:
                    raise BenchError('Ironic is not as it started: %s'
                                     % _difference(before, after))
                say('ready pool refreshes with never-updated nodes added')
                never_updated = self.bench_never_updated()
            finally:
                if self.reserver is not None:
                    self.reserver.stop()
            db_kind = server.db_kind
        return {
            'ironic': {'api_version': ironic_server.API_VERSION,
                       'db': db_kind},
            'nodes': len(self.nodes), 'shards': len(SHARDS),
            'never_updated_added': never_updated,
            'samples': self.args.samples, 'warmup': WARMUP,
            'operations': self.operations, 'refresh': self.refreshes,
            'correct': True,
            'seconds': round(time.monotonic() - started, 1)}


def _difference(before, after):
    for key in before:
        old = {i['uuid']: i for i in before[key]}
        new = {i['uuid']: i for i in after[key]}
        changed = [(old.get(u), new.get(u))
                   for u in sorted(set(old) | set(new))
                   if old.get(u) != new.get(u)]
        if changed:
            return '%d %s differ, first: %s -> %s' % (
                len(changed), key, changed[0][0], changed[0][1])
    return 'no difference found'


def print_report(report):
    print()
    print('Claims: median of %d, interleaved, on %d nodes (%s); one '
          'participant owns all %d shards'
          % (report['samples'], report['nodes'], report['ironic']['db'],
             report['shards']))
    print()
    width = max(len(e['operation']) for e in report['operations'])
    print('%-*s  %9s  %9s  %11s  %8s' % (width, 'operation', 'median ms',
                                         'p90 ms', 'x raw PATCH',
                                         'requests'))
    for e in report['operations']:
        print('%-*s  %9.1f  %9.1f  %11.2f  %8d' % (
            width, e['operation'], e['median_ms'], e['p90_ms'], e['ratio'],
            e['requests']))
    print()
    print('Ready pool refresh of that participant, median of %d (of 1 '
          'with never-updated\nnodes): "read" is what the pool consumed, '
          '"served" what Ironic sent in "listings"\nnode listings'
          % report['refresh'][0]['samples'])
    print()
    width = max(len(e['kind']) for e in report['refresh'])
    print('%-*s  %6s  %6s  %8s  %9s' % (width, 'kind', 'read', 'served',
                                        'listings', 'ms'))
    for e in report['refresh']:
        note = ('  = %.1f x incremental' % e['vs_incremental']
                if 'vs_incremental' in e else '')
        print('%-*s  %6d  %6d  %8d  %9.1f%s' % (
            width, e['kind'], e['records_read'], e['records_served'],
            e['listings'], e['median_ms'], note))
    print()
    print('Correct: every claim got a node that Ironic shows as the '
          'instance\'s,\nand Ironic ended as it started.  %.1f s in all.'
          % report['seconds'])


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Reservation benchmarks on one real Ironic, side by '
                    'side, reported as ratios.')
    parser.add_argument('--nodes', type=int, default=2000,
                        help='nodes in the fleet (default: %(default)s)')
    parser.add_argument('--samples', type=int, default=100,
                        help='timed rounds of each operation, after %d '
                             'warm-up rounds (default: %%(default)s)'
                             % WARMUP)
    parser.add_argument('--refresh-samples', type=int, default=3,
                        help='timed refreshes of each kind (default: '
                             '%(default)s)')
    parser.add_argument('--json', metavar='FILE',
                        help='also write the results to FILE')
    args = parser.parse_args(argv)
    if args.samples < 1 or args.refresh_samples < 1:
        parser.error('--samples and --refresh-samples must be positive')
    # 10 distinct nodes changed per refresh sample; enough ready nodes left
    # for a claim after the pool's low mark.
    minimum = max(10 * args.refresh_samples, 2 * LOW_POOL)
    if args.nodes < minimum:
        parser.error('--nodes must be at least %d' % minimum)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    CONF([], project='ironic-multi', default_config_files=[],
         default_config_dirs=[])
    try:
        report = Bench(args).run()
    except BenchError as e:
        print('\nBENCH FAILED: %s' % e, file=sys.stderr)
        return 1
    print_report(report)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(report, f, indent=2, sort_keys=True)
            f.write('\n')
        print('Results written to %s' % args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
