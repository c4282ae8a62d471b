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

"""The ready pool: a cache of the nodes of the shards this service owns.

It holds every node of the owned shards (not only the free ones), so that
it answers both "which nodes can a claim take without listing Ironic" and
"how much capacity do my shards have".  A full read replaces it; between
full reads an incremental read fetches only the nodes changed since the
newest change seen, newest first (Ironic bumps ``updated_at`` on every
change a claim or a deploy makes).  Deleted nodes never show up in an
incremental read, hence the periodic full read.
"""

import datetime
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from ironic_multi._reservation.providers.ironic import states

LOG = logging.getLogger(__name__)

# MariaDB keeps whole seconds: look a little further back than the newest
# change seen so that a change in the same second is not missed.
_OVERLAP = datetime.timedelta(seconds=2)


class ReadyPool(object):
    """Nodes of the owned shards, refreshed from Ironic."""

    def __init__(self, read_full, read_changed, shard_of,
                 full_interval):
        """Build an empty pool; :meth:`refresh` fills it.

        :param read_full: ``f(shards) -> [node]``: every node of shards.
        :param read_changed: ``f(shards) -> iterator of nodes``, newest
            change first, each with ``updated_at``; consumed lazily.
        :param shard_of: ``f(node) -> shard key``.
        :param full_interval: seconds between full reads.
        """
        self._read_full = read_full
        self._read_changed = read_changed
        self._shard_of = shard_of
        self._full_interval = full_interval
        self._lock = threading.Lock()
        self._nodes = {}
        self._shards = frozenset()
        self._newest_change = None
        self._last_full = None

    def refresh(self, shards):
        """Bring the pool of ``shards`` up to date.

        :returns: the number of node records read from Ironic.
        """
        shards = frozenset(shards)
        gained = shards - self._shards
        full_due = (self._last_full is None
                    or time.monotonic() - self._last_full
                    >= self._full_interval)
        if full_due or not shards:
            return self._refresh_full(shards)
        read = 0
        if gained:
            read += self._merge_full(gained)
        with self._lock:
            # Nodes of shards given away are another service's now.
            self._nodes = {u: n for u, n in self._nodes.items()
                           if self._shard_of(n) in shards}
            self._shards = shards
        return read + self._refresh_changed(shards)

    def _refresh_full(self, shards):
        if not shards:
            with self._lock:
                self._nodes, self._shards = {}, shards
                self._last_full = time.monotonic()
            return 0
        # Ironic cannot return updated_at with ``fields``: learn the newest
        # change first (one record), so every later change is newer.
        read, newest = 0, None
        for node in self._read_changed(shards):
            read += 1
            newest = _parse_time(node.get('updated_at'))
            if newest is not None:
                break
        nodes = self._read_full(shards)
        with self._lock:
            self._nodes = {n['uuid']: n for n in nodes}
            self._shards = shards
            self._last_full = time.monotonic()
            self._newest_change = newest
        LOG.debug('Ready pool: full read of %(count)d node(s) in '
                  '%(shards)d shard(s)',
                  {'count': len(nodes), 'shards': len(shards)})
        return read + len(nodes)

    def _merge_full(self, shards):
        nodes = self._read_full(shards)
        with self._lock:
            self._nodes.update((n['uuid'], n) for n in nodes)
        return len(nodes)

    def _refresh_changed(self, shards):
        since = self._newest_change
        if since is None:
            # No change ever seen (no node was ever updated): read fully.
            return self._refresh_full(shards)
        horizon = since - _OVERLAP
        read, newest = 0, since
        for node in self._read_changed(shards):
            read += 1
            changed = _parse_time(node.get('updated_at'))
            if changed is None:
                # Never updated since creation: nothing new to learn.
                continue
            if changed < horizon:
                break
            newest = max(newest, changed)
            if self._shard_of(node) in shards:
                with self._lock:
                    self._nodes[node['uuid']] = node
        self._newest_change = newest
        return read

    def flush(self):
        """Forget everything; the next refresh is a full read."""
        with self._lock:
            self._nodes = {}
            self._shards = frozenset()
            self._last_full = None
            self._newest_change = None

    def nodes(self, shards=None):
        with self._lock:
            nodes = list(self._nodes.values())
        if shards is None:
            return nodes
        return [n for n in nodes if self._shard_of(n) in shards]

    def ready(self, shards=None):
        return [n for n in self.nodes(shards) if states.is_ready(n)]

    def mark_taken(self, node_uuid, instance_uuid):
        """A claim took (or lost) a node: stop offering it."""
        with self._lock:
            node = self._nodes.get(node_uuid)
            if node is not None:
                self._nodes[node_uuid] = dict(node,
                                              instance_uuid=instance_uuid)

    def forget(self, node_uuid):
        """Forget a changed node until a refresh reads it again.

        Every change bumps the node's ``updated_at``: the next incremental
        refresh brings it back as it is then.
        """
        with self._lock:
            self._nodes.pop(node_uuid, None)

    def describe(self):
        """Counts and freshness, for logs and the operator CLI."""
        with self._lock:
            nodes = list(self._nodes.values())
        return {
            'shards': len(self._shards),
            'nodes': len(nodes),
            'ready': sum(1 for n in nodes if states.is_ready(n)),
            'full_read_age': (None if self._last_full is None
                              else round(time.monotonic() - self._last_full,
                                         1)),
            'newest_change': (self._newest_change.isoformat()
                              if self._newest_change else None),
        }


def _parse_time(value):
    if not value:
        return None
    return timeutils.normalize_time(timeutils.parse_isotime(value))
