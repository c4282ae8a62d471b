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

"""``migrate plan``, ``apply`` and ``rollback``: the move from Nova's
in-tree driver, and back."""

from ironic_multi._manage import base
from ironic_multi._manage import instances


def _ask(command, op, host, parsed_args, args=None, failed='failed'):
    """The result of the one service ``host`` asked to do ``op``.

    :param failed: what the error line says ``host`` could not do.
    :raises ManageError: no answer in time, or the service's error.
    """
    timeout = command.sources.timeout(parsed_args)
    answers = command.sources.ask(op, args, host=host, expected=[host],
                                  timeout=timeout)
    if host not in answers:
        raise base.ManageError('%s did not answer within %s s'
                               % (host, timeout))
    answer = answers[host]
    if 'error' in answer:
        raise base.ManageError('%s %s: %s' % (host, failed, answer['error']))
    return answer['result']


class MigratePlan(base.Lister):
    """Show what moving from Nova's in-tree Ironic driver would take.

    Read-only.  A live service of this driver reads Nova's in-tree
    compute nodes (one per Ironic node), the instance on each, its
    placement allocation and its node, and says for each instance the
    service that would take it over, or every reason it would be
    refused.  In-tree compute nodes without an instance are listed with
    Instance "-": they would only be removed.  Exit code 1 when any
    instance would be refused.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--host', metavar='HOST',
            help='The live service that reads the plan (default: the '
                 'first live one; every service reads the same).')
        base.add_timeout(parser)
        return parser

    def take_action(self, parsed_args):
        host = parsed_args.host or self.sources.live_hosts()[0]
        plan = _ask(self, 'migrate-plan', host, parsed_args,
                    failed='could not read the plan')
        rows = []
        for entry in plan['instances']:
            rows.append((entry['from'], entry['node'], entry['uuid'],
                         base.Maybe(entry['name']), base.Maybe(entry['to']),
                         base.Counters(entry['resources']),
                         'refused' if entry['refused'] else 'moves',
                         base.Listing(entry['refused'])))
        holding = {entry['node'] for entry in plan['instances']}
        for node in plan['compute_nodes']:
            if node['uuid'] not in holding and not node['instances']:
                rows.append((node['host'], node['uuid'], base.Maybe(None),
                             base.Maybe(None), base.Maybe(None),
                             base.Counters({}), 'removed',
                             base.Listing([])))
        if any(entry['refused'] for entry in plan['instances']):
            self.exit_code = 1
        return (('From', 'Node', 'Instance', 'Name', 'To', 'Resources',
                 'Outcome', 'Reasons'), rows)


class MigrateApply(instances.InstancesAdopt):
    """Move the servers of a host of Nova's in-tree Ironic driver here.

    Stop the in-tree nova-compute of that host and force it down first.
    A live service of this driver then adopts every server that "migrate
    plan" finds nothing against: its placement allocation moves from its
    node's provider to the service's, its node gets this group's mark and
    the service's host mark, and Nova's instance its host and node.  The
    node is otherwise left as it is: no power action, no deploy, no tear
    down.  Run it again after a failure: what moved stays moved.  Shows
    the answering service, the servers it adopted and those it skipped,
    with why.
    """

    OP = 'migrate-apply'
    FROM_HELP = ('The host of the in-tree nova-compute service whose '
                 'servers to move (stopped and forced down).')


class MigrateRollback(base.ShowOne):
    """Hand the servers of a host of this driver back to the in-tree driver.

    The reverse of "migrate apply", while Nova's in-tree Ironic driver can
    still start.  Disable the host's nova-compute service first, so that
    nothing new is built there.  The live service of --from then puts
    back, for each of its servers, the in-tree compute node and resource
    provider of its Ironic node (on --to, by default the same host), moves
    its placement allocation there, takes this group's mark off the node
    and names --to in Nova's instance.  The node is otherwise left as it
    is: no power action, no tear down.  Run it again after a failure:
    what moved stays moved.  Exit code 1 while any server remains on the
    host; stop its nova-compute and start the in-tree one only at 0.
    With --dry-run nothing is written: it says which servers would go
    and why the others would stay, and exits 0.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--from', dest='source', required=True, metavar='HOST',
            help='The live compute service of this driver whose servers go '
                 'back.')
        parser.add_argument(
            '--to', dest='target', metavar='HOST',
            help='The host of the in-tree nova-compute that takes them '
                 '(default: --from, a switch back in place).')
        parser.add_argument(
            '--dry-run', action='store_true',
            help='Write nothing; show which servers would go back and why '
                 'the others would stay.')
        base.add_timeout(parser)
        return parser

    def take_action(self, parsed_args):
        source = parsed_args.source
        if source not in self.sources.live_hosts():
            raise base.ManageError('%s is not a live compute service of '
                                   'this driver' % source)
        result = _ask(self, 'migrate-rollback', source, parsed_args,
                      args={'to': parsed_args.target,
                            'dry_run': parsed_args.dry_run},
                      failed='could not hand its servers back')
        if result['remaining'] and not result['dry_run']:
            self.exit_code = 1
        fields = (('Host', result['host']), ('To', result['to']),
                  ('Dry Run', result['dry_run']),
                  ('Rolled Back', base.Listing(result['rolled_back'])),
                  ('Skipped', base.Counters(result['skipped'])),
                  ('Remaining', result['remaining']),
                  ('Seconds', result['seconds']))
        return tuple(f[0] for f in fields), tuple(f[1] for f in fields)
