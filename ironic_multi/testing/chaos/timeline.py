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

"""The timeline PNG of a chaos run (matplotlib, Agg backend).

Above: each fault kind a row, each fault a band from its injection to its
end (its target named in it).  Middle: each operation kind a row, each
operation a point at its start, coloured by its outcome, and each
violation a red cross.  Below: free nodes per resource class over time,
Ironic's (solid) and placement's lowest provider (dashed).  Dotted lines
mark the run's phases.
"""

import matplotlib

matplotlib.use('Agg')

from matplotlib import pyplot  # noqa: E402,I202
from matplotlib import ticker  # noqa: E402

from ironic_multi.testing.chaos import schedule  # noqa: E402

OUTCOME_COLORS = {'ok': 'tab:green', 'error': 'tab:orange',
                  'failed': 'tab:olive',
                  'refused': 'tab:gray', 'api-error': 'tab:purple',
                  'stranded': 'tab:brown', 'timeout': 'black',
                  None: 'tab:cyan'}
CLASS_COLORS = ('tab:blue', 'tab:brown', 'tab:olive', 'tab:pink')
FAULT_COLOR = 'tab:red'
VIOLATION_COLOR = 'red'


def draw(path, history, passed):
    """Write the timeline of ``history`` (a History) to ``path``."""
    chart = figure(history.as_dict(), passed)
    try:
        chart.savefig(path, dpi=100)
    finally:
        pyplot.close(chart)


def figure(run, passed):
    """The timeline as a Figure; ``run`` is ``History.as_dict()``."""
    chart, (faults, operations, free) = pyplot.subplots(
        3, 1, figsize=(13, 10), sharex=True,
        gridspec_kw={'height_ratios': [3, 2, 3]})
    try:
        _faults(faults, run['faults'])
        _operations(operations, run['operations'], run['violations'])
        _free(free, run['samples'])
        end = max([0] + [f['end'] or f['start'] for f in run['faults']]
                  + [s['t'] for s in run['samples']])
        for axes in (faults, operations, free):
            for phase in run['phases']:
                axes.axvline(phase['t'], color='0.4', linestyle=':',
                             linewidth=1)
            axes.set_xlim(0, end + 5)
        for phase in run['phases']:
            faults.text(phase['t'], 1.01, phase['name'], rotation=30,
                        fontsize=7, transform=faults.get_xaxis_transform(),
                        va='bottom', ha='left', color='0.3')
        verdict = 'passed' if passed else 'FAILED: %d violation(s)' % len(
            run['violations'])
        chart.suptitle('Chaos run, seed %s: %s' % (run['seed'], verdict),
                       fontsize=12, color='black' if passed else 'red',
                       fontweight='normal' if passed else 'bold')
        free.set_xlabel('seconds since the run began')
        chart.tight_layout(rect=(0, 0, 1, 0.97))
    except Exception:
        pyplot.close(chart)
        raise
    return chart


def _faults(axes, faults):
    kinds = [k for k in schedule.KINDS + ('kill-takeover',)
             if any(f['kind'] == k for f in faults)]
    rows = {kind: index for index, kind in enumerate(kinds)}
    for fault in faults:
        row = rows[fault['kind']]
        end = fault['end'] if fault['end'] is not None else fault['start']
        width = max(end - fault['start'], 0.5)
        axes.broken_barh([(fault['start'], width)], (row - 0.4, 0.8),
                         facecolors=FAULT_COLOR, alpha=0.45)
        if fault.get('target'):
            axes.text(fault['start'] + width / 2, row, fault['target'],
                      fontsize=6.5, ha='center', va='center')
    axes.set_yticks(range(len(kinds)))
    axes.set_yticklabels(kinds, fontsize=8)
    axes.set_ylim(-0.6, max(len(kinds), 1) - 0.4)
    axes.invert_yaxis()
    axes.set_title('Faults', fontsize=10, loc='left')


def _operations(axes, operations, violations):
    kinds = sorted({o['kind'] for o in operations})
    rows = {kind: index for index, kind in enumerate(kinds)}
    for outcome, color in OUTCOME_COLORS.items():
        points = [o for o in operations if o['outcome'] == outcome]
        if not points:
            continue
        axes.scatter([o['start'] for o in points],
                     [rows[o['kind']] for o in points], s=14, color=color,
                     label=outcome or 'no outcome', zorder=3)
    if violations:
        axes.scatter([v['t'] for v in violations],
                     [len(kinds)] * len(violations), marker='x', s=40,
                     color=VIOLATION_COLOR, label='violation', zorder=4)
    labels = kinds + (['violations'] if violations else [])
    axes.set_yticks(range(len(labels)))
    axes.set_yticklabels(labels, fontsize=8)
    axes.set_ylim(-0.6, max(len(labels), 1) - 0.4)
    axes.invert_yaxis()
    axes.set_title('Operations by outcome', fontsize=10, loc='left')
    if operations or violations:
        axes.legend(loc='center left', bbox_to_anchor=(1.0, 0.5),
                    fontsize=8, frameon=False)


def _free(axes, samples):
    classes = sorted({rc for s in samples for rc in s['free']})
    times = [s['t'] for s in samples]
    for index, rc in enumerate(classes):
        color = CLASS_COLORS[index % len(CLASS_COLORS)]
        axes.step(times, [s['free'].get(rc, 0) for s in samples],
                  where='post', color=color, linewidth=2,
                  label='%s: Ironic' % rc)
        placed = [(s['t'], s['placement'][rc]) for s in samples
                  if s.get('placement') and rc in s['placement']]
        if placed:
            axes.step([t for t, _ in placed], [v for _, v in placed],
                      where='post', color=color, linestyle='--',
                      linewidth=1.2, label='%s: placement' % rc)
    axes.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axes.set_ylabel('free nodes')
    axes.set_title('Free nodes', fontsize=10, loc='left')
    axes.grid(axis='y', alpha=0.3)
    if classes:
        axes.legend(loc='center left', bbox_to_anchor=(1.0, 0.5),
                    fontsize=8, frameon=False)
