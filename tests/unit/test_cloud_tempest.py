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

"""The tempest.conf written for the multi-process cloud, and its report."""

import configparser
import os
import re
import types

from ironic_multi.testing.cloud import nova
from ironic_multi.testing.cloud import tempest
from ironic_multi.testing import keystone_server


def _cloud(network_id='net-1', novnc_web='/venv/share/novnc'):
    admin = keystone_server.Credentials('admin', 'secret', 'Default',
                                        'admin', 'Default')
    keystone = types.SimpleNamespace(admin=admin, region='RegionOne',
                                     auth_url='http://127.0.0.1:5000/v3')
    return types.SimpleNamespace(keystone=keystone,
                                 network_id=network_id,
                                 novnc_web=novnc_web,
                                 computes=['compute-1', 'compute-2'])


def _parse(text):
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string(text)
    return conf


def test_the_config_turns_off_what_bare_metal_lacks():
    conf = _parse(tempest.config(
        _cloud(), ('f1', 'f2'), ('i1', 'i2'), '/l', '/t.log'))
    features = conf['compute-feature-enabled']
    for feature in ('resize', 'cold_migration', 'live_migration',
                    'console_output', 'snapshot', 'pause', 'suspend',
                    'shelve', 'stable_rescue'):
        assert features[feature] == 'false', feature
    # Ironic's graphical console, through the cloud's noVNC proxy.
    assert features['vnc_console'] == 'true'
    # Rescue goes through Ironic's rescue interface.
    assert features['rescue'] == 'true'
    assert conf['validation']['run_validation'] == 'false'
    # The cloud's Cinder: servers boot from its volumes; none is attached
    # to a running one.
    assert conf['service_available']['cinder'] == 'true'
    for feature in ('attach_encrypted_volume', 'swap_volume',
                    'volume_multiattach'):
        assert features[feature] == 'false', feature
    # Ironic's flat network interface binds attached interfaces.
    assert features['interface_attach'] == 'true'
    assert conf['service_available']['neutron'] == 'true'
    assert conf['compute']['fixed_network_name'] == 'baremetal'
    assert (conf['compute']['flavor_ref'],
            conf['compute']['flavor_ref_alt']) == ('f1', 'f2')
    assert (conf['compute']['image_ref'],
            conf['compute']['image_ref_alt']) == ('i1', 'i2')
    # The driver puts injected files into the node's config drive.
    assert features['personality'] == 'true'
    assert features['config_drive'] == 'true'
    assert conf['compute']['min_compute_nodes'] == '2'
    assert conf['auth']['admin_password'] == 'secret'
    assert conf['identity']['uri_v3'] == 'http://127.0.0.1:5000/v3'


def test_a_cloud_without_novnc_runs_no_console_test():
    cloud = _cloud(novnc_web=None)
    conf = _parse(tempest.config(cloud, ('f1', 'f2'), ('i1', 'i2'), '/l',
                                 '/t'))
    assert conf['compute-feature-enabled']['vnc_console'] == 'false'
    assert tempest.disabled_features(cloud)['vnc_console'] == (
        tempest.NO_NOVNC)
    assert 'vnc_console' not in tempest.disabled_features(_cloud())


def test_a_validated_config_logs_in_on_the_fixed_address():
    conf = _parse(tempest.config(_cloud(), ('f1', 'f2'), ('i1', 'i2'), '/l',
                                 '/t', validation=True))
    validation = conf['validation']
    assert validation['run_validation'] == 'true'
    assert (validation['connect_method'], validation['network_for_ssh'],
            validation['image_ssh_user']) == ('fixed', 'baremetal', 'cirros')
    # Nova makes the key pairs tempest asks for: RSA ones.
    assert validation['ssh_key_type'] == 'rsa'
    # The rest as in the run without validation.
    plain = _parse(tempest.config(_cloud(), ('f1', 'f2'), ('i1', 'i2'),
                                  '/l', '/t'))
    assert plain['validation']['run_validation'] == 'false'
    assert (dict(conf['compute-feature-enabled'])
            == dict(plain['compute-feature-enabled']))


ATTACH = ('tempest.api.compute.servers.test_attach_interfaces.'
          'AttachInterfacesTestJSON.test_reassign_port_between_servers'
          '[id-2f3a0127-95c7-4977-92d2-bc5aec602fb4]')
OTHER = ('tempest.api.compute.servers.test_servers.ServersTestJSON.'
         'test_create_server_with_admin_password[id-1b1c]')


def test_the_tests_that_log_in_run_apart_with_guests():
    assert tempest.split_validated([OTHER, ATTACH], guests=True) == [
        (False, [OTHER]), (True, [ATTACH])]
    assert tempest.split_validated([ATTACH], guests=True) == [
        (True, [ATTACH])]
    # Without guests, one run: tempest skips them (validation off).
    assert tempest.split_validated([OTHER, ATTACH], guests=False) == [
        (False, [OTHER, ATTACH])]
    assert tempest.split_validated([], guests=False) == []


def test_the_config_names_the_filters_the_scheduler_runs():
    # "all" made tempest run the tests of filters the cloud does not
    # enable (same_host, different_host), which then failed.
    conf = _parse(tempest.config(
        _cloud(), ('f1', 'f2'), ('i1', 'i2'), '/l', '/t'))
    filters = conf['compute-feature-enabled']['scheduler_enabled_filters']
    assert [f.strip() for f in filters.split(',')] == list(
        nova.SCHEDULER_FILTERS)


def test_without_a_network_neutron_is_off():
    conf = _parse(tempest.config(
        _cloud(None), ('f1', 'f2'), ('i1', 'i2'), '/l', '/t'))
    assert conf['service_available']['neutron'] == 'false'
    assert 'fixed_network_name' not in conf['compute']


def test_every_listed_regex_compiles():
    for name in ('include.txt', 'exclude.txt'):
        with open(os.path.join(tempest.LISTS, name)) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith('#'):
                    re.compile(line)


def test_a_new_run_starts_without_the_last_runs_workspace_and_logs(
        tmp_path):
    # tempest init failed on the workspace a first run left behind.
    for name in ('workspace/etc', 'logs'):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / 'workspace' / 'etc' / 'tempest.conf').write_text('old')
    (tmp_path / 'logs' / 'nova-api.log').write_text('old')
    (tmp_path / 'workspace.yaml').write_text('workspace: /x\n')
    (tmp_path / 'results.json').write_text('{}')
    tempest.fresh_output(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['results.json']


def test_the_workspace_is_registered_next_to_it_not_in_home():
    # A second run failed: "A workspace already exists with name:
    # workspace" (the first had registered it in ~/.tempest).
    argv = tempest.init_command('/venv/bin/tempest', '/out/workspace')
    assert argv == ['/venv/bin/tempest', 'init', '--workspace-path',
                    '/out/workspace.yaml', '/out/workspace']
