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

"""The real-Keystone fixture, and what Ironic 39 does behind Keystone.

The contract tests pin, with raw HTTP through keystoneauth sessions as
Nova would open them from its ``[ironic]`` options, what nova-compute may do
in Ironic in each way it can authenticate (4 available nodes, enrolled by
the system-scoped admin):

=========================================  =====  =====  ==================
nova-compute authenticates                 nodes  PATCH  allocation
=========================================  =====  =====  ==================
system-scoped (``system_scope = all``)     4      200    active
project ``service``, Ironic's              4      200    error: no available
``rbac_service_role_elevated_access``                    nodes match (owner
                                                         = nova's project)
project ``service``, Ironic's defaults     0      404    error (same)
=========================================  =====  =====  ==================
"""

import os
import time
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import pytest
import requests

from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server as ironic_lib
from ironic_multi.testing import keystone_server as keystone_lib

ELEVATED_REGION = keystone_lib.ELEVATED_REGION
NODES = 4


def nova_adapter(options):
    """A baremetal Adapter built from ``[ironic]`` options, as Nova does."""
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    ks_loading.register_auth_conf_options(conf, 'ironic')
    ks_loading.register_session_conf_options(conf, 'ironic')
    ks_loading.register_adapter_conf_options(conf, 'ironic')
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group='ironic')
    for name, value in options.items():
        conf.set_override(name, value, group='ironic')
    auth = ks_loading.load_auth_from_conf_options(conf, 'ironic')
    session = ks_loading.load_session_from_conf_options(conf, 'ironic',
                                                        auth=auth)
    return ks_adapter.Adapter(
        session, service_type='baremetal', region_name=conf.ironic.region_name,
        interface=conf.ironic.valid_interfaces, raise_exc=False,
        default_microversion=ironic_lib.API_VERSION)


# -- the fixture ----------------------------------------------------------


def test_keystone_answers(keystone, record_property):
    answer = requests.get(keystone.auth_url, timeout=10)

    assert answer.status_code == 200
    assert answer.json()['version']['id'].startswith('v3.')
    assert keystone.db_kind in keystone_lib._process.DB_KINDS[1:]
    record_property('db_kind', keystone.db_kind)
    record_property('keystone_start_seconds',
                    round(keystone.start_seconds, 2))


def test_nova_gets_tokens_with_devstack_roles(keystone):
    project = nova_adapter(keystone.ironic_options('project'))
    system = nova_adapter(keystone.ironic_options('system'))

    project_access = project.session.auth.get_access(project.session)
    system_access = system.session.auth.get_access(system.session)

    assert project_access.project_name == 'service'
    assert {'admin', 'service'} <= set(project_access.role_names)
    assert system_access.system_scoped
    assert 'member' in system_access.role_names
    assert project_access.user_id == system_access.user_id


def test_catalog_has_baremetal(keystone, plain_ironic, elevated_ironic,
                               record_property):
    plain = nova_adapter(keystone.ironic_options('project'))
    elevated = nova_adapter(keystone.ironic_options(
        'system', region_name=ELEVATED_REGION))

    assert plain.get_endpoint() == plain_ironic.endpoint
    assert elevated.get_endpoint() == elevated_ironic.endpoint
    record_property('ironic_keystone_start_seconds',
                    round(plain_ironic.start_seconds, 2))


def test_stop_leaves_nothing(record_property):
    server = keystone_lib.KeystoneServer(
        ironic_endpoint='http://127.0.0.1:9/')
    with server:
        pid, base_dir = server.pid, server.base_dir
        options = server.ironic_options('system')
        assert nova_adapter(options).get_endpoint() == 'http://127.0.0.1:9/'
    assert not os.path.exists(base_dir)
    assert server._database is None
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    record_property('keystone_stop_seconds', round(server.stop_seconds, 2))


# -- what Ironic 39 lets nova-compute do ------------------------------------

# Nodes nova sees, PATCH status, allocation state, per AUTH_MODES key.
ROWS = {
    'system': (NODES, 200, 'active'),
    'project-elevated': (NODES, 200, 'error'),
    'project-defaults': (0, 404, 'error'),
}


@pytest.fixture(params=list(keystone_lib.AUTH_MODES))
def row(request, keystone):
    scope, elevated = keystone_lib.AUTH_MODES[request.param]
    expected = ROWS[request.param]
    server = request.getfixturevalue(
        'elevated_ironic' if elevated else 'plain_ironic')
    nodes = ironic_nodes.admin_nodes(server)
    uuids = nodes.enroll_nodes(NODES)
    region = ELEVATED_REGION if elevated else None
    yield (nova_adapter(keystone.ironic_options(scope, region)), nodes,
           uuids, expected)
    nodes.wipe()


def _wait_for_allocation(nova, allocation):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = nova.get('/v1/allocations/%s' % allocation)
        assert answer.status_code == 200, answer.text
        if answer.json()['state'] != 'allocating':
            return answer.json()
        time.sleep(0.05)
    raise AssertionError('allocation %s still allocating' % allocation)


def test_what_nova_may_do(row, keystone):
    nova, nodes, uuids, (visible, patch_status, allocation_state) = row
    nova_project = nova.session.auth.get_access(nova.session).project_id

    listed = nova.get('/v1/nodes')
    instance = str(uuid.uuid4())
    patched = nova.patch('/v1/nodes/%s' % uuids[0], json=[
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}])
    created = nova.post('/v1/allocations',
                        json={'resource_class': 'baremetal'})

    assert listed.status_code == 200
    assert len(listed.json()['nodes']) == visible
    assert patched.status_code == patch_status, patched.text
    claimed = nodes.get_node(uuids[0])['instance_uuid']
    assert claimed == (instance if patch_status == 200 else None)
    # An allocation is accepted in every row; it fails afterwards.
    assert created.status_code == 201, created.text
    allocation = _wait_for_allocation(nova, created.json()['uuid'])
    assert allocation['state'] == allocation_state
    # Ironic makes a project-scoped caller the owner of its allocation,
    # and then only considers the nodes that project owns.
    assert allocation['owner'] == nova_project
    if allocation_state == 'active':
        assert allocation['node_uuid'] in uuids[1:]
    else:
        assert allocation['node_uuid'] is None
        assert ('no available nodes match the resource class baremetal'
                in allocation['last_error'])


# What else a project-scoped nova-compute gets, per Ironic.  A policy that
# needs a system scope fails with 500 (oslo.policy's InvalidScope is not
# mapped to 403); nodes nova may not see are 404, not 403.
PROJECT_SCOPED_READS = {
    '/v1/shards': (200, 403),
    '/v1/conductors': (200, 403),
    '/v1/deploy_templates': (200, 403),
    '/v1/nodes/{node}': (200, 404),
    '/v1/nodes/{node}/traits': (200, 404),
    '/v1/nodes/detail': (200, 200),
    '/v1/allocations': (200, 200),
    '/v1/ports': (200, 200),
    '/v1/drivers': (500, 500),
    '/v1/chassis': (500, 500),
}


def test_project_scoped_reads(keystone, plain_ironic, elevated_ironic):
    seen = {}
    for name, server, region in (
            ('elevated', elevated_ironic, ELEVATED_REGION),
            ('defaults', plain_ironic, None)):
        nodes = ironic_nodes.admin_nodes(server)
        node = nodes.enroll_nodes(1)[0]
        nova = nova_adapter(keystone.ironic_options('project', region))
        try:
            for path in PROJECT_SCOPED_READS:
                answer = nova.get(path.format(node=node))
                seen.setdefault(path, []).append(answer.status_code)
        finally:
            nodes.wipe()

    assert {path: tuple(codes) for path, codes in seen.items()} == (
        PROJECT_SCOPED_READS)


def test_system_scoped_reads(keystone, plain_ironic):
    nodes = ironic_nodes.admin_nodes(plain_ironic)
    node = nodes.enroll_nodes(1)[0]
    nova = nova_adapter(keystone.ironic_options('system'))
    try:
        codes = {path: nova.get(path.format(node=node)).status_code
                 for path in PROJECT_SCOPED_READS}
    finally:
        nodes.wipe()

    assert codes == dict.fromkeys(PROJECT_SCOPED_READS, 200)
