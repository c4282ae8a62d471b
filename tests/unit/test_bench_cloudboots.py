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

"""Where a boot's time goes, read from the computes' logs (the bench)."""

import types

import pytest

ID = '005ef238-cc81-43de-97d2-21e2eabcac35'
OTHER = '35719cac-bbf5-454e-9740-2354fe95567d'
PREFIX = ('2026-11-25 10:07:38.927 15621 INFO nova.compute.manager [None '
          'req-380f 10e6 7e3a - - default default] ')
LOG = (
    '2026-11-25 10:07:35.507 15621 INFO ironic_multi._reservation.claims '
    '[None req-380f] Reserved node cfcdcfdc-4e2b-4b3f-a2bb-c3bc0d833539 '
    'for instance %(id)s from the ready pool in 0.120 s\n'
    + PREFIX + '[instance: %(id)s] Took 3.54 seconds to spawn the instance '
    'on the hypervisor.\n'
    + PREFIX + '[instance: %(id)s] Took 3.80 seconds to build instance.\n'
    + PREFIX + '[instance: %(other)s] Took 9.00 seconds to build '
    'instance.\n')


@pytest.fixture
def cloudboots(bench_module):
    return bench_module('cloudboots')


def test_the_phases_of_a_boot_come_from_the_compute_logs(
        cloudboots, tmp_path):
    (tmp_path / 'nova-compute-compute-1.log').write_text(
        LOG % {'id': ID, 'other': OTHER})
    (tmp_path / 'nova-api.log').write_text(
        PREFIX + '[instance: %s] Took 50.0 seconds to build instance.\n'
        % ID)
    cloud = types.SimpleNamespace(log_dir=str(tmp_path))
    phases = cloudboots._phases(cloud, {ID: 5.0})
    # The other server is not one of this sample's; nova-api's log is not
    # a compute's.
    assert phases == {'claim': [0.12], 'spawn': [3.54], 'build': [3.8],
                      'before build': [1.2]}


def _cloud(cloudboots, driver, offered, computes=3):
    """A cloud whose providers' gold inventories leave ``offered`` free."""
    inventories = {
        'rp-%d' % i: {'CUSTOM_GOLD': types.SimpleNamespace(
            total=cloudboots.NODES, reserved=cloudboots.NODES - free)}
        for i, free in enumerate(offered)}
    return types.SimpleNamespace(
        compute_driver=driver, computes=['c%d' % i for i in range(computes)],
        provider_inventories=lambda: inventories)


def test_placement_has_settled_when_the_offers_add_up_to_every_node(
        cloudboots):
    ours, in_tree = (cloudboots.CLOUDS[cloudboots.OURS][0],
                     cloudboots.CLOUDS[cloudboots.IN_TREE][0])
    nodes = cloudboots.NODES
    # Each of ours offers its own shards' free nodes.
    assert cloudboots._placement_settled(
        _cloud(cloudboots, ours, [nodes - 6, 4, 2]))
    assert not cloudboots._placement_settled(
        _cloud(cloudboots, ours, [nodes - 6, 4, 1]))
    # A compute that has not reported yet.
    assert not cloudboots._placement_settled(
        _cloud(cloudboots, ours, [nodes - 4, 4]))
    assert cloudboots._placement_settled(
        _cloud(cloudboots, in_tree, [1] * nodes, computes=1))


def _run(latencies, phases=None):
    return {'servers': len(latencies), 'active': len(latencies),
            'errors': {}, 'api_errors': 0, 'seconds': 10.0,
            'boots_per_minute': len(latencies) * 6.0,
            'latencies': latencies, 'phases': phases or {}}


def test_the_report_gives_both_ratios_against_ironics_burst(cloudboots):
    runs = {cloudboots.OURS: [_run([6.0, 6.0, 8.0], {'claim': [0.1]})],
            cloudboots.IN_TREE: [_run([12.0, 12.0, 12.0])],
            cloudboots.FAKE: [_run([1.0, 1.0, 1.0])]}
    deploys = {'one at a time': [2.0, 2.0], 'burst': [3.0, 3.0, 5.0]}
    report = cloudboots._report(runs, deploys)
    ratios = report['results']['ratios']
    # 6 / (1 + 3) and 6 / 12; one at a time: 6 / (1 + 2).
    assert ratios['ours_p50_over_fake_plus_deploy'] == 1.5
    assert ratios['ours_p50_over_in_tree'] == 0.5
    assert ratios['ours_p50_over_fake_plus_single_deploy'] == 2.0
    # 1.5x misses the 1.2x goal; 0.5x meets the 0.7x one.
    assert [g['met'] for g in report['goals']] == [False, True]
    assert report['results']['summary'][cloudboots.OURS]['phases_p50'][
        'claim'] == 0.1
    assert len(report['rows']) == 5


def test_each_round_has_its_own_ratios_and_the_second_runs_backwards(
        cloudboots):
    assert cloudboots.ROUNDS[1] == tuple(reversed(cloudboots.ROUNDS[0]))
    assert set(cloudboots.ROUNDS[0]) == set(cloudboots.CLOUDS)

    def tagged(number, latencies):
        return dict(_run(latencies), round=number)

    # The machine was slower while ours ran in round 1, and while the
    # in-tree driver ran in round 2.
    runs = {cloudboots.OURS: [tagged(1, [9.0]), tagged(2, [6.0])],
            cloudboots.IN_TREE: [tagged(1, [9.0]), tagged(2, [12.0])],
            cloudboots.FAKE: [tagged(1, [1.0]), tagged(2, [1.0])]}
    deploys = {'one at a time': [2.0], 'burst': [3.0]}
    results = cloudboots._report(runs, deploys)['results']
    assert results['ratios_per_round'] == [
        {'round': 1, 'ours_p50_over_in_tree': 1.0,
         'ours_p50_over_fake_plus_deploy': 2.25},
        {'round': 2, 'ours_p50_over_in_tree': 0.5,
         'ours_p50_over_fake_plus_deploy': 1.5}]
    # Pooled: the p50 (nearest rank) of (6, 9) is 9; of (9, 12), 12.
    assert results['ratios']['ours_p50_over_in_tree'] == 0.75
