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

"""One reservation participant (a Reserver) in a process of its own.

Usage: participant.py IRONIC_ENDPOINT COORDINATION_URL GROUP HOST TIMEOUT

Reads one JSON command a line on standard input and answers each with one
JSON line on standard output:

- ``{"op": "claim", "instances": [...], "threads": N, "spec": {...}}``:
  claims concurrently; answers ``{"results": [{"instance", "node",
  "error", "seconds"}]}``.
- ``{"op": "release", "instances": [...]}``: ``{"released": n}``.
- ``{"op": "refresh"}``: ``{"owned": [...], "read": n, "hosts": [...]}``.
- ``{"op": "housekeep"}``: a housekeeping pass if this participant leads:
  ``{"leads": bool, "started": t, "ended": t}`` (wall clock).

It exits when its standard input closes, leaving the group cleanly.
"""

import concurrent.futures
import json
import sys
import time

from ironic_multi._reservation import requirements as reqs
from ironic_multi import exception
from ironic_multi.testing import reservers


CLAIM_TIMEOUT = 120.0


def _claim(reserver, instance, requirements):
    started = time.monotonic()
    try:
        node = reserver.claim(instance, requirements).node_uuid
        error = None
    except exception.IronicMultiError as e:
        node, error = None, type(e).__name__
    return {'instance': instance, 'node': node, 'error': error,
            'seconds': time.monotonic() - started}


def _refresh(reserver):
    read = reserver.refresh()
    return {'owned': sorted(reserver.owned_shards()), 'read': read,
            'hosts': sorted(reserver.ring.hosts)}


def handle(reserver, command):
    op = command['op']
    if op == 'claim':
        requirements = reqs.Requirements.from_request(command['spec'])
        with concurrent.futures.ThreadPoolExecutor(
                command.get('threads', 1)) as pool:
            results = list(pool.map(
                lambda i: _claim(reserver, i, requirements),
                command['instances']))
        return {'results': results}
    if op == 'release':
        return {'released': sum(1 for i in command['instances']
                                if reserver.release(i) is not None)}
    if op == 'refresh':
        return _refresh(reserver)
    if op == 'housekeep':
        started = time.time()
        report = reserver.housekeep(dry_run=command.get('dry_run', False))
        return {'leads': report is not None, 'started': started,
                'ended': time.time()}
    raise ValueError('unknown op %r' % op)


def main(endpoint, url, group, host, timeout):
    # Generous claim_timeout: on an overloaded 2-core machine (load average
    # 8) some of 64 concurrent claims took longer than the default 60 s.
    reserver = reservers.build_reserver(
        endpoint, host, coordination_url=url, coordination_group=group,
        claim_timeout=CLAIM_TIMEOUT, membership_timeout=int(timeout),
        fallback_shard_count=16)
    reserver.start(background=False)
    print(json.dumps(_refresh(reserver)), flush=True)
    try:
        for line in sys.stdin:
            try:
                answer = handle(reserver, json.loads(line))
            except Exception as e:  # report, keep serving
                answer = {'failure': '%s: %s' % (type(e).__name__, e)}
            print(json.dumps(answer), flush=True)
    finally:
        reserver.stop()


if __name__ == '__main__':
    main(*sys.argv[1:])
