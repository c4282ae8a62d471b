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

"""The printed report of a chaos run (rich tables)."""

import collections

from rich import console as rich_console
from rich import table as rich_table

from ironic_multi.testing.chaos import invariants
from ironic_multi.testing.chaos import logscan
from ironic_multi.testing.chaos import workload

MAX_VIOLATIONS = 30


def fault_counts(run):
    """``{kind: {'count', 'seconds', 'caught', 'targets'}}``."""
    counts = collections.OrderedDict()
    for fault in sorted(run['faults'], key=lambda f: f['kind']):
        entry = counts.setdefault(fault['kind'], {
            'count': 0, 'seconds': 0.0, 'caught': 0, 'targets': set()})
        entry['count'] += 1
        entry['seconds'] += (fault['end'] or fault['start']) - fault['start']
        entry['caught'] += bool(fault.get('caught'))
        if fault.get('target'):
            entry['targets'].add(fault['target'])
    return counts


def operation_counts(run):
    """``{kind: Counter(outcome)}``."""
    counts = collections.defaultdict(collections.Counter)
    for operation in run['operations']:
        counts[operation['kind']][operation['outcome']] += 1
    return counts


def print_report(result, console=None):
    console = console or rich_console.Console(width=110)
    run = result.history.as_dict()
    cloud = getattr(result.history, 'cloud', None) or {}
    console.print('Chaos run, seed %s: cloud started in %s s, %s MiB'
                  % (run['seed'], cloud.get('start_seconds'),
                     cloud.get('rss_mib')))
    looks = getattr(result.history, 'looks', None)
    if looks:
        console.print('Looks at the cloud: %(good)d good, %(failed)d failed;'
                      ' longest without a good look %(longest_blind)s s'
                      % looks)

    table = rich_table.Table(title='Faults injected')
    for column in ('kind', 'count', 'seconds', 'phase caught', 'targets'):
        table.add_column(column)
    for kind, entry in fault_counts(run).items():
        table.add_row(kind, str(entry['count']), '%.0f' % entry['seconds'],
                      str(entry['caught']) if kind.startswith('kill-')
                      else '', ', '.join(sorted(entry['targets'])))
    console.print(table)

    table = rich_table.Table(title='Operations and their outcomes')
    table.add_column('operation')
    for outcome in workload.OUTCOMES:
        table.add_column(outcome, justify='right')
    for kind, outcomes in sorted(operation_counts(run).items()):
        table.add_row(kind, *[str(outcomes.get(o, 0))
                              for o in workload.OUTCOMES])
    console.print(table)

    table = rich_table.Table(title='Recovery times')
    for column in ('what', 'seconds', 'detail'):
        table.add_column(column)
    for recovery in run['recoveries']:
        table.add_row(recovery['what'], '%.1f' % recovery['seconds'],
                      recovery['detail'])
    console.print(table)

    table = rich_table.Table(title='ERROR records in Nova\'s logs')
    for column in ('class', 'count', 'most frequent'):
        table.add_column(column)
    for kind in (logscan.TYPED, logscan.INFRASTRUCTURE, logscan.UNTYPED):
        counts = result.errors.get(kind, collections.Counter())
        table.add_row(kind, str(sum(counts.values())), ', '.join(
            '%s (%d)' % item for item in counts.most_common(4)))
    console.print(table)

    if run['respawns']:
        console.print('The supervisor started again, as an init system '
                      'would: %s' % ', '.join(
                          '%s at %.0f s' % (r['service'], r['t'])
                          for r in run['respawns']), highlight=False)
    for excused in run['excused']:
        console.print('Not counted: %s: %s\n  %s' % (
            excused['subject'], excused['why'], excused['evidence']),
            highlight=False)

    found = collections.Counter(v['invariant'] for v in run['violations'])
    table = rich_table.Table(title='Invariants')
    table.add_column('invariant')
    table.add_column('violations', justify='right')
    table.add_column('proven to catch one by')
    for name in invariants.INVARIANTS:
        table.add_row(name, str(found.get(name, 0)), '\n'.join(
            test.rsplit('/', 1)[-1] for test in invariants.PROVEN_BY[name]))
    console.print(table)
    for violation in run['violations'][:MAX_VIOLATIONS]:
        console.print('[red]violation[/red] at %.1f s, %s: %s' % (
            violation['t'], violation['invariant'], violation['detail']),
            highlight=False)
    console.print('%s  (timeline %s, history %s)' % (
        'PASSED' if result.passed else 'FAILED', result.png, result.json))
