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

"""What the ring bench reports: spreads and goals per kind of stop."""

import pytest


@pytest.fixture
def cloudring(bench_module):
    return bench_module('cloudring')


def _runs(cloudring, graceful, crash):
    (term, _), (kill, _) = cloudring.STOPS
    return ([{'stop': term, 'left': 0.1, 'moved': s, 'nova': s - 0.2,
              'driver': 0.2} for s in graceful]
            + [{'stop': kill, 'left': s - 0.5, 'moved': s} for s in crash])


def test_the_goals_hold_on_the_slowest_sample(cloudring):
    report = cloudring._report(_runs(cloudring, [0.3, 0.9, 0.4],
                                     [30.2, 30.8, 30.5]))
    assert [goal['met'] for goal in report['goals']] == [True, True, True]
    stats = report['results']['stats'][cloudring.STOPS[0][0]]['moved']
    assert (stats['median'], stats['min'], stats['max']) == (0.4, 0.3, 0.9)
    # One slow sample of each kind misses each goal.
    report = cloudring._report(_runs(cloudring, [0.3, 1.2, 0.4],
                                     [30.2, 31.5, 30.5]))
    # Nova's part of the slow graceful stop, not the driver's.
    assert [goal['met'] for goal in report['goals']] == [False, True, False]
    assert report['rows'][0][3] == '0.40 s (0.30-1.20)'
    assert report['rows'][1][4:] == ['-', '-']
