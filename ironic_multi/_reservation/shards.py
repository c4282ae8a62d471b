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

"""Shard keys: the node's own, or a stable hash of its UUID.

Providers, the ring and the operator CLI compute keys here and nowhere
else, so that every host and every tool agrees on them.
"""

import hashlib

# Virtual keys of nodes without a real one: ``ironic-multi-<n>``.
FALLBACK_PREFIX = 'ironic-multi-'


class ShardKeys:
    """Shard keys with ``count`` fallback keys for unsharded nodes.

    :param count: ``[ironic_multi]fallback_shard_count``.
    """

    def __init__(self, count):
        self.count = count
        self.fallback = frozenset(fallback_name(i) for i in range(count))

    def of(self, node):
        """The shard key of a node dict: its ``shard``, else a fallback."""
        return node.get('shard') or self.fallback_of(node['uuid'])

    def fallback_of(self, node_uuid):
        """The fallback key of a node: a hash of its UUID.

        The same on every host and Python version (unlike ``hash()``), so
        the operator CLI can write it to Ironic as the node's real key.
        """
        normalized = str(node_uuid).strip().lower().encode()
        digest = hashlib.sha256(normalized).digest()
        return fallback_name(int.from_bytes(digest[:8], 'big') % self.count)

    def fallback_among(self, keys):
        """The keys of ``keys`` that unsharded nodes may hash to.

        Nodes may also carry such a key for real (the operator CLI writes
        fallback keys to Ironic), so a shard named like this holds both.
        """
        return frozenset(keys) & self.fallback


def fallback_name(index):
    """Name of the fallback shard key number ``index``."""
    return '%s%d' % (FALLBACK_PREFIX, index)
