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


"""The final report: rich tables over the scenario's results."""

import collections
import re

from rich import box
from rich import table as rich_table

from ironic_multi.testing import checks

_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')
_OK = '[green]✓[/green]'
_WRONG = '[bold red]✗[/bold red]'


def _table(title, *columns, **kwargs):
    table = rich_table.Table(title=title, title_justify='left',
                             title_style='bold', box=box.SIMPLE_HEAD,
                             **kwargs)
    for column in columns:
        if isinstance(column, tuple):
            table.add_column(column[0], justify=column[1])
        else:
            table.add_column(column)
    return table


def _seconds(value):
    return '-' if value is None else '%.1f s' % value


def summarize(results, servers):
    """Figures derived from the server records, added to ``results``."""
    computes = collections.OrderedDict()
    for host in results['hosts']:
        computes[host] = collections.Counter()
    reschedules = collections.Counter()
    for record in servers:
        attempts = record.get('attempts') or []
        # Each failed attempt on a compute went back to the conductor for
        # another host: to a build elsewhere, or (ERROR) to no host left
        # with room in placement.
        failed = attempts if record.get('placed_on') is None else (
            attempts[:-1])
        record['reschedules'] = len(failed)
        if failed:
            reschedules['servers'] += 1
            reschedules['to another compute'] += len(attempts) - 1
            reschedules['to no host'] += len(failed) - (len(attempts) - 1)
        for host in failed:
            computes.setdefault(host, collections.Counter())['failed'] += 1
        placed = record.get('placed_on')
        if placed:
            computes.setdefault(placed, collections.Counter())[
                'wave %d' % record['wave']] += 1
        adopter = record.get('adopted_by')
        if adopter:
            computes[adopter]['adopted'] += 1
        if record.get('deleted'):
            computes.setdefault(record['host'], collections.Counter())[
                'deleted'] += 1
        elif record.get('status') == 'ACTIVE' and record.get('host'):
            computes.setdefault(record['host'], collections.Counter())[
                'hosts now'] += 1
    boots = [r['boot_seconds'] for r in servers
             if r.get('placed_on') and r.get('boot_seconds') is not None]
    errors = [r for r in servers if r.get('status') == 'ERROR']
    results['computes'] = {h: dict(c) for h, c in computes.items()}
    results['reschedules'] = {
        'total': sum(r['reschedules'] for r in servers),
        'servers': reschedules['servers'],
        'to_another_compute': reschedules['to another compute'],
        'to_no_host': reschedules['to no host'],
        'error_servers': len(errors),
        # One line per kind of fault, not per instance.
        'faults': sorted({_UUID.sub('<instance>', r.get('fault') or '-')
                          for r in errors})}
    results['boot_seconds'] = {
        'count': len(boots), 'median': checks.median(boots),
        'p95': checks.percentile(boots, 0.95),
        'max': max(boots) if boots else None}


def render(console, results, servers, layout):
    ring = results.get('ring') or {}
    victim = ring.get('victim')

    table = _table('Servers per compute service', 'Compute', 'State',
                   ('Placed wave 1', 'right'), ('Placed wave 2', 'right'),
                   ('Failed attempts', 'right'), ('Adopted', 'right'),
                   ('Deleted', 'right'), ('Hosts now', 'right'))
    for host, counts in results['computes'].items():
        table.add_row(host, 'stopped, forced down' if host == victim
                      else 'up', *(str(counts.get(key, 0)) for key in (
                          'wave 1', 'wave 2', 'failed', 'adopted',
                          'deleted', 'hosts now')))
    console.print(table)

    capacity = results.get('capacity') or {}
    table = _table(
        'Capacity per resource class: Ironic beside placement (each live '
        'compute\'s provider offers the free nodes of its own shards)',
        'Class', ('Ironic total', 'right'), ('used', 'right'),
        ('free', 'right'), 'Provider of', ('total', 'right'),
        ('reserved', 'right'), ('used', 'right'), ('free', 'right'),
        'Equal')
    placement = capacity.get('placement', {})
    wrong = {mismatch['class'] for mismatch in capacity.get('mismatches', ())}
    for resource_class, truth in sorted(capacity.get('ironic', {}).items()):
        name = checks.placement_class(resource_class)
        first = True
        for host, views in sorted(placement.items()):
            view = views.get(name)
            cells = (['-'] * 4 if view is None else
                     [str(view[k]) for k in ('total', 'reserved', 'used',
                                             'free')])
            table.add_row(*([resource_class, str(truth['total']),
                             str(truth['used']), str(truth['free'])]
                            if first else [''] * 4),
                          host, *cells, '')
            first = False
        offered = checks.offered(placement, name)
        table.add_row(*[''] * 4, 'all, added up', *[''] * 3,
                      '-' if offered is None else str(offered),
                      _WRONG if name in wrong else _OK)
        table.add_section()
    console.print(table)

    table = _table('Flavors', 'Flavor', 'Asks for', ('Servers', 'right'),
                   ('ACTIVE', 'right'), ('ERROR', 'right'),
                   ('Reschedules', 'right'), 'Nodes that serve it')
    for flavor in layout.flavors:
        mine = [r for r in servers if r['flavor'] == flavor.name]
        if not mine:
            continue
        group = layout.group(flavor.serves)
        table.add_row(
            flavor.name, flavor.describe(), str(len(mine)),
            str(sum(r.get('status') == 'ACTIVE' for r in mine)),
            str(sum(r.get('status') == 'ERROR' for r in mine)),
            str(sum(r.get('reschedules', 0) for r in mine)),
            '%d %s (%s)' % (group.count, group.name, group.describe()))
    console.print(table)

    if ring:
        table = _table('Shard keys: owner before and after %s stopped'
                       % victim, 'Shard key', 'Before', 'After', 'Moved')
        for shard in sorted(ring['before'], key=_natural):
            moved = shard in ring['moved']
            table.add_row(shard, ring['before'][shard], ring['after'][shard],
                          '[yellow]moved[/yellow]' if moved else '')
        console.print(table)

    takeover = results.get('takeover') or {}
    boots = results['boot_seconds']
    reschedules = results['reschedules']
    audit = results.get('audit') or {}
    table = _table('Summary', 'What', 'Result', show_header=False)

    def verdict(count, what):
        return '%s %d %s' % (_OK if not count else _WRONG, count, what)

    table.add_row('Double bookings', verdict(
        results.get('double_bookings', 0),
        '(every ACTIVE server is the instance of exactly one active node)'))
    table.add_row('Other project\'s nodes', verdict(
        len(audit.get('other_project', ())),
        'servers of the sandbox\'s project on the %d nodes of another '
        'project' % len(results.get('other_project_nodes', ()))))
    table.add_row('Leaked nodes', verdict(
        len(audit.get('leaked', ())),
        'nodes held for no ACTIVE server'))
    table.add_row('Flavor matching', verdict(
        len(audit.get('mismatched', ())),
        'servers on a node that does not fit their flavor'))
    table.add_row('Placement vs Ironic', verdict(
        len(capacity.get('mismatches', ())),
        'free counts that differ at the end'))
    table.add_row('Reschedules', '%d builds failed on a compute and were '
                  'rescheduled (%d servers): %d to another compute, %d found '
                  'no other host with room in placement; %d servers in '
                  'ERROR (%s)' % (
                      reschedules['total'], reschedules['servers'],
                      reschedules['to_another_compute'],
                      reschedules['to_no_host'],
                      reschedules['error_servers'],
                      '; '.join(reschedules['faults']) or '-'))
    table.add_row('Boot time (ACTIVE)', 'median %s, p95 %s, max %s over %d '
                  'servers (Nova\'s create action: request to end of the '
                  'build)' % (_seconds(boots['median']),
                              _seconds(boots['p95']), _seconds(boots['max']),
                              boots['count']))
    if ring:
        table.add_row('Shard takeover', '%d of %d shard keys moved from %s '
                      'in %s (stop to survivors\' rings)' % (
                          len(ring['moved']), len(ring['before']), victim,
                          _seconds(ring['seconds'])))
    if takeover:
        table.add_row('Instance takeover', '%d of %d servers of %s adopted '
                      'in %s after it was forced down' % (
                          len(takeover.get('adopted', {})),
                          len(takeover['instances']), victim,
                          _seconds(takeover.get('seconds'))))
    cleanup = results.get('cleanup') or {}
    if cleanup:
        table.add_row('Clean-up', '%s stopped in %s; %s' % (
            cleanup.get('what', 'the services'),
            _seconds(cleanup.get('seconds')),
            left_running(cleanup.get('left_running'))))
    if results.get('chart'):
        table.add_row('Chart', results['chart'])
    table.add_row('Report', results['report'])
    table.add_row('Logs', ', '.join(results.get('logs', ())))
    table.add_row('Wall time', _seconds(results.get('wall_seconds')))
    console.print(table)


def left_running(names):
    """What the clean-up left, in words."""
    if names:
        return '%s still running!' % ', '.join(names)
    return 'nothing left running'


def _natural(key):
    head, _, tail = key.rpartition('-')
    return (head, int(tail)) if tail.isdigit() else (key, 0)
