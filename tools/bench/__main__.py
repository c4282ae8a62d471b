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

"""Benchmarks of ironic-multi, side by side, on one real Ironic.

Usage: python tools/bench [--quick] [--only NAME ...] [--output DIR]

One Ironic (fake hardware, on the local PostgreSQL) serves every
measurement; each builds its fleet with the bulk path and compares,
in the same run and interleaved, this project with what it replaces,
reported as ratios with medians and spreads.  Writes
``bench-results.json`` and ``bench-results.png`` into DIR (default: the
current directory) and prints a table per measurement.

Measurements, in the order they run (``--only`` takes these names):

claims      claim latency from a warm pool vs a raw PATCH (claims.py)
contention  4 processes x 8 threads, strategies side by side (claims.py)
readload    node records read per refresh period (readload.py)
periodic    Nova's update_available_resource, both drivers (periodic.py)
boots       boots through Nova (boots.py)
housekeeping  one housekeeping pass at 2,000 nodes (housekeeping.py)
cloud       boots on the multi-process cloud: ours, in-tree, fake
            (cloudboots.py; about 9 minutes, three clouds in turn)
capacity    placement against Ironic through bursts at full and 2x
            capacity, ours and in-tree (cloudcapacity.py; two clouds)
ring        shard keys moved after a graceful stop and a crash of a
            compute (cloudring.py; one cloud)
scale       100,000 nodes (scale.py)
"""

import argparse
import datetime
import importlib
import importlib.util
import json
import logging
import math
import os
import platform
import shlex
import socket
import sys
import time
import traceback
import warnings

# futurist imports eventlet, which warns on import; nothing here uses it.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

import common  # noqa: E402

REPO = os.path.dirname(os.path.dirname(common.HERE))
RESULTS = 'bench-results.json'
CHART = 'bench-results.png'
# (name, module, function, title attribute)
MEASUREMENTS = (
    ('claims', 'claims', 'measure', 'TITLE'),
    ('contention', 'claims', 'measure_contention', 'CONTENTION_TITLE'),
    ('readload', 'readload', 'measure', 'TITLE'),
    ('periodic', 'periodic', 'measure', 'TITLE'),
    ('boots', 'boots', 'measure', 'TITLE'),
    ('housekeeping', 'housekeeping', 'measure', 'TITLE'),
    ('scale', 'scale', 'measure', 'TITLE'),
    ('cloud', 'cloudboots', 'measure', 'TITLE'),
    ('capacity', 'cloudcapacity', 'measure', 'TITLE'),
    ('ring', 'cloudring', 'measure', 'TITLE'),
)
NAMES = [m[0] for m in MEASUREMENTS]
PG = ('127.0.0.1', 5432)
# Templates enrolled through the API per fleet; the rest are copies.
TEMPLATES = 2
# Rows per bulk copy: bounds the copy tool's memory at 100,000 nodes.
CLONE_CHUNK = 20000
# Arguments of IronicNodes.enroll_nodes that a template can take from the
# fleet's column values; other columns are set on the copies only.
ENROLL_ARGS = ('resource_class', 'properties', 'traits', 'shard', 'owner',
               'lessee', 'conductor_group')


class Bench(object):
    """What a measurement gets.

    ``args``, ``server``, ``nodes``, ``workdir``, ``coordination_url`` and
    :meth:`fleet`.

    ``cache`` holds what a measurement leaves for the next one on the same
    fleet (participants, the fleet's UUIDs); :meth:`fleet` empties it,
    calling the ``stop()`` of whatever has one.
    """

    def __init__(self, args, server, nodes, workdir, coordination_url):
        self.args = args
        self.server = server
        self.nodes = nodes
        self.workdir = workdir
        self.coordination_url = coordination_url
        self.cache = {}
        self.fleets = []

    def fleet(self, count, updated=True, **overrides):
        """Wipe Ironic and build ``count`` nodes; their UUIDs, in order.

        ``TEMPLATES`` nodes are enrolled through the API (to available,
        powered off), the rest are copies of their database rows, made in
        bulk.  ``overrides`` are column values (a callable gets the node's
        index in the fleet, templates included); nodes are spread over
        ``common.SHARD_COUNT`` shard keys unless ``shard`` is given.
        ``updated``: the copies get an ``updated_at`` a day back, 1 s
        apart (as nodes changed once since enrolled); otherwise it is null
        (never updated since creation, as after a database import: what
        the copy helper leaves).
        """
        self.forget()
        started = time.monotonic()
        self.nodes.wipe()
        overrides.setdefault('shard', common.shard_name)

        def value(column, index):
            given = overrides[column]
            return given(index) if callable(given) else given

        templates = min(TEMPLATES, count)
        uuids = []
        for index in range(templates):
            args = {k: value(k, index) for k in ENROLL_ARGS
                    if k in overrides}
            uuids += self.nodes.enroll_nodes(1, name_prefix='template',
                                             **args)
        stamp = None
        if updated:
            if self.server.db_kind == 'sqlite':
                # SQLite's driver takes no timestamp strings.
                common.say('SQLite: copies keep a null updated_at')
            else:
                base = (datetime.datetime.now(datetime.timezone.utc)
                        .replace(tzinfo=None)
                        - datetime.timedelta(days=1, seconds=count))
                stamp = lambda i: (base + datetime.timedelta(seconds=i)
                                   ).isoformat(' ')
        copies = [None] * count
        copies[:templates] = uuids
        positions = [list(range(templates + t, count, templates))
                     for t in range(templates)]
        for template, places in zip(uuids, positions):
            for start in range(0, len(places), CLONE_CHUNK):
                chunk = places[start:start + CLONE_CHUNK]
                columns = {}
                for column in overrides:
                    columns[column] = (
                        lambda j, c=column, p=chunk: value(c, p[j]))
                if stamp:
                    columns['updated_at'] = lambda j, p=chunk: stamp(p[j])
                made = self.nodes.bulk_clone(template, len(chunk), **columns)
                for place, node in zip(chunk, made):
                    copies[place] = node
        seconds = time.monotonic() - started
        listed = sum(self.shard_counts().values())
        if listed != count:
            raise RuntimeError('fleet of %d: Ironic counts %d nodes'
                               % (count, listed))
        self.fleets.append({'nodes': count, 'updated': bool(stamp),
                            'seconds': round(seconds, 1)})
        common.say('fleet: %d nodes (%d enrolled, %d copied; updated_at %s) '
                   'in %.1f s' % (count, templates, count - templates,
                                  'set' if stamp else 'as given'
                                  if 'updated_at' in overrides else 'null',
                                  seconds))
        return copies

    def shard_counts(self):
        """``{shard: nodes}`` from ``GET /v1/shards`` (``None``: none)."""
        shards = self.nodes.request('GET', '/v1/shards').json()['shards']
        return {s['name']: s['count'] for s in shards}

    def forget(self):
        """Stop and drop what the cache holds."""
        cache, self.cache = self.cache, {}
        for item in cache.values():
            stop = getattr(item, 'stop', None)
            if stop is not None:
                try:
                    stop()
                except Exception:
                    traceback.print_exc()

    def close(self):
        self.forget()


# -- running ------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python tools/bench',
        description='ironic-multi benchmarks, side by side on one real '
                    'Ironic, reported as ratios with medians and spreads.')
    parser.add_argument('--quick', action='store_true',
                        help='smaller fleets and fewer samples (about 5 '
                             'minutes for the reservation measurements)')
    parser.add_argument('--only', nargs='+', choices=NAMES, metavar='NAME',
                        help='run only these measurements (%s)'
                             % ', '.join(NAMES))
    parser.add_argument('--output', default='.', metavar='DIR',
                        help='where bench-results.json and .png go '
                             '(default: the current directory)')
    parser.add_argument('--db', choices=('postgresql', 'mysql', 'sqlite'),
                        help='Ironic\'s database (default: '
                             '$IRONIC_MULTI_TEST_DB, else PostgreSQL when it '
                             'listens on 127.0.0.1:5432, else SQLite with a '
                             'warning)')
    return parser.parse_args(argv)


def _listening(address):
    try:
        with socket.create_connection(address, timeout=1):
            return True
    except OSError:
        return False


def choose_db(args):
    chosen = args.db or os.environ.get('IRONIC_MULTI_TEST_DB')
    if chosen and chosen != 'auto':
        return chosen, None
    if _listening(PG):
        return 'postgresql', None
    return 'sqlite', ('PostgreSQL does not listen on %s:%d: Ironic runs on '
                      'SQLite, whose writers wait for each other; the '
                      'numbers are not comparable with PostgreSQL runs'
                      % PG)


def choose_coordination(workdir):
    from ironic_multi.testing import coordination

    if coordination.redis_available():
        return coordination.REDIS_URL, None
    return ('file://%s' % os.path.join(workdir, 'coordination'),
            'Redis does not listen on %s:%d: the services coordinate '
            'through file:// instead' % coordination.REDIS)


def load(name):
    """The measurement module ``name``, or None when it does not exist."""
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def run(args):
    from ironic_multi.testing import _process
    from ironic_multi.testing.ironic_nodes import IronicNodes
    from ironic_multi.testing.ironic_server import IronicServer

    selected = [m for m in MEASUREMENTS
                if not args.only or m[0] in args.only]
    os.makedirs(args.output, exist_ok=True)
    venv = os.path.join(REPO, '.tox', 'ironic-server')
    if not os.environ.get('IRONIC_MULTI_IRONIC_VENV') and os.path.isdir(venv):
        os.environ['IRONIC_MULTI_IRONIC_VENV'] = venv
    report = {
        'command': 'python tools/bench %s' % ' '.join(
            shlex.quote(a) for a in sys.argv[1:]),
        'started_at': datetime.datetime.now(datetime.timezone.utc)
        .isoformat(timespec='seconds'),
        'quick': args.quick,
        'machine': {'cpus': os.cpu_count(),
                    'python': platform.python_version(),
                    'load_before': os.getloadavg()},
        'warnings': [], 'measurements': {}, 'goals': [],
    }
    db_kind, warning = choose_db(args)
    if warning:
        print('WARNING: %s' % warning, flush=True)
        report['warnings'].append(warning)
    started = time.monotonic()
    # Reaped by a later run if this one is killed.
    with _process.OwnedTempDir('bench') as work_dir:
        work = work_dir.path
        coordination_url, warning = choose_coordination(work)
        if warning:
            print('WARNING: %s' % warning, flush=True)
            report['warnings'].append(warning)
        print('Starting Ironic (%s)...' % db_kind, flush=True)
        with IronicServer(db_kind=db_kind) as server:
            report['ironic'] = {'db': server.db_kind,
                                'start_seconds': round(server.start_seconds,
                                                       1)}
            report['coordination'] = coordination_url.split(':', 1)[0]
            print('Ironic on %s (%s), ready in %.1f s; coordination: %s'
                  % (server.endpoint, server.db_kind, server.start_seconds,
                     coordination_url), flush=True)
            bench = Bench(args, server, IronicNodes(server), work,
                          coordination_url)
            try:
                for name, module_name, function, title in selected:
                    report['measurements'][name] = run_one(
                        bench, name, module_name, function, title)
                    write_results(args, report, started)
            finally:
                bench.close()
                report['fleets'] = bench.fleets
    report['seconds'] = round(time.monotonic() - started, 1)
    report['machine']['load_after'] = os.getloadavg()
    write_results(args, report, started)
    draw(args, report)
    print_goals(report)
    print('\n%s in %.0f s (%.1f min): %s and %s in %s' % (
        report['command'], report['seconds'], report['seconds'] / 60,
        RESULTS, CHART, os.path.abspath(args.output)))
    # A missed goal is a result; a measurement that failed is not.
    failed = [n for n, m in report['measurements'].items() if 'error' in m]
    return 1 if failed else 0


def run_one(bench, name, module_name, function, title):
    print('\n== %s ==' % name, flush=True)
    started = time.monotonic()
    try:
        module = load(module_name)
    except Exception:
        entry = {'error': 'cannot import %s:\n%s'
                 % (module_name, traceback.format_exc())}
        print(entry['error'], flush=True)
        return entry
    if module is None:
        message = ('tools/bench/%s.py does not exist yet: %s skipped'
                   % (module_name, name))
        print(message, flush=True)
        return {'skipped': message}
    print(getattr(module, title, name), flush=True)
    # What a measurement does to logging (Nova's services set it up) is
    # undone after it.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        entry = getattr(module, function)(bench)
    except Exception:
        entry = {'title': getattr(module, title, name),
                 'error': traceback.format_exc()}
        print('FAILED:\n%s' % entry['error'], flush=True)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    entry['seconds'] = round(time.monotonic() - started, 1)
    if 'error' not in entry:
        print_table(entry)
    print('(%s: %.0f s)' % (name, entry['seconds']), flush=True)
    return entry


def write_results(args, report, started):
    report['goals'] = [dict(goal, measurement=name)
                       for name, entry in report['measurements'].items()
                       for goal in entry.get('goals', ())]
    report['seconds'] = round(time.monotonic() - started, 1)
    path = os.path.join(args.output, RESULTS)
    with open(path + '.tmp', 'w') as f:
        json.dump(report, f, indent=2, sort_keys=True, default=str)
        f.write('\n')
    os.replace(path + '.tmp', path)


# -- output -------------------------------------------------------------------

def _console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)


def print_table(entry):
    from rich.table import Table

    console = _console()
    table = Table(title=entry['title'], title_justify='left')
    for header in entry['headers']:
        table.add_column(str(header), overflow='fold')
    for row in entry['rows']:
        table.add_row(*('-' if v is None else str(v) for v in row))
    console.print(table)
    for note in entry.get('results', {}).get('notes', ()):
        console.print('note: %s' % note, highlight=False)
    if entry.get('goals'):
        print_goal_rows(console, entry['goals'], 'Goals')


def print_goal_rows(console, goals, title, with_measurement=False):
    from rich.table import Table

    table = Table(title=title, title_justify='left')
    if with_measurement:
        table.add_column('measurement')
    for header in ('goal', 'target', 'measured', 'met'):
        table.add_column(header, overflow='fold')
    for goal in goals:
        row = [goal['name'], goal['target'], goal['measured'],
               'yes' if goal['met'] else 'NO']
        if with_measurement:
            row.insert(0, goal['measurement'])
        table.add_row(*row)
    console.print(table)


def print_goals(report):
    console = _console()
    if report['goals']:
        print()
        print_goal_rows(console, report['goals'], 'All goals',
                        with_measurement=True)
    for name, entry in report['measurements'].items():
        if 'error' in entry:
            console.print('%s FAILED: %s' % (
                name, entry['error'].strip().splitlines()[-1]),
                highlight=False)
        elif 'skipped' in entry:
            console.print(entry['skipped'], highlight=False)


def draw(args, report):
    """One figure, one subplot per measurement that has a chart."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    charts = [(name, entry['chart'])
              for name, entry in report['measurements'].items()
              if entry.get('chart')]
    path = os.path.join(args.output, CHART)
    if not charts:
        return
    columns = 2 if len(charts) > 1 else 1
    rows = (len(charts) + columns - 1) // columns
    figure, axes = pyplot.subplots(rows, columns, squeeze=False,
                                   figsize=(7.5 * columns, 4.6 * rows))
    for axis in axes.flat[len(charts):]:
        axis.set_visible(False)
    for axis, (name, chart) in zip(axes.flat, charts):
        x = [str(v) for v in chart['x']] if chart['kind'] == 'bar' \
            else chart['x']
        series = chart['series']
        if chart['kind'] == 'bar':
            width = 0.8 / max(1, len(series))
            for index, (label, values) in enumerate(series.items()):
                positions = [i + (index - (len(series) - 1) / 2) * width
                             for i in range(len(x))]
                axis.bar(positions, [v if v is not None else 0
                                     for v in values],
                         width=width, label=label)
            axis.set_xticks(range(len(x)))
            axis.set_xticklabels(x, rotation=15, fontsize=8)
        else:
            for label, values in series.items():
                axis.plot(x, values, marker='o', label=label)
        if chart.get('log'):
            axis.set_yscale('log')
            positive = [v for values in series.values() for v in values
                        if v and v > 0]
            if positive:
                # Bars grow from a power of ten below the smallest.
                axis.set_ylim(bottom=10 ** math.floor(
                    math.log10(min(positive) / 2.0)))
        axis.set_title('%s: %s' % (name, chart['title']), fontsize=9)
        axis.set_ylabel(chart.get('ylabel', ''))
        if chart.get('xlabel'):
            axis.set_xlabel(chart['xlabel'])
        axis.legend(fontsize=7)
        axis.grid(True, alpha=0.3)
    figure.suptitle('%s (%s)' % (report['command'], report['started_at']),
                    fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return run(args)


if __name__ == '__main__':
    sys.exit(main())
