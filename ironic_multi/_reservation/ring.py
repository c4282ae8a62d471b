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

"""Which service owns which shard key.

Shard keys go onto a consistent hash ring whose nodes are the hosts of the
live group members, so a member joining or leaving moves about 1/K of the
keys.  The ring is rebuilt from a fresh member list on every refresh: tooz's
Partitioner can miss a member that joins while it starts, for good.

Ownership is a preference that keeps services out of each other's way; the
claim in Ironic is what makes a reservation safe.
"""

from oslo_log import log as logging
from tooz import hashring

from ironic_multi._reservation import membership as membership_mod

LOG = logging.getLogger(__name__)


def _names(keys):
    return ', '.join(sorted(keys)) or '-'


class ShardRing:
    """Shard keys mapped onto the hosts of the live members.

    Ring nodes are hosts, not member ids: a service restarted under the same
    host keeps its keys, even while its crashed predecessor has not expired.

    :param membership: a started :class:`~.membership.Membership` (anything
        with ``member_id`` and ``members()``).
    :param partitions: points of each host on the ring
        (``[ironic_multi]ring_partitions``).
    :param scope: the only shard keys the ring may hold (``[ironic]
        shard``); None: every key there is.
    """

    def __init__(self, membership, partitions, scope=None):
        self._membership = membership
        self._partitions = partitions
        self.scope = scope
        self.host = membership_mod.host_of(membership.member_id)
        self.hosts = frozenset()
        self._ring = None
        self._alone = hashring.HashRing({self.host},
                                        partitions=partitions)
        self._keys = frozenset()
        self._owned = None

    def refresh(self, shard_keys=None):
        """Rebuild the ring from the live members; return the owned keys.

        :param shard_keys: every shard key there is; those in the scope
            are remembered, and used whenever a call gives no keys.
        :raises CoordinationUnavailable: the ring stays as it was, but the
            keys are remembered.
        """
        if shard_keys is not None:
            self._keys = frozenset(filter(self.in_scope, shard_keys))
        hosts = self.live_hosts()
        if hosts != self.hosts:
            if self._ring is not None:
                LOG.info('Shard ring hosts changed: joined %(joined)s, '
                         'left %(left)s; now %(count)d',
                         {'joined': _names(hosts - self.hosts),
                          'left': _names(self.hosts - hosts),
                          'count': len(hosts)})
            self._ring = hashring.HashRing(hosts, partitions=self._partitions)
            self.hosts = hosts
        owned = self.owned()
        if owned != self._owned:
            LOG.info('Host %(host)s owns %(count)d of %(total)d shard keys: '
                     'gained %(gained)s, lost %(lost)s',
                     {'host': self.host, 'count': len(owned),
                      'total': len(self._keys),
                      'gained': _names(owned - (self._owned or set())),
                      'lost': _names((self._owned or set()) - owned)})
        else:
            LOG.debug('Host %(host)s still owns %(count)d of %(total)d '
                      'shard keys with %(hosts)d hosts',
                      {'host': self.host, 'count': len(owned),
                       'total': len(self._keys), 'hosts': len(hosts)})
        self._owned = owned
        return owned

    def live_hosts(self):
        """The hosts of the live members, read from the backend now.

        :raises CoordinationUnavailable: the backend did not answer.
        """
        return frozenset(membership_mod.host_of(m)
                         for m in self._membership.members()
                         if not membership_mod.is_operator(m))

    def in_scope(self, shard_key):
        """Whether the ring may hold ``shard_key``."""
        return self.scope is None or shard_key in self.scope

    def _current(self):
        # No member list yet (the coordination backend has not answered):
        # alone, this host owns every key.  Claims are safe anyway;
        # ownership only spreads the work.
        return self._alone if self._ring is None else self._ring

    def owner(self, shard_key, ignore=()):
        """The host that owns ``shard_key``.

        :param ignore: hosts to leave out, as if they had left the ring
            (the takeover leaves out the hosts Nova reports down); None
            when no host is left.
        """
        found = self._current().get_nodes(shard_key.encode(),
                                          ignore_nodes=set(ignore))
        return next(iter(found), None)

    def successors(self, shard_key):
        """The other hosts, in ring order from ``shard_key``.

        Its owner first (unless that is this host), then the hosts that
        would take it over in turn: where to look when the own shards do
        not do.
        """
        ring, data, order = self._current(), shard_key.encode(), []
        while len(order) < len(ring.nodes):
            # The first host clockwise from the key that is not yet listed.
            order.extend(ring.get_nodes(data, ignore_nodes=order))
        return [host for host in order if host != self.host]

    def owned_by(self, host, shard_keys=None):
        """The keys of ``shard_keys`` (or of the last refresh) ``host`` owns.

        :param host: a ring host (``host_of(member_id)`` of a member).
        """
        keys = self._keys if shard_keys is None else shard_keys
        return frozenset(k for k in keys if self.owner(k) == host)

    def owned(self, shard_keys=None):
        """The keys of ``shard_keys`` (or of the last refresh) owned here."""
        return self.owned_by(self.host, shard_keys)
