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

"""What the capacity bench counts: placement's offer, failed builds, goals."""

import types
from unittest import mock

import pytest

GOLD = 'CUSTOM_GOLD'


@pytest.fixture
def cloudcapacity(bench_module):
    return bench_module('cloudcapacity')


def _placement(*free):
    """Provider summaries with these free units (capacity 4 each)."""
    answer = mock.Mock()
    answer.json.return_value = {'provider_summaries': {
        'rp-%d' % i: {'resources': {GOLD: {'capacity': 4,
                                           'used': 4 - units}}}
        for i, units in enumerate(free)}}
    return mock.Mock(get=mock.Mock(return_value=answer))


def test_placement_offers_the_providers_free_units_added_up(cloudcapacity):
    sampler = cloudcapacity._Sampler(mock.Mock())
    assert sampler._offers(_placement(1, 3, 2)) == {'rp-0': 1, 'rp-1': 3,
                                                    'rp-2': 2}
    assert sampler._offered(sampler._offers(_placement(1, 3, 2))) == 6
    # In-tree: one unit per free node.
    assert sampler._offered(sampler._offers(_placement(1, 1, 0))) == 2
    assert sampler._offered(sampler._offers(_placement())) == 0


def test_every_build_but_an_active_servers_last_one_failed(cloudcapacity):
    actions = {'s1': [types.SimpleNamespace(action='create', request_id='r1'),
                      types.SimpleNamespace(action='delete',
                                            request_id='r2')],
               's2': [types.SimpleNamespace(action='create',
                                            request_id='r3')],
               's3': [types.SimpleNamespace(action='create',
                                            request_id='r4')]}
    build = {'event': cloudcapacity.BUILD_EVENT, 'result': 'Success'}
    events = {
        # Rescheduled once, then ACTIVE.
        'r1': [build, build,
               {'event': 'conductor_schedule_and_build_instances'}],
        'r3': [build],
        # Failed on two hosts, then no host was left: ERROR.
        'r4': [build, build]}
    compute = mock.Mock(
        server_actions=lambda server: actions[server],
        get_server_action=lambda request, server: types.SimpleNamespace(
            events=events[request]))
    cloud = mock.Mock(connection=mock.Mock(
        return_value=mock.Mock(compute=compute)))
    assert cloudcapacity._failed_builds(
        cloud, ['s1', 's2', 's3'], {'s1': 1.0, 's2': 2.0}) == {
            's1': 1, 's2': 0, 's3': 2}


def _run(burst, over, reschedules, samples=100):
    return {'burst': burst, 'servers': 16, 'active': 16, 'error': 0,
            'samples': samples, 'over_reported': over, 'under_reported': 0,
            'most_over': 1 if over else 0, 'reschedules': reschedules,
            'servers_rescheduled': reschedules}


def test_the_goals_follow_the_counts(cloudcapacity):
    ours, in_tree = cloudcapacity.OURS, cloudcapacity.IN_TREE
    report = cloudcapacity._report({
        ours: [_run('x1', 1, 0), _run('x2', 2, 3)],
        in_tree: [_run('x1', 0, 0), _run('x2', 0, 5)]})
    met = {goal['name']: goal['met'] for goal in report['goals']}
    assert list(met.values()) == [True, True, True]
    report = cloudcapacity._report({
        ours: [_run('x1', 3, 1), _run('x2', 2, 6)],
        in_tree: [_run('x1', 0, 0), _run('x2', 0, 5)]})
    assert [goal['met'] for goal in report['goals']] == [False, False,
                                                         False]
