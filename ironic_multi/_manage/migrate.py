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

"""``migrate plan`` and ``apply``: the move from Nova's in-tree driver."""

from ironic_multi._manage import base
from ironic_multi._manage import instances


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
        timeout = self.sources.timeout(parsed_args)
        answers = self.sources.ask('migrate-plan', host=host,
                                   expected=[host], timeout=timeout)
        if host not in answers:
            raise base.ManageError('%s did not answer within %s s'
                                   % (host, timeout))
        answer = answers[host]
        if 'error' in answer:
            raise base.ManageError('%s could not read the plan: %s'
                                   % (host, answer['error']))
        plan = answer['result']
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
