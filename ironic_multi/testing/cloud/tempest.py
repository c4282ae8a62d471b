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

"""Tempest's compute API tests on the multi-process cloud.

    python -m ironic_multi.testing.cloud.tempest [--concurrency N]
        [--output DIR] [--regex R]

Starts a :class:`~.cloud.Cloud`, writes a ``tempest.conf`` for it (bare
metal: no resize, migration, console, snapshot, pause, suspend, shelve,
rescue or volumes; validation off), runs the tests of
``tools/tempest/include.txt`` minus those of ``exclude.txt`` with
``tempest run``, and writes the results: ``results.json`` (every test,
its status and the reason of a skip or failure) and ``results.rst`` (the
table of doc/source/tempest.rst).  ``./tox.sh -e tempest`` runs it.
"""

import argparse
import collections
import configparser
import io
import json
import logging
import os
import subprocess
import sys
import time

LOG = logging.getLogger(__name__)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
LISTS = os.path.join(ROOT, 'tools', 'tempest')
# Tempest's servers and flavors: every node of a class fits (no
# capabilities), and the alternate flavor is another class.
FLAVORS = {'tempest-gold': 'CUSTOM_GOLD', 'tempest-silver': 'CUSTOM_SILVER'}
# Compute API features a bare metal node does not have.
DISABLED_FEATURES = (
    'resize', 'cold_migration', 'live_migration', 'console_output',
    'snapshot', 'pause', 'suspend', 'shelve', 'shelve_migrate', 'rescue',
    'change_password', 'vnc_console', 'spice_console', 'serial_console',
    'interface_attach', 'personality', 'attach_encrypted_volume',
    'block_migration_for_live_migration', 'volume_multiattach',
    'swap_volume', 'volume_backed_live_migration', 'cold_migrate',
    'hostname_fqdn_sanitization', 'disk_config', 'config_drive',
    'unified_limits')
# The nodes: enough for two workers that each create up to 3 servers at a
# time, with room for deletes that are still tearing down.
NODES = 48
BUILD_TIMEOUT = 300


def config(cloud, flavors, lock_path, log_file):
    """The text of a ``tempest.conf`` for ``cloud``.

    :param flavors: ``(flavor_ref, flavor_ref_alt)`` ids.
    """
    keystone = cloud.keystone
    admin = keystone.admin
    conf = configparser.ConfigParser(interpolation=None)
    conf['DEFAULT'] = {'log_file': log_file, 'use_stderr': 'false'}
    conf['oslo_concurrency'] = {'lock_path': lock_path}
    conf['auth'] = {
        'use_dynamic_credentials': 'true',
        # Servers get a port on the shared flat network: Neutron has no
        # agents here to route a project network of their own.
        'create_isolated_networks': 'false',
        'tempest_roles': 'member',
        'admin_username': admin.username,
        'admin_password': admin.password,
        'admin_project_name': admin.project_name,
        'admin_domain_name': admin.user_domain_name,
    }
    conf['identity'] = {'uri_v3': keystone.auth_url,
                        'auth_version': 'v3',
                        'region': keystone.region,
                        'v3_endpoint_type': 'public'}
    conf['identity-feature-enabled'] = {'api_v2': 'false'}
    conf['compute'] = {
        'image_ref': cloud.image_id, 'image_ref_alt': cloud.image_id,
        'flavor_ref': flavors[0], 'flavor_ref_alt': flavors[1],
        'min_microversion': '2.1', 'max_microversion': 'latest',
        'build_timeout': str(BUILD_TIMEOUT), 'build_interval': '2',
        'region': keystone.region,
        'min_compute_nodes': str(len(cloud.computes)),
    }
    if cloud.network_id:
        conf['compute']['fixed_network_name'] = 'baremetal'
    conf['compute-feature-enabled'] = dict.fromkeys(DISABLED_FEATURES,
                                                    'false')
    conf['compute-feature-enabled'].update(
        {'metadata_service': 'false', 'scheduler_enabled_filters': 'all'})
    conf['validation'] = {'run_validation': 'false'}
    conf['service_available'] = {
        'nova': 'true', 'glance': 'true', 'neutron': str(
            cloud.network_id is not None).lower(),
        'cinder': 'false', 'swift': 'false', 'ironic': 'false'}
    conf['image-feature-enabled'] = {'api_v1': 'false', 'api_v2': 'true'}
    text = io.StringIO()
    conf.write(text)
    return text.getvalue()


def create_flavors(cloud):
    """The flavors of :data:`FLAVORS`; returns their ids, in order."""
    admin = cloud.connection()
    ids = []
    for name, resource_class in FLAVORS.items():
        flavor = admin.compute.create_flavor(name=name, ram=4096, vcpus=2,
                                             disk=40, is_public=True)
        admin.compute.create_flavor_extra_specs(flavor, {
            'resources:%s' % resource_class: '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'})
        ids.append(flavor.id)
    return ids


def read_results(cloud, workspace):
    """``[{test, status, reason}]`` from the workspace's last stestr run."""
    subunit = subprocess.run(
        [cloud.bin('stestr'), 'last', '--subunit'], cwd=workspace,
        capture_output=True, check=True).stdout
    # python-subunit lives in the cloud's venv, not in the tests' own.
    parsed = subprocess.run(
        [cloud.python, '-c', _PARSE], input=subunit, capture_output=True,
        check=True).stdout
    return json.loads(parsed)


_PARSE = r'''
import json, sys
import subunit, testtools
results = {}
def on_test(test):
    details = test['details']
    reason = details.get('reason')
    text = reason.as_text() if reason else ''
    if not text and test['status'] == 'fail':
        traceback = details.get('traceback')
        text = traceback.as_text().strip().splitlines()[-1] if traceback \
            else ''
    tid = test['id'].split('[')[0]
    if test['status'] == 'exists':
        return
    results[tid] = {'test': tid, 'status': test['status'],
                    'reason': text.strip()}
stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer,
                                          non_subunit_name='stdout')
result = testtools.StreamToDict(on_test)
result.startTestRun()
stream.run(result)
result.stopTestRun()
json.dump(sorted(results.values(), key=lambda r: r['test']), sys.stdout)
'''


def summarize(results):
    """``{group: Counter(status)}``, by test module."""
    groups = collections.defaultdict(collections.Counter)
    for result in results:
        parts = result['test'].split('.')
        # tempest.api.compute.servers.test_servers.ServersTest.test_x
        group = '.'.join(parts[3:5]) if len(parts) > 5 else result['test']
        groups[group][result['status']] += 1
    return groups


def table(results):
    """The rst tables of doc/source/tempest.rst."""
    groups = summarize(results)
    statuses = ('success', 'skip', 'fail')
    total = collections.Counter()
    rows = []
    for group in sorted(groups):
        total.update(groups[group])
        counts = groups[group]
        rows.append((group,) + tuple(str(counts[s]) for s in statuses))
    rows.append(('**total**',) + tuple('**%d**' % total[s]
                                       for s in statuses))
    lines = _rst(('Tests', 'Passed', 'Skipped', 'Failed'), rows)
    reasons = collections.Counter(
        (r['status'], r['reason'] or '-') for r in results
        if r['status'] != 'success')
    if reasons:
        lines += ['', 'Skips and failures, by reason:', '']
        lines += _rst(('Status', 'Tests', 'Reason'), [
            (status, str(count), reason.replace('\n', ' ')[:150])
            for (status, reason), count in sorted(reasons.items())])
    return '\n'.join(lines) + '\n'


def _rst(header, rows):
    widths = [max(len(str(row[i])) for row in (header,) + tuple(rows))
              for i in range(len(header))]
    rule = '  '.join('=' * w for w in widths)
    line = lambda row: '  '.join(str(c).ljust(w)
                                 for c, w in zip(row, widths)).rstrip()
    return [rule, line(header), rule] + [line(r) for r in rows] + [rule]


def run(cloud, workspace, concurrency=2, regex=None):
    """Configure and run tempest in ``workspace``; returns the results."""
    os.makedirs(workspace, exist_ok=True)
    subprocess.run([cloud.bin('tempest'), 'init', workspace],
                   check=True, capture_output=True, env=cloud.env())
    conf = config(cloud, create_flavors(cloud),
                  lock_path=os.path.join(workspace, 'locks'),
                  log_file=os.path.join(workspace, 'tempest.log'))
    with open(os.path.join(workspace, 'etc', 'tempest.conf'), 'w') as f:
        f.write(conf)
    argv = [cloud.bin('tempest'), 'run', '--concurrency', str(concurrency)]
    if regex:
        argv += ['--regex', regex]
    else:
        argv += ['--include-list', os.path.join(LISTS, 'include.txt'),
                 '--exclude-list', os.path.join(LISTS, 'exclude.txt')]
    started = time.monotonic()
    with open(os.path.join(workspace, 'run.log'), 'w') as log:
        # Failed tests make it exit 1: the results say which.
        subprocess.run(argv, cwd=workspace, stdout=log,
                       stderr=subprocess.STDOUT, env=cloud.env())
    LOG.info('tempest ran in %.0f s', time.monotonic() - started)
    return read_results(cloud, workspace)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m ironic_multi.testing.cloud.tempest',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--concurrency', type=int, default=2)
    parser.add_argument('--computes', type=int, default=3)
    parser.add_argument('--nodes', type=int, default=NODES)
    parser.add_argument('--regex', help='run these tests instead of the '
                        'include and exclude lists')
    parser.add_argument('--output', default='tempest-results',
                        help='results, tempest.conf, logs (default: '
                        '%(default)s)')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format='%(asctime)s %(message)s')
    from ironic_multi.testing.cloud import cloud as cloud_mod

    output = os.path.abspath(args.output)
    os.makedirs(output, exist_ok=True)
    started = time.monotonic()
    with cloud_mod.Cloud(computes=args.computes, nodes=args.nodes,
                         log_dir=os.path.join(output, 'logs')) as cloud:
        results = run(cloud, os.path.join(output, 'workspace'),
                      args.concurrency, args.regex)
        held = cloud.held_nodes()
    seconds = time.monotonic() - started
    with open(os.path.join(output, 'results.json'), 'w') as f:
        json.dump({'seconds': round(seconds), 'results': results,
                   'held_nodes_after': held}, f, indent=1)
    text = table(results)
    with open(os.path.join(output, 'results.rst'), 'w') as f:
        f.write(text)
    print(text)
    counts = collections.Counter(r['status'] for r in results)
    print('tempest: %d passed, %d skipped, %d failed in %.0f s (cloud '
          'included); nodes still held after: %d' % (
              counts['success'], counts['skip'], counts['fail'], seconds,
              len(held)))
    return 1 if counts['fail'] or not results else 0


if __name__ == '__main__':
    sys.exit(main())
