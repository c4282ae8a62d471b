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

"""``shards assign``: stable shard keys for nodes that have none."""

import logging

from ironic_multi._manage import base
from ironic_multi._manage import sources
from ironic_multi._reservation.providers import base as providers_base
from ironic_multi import conf as im_conf

LOG = logging.getLogger(sources.NAME)


class ShardsAssign(base.Lister):
    """Give the nodes without a shard key a stable one.

    A node's key is a stable hash of its UUID into S keys: with S the
    [ironic_multi]fallback_shard_count of the services, the very key they
    already place the node under, so no node changes owner.  Each node
    given a key is one write to the node provider (a PATCH in Ironic).
    Only this coordination group's nodes: a node that an instance holds
    without the group's ownership mark (another deployer's), or one of
    another conductor group, is left alone and counted on standard
    error.
    Lists each node and its key; try --dry-run first.  Asks for
    confirmation on the terminal unless --dry-run or --yes; without a
    terminal, --yes is required.  Only node providers that can write shard
    keys (ironic) support it.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--count', type=base.positive_int, metavar='S',
            help='How many shard keys to spread the nodes over (default: '
                 '[ironic_multi]fallback_shard_count, with which no node '
                 'changes owner).')
        parser.add_argument(
            '--dry-run', action='store_true',
            help='Only list the nodes and the keys they would get; change '
                 'nothing.')
        base.add_yes(parser, 'Assign')
        return parser

    def take_action(self, parsed_args):
        scope = im_conf.shard_scope(self.sources.conf)
        if scope:
            raise base.ManageError(
                'The services serve only the nodes of [ironic] shard %s: '
                'keys given to nodes without one would not bring them in. '
                'Set the shard of those nodes in Ironic instead, or remove '
                '[ironic] shard from the services\' configuration'
                % ', '.join(sorted(scope)))
        provider = self.sources.provider()
        provider.require(providers_base.Feature.SHARD_ASSIGNMENT)
        configured = self.sources.opts.fallback_shard_count
        count = parsed_args.count or configured
        if count != configured:
            LOG.warning('%(count)d shard keys instead of the %(configured)d '
                        'of [ironic_multi]fallback_shard_count: the nodes '
                        'given keys may change owner',
                        {'count': count, 'configured': configured})
        if not (parsed_args.dry_run or parsed_args.yes):
            planned, skipped = provider.assign_shards(count, dry_run=True)
            if not planned:
                self._say_skipped(skipped, provider.group)
                return self._rows({}, 'assigned')
            self.confirm(
                'Give %d node(s) without a shard key one of %d keys? Each '
                'is a write to the node.' % (len(planned), count),
                'Not assigning shard keys')
        assigned, skipped = provider.assign_shards(
            count, dry_run=parsed_args.dry_run)
        self._say_skipped(skipped, provider.group)
        return self._rows(assigned, 'would assign' if parsed_args.dry_run
                          else 'assigned')

    def _say_skipped(self, skipped, group):
        if skipped:
            self.app.stderr.write(
                '%d node(s) left alone, not group %s\'s to change: held by '
                'an instance without its mark, of another conductor group, '
                'or given a key meanwhile\n' % (len(skipped), group))

    @staticmethod
    def _rows(assigned, status):
        return (('Node', 'Shard Key', 'Status'),
                [(node, key, status)
                 for node, key in sorted(assigned.items())])
