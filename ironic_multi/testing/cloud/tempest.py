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
    python -m ironic_multi.testing.cloud.tempest --publish RESULTS_JSON
        [--doc PATH]

Starts a :class:`~.cloud.Cloud`, writes a ``tempest.conf`` for it (bare
metal: no resize, migration, console, snapshot, pause, suspend, shelve
or volume attached to a running server; validation off), runs the tests of
``tools/tempest/include.txt`` minus those of ``exclude.txt`` with
``tempest run``, those of :data:`VALIDATED` in a run of their own with
validation on (they log into their servers: the cloud's fake guests, see
:mod:`~.guests`, answer), and writes the results: ``results.json`` (every test,
its status and the reason of a skip or failure, the run's figures) and
``results.rst`` (the page of doc/source/tempest.rst, see
:mod:`~.tempest_report`).  ``./tox.sh -e tempest`` runs it;
``--publish`` writes the page of a run's ``results.json`` into the docs.
"""

import argparse
import configparser
import contextlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time

from ironic_multi.testing.cloud import glance
from ironic_multi.testing.cloud import guests
from ironic_multi.testing.cloud import neutron
from ironic_multi.testing.cloud import nova
from ironic_multi.testing.cloud import tempest_report

LOG = logging.getLogger(__name__)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
LISTS = os.path.join(ROOT, 'tools', 'tempest')
# Tempest's servers and flavors: every node of a class fits (no
# capabilities), and the alternate flavor is another class.
FLAVORS = {'tempest-gold': 'CUSTOM_GOLD', 'tempest-silver': 'CUSTOM_SILVER'}
ALT_IMAGE = 'cirros-alt'
# In the output directory: tempest's workspace and the services' logs.
WORKSPACE, LOGS = 'workspace', 'logs'
# The file of tempest's workspace names, next to the workspace.
REGISTRY = '.yaml'
# Every compute API test of tempest (those it runs one at a time too).
COMPUTE_TESTS = r'^tempest\.(serial_tests\.)?api\.compute\.'
# Compute API features a bare metal node does not have, and why (the
# page of the results lists them).
DISABLED_FEATURES = {
    'resize': 'a node is its flavor: another flavor is another machine, '
              'and Nova cannot move a disk between machines',
    'cold_migration': 'the disk is the node\'s own: nothing copies it to '
                      'another node',
    'live_migration': 'a running physical machine cannot move',
    'block_migration_for_live_migration': 'live migration',
    'volume_backed_live_migration': 'live migration',
    'snapshot': 'Nova cannot image a node\'s disk',
    'shelve': 'shelving starts with a snapshot',
    'shelve_migrate': 'shelving starts with a snapshot',
    'pause': 'a physical machine cannot be paused, only powered off',
    'suspend': 'a physical machine cannot be suspended by Nova',
    'stable_rescue': 'Ironic rescues into its rescue ramdisk: no rescue '
                     'image or device bus of the user\'s choosing',
    'console_output': 'Ironic keeps no console log to read back',
    'spice_console': 'Ironic has no SPICE console',
    'serial_console': 'Ironic\'s fake serial console gives no socat '
                      'endpoint; the driver gives a real one\'s',
    'change_password': 'Nova sets it through a hypervisor\'s guest agent',
    'disk_config': 'the image and Ironic lay out the disk, not Nova\'s '
                   'AUTO or MANUAL disk config',
    'hostname_fqdn_sanitization': 'its test reads the hostname inside '
                                  'the server (validation is off)',
    'metadata_service': 'the cloud runs no metadata API',
    # Ironic sets a node's volumes (its volume targets) at deploy, and
    # changes them only while it is off: no volume comes or goes while
    # the server runs.
    'attach_encrypted_volume': 'volumes are attached at boot only, as '
                               'Ironic volume targets',
    'swap_volume': 'volumes are attached at boot only, as Ironic volume '
                   'targets',
    'volume_multiattach': 'volumes are attached at boot only, as Ironic '
                          'volume targets',
}
# Why a cloud without noVNC's web client runs no console test.
NO_NOVNC = ('the cloud venv has no noVNC web client (Debian\'s novnc '
            'package could not be fetched), so no nova-novncproxy runs')
# Modules whose every test logs into its servers first
# (``[validation] run_validation``, or tempest skips them): they run with
# validation on, against the cloud's guests (``Cloud.guests``), apart from
# the rest, which would run commands inside their servers.
VALIDATED = (r'^tempest\.api\.compute\.servers\.test_attach_interfaces\.',)
# Every server gets a config drive, as on an Ironic cloud without a
# metadata API: the guests read its key pair and address from it.
COMPUTE_OPTIONS = {'DEFAULT': {'force_config_drive': True}}
# Why they skip on a cloud without guests.
NO_GUESTS = ('the cloud runs no fake guests (they take root, for their '
             'addresses on the loopback device), so no test logs into a '
             'server')
# Features tempest assumes absent that the driver has: injected files
# (personality) go into the node's config drive.  And rescue (tempest's
# default), through Ironic's rescue interface, and interface attach
# (tempest's default), bound by Ironic's flat network interface.
ENABLED_FEATURES = ('personality', 'config_drive', 'rescue',
                    'interface_attach')
# The nodes: enough for two workers that each create up to 3 servers at a
# time, with room for deletes that are still tearing down.
NODES = 48
BUILD_TIMEOUT = 300


def config(cloud, flavors, images, lock_path, log_file, validation=False):
    """The text of a ``tempest.conf`` for ``cloud``.

    :param flavors: ``(flavor_ref, flavor_ref_alt)`` ids.
    :param images: ``(image_ref, image_ref_alt)`` ids.
    :param validation: tests log into their servers (by SSH, on their
        fixed addresses, with a key pair Nova made).
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
        'image_ref': images[0], 'image_ref_alt': images[1],
        'flavor_ref': flavors[0], 'flavor_ref_alt': flavors[1],
        'min_microversion': '2.1', 'max_microversion': 'latest',
        'build_timeout': str(BUILD_TIMEOUT), 'build_interval': '2',
        'region': keystone.region,
        'min_compute_nodes': str(len(cloud.computes)),
    }
    if cloud.network_id:
        conf['compute']['fixed_network_name'] = neutron.NETWORK
    conf['compute-feature-enabled'] = dict.fromkeys(
        disabled_features(cloud), 'false')
    conf['compute-feature-enabled'].update(dict.fromkeys(ENABLED_FEATURES,
                                                         'true'))
    # Ironic's graphical console, through the cloud's nova-novncproxy.
    if cloud.novnc_web is not None:
        conf['compute-feature-enabled']['vnc_console'] = 'true'
    conf['compute-feature-enabled'].update({
        # The filters the scheduler runs: tempest skips the tests of the
        # others (same_host, different_host...) instead of failing them.
        'scheduler_enabled_filters': ', '.join(scheduler_filters(cloud))})
    conf['validation'] = {'run_validation': str(validation).lower()}
    if validation:
        conf['validation'].update({
            # No router: the fixed address, on the flat network.
            'connect_method': 'fixed', 'network_for_ssh': neutron.NETWORK,
            'ip_version_for_ssh': '4', 'auth_method': 'keypair',
            # Nova's own key pairs (tempest asks it for one) are RSA.
            'ssh_key_type': 'rsa', 'image_ssh_user': guests.USER})
    conf['service_available'] = {
        'nova': 'true', 'glance': 'true', 'neutron': str(
            cloud.network_id is not None).lower(),
        'cinder': 'true', 'swift': 'false', 'ironic': 'false'}
    # Cinder's fake volume driver: no backups (no backup service runs).
    conf['volume-feature-enabled'] = {'backup': 'false'}
    conf['image-feature-enabled'] = {'api_v1': 'false', 'api_v2': 'true'}
    text = io.StringIO()
    conf.write(text)
    return text.getvalue()


def disabled_features(cloud):
    """:data:`DISABLED_FEATURES`, and what ``cloud`` lacks besides."""
    features = dict(DISABLED_FEATURES)
    if cloud.novnc_web is None:
        features['vnc_console'] = NO_NOVNC
    return features


def scheduler_filters(cloud):
    """The ``[filter_scheduler] enabled_filters`` of the cloud's Nova."""
    options = getattr(cloud, 'nova_options', None) or {}
    return options.get('filter_scheduler', {}).get(
        'enabled_filters', nova.SCHEDULER_FILTERS)


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


def create_alt_image(cloud):
    """A second image: rebuilds and image filters need two."""
    admin = cloud.connection()
    return admin.image.create_image(
        name=ALT_IMAGE, data=glance.IMAGE_DATA + b'alt\n',
        disk_format='raw', container_format='bare', visibility='public',
        wait=True).id


def selection(regex=None):
    """The arguments of ``tempest run`` that choose the tests."""
    if regex:
        return ['--regex', regex]
    return ['--include-list', os.path.join(LISTS, 'include.txt'),
            '--exclude-list', os.path.join(LISTS, 'exclude.txt')]


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


def tempest_version(cloud):
    return subprocess.run(
        [cloud.python, '-c', 'from importlib import metadata; '
         'print(metadata.version("tempest"))'], capture_output=True,
        text=True, check=True).stdout.strip()


def run(cloud, workspace, concurrency=2, regex=None):
    """Configure and run tempest in ``workspace``.

    Returns ``(results, seconds, not_included)``: every selected test's
    result (a class skipped as a whole counts as each of its tests), how
    long tempest ran, and the compute API modules the include list leaves
    out.
    """
    cloud.run(init_command(cloud.bin('tempest'), workspace))
    flavors = create_flavors(cloud)
    images = (cloud.image_id, create_alt_image(cloud))
    confs = {}
    for validation in (False, True):
        confs[validation] = os.path.join(
            workspace, 'etc', 'tempest-validation.conf' if validation
            else 'tempest.conf')
        with open(confs[validation], 'w') as f:
            f.write(config(cloud, flavors, images,
                           lock_path=os.path.join(workspace, 'locks'),
                           log_file=os.path.join(workspace, 'tempest.log'),
                           validation=validation))
    argv = [cloud.bin('tempest'), 'run']

    def list_tests(*selected):
        output = subprocess.run(
            argv + ['--list-tests'] + list(selected), cwd=workspace,
            env=cloud.env(), capture_output=True, text=True,
            check=True).stdout.split()
        return [t for t in output if t.startswith('tempest.')]

    listed = list_tests(*selection(regex))
    not_included = tempest_report.modules_left_out(
        list_tests('--regex', COMPUTE_TESTS),
        list_tests(*selection(regex)[:2]))
    runs = split_validated(listed, cloud.guests is not None)
    results = []
    started = time.monotonic()
    with open(os.path.join(workspace, 'run.log'), 'w') as log:
        for validation, tests in runs:
            load_list = os.path.join(workspace, 'tests-%s.txt' % (
                'validated' if validation else 'plain'))
            with open(load_list, 'w') as f:
                f.write(''.join(t + '\n' for t in tests))
            # Failed tests make it exit 1: the results say which.
            subprocess.run(argv + ['--config-file', confs[validation],
                                   '--concurrency', str(concurrency),
                                   '--load-list', load_list],
                           cwd=workspace, stdout=log,
                           stderr=subprocess.STDOUT, env=cloud.env())
            results += tempest_report.expand_class_skips(
                read_results(cloud, workspace), tests)
    seconds = time.monotonic() - started
    LOG.info('tempest ran in %.0f s', seconds)
    return sorted(results, key=lambda r: r['test']), seconds, not_included


def split_validated(tests, guests):
    """``[(validation, tests)]``: the runs that make up a selection.

    With ``guests``, the tests of :data:`VALIDATED` in a run of their own
    with validation on; without, every test in one run, validation off.
    Empty runs are left out.
    """
    if not guests:
        return [(False, list(tests))] if tests else []
    validated = [t for t in tests
                 if any(re.match(pattern, t) for pattern in VALIDATED)]
    needing = set(validated)
    plain = [t for t in tests if t not in needing]
    return [(validation, chosen) for validation, chosen
            in ((False, plain), (True, validated)) if chosen]


def command(argv):
    """How the run was asked for, as a reader would type it."""
    words = ['./tox.sh', '-e', 'tempest']
    if argv:
        words += ['--'] + list(argv)
    return ' '.join(words)


def publish(results_path, doc_path):
    with open(results_path) as f:
        data = json.load(f)
    with open(doc_path, 'w') as f:
        f.write(tempest_report.page(data))
    print('wrote %s from %s' % (doc_path, results_path))


def init_command(tempest, workspace):
    """``tempest init`` of a workspace registered next to it.

    Not in ``~/.tempest/workspace.yaml``: a name registered there by an
    earlier run (or another checkout) makes ``tempest init`` fail.
    """
    return [tempest, 'init', '--workspace-path', workspace + REGISTRY,
            workspace]


def fresh_output(output):
    """``output`` without an earlier run's workspace and logs.

    ``tempest init`` refuses a directory that is not empty or a name
    registered already, and the services append to their logs.
    """
    for name in (WORKSPACE, LOGS):
        shutil.rmtree(os.path.join(output, name), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(output, WORKSPACE + REGISTRY))
    os.makedirs(output, exist_ok=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
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
    parser.add_argument('--publish', metavar='RESULTS_JSON',
                        help='run nothing: write the page of these '
                        'results to --doc')
    parser.add_argument('--doc', default=os.path.join(
        ROOT, 'doc', 'source', 'tempest.rst'), help='the page --publish '
        'writes (default: %(default)s)')
    args = parser.parse_args(argv)
    if args.publish:
        publish(args.publish, args.doc)
        return 0
    logging.basicConfig(level=logging.INFO,
                        format='%(asctime)s %(message)s')
    from ironic_multi.testing.cloud import cloud as cloud_mod

    output = os.path.abspath(args.output)
    fresh_output(output)
    started = time.monotonic()
    date = time.strftime('%Y-%m-%d', time.gmtime())
    with cloud_mod.Cloud(computes=args.computes, nodes=args.nodes,
                         log_dir=os.path.join(output, LOGS),
                         compute_options=COMPUTE_OPTIONS) as cloud:
        results, tempest_seconds, not_included = run(
            cloud, os.path.join(output, WORKSPACE), args.concurrency,
            args.regex)
        held = cloud.held_nodes()
        version = tempest_version(cloud)
        cloud_start = cloud.start_seconds
        filters = list(scheduler_filters(cloud))
        disabled = disabled_features(cloud)
        validated = list(VALIDATED) if cloud.guests is not None else []
    seconds = time.monotonic() - started
    data = {
        'command': command(argv), 'date': date,
        'tempest_version': version, 'computes': args.computes,
        'nodes': args.nodes, 'concurrency': args.concurrency,
        'seconds': round(seconds), 'cloud_start_seconds': round(cloud_start),
        'tempest_seconds': round(tempest_seconds),
        'disabled_features': disabled,
        'scheduler_filters': filters, 'not_included': not_included,
        'validated': validated,
        'excluded': [] if args.regex else tempest_report.read_list(
            os.path.join(LISTS, 'exclude.txt')),
        'results': results, 'held_nodes_after': held,
    }
    results_path = os.path.join(output, 'results.json')
    with open(results_path, 'w') as f:
        json.dump(data, f, indent=1)
    publish(results_path, os.path.join(output, 'results.rst'))
    counts = tempest_report.counts(results)
    print('tempest: %d passed, %d skipped, %d failed in %.0f s (cloud '
          'included); nodes still held after: %d' % (
              counts['success'], counts['skip'], counts['fail'], seconds,
              len(held)))
    for result in results:
        if result['status'] == 'fail':
            print('FAILED %s: %s' % (result['test'], result['reason']))
    return 1 if counts['fail'] or not results or held else 0


if __name__ == '__main__':
    sys.exit(main())
