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

"""What a sandbox run leaves in its output directory, and its chart."""

import json
import logging

from matplotlib import colors
from matplotlib import pyplot
import pytest

from ironic_multi._sandbox import chart
from ironic_multi._sandbox import run
from ironic_multi._sandbox import scenario as scenario_mod
from ironic_multi.cmd import sandbox
from ironic_multi.testing import fleet

CLASSES = [('bronze', 'CUSTOM_BRONZE'), ('gold', 'CUSTOM_GOLD')]


def _sample(t, ironic_free, placement_free):
    """One sample: Ironic's bronze and gold, compute1's provider."""
    view = {name: {'total': 2, 'reserved': 0, 'used': 2 - free,
                   'free': free}
            for name, free in zip(('CUSTOM_BRONZE', 'CUSTOM_GOLD'),
                                  placement_free)}
    return {'t': t,
            'ironic': {rc: {'total': 2, 'used': 2 - free, 'free': free}
                       for rc, free in zip(('bronze', 'gold'),
                                           ironic_free)},
            'placement': {'compute1': view}}


# Shaped like a real run (8 nodes, 2 computes), where a provider showed -1
# free bronze while a build whose claim would fail was still in flight.
SAMPLES = [_sample(0, (2, 2), (2, 2)), _sample(1, (1, 2), (0, 2)),
           _sample(2, (0, 1), (-1, 1)), _sample(3, (0, 1), (0, 1))]
EVENTS = [(0.5, 'wave 1 posted')]
# One build each: small counts, where fractional ticks used to appear.
BOOTS = {'compute1': {'wave 1': 1}, 'compute2': {'wave 1': 1,
                                                 'failed': 1}}


@pytest.fixture
def figure():
    made = []

    def make(**kwargs):
        made.append(chart.figure(SAMPLES, EVENTS, BOOTS, CLASSES,
                                 'the title', **kwargs))
        return made[-1]

    yield make
    for each in made:
        pyplot.close(each)


def _ticks(axes):
    low, high = axes.get_ylim()
    return [t for t in axes.get_yticks() if low <= t <= high]


def test_counts_have_whole_ticks(figure):
    free_axes, boot_axes = figure().axes
    for axes in (free_axes, boot_axes):
        assert all(t == int(t) for t in _ticks(axes)), _ticks(axes)


def test_the_two_panels_share_no_colour(figure):
    free_axes, boot_axes = figure().axes
    lines = {colors.to_rgb(line.get_color())
             for line in free_axes.get_lines()
             if not line.get_label().startswith('_')}
    bars = {colors.to_rgb(patch.get_facecolor())
            for patch in boot_axes.patches}
    assert lines and bars
    assert not lines & bars


def test_a_legend_lists_only_bars_that_are_drawn(figure):
    _free, boot_axes = figure().axes
    labels = [t.get_text() for t in boot_axes.get_legend().get_texts()]
    # No wave 2 in these counts.
    assert labels == ['ACTIVE, wave 1',
                      'failed attempts (rescheduled or ERROR)']


def test_placement_is_what_the_providers_offer_added_up(figure):
    free_axes, _boots = figure().axes
    dashed = [line for line in free_axes.get_lines()
              if line.get_linestyle() == '--']
    # Bronze: compute1 alone, -1 at t=2 offers nothing.
    assert list(dashed[0].get_ydata()) == [2, 0, 0, 0]
    assert free_axes.get_ylim()[0] == -0.5


def test_a_failed_run_says_so_in_the_title(figure):
    failed = figure(failed='SandboxError: the ring did not agree')
    texts = [t.get_text() for t in failed.texts]
    assert failed._suptitle.get_text() == 'FAILED: the title'
    assert 'SandboxError: the ring did not agree' in texts
    assert figure()._suptitle.get_text() == 'the title'


# -- the output directory ----------------------------------------------------

class _Sampler(object):
    period = 0.5
    samples = SAMPLES
    events = EVENTS
    failed_reads = 0


def test_a_failed_run_replaces_what_the_last_one_left(tmp_path,
                                                      monkeypatch):
    # What a successful run left.
    for name in ('sandbox.png', 'sandbox.json', 'nova.log'):
        (tmp_path / name).write_text('the last run')
    (tmp_path / 'sandbox.log').write_text('the last run\n')
    drawn = []
    draw = chart.draw

    def spy(*args, **kwargs):
        drawn.append(kwargs)
        return draw(*args, **kwargs)

    def fails(self, stack):
        self.sampler = _Sampler()
        logging.getLogger('test').info('this run')
        raise scenario_mod.SandboxError('the ring did not agree')

    monkeypatch.setattr(chart, 'draw', spy)
    monkeypatch.setattr(scenario_mod.Scenario, 'run', fails)
    args = sandbox.parser().parse_args(
        ['-N', '8', '-K', '2', '-M', '6', '--output', str(tmp_path)])
    args.nova_log = None

    assert run.run(args, fleet.make_layout(8, 2, 6)) == 1

    report = json.loads((tmp_path / 'sandbox.json').read_text())
    assert report['problems'] == ['SandboxError: the ring did not agree']
    assert [d['failed'] for d in drawn] == [
        'SandboxError: the ring did not agree']
    assert (tmp_path / 'sandbox.png').read_bytes()[:4] == b'\x89PNG'
    log = (tmp_path / 'sandbox.log').read_text()
    assert 'the last run' not in log and 'this run' in log
    # Nova never started: no log of its own, and not the last run's.
    assert not (tmp_path / 'nova.log').exists()
