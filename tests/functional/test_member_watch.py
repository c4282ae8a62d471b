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

"""The watch on the group's members, on a real etcd.

A join and a leave wake the watching service's ring within a fraction of
a second (the member poll would see them up to ``ring_poll_interval``
later); a member's payload updates wake its capacity sum instead.
"""

import threading
import time
import uuid

from ironic_multi._reservation import member_watch
from ironic_multi._reservation import membership
from ironic_multi._reservation import requirements
from ironic_multi._reservation import reserver as reserver_mod
from ironic_multi.testing import reservers as test_reservers
from ironic_multi.testing import static_nodes
from tests.functional.waiting import wait_for

TIMEOUT = 10
# A change seen later than this is not the watch's doing.
WITHIN = 0.5


class Seen(object):
    def __init__(self):
        self.times = []
        self.event = threading.Event()

    def __call__(self):
        self.times.append(time.time())
        self.event.set()

    def after(self, count, started, record):
        wait_for(lambda: len(self.times) > count, timeout=5,
                 what='the watch to see the change')
        seconds = self.times[count] - started
        record(seconds)
        assert seconds < WITHIN
        return len(self.times)


def test_joins_and_leaves_wake_the_ring_and_updates_the_sum(
        etcd, record_property):
    group = 'watch-%s' % uuid.uuid4().hex[:8]
    watcher = membership.Membership(etcd, group, TIMEOUT, host='watcher')
    watcher.start()
    seen, published = Seen(), Seen()
    watch = member_watch.MemberWatch(watcher, seen, on_payload=published)
    watch.start()
    other = membership.Membership(etcd, group, TIMEOUT, host='other')
    try:
        wait_for(lambda: watch._response is not None, timeout=5,
                 what='the watch stream')
        count = len(seen.times)
        joined = time.time()
        other.start()
        count = seen.after(count, joined, lambda s: record_property(
            'join_to_watch_seconds', round(s, 3)))

        updated = time.time()
        for payload in range(5):
            other.publish({'payload': payload})
        published.after(0, updated, lambda s: record_property(
            'payload_to_watch_seconds', round(s, 3)))
        time.sleep(1)
        assert len(seen.times) == count, 'a payload update moved the ring'

        left = time.time()
        other.stop()
        seen.after(count, left, lambda s: record_property(
            'leave_to_watch_seconds', round(s, 3)))
    finally:
        other.stop()
        watch.stop()
        watcher.stop()
    # Stopped, the stream ends at once: no thread or connection is left.
    watch._thread.join(5)
    assert not watch._thread.is_alive()


def test_a_backend_without_a_watch_leaves_it_to_the_poll(tmp_path):
    member = membership.Membership('file://%s' % tmp_path, 'g', TIMEOUT,
                                   host='m')
    member.start()
    try:
        assert member.watch_target() is False
        watch = member_watch.MemberWatch(member, lambda: None)
        watch.start()
        watch._thread.join(5)
        assert not watch._thread.is_alive()
    finally:
        member.stop()


def test_a_claim_reaches_the_other_members_sum_through_the_watch(
        etcd, tmp_path, record_property):
    """Two services on etcd: the one that did not claim follows at once.

    No refresh (an hour apart) and a member poll slower than the bound:
    only the watch can tell it.
    """
    inventory = static_nodes.StaticInventory(tmp_path / 'nodes')
    inventory.add_nodes(4, 'gold')
    conf = test_reservers.make_conf(
        node_provider='static', static_inventory=inventory.path,
        coordination_url=etcd, pool_refresh_interval=3600,
        ring_poll_interval=60,
        coordination_group='claims-%s' % uuid.uuid4().hex[:8])
    services = [reserver_mod.Reserver(conf, host=host) for host in 'ab']
    followed = Seen()
    services[1].on_capacity_change(lambda reserver: followed())
    try:
        for service in services:
            service.start()
        for service in services + services:
            service.refresh()
        wait_for(lambda: services[1]._member_watch.streaming, timeout=5,
                 what='the watch stream')
        count = len(followed.times)
        claimed = time.time()
        services[0].claim('i-1', requirements.Requirements.from_request(
            {'extra_specs': {'resources:CUSTOM_GOLD': '1'}}))
        wait_for(lambda: services[1].cluster_capacity()['gold']['free'] == 3,
                 timeout=5, what='the other service to count the claim')
        followed.after(count, claimed, lambda s: record_property(
            'claim_to_other_follower_seconds', round(s, 3)))
    finally:
        for service in services:
            service.stop()


# A graceful leave reaches the survivor's ring: through the watch on
# etcd, at the next member poll (ring_poll_interval, 1 s) elsewhere.
LEAVE_BOUNDS = {'etcd3': WITHIN, 'redis': 1.5, 'file': 1.5}


def test_a_graceful_leave_moves_the_survivors_ring(
        coordination, tmp_path, record_property):
    url, group = coordination
    backend = url.split(':', 1)[0].split('+', 1)[0]
    inventory = static_nodes.StaticInventory(tmp_path / 'nodes')
    inventory.add_nodes(4, 'gold')
    conf = test_reservers.make_conf(
        node_provider='static', static_inventory=inventory.path,
        coordination_url=url, pool_refresh_interval=3600,
        coordination_group=group)
    services = [reserver_mod.Reserver(conf, host=host) for host in 'ab']
    try:
        for service in services:
            service.start()
        wait_for(lambda: all(s.ring.hosts == {'a', 'b'} for s in services),
                 timeout=10, what='both services in both rings')
        if backend == 'etcd3':
            wait_for(lambda: services[0]._member_watch.streaming, timeout=5,
                     what='the watch stream')
        # stop() leaves the group first, then waits for its threads: the
        # ring moves while it returns.
        stopping = threading.Thread(target=services[1].stop)
        left = time.monotonic()
        stopping.start()
        wait_for(lambda: services[0].ring.hosts == {'a'}, timeout=10,
                 interval=0.01, what='the survivor\'s ring to move')
        seconds = time.monotonic() - left
        stopping.join()
    finally:
        for service in services:
            service.stop()
    record_property('graceful_leave_to_ring_seconds_%s' % backend,
                    round(seconds, 3))
    assert seconds < LEAVE_BOUNDS[backend]
