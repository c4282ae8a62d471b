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


"""The sandbox's PNG: free nodes over time, and boots per compute.

matplotlib with its Agg backend (no display needed).  Imported only when
the chart is drawn, after Nova's test services stopped: they point
``HOME``, where matplotlib keeps its font cache, at a temporary directory
while they run.
"""

import matplotlib

matplotlib.use('Agg')

from matplotlib import pyplot  # noqa: E402,I202
from matplotlib import ticker  # noqa: E402

from ironic_multi.testing import checks  # noqa: E402

CAPTION = ('Above: free nodes per resource class over time, Ironic\'s '
           'truth (solid) against what placement offers the scheduler '
           '(dashed: the live compute services\' providers\' free counts '
           'added up, each offering the free nodes of its own shards); '
           'numbered dotted lines mark the phases listed on the right.  '
           'Placement counts an allocation at once (a build just '
           'scheduled): until the build claims its node, placement\'s '
           'offer is below Ironic\'s free count.  Below: the servers each '
           'compute service booted (ACTIVE) per wave, and the build '
           'attempts that failed there (rescheduled or ERROR).')
# Resource classes above; the waves below in hues the classes never take.
_CLASS_COLORS = ('tab:blue', 'tab:orange', 'tab:green', 'tab:brown',
                 'tab:olive', 'tab:cyan', 'tab:gray')
_WAVE_COLORS = ('tab:purple', '#c5b0d5')
_FAILED_COLOR = 'tab:red'
# Bar labels legible on each bar colour.
_LABEL_COLORS = {'tab:purple': 'white', '#c5b0d5': 'black',
                 _FAILED_COLOR: 'white'}


def draw(path, samples, events, boots, classes, title, failed=None):
    """Write the chart to ``path`` (see :func:`figure`)."""
    chart = figure(samples, events, boots, classes, title, failed=failed)
    try:
        chart.savefig(path, dpi=110)
    finally:
        pyplot.close(chart)


def figure(samples, events, boots, classes, title, failed=None):
    """The chart as a matplotlib Figure (close it with ``pyplot.close``).

    :param samples: the sampler's samples: ``t``, ``ironic`` ``{class:
        {'free'...}}`` and ``placement`` ``{host: {placement class:
        {'free'...} or None}}``.
    :param events: ``[(t, label)]``.
    :param boots: ``{host: {'wave 1': n, 'wave 2': n, 'failed': n}}``.
    :param classes: ``[(ironic class, placement class)]``.
    :param failed: why the run failed, if it did: the title says FAILED
        and the reason goes under it.
    """
    chart, (free_axes, boot_axes) = pyplot.subplots(
        2, 1, figsize=(11, 8.5), gridspec_kw={'height_ratios': [3, 2]})
    try:
        _free(free_axes, samples, events, classes)
        _boots(boot_axes, boots)
        top = 0.97
        if failed:
            chart.suptitle('FAILED: %s' % title, fontsize=12,
                           color=_FAILED_COLOR, fontweight='bold')
            chart.text(0.5, 0.955, failed, ha='center', va='top',
                       fontsize=8.5, color=_FAILED_COLOR, wrap=True)
            top = 0.93
        else:
            chart.suptitle(title, fontsize=12)
        chart.text(0.5, 0.005, CAPTION, ha='center', va='bottom',
                   fontsize=8, wrap=True)
        chart.tight_layout(rect=(0, 0.07, 1, top))
    except Exception:
        pyplot.close(chart)
        raise
    return chart


def _free(axes, samples, events, classes):
    samples = sorted(samples, key=lambda s: s['t'])
    times = [s['t'] for s in samples]
    top = 1
    for index, (ironic_class, placement_class) in enumerate(classes):
        color = _CLASS_COLORS[index % len(_CLASS_COLORS)]
        truth = [s['ironic'].get(ironic_class, {}).get('free', 0)
                 for s in samples]
        offered = [_nan_if_none(checks.offered(s['placement'],
                                               placement_class))
                   for s in samples]
        axes.step(times, truth, where='post', color=color, linewidth=2.2,
                  label='%s: Ironic' % ironic_class)
        axes.step(times, offered, where='post', color=color, linestyle='--',
                  linewidth=1.4, label='%s: placement' % ironic_class)
        top = max([top] + truth + [v for v in offered if v == v])
    key = []
    for number, (at, numbers) in enumerate(_clusters(events)):
        axes.axvline(at, color='0.35', linestyle=':', linewidth=1)
        # Numbers at alternating heights, so that close ones stay legible.
        axes.text(at, top * (1.16 if number % 2 else 1.06), numbers,
                  fontsize=8, color='0.15', ha='center', va='bottom',
                  bbox={'boxstyle': 'round,pad=0.2', 'facecolor': 'white',
                        'edgecolor': '0.6', 'linewidth': 0.6})
    for number, (at, label) in enumerate(events, 1):
        key.append('%d  %5.1f s  %s' % (number, at, label))
    axes.text(1.02, 0.0, '\n'.join(key), transform=axes.transAxes,
              fontsize=7.5, va='bottom', ha='left', family='monospace',
              color='0.15')
    axes.set_ylim(-0.5, top * 1.28 + 0.5)
    axes.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axes.set_xlim(left=min(times + [at for at, _ in events] or [0]))
    axes.set_xlabel('seconds since the sandbox started')
    axes.set_ylabel('free nodes')
    axes.grid(axis='y', alpha=0.3)
    axes.legend(loc='upper left', bbox_to_anchor=(1.0, 1.0), fontsize=8,
                frameon=False)


def _nan_if_none(value):
    return float('nan') if value is None else value


def _clusters(events, within=0.6):
    """``[(t, '1')...]``: events closer than ``within`` s share a line."""
    clusters = []
    for number, (at, _label) in enumerate(events, 1):
        if clusters and at - clusters[-1][0] < within:
            clusters[-1][1].append(number)
        else:
            clusters.append((at, [number]))
    return [(at, ','.join(map(str, numbers))) for at, numbers in clusters]


def _boots(axes, boots):
    hosts = sorted(boots)
    bottom = [0] * len(hosts)
    series = [('wave 1', 'ACTIVE, wave 1', _WAVE_COLORS[0]),
              ('wave 2', 'ACTIVE, wave 2', _WAVE_COLORS[1]),
              ('failed', 'failed attempts (rescheduled or ERROR)',
               _FAILED_COLOR)]
    for key, label, color in series:
        values = [boots[h].get(key, 0) for h in hosts]
        if not any(values):
            # No legend entry for bars that are not there.
            continue
        bars = axes.bar(hosts, values, bottom=bottom, color=color,
                        label=label, width=0.55)
        axes.bar_label(bars, labels=[str(v) if v else '' for v in values],
                       label_type='center', fontsize=8,
                       color=_LABEL_COLORS[color])
        bottom = [b + v for b, v in zip(bottom, values)]
    for x, host in enumerate(hosts):
        note = boots[host].get('note')
        if note:
            axes.text(x, bottom[x] + 0.2, note, ha='center', va='bottom',
                      fontsize=8)
    axes.set_ylim(0, max(bottom + [1]) * 1.3)
    axes.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axes.set_ylabel('builds')
    axes.set_title('Builds per compute service', fontsize=10)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc='center left', bbox_to_anchor=(1.0, 0.5),
                    fontsize=8, frameon=False)
