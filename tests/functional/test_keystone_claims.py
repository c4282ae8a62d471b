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

"""The default claim path behind a real Keystone, in the three ways a
cloud may let nova-compute at Ironic.

Ironic runs with its shipped default policies; nova-compute authenticates
with the ``[ironic]`` keystoneauth password options as the ``nova`` user
devstack creates.  In the two rows that can work, claims in both modes
(PATCH, the default, and allocations, which fall back to PATCH where
Ironic would restrict them), release, deploy, tear down and capacity
work; in the third the service refuses to start, naming the fix.  One
server boots and is deleted through Nova's services with the same
credentials.
"""

import time

import pytest

from ironic_multi._reservation.providers.ironic import provider as ironic
from ironic_multi import exception
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import keystone_server
from ironic_multi.testing import nova_services
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers

NODES = 3


def make_provider(keystone, scope, region=None, **options):
    conf = reservers.make_conf(
        ironic=keystone.ironic_options(scope, region),
        state_poll_interval=0.1, **options)
    return ironic.IronicProvider(conf)


@pytest.fixture
def elevated(elevated_ironic):
    nodes = ironic_nodes.admin_nodes(elevated_ironic)
    yield nodes
    nodes.wipe()


@pytest.fixture
def plain(plain_ironic):
    nodes = ironic_nodes.admin_nodes(plain_ironic)
    yield nodes
    nodes.wipe()


def exercise(provider, nodes, uuids, caplog):
    """Claim, deploy, tear down, release, capacity: as a service would."""
    provider.start()
    shard = 'keystone-suite'
    requirements = provider_contract.request('baremetal')
    assert provider.refresh({shard}) >= NODES
    ready = provider.ready_nodes(requirements, {shard})
    assert {n['uuid'] for n in ready} == set(uuids)
    before = nodes.snapshot()

    instance = provider_contract.new_instance()
    claimed = provider.claim(ready, instance, requirements,
                             time.monotonic() + 60)
    assert claimed.node_uuid in uuids
    assert nodes.get_node(claimed.node_uuid)['instance_uuid'] == instance

    deployed = provider.deploy(claimed, provider_contract.deployment(
        instance, 'keystone-host'))
    assert deployed.state.value == 'active'
    assert set(provider.instances('keystone-host')) == {instance}
    provider.refresh({shard})
    assert provider.capacity({shard})[shard]['baremetal'] == {
        'total': NODES, 'free': NODES - 1}

    provider.teardown(deployed)
    provider.release(instance)
    assert provider.lookup(instance) is None
    settled = provider_contract.ProviderContract.eventually(
        nodes.snapshot, before)
    assert ironic_nodes.diff_snapshots(before, settled) == []


@pytest.mark.parametrize('use_allocations', [True, False],
                         ids=['allocations', 'patch'])
def test_system_scoped(keystone, plain, use_allocations, caplog):
    uuids = plain.enroll_nodes(NODES, shard='keystone-suite')
    provider = make_provider(keystone, 'system',
                             use_allocations=use_allocations)
    exercise(provider, plain, uuids, caplog)
    assert provider._claimer.by_allocation is use_allocations
    assert 'project-scoped' not in caplog.text


@pytest.mark.parametrize('use_allocations', [True, False],
                         ids=['allocations', 'patch'])
def test_project_scoped_with_elevated_access(keystone, elevated,
                                             use_allocations, caplog):
    uuids = elevated.enroll_nodes(NODES, shard='keystone-suite')
    provider = make_provider(keystone, 'project',
                             keystone_server.ELEVATED_REGION,
                             use_allocations=use_allocations)
    exercise(provider, elevated, uuids, caplog)
    # Allocations would find no node: claims went by PATCH, and the
    # operator was told how to get allocations back.
    assert not provider._claimer.by_allocation
    if use_allocations:
        assert 'system_scope = all' in caplog.text


def test_project_scoped_with_ironic_defaults_refuses_to_start(
        keystone, plain):
    plain.enroll_nodes(NODES, shard='keystone-suite')
    provider = make_provider(keystone, 'project')
    with pytest.raises(exception.ConfigInvalid) as caught:
        provider.start()
    message = str(caught.value)
    assert 'HTTP 403' in message
    assert 'system_scope = all' in message
    assert 'rbac_service_role_elevated_access' in message


def test_boot_and_delete_through_nova(keystone, plain):
    """nova-compute with the [ironic] options an operator writes.

    This Ironic answers 401 to a request without a Keystone token, so the
    boot goes through only if the driver authenticates as configured.
    """
    # Nova's harness points [ironic] at a noauth endpoint; these replace
    # it with Keystone's catalog and the nova user's password.
    ironic_options = dict(keystone.ironic_options('system'),
                          endpoint_override=None)
    with nova_services.NovaServices(
            plain, computes=1, nodes=NODES,
            flags={'ironic': ironic_options}) as nova:
        server = nova.boot()
        node = nova.assert_on_ironic(server)
        assert node['instance_uuid'] == server['id']
        # delete_and_check waits for the node to be available and free.
        after = nova.delete_and_check(server)
        assert after['provision_state'] == 'available'
        assert after['instance_uuid'] is None
