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

"""The page of tempest's results, written from results.json."""

import re

from ironic_multi.testing.cloud import tempest
from ironic_multi.testing.cloud import tempest_report as report

SERVERS = 'tempest.api.compute.servers.test_servers.ServersTest.'
IMAGES = 'tempest.api.compute.images.test_images.ImagesTestJSON'


def _results():
    return [
        {'test': SERVERS + 'test_a', 'status': 'success', 'reason': ''},
        {'test': SERVERS + 'test_b', 'status': 'skip',
         'reason': 'Resize not available.'},
        {'test': 'tempest.api.compute.flavors.test_flavors.FlavorsTest.'
                 'test_c', 'status': 'fail', 'reason': 'Boom'},
        {'test': 'tempest.api.compute.test_quotas.QuotasTestJSON.test_d',
         'status': 'success', 'reason': ''},
    ]


def test_a_test_belongs_to_its_module_below_compute():
    assert report.module_of(SERVERS + 'test_a') == 'servers.test_servers'
    assert report.module_of(
        'tempest.api.compute.test_quotas.QuotasTestJSON.test_d'
        '[id-1,smoke]') == 'test_quotas'
    assert report.module_of('setUpClass (%s)' % IMAGES) == \
        'images.test_images'
    assert report.module_of(
        'tempest.serial_tests.api.compute.admin.test_aggregates.'
        'AggregatesAdminTestJSON.test_e') == 'serial: admin.test_aggregates'


def test_the_table_counts_each_module():
    text = '\n'.join(report.table(_results()))
    assert re.search(r'servers\.test_servers\s+1\s+1\s+0', text), text
    assert re.search(r'flavors\.test_flavors\s+0\s+0\s+1', text), text
    assert re.search(r'\ntest_quotas\s+1\s+0\s+0', text), text
    assert re.search(r'\*\*total\*\*\s+\*\*2\*\*\s+\*\*1\*\*\s+\*\*1\*\*',
                     text), text


def test_a_class_skipped_as_a_whole_counts_as_each_of_its_tests():
    results = _results() + [{'test': 'setUpClass (%s)' % IMAGES,
                             'status': 'skip', 'reason': 'No snapshots'}]
    listed = [SERVERS + 'test_a[id-1]', IMAGES + '.test_x[id-2]',
              IMAGES + '.test_y[id-3,smoke]']
    expanded = report.expand_class_skips(results, listed)
    skipped = {r['test']: r['reason'] for r in expanded
               if r['status'] == 'skip'}
    assert skipped == {SERVERS + 'test_b': 'Resize not available.',
                       IMAGES + '.test_x': 'No snapshots',
                       IMAGES + '.test_y': 'No snapshots'}
    assert len(expanded) == len(_results()) + 2


def test_the_modules_left_out_are_those_without_a_selected_test():
    every = [SERVERS + 'test_a', IMAGES + '.test_x',
             'tempest.api.compute.volumes.test_v.VTest.test_y']
    assert report.modules_left_out(every, [SERVERS + 'test_a']) == [
        'images.test_images', 'volumes.test_v']


def test_a_class_skip_without_listed_tests_stays_as_named():
    results = [{'test': 'setUpClass (%s)' % IMAGES, 'status': 'skip',
                'reason': 'No snapshots'}]
    assert report.expand_class_skips(results, []) == results


def test_the_reasons_of_a_list_file_are_the_comments_before_regexes(
        tmp_path):
    path = tmp_path / 'exclude.txt'
    path.write_text('# About the file.\n\n# No Cinder.\nvolume\n'
                    '\\.test_x\n# Shelving needs\n# a snapshot.\nShelve\n')
    assert report.read_list(str(path)) == [
        {'regex': 'volume', 'reason': 'No Cinder.'},
        {'regex': '\\.test_x', 'reason': 'No Cinder.'},
        {'regex': 'Shelve', 'reason': 'Shelving needs a snapshot.'}]


def test_every_exclusion_has_a_reason():
    for item in report.read_list(tempest.os.path.join(tempest.LISTS,
                                                      'exclude.txt')):
        assert item['reason'], item


def _data():
    return {
        'command': './tox.sh -e tempest', 'date': '2026-11-25',
        'tempest_version': '47.0.0', 'computes': 3, 'nodes': 48,
        'concurrency': 2, 'seconds': 940, 'cloud_start_seconds': 51,
        'tempest_seconds': 850, 'results': _results(),
        'held_nodes_after': {},
        'disabled_features': {'resize': 'a node is its flavor'},
        'scheduler_filters': ['ComputeFilter'],
        'excluded': [{'regex': 'volume', 'reason': 'No Cinder.'}],
        'not_included': ['volumes.test_volumes_get'],
    }


def test_the_page_gives_the_run_and_every_reason():
    text = report.page(_data())
    assert '``./tox.sh -e tempest``' in text
    assert 'Tempest 47.0.0, 3 compute services, 48 Ironic nodes' in text
    assert '2 passed, 1 skipped, 1 failed in 16 minutes (940 s' in text
    for reason in ('Boom', 'Resize not available.', 'a node is its flavor',
                   'No Cinder.', '``volume``', 'ComputeFilter',
                   '``volumes.test_volumes_get``'):
        assert reason in text, reason


def test_the_page_says_none_without_failures():
    data = _data()
    data['results'] = [r for r in data['results'] if r['status'] != 'fail']
    text = report.page(data)
    assert re.search(r'Failures\n-+\n\nNone\.', text), text


# Tempest's skip reasons of the last published run (doc/source/tempest.rst).
SKIPS_SEEN = (
    'Resize not available.', 'Pause is not available.',
    'Shelve is not available.', 'Stable rescue not available.',
    'Instance validation tests are disabled.',
    'ImagesDeleteNegativeTestJSON skipped as instance snapshotting is not '
    'supported', 'Suspend is not available.',
    'Snapshotting is not available.', 'DiskConfig extension not enabled.',
    'Cold migration not available.', 'Console output not supported.',
    'Skipped until bug: https://launchpad.net/bugs/1186354 is resolved.',
    'DifferentHostFilter is not available.',
    'Only owner network supports creating interface by fixed ip.',
    'Snapshotting not available, backup not possible.',
    'Ironic does not support hypervisor uptime',
    'SameHostFilter is not available.',
    'Neutron allows duplicate names for security groups',
    'Neutron does not check the security group ID',
    'FQDN hostname sanitization is not supported.',
    'Change password not available.',
    'The public_network_id option must be specified.',
    '``[compute]/certified_image_ref`` required to test image certificate '
    'validation.')


def test_every_skip_seen_says_why_it_holds_here():
    for reason in SKIPS_SEEN:
        assert report.skip_cause(reason, tempest.DISABLED_FEATURES), reason


def test_a_skip_of_a_feature_names_it_and_its_reason():
    assert report.skip_cause('Resize not available.', {
        'resize': 'a node is its flavor'}) == (
        '``resize`` off: a node is its flavor')
    # A feature the config leaves on: no cause to give.
    assert report.skip_cause('Resize not available.', {}) is None
    assert report.skip_cause('Something new.', {'resize': 'x'}) is None


def test_the_skips_table_says_why_each_holds():
    text = report.page(_data())
    assert '``resize`` off: a node is its flavor' in text
