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

"""One housekeeping pass at 2,000 nodes (1,000 in --quick).

A pass lists every reservation and every node's failure marks, asks the
consumer about every instance, and acts.  Timed on a fleet where a tenth of
the nodes hold instances that the consumer knows, so that the pass does
all its reading and takes no action: what it costs every interval.  The
first pass after a few orphans appear is timed too.
"""

import statistics
import time

import common
from oslo_utils import uuidutils

from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation.providers.ironic import provider as ironic
from ironic_multi._reservation import requirements as reqs
from ironic_multi.testing import reservers

TITLE = 'Housekeeping: one pass of the leader'
NODES = 2000
PASSES = 5
ORPHANS = 10


def measure(bench):
    count = NODES // 2 if bench.args.quick else NODES
    bench.fleet(count)
    conf = reservers.make_conf(bench.server.endpoint, orphan_grace_period=0)
    provider = ironic.IronicProvider(conf)
    provider.start()
    shards = set(provider.shard_keys())
    provider.refresh(shards)
    requirements = reqs.Requirements()
    ready = provider.ready_nodes(requirements, shards)
    held = {}
    for node in ready[:count // 10]:
        instance = uuidutils.generate_uuid()
        provider.claim([node], instance, requirements,
                       time.monotonic() + 60)
        held[instance] = 'active'
    common.say('%d nodes, %d claimed' % (count, len(held)))
    keeper = housekeeper_mod.Housekeeper(
        conf, provider,
        consumers=lambda uuids: {u: held[u] for u in uuids if u in held})

    quiet = []
    for _ in range(PASSES):
        report = keeper.run()
        assert not report.actions, report.as_dict()
        quiet.append(report.seconds)
    orphans = list(held)[:ORPHANS]
    for instance in orphans:
        del held[instance]
    acting = keeper.run()
    released = sum(1 for a in acting.actions if a.done)
    for instance in list(held):
        provider.release(instance)

    median = statistics.median(quiet)
    rows = [['quiet pass (no action)', count, '%.2f' % median,
             '%.2f-%.2f' % (min(quiet), max(quiet))],
            ['pass releasing %d orphans' % len(orphans), count,
             '%.2f' % acting.seconds, '-']]
    results = {'nodes': count, 'reservations': len(held) + len(orphans),
               'quiet_seconds': [round(s, 3) for s in quiet],
               'acting_seconds': round(acting.seconds, 3),
               'released': released}
    return common.result(
        TITLE, ['pass', 'nodes', 'seconds (median)', 'spread'], rows,
        results, goals=[])
