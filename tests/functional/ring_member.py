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

"""One ring member in a process of its own, for test_ring_backends.

Usage: ring_member.py URL GROUP HOST KEYS TIMEOUT LIFETIME

Refreshes the ring every 0.1 s and prints a JSON line with a timestamp
whenever what it sees changes.  It leaves the group on SIGTERM, and exits
when its standard input closes (the test is gone) or after LIFETIME s.
"""

import json
import signal
import sys
import threading
import time

from ironic_multi._reservation import membership
from ironic_multi._reservation import ring
from ironic_multi import exception


def main(url, group, host, keys, timeout, lifetime):
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *args: done.set())
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()),
                     daemon=True).start()
    keys = ['shard-%d' % i for i in range(int(keys))]
    member = membership.Membership(url, group, int(timeout), host=host)
    member.start()
    shard_ring = ring.ShardRing(member, partitions=32)
    seen = None
    deadline = time.monotonic() + float(lifetime)
    while not done.wait(0.1) and time.monotonic() < deadline:
        try:
            owned = shard_ring.refresh(keys)
            member.publish({'owned': len(owned)})
            published = sorted(membership.host_of(m)
                               for m in member.published())
        except exception.CoordinationUnavailable as e:
            # As a service would: try again at the next refresh.
            print(e, file=sys.stderr, flush=True)
            continue
        state = {'hosts': sorted(shard_ring.hosts), 'owned': sorted(owned),
                 'published': published}
        if state != seen:
            seen = state
            print(json.dumps(dict(state, time=time.time())), flush=True)
    member.stop()
    print(json.dumps({'left': time.time()}), flush=True)


if __name__ == '__main__':
    main(*sys.argv[1:])
