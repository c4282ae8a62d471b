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

"""Shard keys moving after a compute stops, on the multi-process cloud.

One cloud of :class:`ironic_multi.testing.cloud.Cloud` with K = 3
computes on etcd, with the driver's default ``membership_timeout``
(30 s).  Each sample stops one compute, in turn, two ways:

* a graceful stop (SIGTERM): Nova stops, the driver leaves the group;
* a crash (SIGKILL): the member's etcd lease expires after
  ``membership_timeout``.

Measured from the signal: when the host left the group (an observer
polls it every 50 ms) and when the last survivor logged that its shard
ring changed (``Shard ring hosts changed``): from then on the survivors
serve the stopped host's shard keys.  A graceful stop is Nova's first:
it sets its manager's shutdown event, stops its RPC server, waits for
the tasks in progress, and only then calls the driver's
``cleanup_host``.  The driver leaves the group at the event; the bench
splits the time there (the stopped service's log line ``leaving the
coordination group now``).  The compute is
started again, and is back in every ring before the next sample.
Nova's in-tree driver moves nothing with ``[ironic] shard`` set; without
it, its hash ring of compute services drops a host once Nova's service
group says it is down (``service_down_time``, 60 s by default), at the
next periodic that rebuilds the ring.  Goals (issue 29): the rings moved at
most 1 s after a graceful stop, and at most ``membership_timeout`` + 1 s
after a crash.
"""

import signal
import statistics
import time

import cloudboots

from ironic_multi.testing.cloud import watch

TITLE = ('Shard keys moved after a compute stops (K=3, etcd, '
         'membership_timeout 30 s): graceful stop and crash')

COMPUTES = 3
# The driver's default ([ironic_multi] membership_timeout).
MEMBERSHIP_TIMEOUT = 30
SAMPLES = 3
QUICK_SAMPLES = 1
STOPS = (('graceful (SIGTERM)', signal.SIGTERM),
         ('crash (SIGKILL)', signal.SIGKILL))
RING_CHANGED = 'Shard ring hosts changed'
# The driver leaves, as soon as Nova's graceful shutdown begins.
LEAVING = 'leaving the coordination group now'
GOAL_GRACEFUL = 1.0
GOAL_CRASH_MARGIN = 1.0
# Bound of each wait: a crashed member leaves after the lease expires.
WAIT = MEMBERSHIP_TIMEOUT + 60


def measure(bench):
    samples = QUICK_SAMPLES if bench.args.quick else SAMPLES
    runs = []
    with cloudboots.cloud_mod.Cloud(
            computes=COMPUTES, layout=cloudboots.layout(COMPUTES),
            compute_driver=cloudboots.CLOUDS[cloudboots.OURS][0],
            nova_options=cloudboots.NOVA_OPTIONS,
            membership_timeout=MEMBERSHIP_TIMEOUT,
            log_dir=cloudboots.log_dir('ring')) as cloud:
        print('cloud ready in %.0f s' % cloud.start_seconds, flush=True)
        for number in range(samples):
            for stop, signum in STOPS:
                host = cloud.computes[len(runs) % COMPUTES]
                run = dict(_stop(cloud, host, signum), stop=stop,
                           sample=number + 1, host=host)
                print('%(stop)s of %(host)s: left the group after '
                      '%(left).2f s, every survivor\'s ring moved after '
                      '%(moved).2f s' % run
                      + (' (%(driver).2f s after the driver began to '
                         'leave)' % run if 'driver' in run else ''),
                      flush=True)
                runs.append(run)
    return _report(runs)


def _stop(cloud, host, signum):
    """``{'left': s, 'moved': s}`` after ``signum``; ``host`` back after."""
    name = cloud.compute_service(host)
    survivors = [cloud.service(cloud.compute_service(h))
                 for h in cloud.computes if h != host]
    with watch.RingWatch(cloud) as ring:
        signalled = time.time()
        cloud.kill(name, signum)
        left = ring.when('leave', host, timeout=WAIT) - signalled
    moved = max(watch.logged_after(survivor, RING_CHANGED, signalled,
                                   timeout=WAIT)
                for survivor in survivors) - signalled
    split = {}
    if signum == signal.SIGTERM:
        leaving = watch.logged_after(cloud.service(name), LEAVING,
                                     signalled, timeout=WAIT) - signalled
        split = {'nova': leaving, 'driver': moved - leaving}
    restarted = cloudboots.cloud_mod.utcnow()
    with watch.RingWatch(cloud) as ring:
        cloud.start(name, wait=False)
        ring.when('join', host, timeout=WAIT)
    cloud.wait_for_computes([host], since=restarted)
    # Every survivor took it back before the next stop.
    back = time.time()
    for survivor in survivors:
        watch.logged_after(survivor, RING_CHANGED, signalled + 1e-3,
                           timeout=WAIT)
    return dict(split, left=left, moved=moved, rejoined=back - signalled)


def _cell(spread):
    if spread is None:
        return '-'
    return '%.2f s (%.2f-%.2f)' % (spread['median'], spread['min'],
                                   spread['max'])


def _spread(values):
    return {'median': statistics.median(values), 'min': min(values),
            'max': max(values), 'n': len(values)}


def _report(runs):
    stats = {stop: {what: _spread([r[what] for r in runs
                                   if r['stop'] == stop and what in r])
                    for what in ('left', 'moved', 'nova', 'driver')
                    if any(what in r for r in runs if r['stop'] == stop)}
             for stop, _signum in STOPS}
    rows = [[stop, '%d' % s['moved']['n']]
            + [_cell(s.get(what)) for what in ('left', 'moved', 'nova',
                                               'driver')]
            for stop, s in stats.items()]
    graceful, crash = (stats[stop]['moved']['max'] for stop, _s in STOPS)
    driver = stats[STOPS[0][0]]['driver']['max']
    crash_goal = MEMBERSHIP_TIMEOUT + GOAL_CRASH_MARGIN
    goals = [
        {'name': 'rings moved after a graceful stop (slowest sample)',
         'target': '<= %.1f s' % GOAL_GRACEFUL,
         'measured': '%.2f s' % graceful, 'met': graceful <= GOAL_GRACEFUL},
        {'name': 'of which after the driver began to leave (slowest sample)',
         'target': '<= %.1f s' % GOAL_GRACEFUL,
         'measured': '%.2f s' % driver, 'met': driver <= GOAL_GRACEFUL},
        {'name': 'rings moved after a crash (slowest sample)',
         'target': '<= membership_timeout + %.0f s = %.0f s' % (
             GOAL_CRASH_MARGIN, crash_goal),
         'measured': '%.2f s' % crash, 'met': crash <= crash_goal},
    ]
    return {
        'title': TITLE,
        'headers': ['stop', 'samples', 'left the group', 'every ring moved',
                    'Nova: to the driver\'s leave',
                    'driver: leave to rings'],
        'rows': rows,
        'results': {'stats': stats, 'notes': [
            'seconds from the signal, median (range); K=%d computes on '
            'etcd3, membership_timeout %d s' % (COMPUTES,
                                                MEMBERSHIP_TIMEOUT)]},
        'samples': runs,
        'goals': goals,
        'chart': {
            'kind': 'bar',
            'title': 'Signal to every survivor\'s ring moved (median, s)',
            'x': [stop for stop, _s in STOPS],
            'series': {'seconds': [round(stats[stop]['moved']['median'], 2)
                                   for stop, _s in STOPS]},
            'ylabel': 'seconds',
        },
    }
