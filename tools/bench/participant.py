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

"""A reservation service in a process of its own, driven over JSON lines.

Usage: participant.py --endpoint URL --coordination URL --group NAME
       --host HOST [--modes allocation,patch] [--options JSON]

One Reserver (``build_reserver``) per claim mode, each in the
coordination group ``NAME-MODE``: ``allocation`` claims with Ironic
allocations, ``patch`` with a PATCH of ``instance_uuid``.  Each reads its
shards at start (no background refresh: the bench decides when Ironic is
read).  Every HTTP request of the process is counted (common.RequestCounter).

Reads one JSON command a line on standard input, answers each with one
JSON line (``{"failure": ...}`` when the command failed):

``refresh`` [``flush``, ``modes``]
    refresh (after a flush: a full read); per mode, records read (as the
    pool counts them), records Ironic served, listings, seconds.
``latency`` ``order``, ``raw_node``
    one of each operation, in order, alone: ``raw`` (PATCH instance_uuid
    of ``raw_node`` and back), or a claim in a mode; each claim is checked
    in Ironic and released (neither timed).
``contend`` ``strategy``, ``threads``, ``target``, ``budget``, ``counter``
    claim in ``threads`` threads until ``target`` claims succeeded (a
    Redis counter shared by the group) or ``budget`` seconds passed.
``release`` ``claims``: ``[[instance, node, how]]``, ``threads``
``inlist`` [``shard``]: list the nodes as Nova's in-tree driver does.
``rawlist`` ``mode``: a plain paged listing of what that mode's full
    refresh reads (its shards, fields and page size), nothing kept.
``published``: the size of this member's published payload.
``profile`` ``what`` (``claim`` MODE or ``refresh``), ``count``:
    pyinstrument's text profile of that many of them, one after another.

It exits when its standard input closes, leaving the groups cleanly.
"""

import argparse
import collections
import concurrent.futures
import json
import logging
import random
import sys
import threading
import time
import traceback
import uuid
import warnings

# futurist imports eventlet, which warns on import; nothing here uses it.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

import common  # noqa: E402
from oslo_config import cfg  # noqa: E402
import requests  # noqa: E402

from ironic_multi._reservation.providers.ironic import (  # noqa: E402
    client as ironic_client)
from ironic_multi._reservation.requirements import Requirements  # noqa: E402
from ironic_multi import exception  # noqa: E402
from ironic_multi.testing.reservers import build_reserver  # noqa: E402

# Every request this process sends, the package's included.
COUNTER = common.RequestCounter().install()


class StageCounter(logging.Handler):
    """Where claims were won and lost: the claim strategy's log records.

    ``ironic_multi._reservation.claims`` logs each claim won (INFO) and
    each batch of candidates lost to a race (DEBUG) with its stage (the
    ready pool, the shards of another host, all nodes).  Read from
    outside, nothing printed.
    """

    def __init__(self):
        super().__init__(logging.DEBUG)
        self._counts = threading.Lock()
        self.reset()

    def reset(self):
        with self._counts:
            self.won = collections.Counter()
            self.lost = collections.Counter()

    def snapshot(self):
        with self._counts:
            return {'won': dict(self.won), 'lost_batches': dict(self.lost)}

    def emit(self, record):
        args = record.args
        if not isinstance(args, dict) or 'stage' not in args:
            return
        stage = str(args['stage'])
        if stage.startswith('shards of'):
            stage = 'shards of other hosts'
        message = str(record.msg)
        with self._counts:
            if 'lost a race' in message:
                self.lost[stage] += 1
            elif message.startswith('Reserved node'):
                self.won[stage] += 1


STAGES = StageCounter()
_claims_log = logging.getLogger('ironic_multi._reservation.claims')
_claims_log.addHandler(STAGES)
_claims_log.setLevel(logging.DEBUG)
_claims_log.propagate = False

API_HEADERS = {'X-OpenStack-Ironic-API-Version': '1.82'}
CLAIM_TIMEOUT = 120.0
# Our claimer's allocation poll: 50 ms, doubling, at most 1 s.
POLL_FIRST, POLL_MAX = 0.05, 1.0
# openstacksdk's Allocation.wait: fetch, then every 2 s (iterate_timeout).
SDK_POLL = 2.0
LISTING_FILTERS = {'resource_class': common.GOLD,
                   'provision_state': 'available', 'associated': 'False',
                   'maintenance': 'False'}
# Nova's in-tree ironic driver (nova/virt/ironic/driver.py, _NODE_FIELDS).
IN_TREE_FIELDS = ('uuid', 'power_state', 'target_power_state',
                  'provision_state', 'target_provision_state', 'last_error',
                  'maintenance', 'properties', 'instance_uuid', 'traits',
                  'resource_class')
PAGE = 1000
RELEASE_ATTEMPTS = 10


class Lost(Exception):
    """A claim attempt lost a race (the strategy tries again)."""


class NoNode(Exception):
    """Nothing left to claim: the thread stops."""


class TimedOut(Exception):
    """The claim took longer than CLAIM_TIMEOUT."""


# Claims made by allocation: undone by deleting the allocation.
BY_ALLOCATION = ('allocation', 'ours:allocation', 'allocation-api',
                 'metalsmith')


class Service(object):

    def __init__(self, args):
        self.endpoint = args.endpoint
        self.host = args.host
        self.requirements = Requirements.from_request(common.GOLD_SPEC)
        options = dict(coordination_url=args.coordination,
                       claim_timeout=CLAIM_TIMEOUT,
                       membership_timeout=args.membership_timeout)
        options.update(json.loads(args.options or '{}'))
        self.skipped_options = []
        self.reservers = {}
        try:
            for mode in args.modes.split(','):
                self.reservers[mode] = self._build(
                    mode, dict(options, coordination_group='%s-%s' % (
                        args.group, mode),
                        use_allocations=mode == 'allocation'))
                # No background refresh: the bench decides when Ironic is
                # read.
                self.reservers[mode].start(background=False)
        except BaseException:
            self.stop()
            raise
        self._local = threading.local()

    def _build(self, mode, options):
        """build_reserver, leaving out options this version does not have."""
        while True:
            try:
                return build_reserver(self.endpoint, self.host, **options)
            except (cfg.NoSuchOptError, cfg.NoSuchGroupError) as e:
                name = getattr(e, 'opt_name', None)
                if name not in options:
                    raise
                self.skipped_options.append(name)
                options.pop(name)

    def stop(self):
        for reserver in self.reservers.values():
            try:
                reserver.stop()
            except Exception:
                traceback.print_exc()

    @property
    def session(self):
        session = getattr(self._local, 'session', None)
        if session is None:
            session = self._local.session = requests.Session()
            session.headers.update(API_HEADERS)
        return session

    def http(self, method, path, expect=(200,), **kwargs):
        response = self.session.request(method, self.endpoint + path,
                                        timeout=common.REQUEST_TIMEOUT,
                                        **kwargs)
        if response.status_code not in expect:
            raise RuntimeError('%s %s: HTTP %d %s' % (
                method, path, response.status_code, response.text[:300]))
        return response

    def listing(self, path, params, page_size=PAGE):
        """Every node of a listing, paged with marker and the filters."""
        params = dict(params, limit=page_size)
        nodes = []
        while True:
            page = self.http('GET', path, params=params).json()['nodes']
            nodes.extend(page)
            if len(page) < page_size:
                return nodes
            params['marker'] = page[-1]['uuid']

    # -- refresh ---------------------------------------------------------

    def refresh(self, flush=False, modes=None, profile=False):
        """Refresh; with ``profile``, under pyinstrument (its text too)."""
        answer = {}
        for mode in modes or self.reservers:
            reserver = self.reservers[mode]
            if flush:
                _flush(reserver)
            profiler = _profiler() if profile else None
            COUNTER.reset()
            started = time.perf_counter()
            if profiler:
                profiler.start()
            try:
                read = reserver.refresh()
            finally:
                if profiler:
                    profiler.stop()
            seconds = time.perf_counter() - started
            counted = COUNTER.snapshot()
            answer[mode] = {'read': read, 'served': counted['records'],
                            'listings': counted['listings'],
                            'requests': counted['requests'],
                            'seconds': seconds,
                            'owned': sorted(reserver.owned_shards()),
                            'hosts': sorted(reserver.ring.hosts)}
            if profiler:
                answer[mode]['profile'] = _profile_text(profiler)
        return answer

    def published(self):
        answer = {}
        for mode, reserver in self.reservers.items():
            membership = reserver.membership
            payloads = membership.published()
            own = payloads.get(membership.member_id)
            answer[mode] = {
                'bytes': len(json.dumps(own)) if own is not None else None,
                'members': len(payloads),
                'all_bytes': sum(len(json.dumps(p))
                                 for p in payloads.values()),
                'shards': len((own or {}).get('shards') or {}),
                'payload_bytes': getattr(reserver.capacity, 'payload_bytes',
                                         None),
                'cluster_capacity': reserver.cluster_capacity()}
        return answer

    # -- one operation at a time -----------------------------------------

    def latency(self, order, raw_node):
        answer = {}
        for operation in order:
            if operation == 'raw':
                answer[operation] = self._raw_patch(raw_node)
            else:
                answer[operation] = self._timed_claim(operation)
        return answer

    def _raw_patch(self, node):
        instance = str(uuid.uuid4())
        url = '/v1/nodes/%s' % node
        COUNTER.reset()
        started = time.perf_counter()
        self.http('PATCH', url, json=[{'op': 'add', 'path': '/instance_uuid',
                                       'value': instance}])
        seconds = time.perf_counter() - started
        requests_sent = COUNTER.snapshot()['requests']
        self.http('PATCH', url, json=[{'op': 'remove',
                                       'path': '/instance_uuid'}])
        return {'seconds': seconds, 'requests': requests_sent, 'node': node,
                'ok': True}

    def _timed_claim(self, mode):
        instance = str(uuid.uuid4())
        COUNTER.reset()
        STAGES.reset()
        started = time.perf_counter()
        node = self.reservers[mode].claim(instance,
                                          self.requirements).node_uuid
        seconds = time.perf_counter() - started
        counted = COUNTER.snapshot()
        stages = STAGES.snapshot()
        holder = self.http('GET', '/v1/nodes/%s?fields=instance_uuid'
                           % node).json()['instance_uuid']
        self.release_one(instance, node, mode)
        return {'seconds': seconds, 'requests': counted['requests'],
                'conflicts': counted['conflicts'], 'node': node,
                'by_kind': counted['by_kind'],
                'stage': ','.join(sorted(stages['won'])) or '?',
                'lost_batches': sum(stages['lost_batches'].values()),
                'ok': holder == instance}

    def release_one(self, instance, node, how, checked=False):
        """Undo one claim with one request, as the claim was made.

        :param checked: Ironic was just read to show ``node`` held by
            ``instance`` (and nothing claims any more): no read-back first.

        A lost answer (Ironic's API resets connections above about 10
        concurrent clients) is settled by reading back, then sending again.
        """
        for attempt in range(RELEASE_ATTEMPTS):
            try:
                if how in BY_ALLOCATION:
                    # Clears the node's instance_uuid too; idempotent.
                    self.http('DELETE', '/v1/allocations/%s' % instance,
                              expect=(204, 404))
                    return
                if not (checked and attempt == 0):
                    holder = self.http(
                        'GET', '/v1/nodes/%s?fields=instance_uuid'
                        % node).json()['instance_uuid']
                    if holder != instance:
                        return
                self.http('PATCH', '/v1/nodes/%s' % node, json=[
                    {'op': 'remove', 'path': '/instance_uuid'}])
                return
            except requests.ConnectionError:
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError('could not release node %s of %s'
                           % (node, instance))

    def release(self, claims, threads, checked=False):
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda c: self.release_one(*c, checked=checked),
                          claims))
        return {'released': len(claims)}

    # -- contention --------------------------------------------------------

    def contend(self, strategy, threads, target, budget, counter, redis_url):
        import redis

        claim = {'naive': self._naive, 'allocation-api': self._allocation_api,
                 'metalsmith': self._metalsmith}.get(strategy)
        if claim is None:
            mode = strategy.split(':', 1)[1]
            claim = lambda instance, retry_until: self._ours(mode, instance)
        board = redis.Redis.from_url(redis_url)
        started = time.monotonic()
        deadline = started + budget
        successes, failures = [], collections.Counter()
        lock = threading.Lock()
        COUNTER.reset()
        STAGES.reset()

        def worker():
            while (time.monotonic() < deadline
                   and int(board.get(counter) or 0) < target):
                instance = str(uuid.uuid4())
                begun = time.perf_counter()
                try:
                    # No new attempt of a strategy's retry loop after the
                    # budget; the attempt under way finishes.
                    node = claim(instance, begun + min(
                        CLAIM_TIMEOUT, deadline - time.monotonic()))
                except Exception as e:
                    with lock:
                        failures[type(e).__name__] += 1
                    if isinstance(e, (NoNode, exception.NoNodeAvailable)):
                        return
                    continue
                seconds = time.perf_counter() - begun
                board.incr(counter)
                with lock:
                    successes.append([instance, node, seconds,
                                      time.monotonic() - started])

        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for future in [pool.submit(worker) for _ in range(threads)]:
                future.result()
        counted = COUNTER.snapshot()
        return {'successes': successes, 'failures': dict(failures),
                'conflicts': counted['conflicts'],
                'requests': counted['requests'],
                'records': counted['records'],
                'by_kind': counted['by_kind'],
                'stages': STAGES.snapshot(),
                'elapsed': time.monotonic() - started}

    def _ours(self, mode, instance):
        return self.reservers[mode].claim(instance,
                                          self.requirements).node_uuid

    def _naive(self, instance, retry_until):
        """List the available matching nodes, pick one at random, PATCH.

        A 409 (the node was taken) starts over from the listing.
        """
        while True:
            nodes = self.listing('/v1/nodes', dict(LISTING_FILTERS,
                                                   fields='uuid'))
            if not nodes:
                raise NoNode()
            node = random.choice(nodes)['uuid']
            answer = self.http('PATCH', '/v1/nodes/%s' % node,
                               expect=(200, 409),
                               json=[{'op': 'add', 'path': '/instance_uuid',
                                      'value': instance}])
            if answer.status_code == 200:
                return node
            if time.perf_counter() >= retry_until:
                raise TimedOut()

    def _allocation_api(self, instance, retry_until):
        """Ironic's allocation API given only a resource class.

        Polled as our claimer polls (50 ms, doubling, at most 1 s); a
        failed allocation is deleted and made again.
        """
        hard = time.perf_counter() + CLAIM_TIMEOUT
        while True:
            try:
                return self._allocate(instance, {'resource_class':
                                                 common.GOLD},
                                      hard, sdk_poll=False)
            except Lost:
                if time.perf_counter() >= retry_until:
                    raise TimedOut()

    def _metalsmith(self, instance, retry_until):
        """metalsmith's reserve_node with client-side filtering.

        Provisioner._prefilter_nodes: list the available, unassociated
        nodes of the class out of maintenance, with details, filter them
        (NodeTypeFilter); then _reserve_node: an allocation with the
        survivors as candidate_nodes, openstacksdk's wait_for_allocation
        (a fetch, then one every 2 s) and a GET of the node; a failed
        allocation is deleted.
        """
        hard = time.perf_counter() + CLAIM_TIMEOUT
        while True:
            nodes = self.listing('/v1/nodes/detail', LISTING_FILTERS)
            candidates = [n['uuid'] for n in nodes
                          if not n['instance_uuid'] and not n['maintenance']
                          and n['resource_class'] == common.GOLD]
            if not candidates:
                raise NoNode()
            try:
                node = self._allocate(
                    instance, {'resource_class': common.GOLD,
                               'candidate_nodes': candidates},
                    hard, sdk_poll=True)
            except Lost:
                if time.perf_counter() >= retry_until:
                    raise TimedOut()
                continue
            self.http('GET', '/v1/nodes/%s' % node)
            return node

    def _allocate(self, instance, body, deadline, sdk_poll):
        allocation = self.http('POST', '/v1/allocations', expect=(201,),
                               json=dict(body, uuid=instance)).json()
        delay = SDK_POLL if sdk_poll else POLL_FIRST
        first = True
        while allocation['state'] == 'allocating':
            if time.perf_counter() > deadline:
                self.http('DELETE', '/v1/allocations/%s' % instance,
                          expect=(204, 404))
                raise TimedOut()
            if not (sdk_poll and first):
                time.sleep(delay)
            first = False
            if not sdk_poll:
                delay = min(delay * 2, POLL_MAX)
            allocation = self.http('GET', '/v1/allocations/%s'
                                   % instance).json()
        if allocation['state'] == 'active':
            return allocation['node_uuid']
        # Failed (nodes taken or locked): deleted, so the UUID is free for
        # the next attempt.
        self.http('DELETE', '/v1/allocations/%s' % instance,
                  expect=(204, 404))
        raise Lost(allocation.get('last_error'))

    # -- the in-tree driver's read -----------------------------------------

    def inlist(self, shard=None):
        params = {'fields': ','.join(IN_TREE_FIELDS)}
        if shard:
            params['shard'] = shard
        COUNTER.reset()
        started = time.perf_counter()
        nodes = self.listing('/v1/nodes', params)
        seconds = time.perf_counter() - started
        counted = COUNTER.snapshot()
        return {'records': len(nodes), 'served': counted['records'],
                'listings': counted['listings'], 'seconds': seconds}

    # -- the floor of a full refresh ----------------------------------------

    def rawlist(self, mode):
        """The nodes of ``mode``'s shards, as its full refresh lists them.

        One listing of every owned shard at once, the provider's fields and
        page size; the nodes are counted, not kept: the floor under a full
        refresh, which reads the same pages and builds its pool of them.
        """
        reserver = self.reservers[mode]
        params = {'fields': ','.join(sorted(set(reserver.provider.fields)
                                            | {'uuid'})),
                  'shard': ','.join(sorted(reserver.owned_shards()))}
        started = time.perf_counter()
        nodes = self.listing('/v1/nodes', params,
                             page_size=ironic_client.PAGE_SIZE)
        return {'records': len(nodes),
                'seconds': time.perf_counter() - started}

    # -- profiles ------------------------------------------------------------

    def profile(self, what, count, mode=None, flush=False):
        profiler = _profiler()
        seconds = []
        profiler.start()
        try:
            for _ in range(count):
                if what == 'claim':
                    instance = str(uuid.uuid4())
                    started = time.perf_counter()
                    node = self._ours(mode, instance)
                    seconds.append(time.perf_counter() - started)
                    profiler.stop()
                    self.release_one(instance, node, mode)
                    profiler.start()
                else:
                    reserver = self.reservers[mode]
                    if flush:
                        _flush(reserver)
                    started = time.perf_counter()
                    reserver.refresh()
                    seconds.append(time.perf_counter() - started)
        finally:
            if profiler.is_running:
                profiler.stop()
        return {'seconds': seconds, 'text': _profile_text(profiler)}


def _profiler():
    import pyinstrument

    return pyinstrument.Profiler(interval=0.001)


def _profile_text(profiler):
    return profiler.output_text(unicode=False, color=False, show_all=False,
                                short_mode=False)


def _flush(reserver):
    """Forget the pool, so that the next refresh is a full read."""
    provider = reserver.provider
    flush = getattr(provider, 'flush', None) or provider.pool.flush
    flush()


def _rss_kib():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return None


def handle(service, command):
    op = command.pop('op')
    if op == 'refresh':
        return service.refresh(**command)
    if op == 'latency':
        return service.latency(**command)
    if op == 'contend':
        return service.contend(**command)
    if op == 'release':
        return service.release(**command)
    if op == 'inlist':
        return service.inlist(**command)
    if op == 'rawlist':
        return service.rawlist(**command)
    if op == 'published':
        return service.published()
    if op == 'profile':
        return service.profile(**command)
    raise ValueError('unknown op %r' % op)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--endpoint', required=True)
    parser.add_argument('--coordination', required=True)
    parser.add_argument('--group', required=True)
    parser.add_argument('--host', required=True)
    parser.add_argument('--modes', default='allocation,patch')
    parser.add_argument('--membership-timeout', type=int, default=10)
    parser.add_argument('--options', help='more [ironic_multi] options, '
                                          'as a JSON object')
    args = parser.parse_args(argv)
    # Memory after the imports, before any node is read.
    rss_before = _rss_kib()
    started = time.perf_counter()
    try:
        service = Service(args)
    except Exception as e:
        print(json.dumps({'failure': '%s: %s' % (type(e).__name__, e),
                          'trace': traceback.format_exc()}), flush=True)
        return 1
    print(json.dumps({'started': sorted(service.reservers),
                      'skipped_options': service.skipped_options,
                      'rss_before_kib': rss_before,
                      'rss_started_kib': _rss_kib(),
                      'start_seconds': time.perf_counter() - started}),
          flush=True)
    try:
        for line in sys.stdin:
            try:
                answer = handle(service, json.loads(line))
            except Exception as e:  # report, keep serving
                answer = {'failure': '%s: %s' % (type(e).__name__, e),
                          'trace': traceback.format_exc()}
            print(json.dumps(answer), flush=True)
    finally:
        service.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
