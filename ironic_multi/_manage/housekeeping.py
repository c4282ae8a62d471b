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

"""``housekeeping run``: a housekeeping pass by the leader, now."""

from cliff import columns

from ironic_multi._manage import base


class _Spares(columns.FormattableColumn):
    """``{resource class: {'free': n, 'target': n}}``."""

    def human_readable(self):
        return '\n'.join(
            '%s: %s free, target %s' % (rc, short.get('free'),
                                        short.get('target'))
            for rc, short in sorted(self._value.items())) or '-'


def _line(action):
    if action.get('deferred'):
        outcome = 'left for the next pass'
        if action.get('error'):
            outcome += ': %s' % action['error']
    elif action.get('error'):
        outcome = 'failed: %s' % action['error']
    else:
        outcome = 'done' if action.get('done') else 'not done'
    return '%s, node %s, instance %s: %s (%s)' % (
        action.get('kind'), action.get('node_uuid') or '-',
        action.get('instance_uuid') or '-', action.get('reason'), outcome)


class HousekeepingRun(base.ShowOne):
    """Have the housekeeping leader run a pass now, and show its report.

    Only the service that leads housekeeping answers (another one takes
    the lead if nobody holds it).  Actions lists what the pass did or,
    with --dry-run, would do; Foreign counts the reservations without this
    group's ownership mark, which housekeeping never touches; Skipped the
    rules that did not run, and why (Nova could not be asked); Stopped why
    the pass stopped early (its time bound, or a doubt about its
    leadership), what it left being listed as left for the next pass;
    Out Of Service the nodes that failed too often and that the full
    quarantine ([ironic_multi]max_preserved) has no room for: claims skip
    them by their failure count; Short Of Spares the resource classes
    below their [ironic_multi]spare_targets.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--dry-run', action='store_true',
            help='Only report what the pass would do; change nothing.')
        base.add_timeout(parser)
        return parser

    def take_action(self, parsed_args):
        self.sources.live_hosts()
        timeout = self.sources.timeout(parsed_args)
        answers = self.sources.ask(
            'housekeeping', {'dry_run': parsed_args.dry_run},
            timeout=timeout)
        if not answers:
            raise base.ManageError('No live service answered within %s s '
                                   '(none leads housekeeping?)' % timeout)
        host, answer = sorted(answers.items())[0]
        if 'error' in answer:
            raise base.ManageError('Housekeeping on %s failed: %s'
                                   % (host, answer['error']))
        report = answer.get('result') or {}
        actions = report.get('actions') or []
        skipped = report.get('skipped') or {}
        return (('Leader', 'Dry Run', 'Actions', 'Foreign', 'Skipped',
                 'Stopped', 'Out Of Service', 'Short Of Spares', 'Seconds'),
                (host, base.YesNo(parsed_args.dry_run),
                 base.Lines(actions, [_line(a) for a in actions]),
                 base.Maybe(report.get('foreign')),
                 base.Counters(skipped),
                 base.Maybe(report.get('stopped')),
                 base.Listing(report.get('out_of_service') or []),
                 _Spares(report.get('short_of_spares') or {}),
                 base.Maybe(report.get('seconds'))))
