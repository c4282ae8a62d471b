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

"""``ring show``: the live services and the shard keys each owns."""

import time

from ironic_multi._manage import base


class RingShow(base.Lister):
    """Show the live services of the ring and the shard keys they own.

    Ownership is computed as the services compute it: a hash ring over
    the hosts of the live members and the node provider's shard keys.
    Heartbeat Age is how long ago the service last refreshed (seconds);
    Nodes counts the nodes of its shard keys.  The table shows the first
    keys, -f json all of them.
    """

    def take_action(self, parsed_args):
        every = self.sources.provider().shard_keys()
        keys = {key: every[key] for key in self.sources.in_scope(every)}
        shard_ring = self.sources.ring(keys)
        now = time.time()
        rows = []
        for service in self.sources.services():
            owned = sorted(shard_ring.owned_by(service.host, keys))
            rows.append((
                service.host, service.member_id,
                base.Maybe(service.age(now)), len(owned),
                sum(keys[key] for key in owned),
                base.YesNo(service.payload.get('leads')),
                base.Listing(owned)))
        return (('Host', 'Member', 'Heartbeat Age', 'Shard Count', 'Nodes',
                 'Leader', 'Shard Keys'), rows)
