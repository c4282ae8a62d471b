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

"""``pool show`` and ``pool flush``: the ready pools."""

import time

from ironic_multi._manage import base
from ironic_multi._reservation import lifecycle

_STATES = {lifecycle.State.CLAIMED: 'claimed',
           lifecycle.State.DEPLOYING: 'deploying',
           lifecycle.State.ACTIVE: 'active'}
_COUNTS = ('nodes', 'ready', 'claimed', 'deploying', 'active',
           'quarantined')


def _sort_key(key):
    shard, resource_class = key
    return (str(shard), str(resource_class))


class PoolShow(base.Lister):
    """Show what every shard holds, per resource class, and pool ages.

    The node provider is read in full, every shard: Nodes counts them all,
    Ready those a claim could take now, Claimed, Deploying and Active the
    reservations in those states, Quarantined the nodes the housekeeper
    took out of service.  Owner is the live service whose ring owns the
    shard, and Pool Age how long ago that service last read its ready pool
    in full (seconds; "-" when its provider keeps no pool or nobody owns
    the shard).
    """

    def take_action(self, parsed_args):
        provider = self.sources.provider(full=True)
        nodes = provider.nodes(None)
        counts = {}

        def count(key, what, amount=1):
            entry = counts.setdefault(key, dict.fromkeys(_COUNTS, 0))
            entry[what] += amount

        by_uuid = {}
        for node in nodes:
            key = (provider.shard_of(node), node.get('resource_class'))
            by_uuid[node['uuid']] = key
            count(key, 'nodes')
        for shard, classes in provider.capacity(None).items():
            for resource_class, numbers in classes.items():
                count((shard, resource_class), 'ready',
                      numbers.get('free', 0))
        for reservation in provider.reservations():
            what = _STATES.get(reservation.state)
            if reservation.node_uuid is not None and what is not None:
                count((reservation.shard, reservation.resource_class), what)
        for troubled in provider.troubled_nodes():
            if troubled.quarantined_at and troubled.node_uuid in by_uuid:
                count(by_uuid[troubled.node_uuid], 'quarantined')

        shard_ring = self.sources.ring(provider.shard_keys())
        services = self.sources.services()
        payloads = self.sources.payloads_by_host(services)
        now = time.time()
        rows = []
        for key in sorted(counts, key=_sort_key):
            shard, resource_class = key
            owner = (shard_ring.owner(shard)
                     if shard_ring.hosts and shard_ring.in_scope(shard)
                     else None)
            rows.append((shard, resource_class)
                        + tuple(counts[key][what] for what in _COUNTS)
                        + (base.Maybe(owner), base.Maybe(base.pool_age(
                            payloads.get(owner) or {}, now))))
        return (('Shard', 'Resource Class', 'Nodes', 'Ready', 'Claimed',
                 'Deploying', 'Active', 'Quarantined', 'Owner',
                 'Pool Age'), rows)


class PoolFlush(base.Lister):
    """Make every live service drop its ready pool and read it anew.

    Every service reads its owned shards from the node provider in full,
    all at the same time: on a large cloud, a load on Ironic.  Asks for
    confirmation on the terminal unless --yes; without a terminal, --yes
    is required.  Each service answers once its pool is read again, with
    the number of node records read.  Exits non-zero unless every live
    service answered within the timeout; a service that did not is listed
    as "no answer".
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        base.add_timeout(parser)
        base.add_yes(parser, 'Flush')
        return parser

    def take_action(self, parsed_args):
        hosts = self.sources.live_hosts()
        if not parsed_args.yes:
            self.confirm(
                'Flush the ready pools of %d live service(s) (%s)? Each '
                'reads its shards from the node provider in full, all at '
                'once.' % (len(hosts), ', '.join(hosts) or '-'),
                'Not flushing the ready pools')
        timeout = self.sources.timeout(parsed_args)
        answers = self.sources.ask('flush', expected=hosts, timeout=timeout)
        if not answers:
            raise base.ManageError('No live service answered within %s s'
                                   % timeout)
        rows = []
        for host in hosts:
            answer = answers.get(host)
            if answer is None:
                row = ('no answer', None,
                       'no answer within %s s' % timeout)
            elif 'error' in answer:
                row = ('failed', None, answer['error'])
            else:
                row = ('flushed', (answer.get('result') or {}).get('read'),
                       None)
            if row[0] != 'flushed':
                self.exit_code = 1
            rows.append((host, row[0], base.Maybe(row[1]),
                         base.Maybe(row[2])))
        return ('Host', 'Status', 'Nodes Read', 'Error'), rows
