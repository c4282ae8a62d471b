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
last one (Ironic bumps ``updated_at`` on every change a claim or a deploy
makes).  Deleted nodes never show up in an incremental read, hence the
periodic full read.

An incremental read lists nodes by ``updated_at``, oldest first, after a
*mark*: a node whose ``updated_at`` was seen.  Not newest first from the
top: nodes never updated (a null ``updated_at``, as after a database
import) sort first there on PostgreSQL, every pass would read them all,
and Ironic pages past a null marker on ``id`` alone, skipping changes.
After a mark, a listing holds no null.  Ironic compares with the mark's
``updated_at`` as it is when asked, so a mark that changed since hides
the changes in between: each mark used is read back after the listing,
and one that moved makes the pool try an older mark, then read fully.

A listing that spans pages can miss a change: one committed while it
ran, stamped in a second it had already passed (MariaDB keeps whole
seconds; the stamp comes from the clock of whichever Ironic host wrote
it).  So a new mark is always a change stamped before the listing's
*horizon*: when the listing started, by Ironic's clock, less an
allowance for clock skew (``pool_clock_skew``).  Whatever a listing
missed is stamped after its horizon, hence after the next mark: the next
listing has it.

A changed node that left the owned shards, or this service's conductor
group, leaves the pool: the incremental listing covers every conductor
group for that reason.
"""

import collections
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from ironic_multi._reservation.providers.ironic import states

LOG = logging.getLogger(__name__)

# Marks kept, newest first: the older ones serve when a newer one moved.
_MARKS = 3

#: A node and its ``updated_at`` (Ironic's text) as last seen.
Mark = collections.namedtuple('Mark', ['uuid', 'updated_at'])


class MarkMoved(Exception):
    """A mark changed or vanished: a listing after it may have gaps.

    :param read: the node records read before that was known.
    """

    def __init__(self, mark, read):
        super().__init__(mark.uuid)
        self.mark, self.read = mark, read


class ReadyPool(object):
    """Nodes of the owned shards, refreshed from Ironic."""

    def __init__(self, read_full, read_changed, read_recent, shard_of,
                 full_interval, keep=None):
        """Build an empty pool; :meth:`refresh` fills it.

        :param read_full: ``f(shards) -> [node]``: every node of shards
            that ``keep`` accepts.
        :param read_changed: ``f(mark) -> ([node], records read,
            horizon)``: every node changed after the :class:`Mark`, oldest
            first, each with ``updated_at``, and the listing's horizon (a
            naive UTC datetime): every change it missed is stamped at or
            after it.  Raises :class:`MarkMoved`.
        :param read_recent: ``f() -> ([node], horizon)``: some nodes with
            their ``updated_at``, among them recent changes, for a first
            mark, and the horizon of that listing.
        :param shard_of: ``f(node) -> shard key``.
        :param full_interval: seconds between full reads.
        :param keep: ``f(node) -> bool``: whether the node is one this
            service may reserve, whatever its shard (its conductor group);
            every node by default.
        """
        self._read_full = read_full
        self._read_changed = read_changed
        self._read_recent = read_recent
        self._shard_of = shard_of
        self._keep = keep or (lambda node: True)
        self._full_interval = full_interval
        self._lock = threading.Lock()
        self._nodes = _Nodes()
        self._shards = frozenset()
        self._newest_change = None
        self._marks = []
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
            if self._shards - shards:
                # Nodes of shards given away are another service's now;
                # the index is rebuilt only then, not at every refresh.
                self._nodes = _Nodes(n for n in self._nodes.values()
                                     if self._shard_of(n) in shards)
            self._shards = shards
        return read + self._refresh_changed(shards)

    def _refresh_full(self, shards):
        if not shards:
            with self._lock:
                self._nodes, self._shards = _Nodes(), shards
                self._last_full = time.monotonic()
            return 0
        read = 0
        if not self._marks:
            # Marked before the full read: changes during it come next.
            recent, horizon = self._read_recent()
            read += len(recent)
            self._remember(recent, horizon)
        nodes = self._read_full(shards)
        with self._lock:
            self._nodes = _Nodes(nodes)
            self._shards = shards
            self._last_full = time.monotonic()
        LOG.debug('Ready pool: full read of %(count)d node(s) in '
                  '%(shards)d shard(s)',
                  {'count': len(nodes), 'shards': len(shards)})
        return read + len(nodes)

    def _merge_full(self, shards):
        nodes = self._read_full(shards)
        with self._lock:
            for node in nodes:
                self._nodes.put(node)
        return len(nodes)

    def _refresh_changed(self, shards):
        read = 0
        for mark in list(self._marks):
            try:
                changed, records, horizon = self._read_changed(mark)
            except MarkMoved as e:
                read += e.read
                LOG.debug('Ready pool: node %s, a mark of the incremental '
                          'read, changed; trying an older one', mark.uuid)
                self._marks.remove(mark)
                continue
            with self._lock:
                for node in changed:
                    if self._shard_of(node) in shards and self._keep(node):
                        self._nodes.put(node)
                    else:
                        # Moved to another shard or conductor group: the
                        # copy here is stale, and no longer ours.
                        self._nodes.pop(node['uuid'])
            self._remember(changed, horizon)
            return read + records
        # No mark (nothing ever changed, or every mark moved): a full read
        # is the only one that misses nothing.
        return read + self._refresh_full(shards)

    def _remember(self, nodes, horizon):
        """Learn the newest change and a mark from a listing of ``nodes``.

        A mark is a change stamped before the listing's ``horizon``, in
        whole seconds: a change stamped in the horizon's second, truncated
        by MariaDB, is listed after it.  Without one, the marks stay as
        they are; without any, the next refresh reads in full.
        """
        dated = [(changed, Mark(n['uuid'], n['updated_at']))
                 for n in nodes
                 for changed in [_parse_time(n.get('updated_at'))]
                 if changed is not None]
        if not dated:
            return
        newest = max(changed for changed, _mark in dated)
        if self._newest_change is None or newest > self._newest_change:
            self._newest_change = newest
        limit = horizon.replace(microsecond=0)
        candidates = [(changed, mark) for changed, mark in dated
                      if changed < limit]
        if not candidates:
            return
        # One new mark a pass: older marks, of other passes, are less
        # likely to have moved when a newer one has.
        _changed, mark = max(candidates)
        self._marks = [mark] + [m for m in self._marks
                                if m.uuid != mark.uuid][:_MARKS - 1]

    def flush(self):
        """Forget every node; the next refresh is a full read.

        The marks stay: they are places in Ironic's changes, not state.
        """
        with self._lock:
            self._nodes = _Nodes()
            self._shards = frozenset()
            self._last_full = None

    def nodes(self, shards=None, resource_classes=None):
        """The nodes of ``shards``, of ``resource_classes`` (None: all)."""
        with self._lock:
            nodes = self._nodes.values(resource_classes)
            # Every node here is of the pool's shards: asking for all of
            # them (a claim's usual case) needs no look at each node.
            every_shard = shards is None or self._shards <= set(shards)
        if every_shard:
            return nodes
        return [n for n in nodes if self._shard_of(n) in shards]

    def resource_classes(self):
        """The resource classes of the pool's nodes, as Ironic names them."""
        with self._lock:
            return self._nodes.resource_classes()

    def mark_taken(self, node_uuid, instance_uuid):
        """A claim took (or lost) a node: stop offering it."""
        with self._lock:
            node = self._nodes.get(node_uuid)
            if node is not None:
                self._nodes.put(dict(node, instance_uuid=instance_uuid))

    def forget(self, node_uuid):
        """Forget a changed node until a refresh reads it again.

        Every change bumps the node's ``updated_at``: the next incremental
        refresh brings it back as it is then.
        """
        with self._lock:
            self._nodes.pop(node_uuid)

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


class _Nodes(object):
    """The pool's nodes by UUID, and by resource class.

    A claim asks for one resource class: at 10^5 nodes, looking at every
    node of the pool was most of a claim's time.
    """

    def __init__(self, nodes=()):
        self._all = {}
        self._classes = collections.defaultdict(dict)
        for node in nodes:
            self.put(node)

    def get(self, uuid):
        return self._all.get(uuid)

    def put(self, node):
        self.pop(node['uuid'])
        self._all[node['uuid']] = node
        self._classes[node.get('resource_class')][node['uuid']] = node

    def pop(self, uuid):
        """Drop the node if it is here."""
        node = self._all.pop(uuid, None)
        if node is None:
            return
        same = self._classes[node.get('resource_class')]
        del same[uuid]
        if not same:
            del self._classes[node.get('resource_class')]

    def values(self, resource_classes=None):
        if resource_classes is None:
            return list(self._all.values())
        return [node for name in resource_classes
                for node in self._classes.get(name, {}).values()]

    def resource_classes(self):
        return list(self._classes)


def _parse_time(value):
    if not value:
        return None
    return timeutils.normalize_time(timeutils.parse_isotime(value))
