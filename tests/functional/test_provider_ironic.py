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

"""The provider contract against a real Ironic, in both claim modes."""

import base64
import dataclasses
import gzip
import time
import uuid

from nova.network import model as network_model
import pytest

from ironic_multi import _configdrive
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import provider
from ironic_multi import exception
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers


class IronicHarness(object):
    """Nodes enrolled in the session's Ironic through its API."""

    def __init__(self, ironic, **options):
        self.ironic = ironic
        self.options = options
        self.conf = reservers.make_conf(ironic.server.endpoint,
                                        state_poll_interval=0.1, **options)

    def add_nodes(self, count, resource_class, traits=(), properties=None,
                  shard=None, owner=None):
        return self.ironic.enroll_nodes(
            count, resource_class=resource_class, properties=properties,
            traits=traits, shard=shard, owner=owner)

    def provider(self, group=None):
        # A client of its own, too: nothing is shared with older objects.
        conf = self.conf
        if group is not None:
            conf = reservers.make_conf(
                self.ironic.server.endpoint, state_poll_interval=0.1,
                coordination_group=group, **self.options)
        ironic = provider.IronicProvider(conf)
        ironic.start()
        return ironic

    def claim_unmarked(self, node_uuid, instance_uuid):
        # What metalsmith, another Nova or an older ironic-multi writes.
        self.ironic.request('PATCH', '/v1/nodes/%s' % node_uuid, json=[
            {'op': 'add', 'path': '/instance_uuid', 'value': instance_uuid}])

    def snapshot(self):
        return self.ironic.snapshot()

    # Ironic's fake management interface has no NMI: it refuses one.
    can_nmi = False

    @property
    def disown_refusal(self):
        # The Ironic allocation carries the mark, and outlives a hand-over.
        return (exception.NodeCannot if self.options.get('use_allocations')
                else None)

    def add_volume_connector(self, node_uuid, type, connector_id):
        self.ironic.add_volume_connector(node_uuid, type, connector_id)

    def add_volume_target(self, node_uuid, target):
        self.ironic.request('POST', '/v1/volume/targets', expect=(201,),
                            json={'node_uuid': node_uuid,
                                  'volume_id': target.volume_id,
                                  'volume_type': target.volume_type,
                                  'properties': target.properties,
                                  'boot_index': target.boot_index})

    def volume_targets(self, node_uuid):
        return [base.VolumeTarget(
            volume_id=t['volume_id'], volume_type=t['volume_type'],
            properties=t['properties'], boot_index=t['boot_index'])
            for t in self.ironic.request(
                'GET', '/v1/volume/targets', params={
                    'node': node_uuid, 'detail': True}).json()['targets']]

    def without(self, node_uuid, feature):
        interface = {base.Feature.RESCUE: 'rescue_interface'}.get(
            feature, 'console_interface')
        self.ironic.request('PATCH', '/v1/nodes/%s' % node_uuid, json=[
            {'op': 'replace', 'path': '/' + interface,
             'value': 'no-rescue' if feature == base.Feature.RESCUE
             else 'no-console'}])


@pytest.fixture(params=[True, False], ids=['allocations', 'patch'])
def harness(request, ironic):
    return IronicHarness(ironic, use_allocations=request.param)


class TestIronicProviderContract(provider_contract.ProviderContract):
    """The shared provider contract, against a real Ironic."""


def test_the_config_drive_gets_the_nodes_ports_and_bonds(ironic):
    """network_data.json from the real Ironic's ports and port groups.

    As Nova's in-tree driver builds it: a VIF on a port group is a bond of
    the group's ports with its mode and options, one on a port is that
    port's MAC.  Fake hardware's ``noop`` network interface attaches VIFs
    to no port: the ports name their VIFs in ``extra`` here, the way
    Ironic reads them too.
    """
    (node,) = ironic.enroll_nodes(1, name_prefix='bonded')
    group = ironic.request('POST', '/v1/portgroups', expect=(201,), json={
        'node_uuid': node, 'address': '52:54:00:12:34:0a',
        'mode': '802.3ad', 'properties': {'miimon': '100'},
        'extra': {'vif_port_id': 'vif-bond'}}).json()['uuid']
    members = [ironic.request('POST', '/v1/ports', expect=(201,), json={
        'node_uuid': node, 'address': '52:54:00:12:34:0%d' % i,
        'portgroup_uuid': group}).json()['uuid'] for i in (1, 2)]
    ironic.request('POST', '/v1/ports', expect=(201,), json={
        'node_uuid': node, 'address': '52:54:00:12:34:03',
        'extra': {'vif_port_id': 'vif-nic'}})
    ironic_provider = provider.IronicProvider(reservers.make_conf(
        ironic.server.endpoint, state_poll_interval=0.1))
    ironic_provider.start()
    instance = str(uuid.uuid4())
    reservation = ironic_provider.claim(
        [{'uuid': node, 'resource_class': 'baremetal'}], instance,
        provider_contract.request('baremetal'), time.monotonic() + 60)
    seen = []

    def configdrive(node_network):
        seen.append(node_network)
        return base64.b64encode(gzip.compress(b'drive')).decode()

    ironic_provider.deploy(reservation, dataclasses.replace(
        provider_contract.deployment(instance, 'compute-1'),
        configdrive=configdrive))

    (node_network,) = seen
    found = _configdrive.network_metadata(network_model.NetworkInfo([
        _vif('vif-bond'), _vif('vif-nic')]), node_network)
    (bond,) = [link for link in found['links']
               if link.get('vif_id') == 'vif-bond']
    assert (bond['type'], bond['bond_mode'], bond['bond_miimon'],
            bond['ethernet_mac_address']) == (
        'bond', '802.3ad', '100', '52:54:00:12:34:0a')
    assert sorted(bond['bond_links']) == sorted(members)
    macs = {link['id']: link['ethernet_mac_address']
            for link in found['links'] if link['id'] in members}
    assert sorted(macs.values()) == ['52:54:00:12:34:01',
                                     '52:54:00:12:34:02']
    (nic,) = [link for link in found['links']
              if link.get('vif_id') == 'vif-nic']
    assert nic['ethernet_mac_address'] == '52:54:00:12:34:03'
    ironic_provider.teardown(ironic_provider.lookup(instance))
    ironic_provider.release(instance)


def _vif(vif_id):
    return network_model.VIF(id=vif_id, address='fa:16:3e:00:00:01',
                             network=network_model.Network(
                                 id='net', subnets=[network_model.Subnet(
                                     cidr='10.0.0.0/24', ips=[
                                         network_model.FixedIP(
                                             address='10.0.0.5')])]))


def _instance_info_writes(calls):
    return [patch for (_node, patch), _kw in calls
            if any(op['path'].startswith('/instance_info/')
                   and op['path'] != '/instance_info/ironic_multi'
                   for op in patch)]


@pytest.mark.parametrize('use_allocations', [False, True],
                         ids=['patch', 'allocations'])
def test_a_claim_told_its_deployment_saves_the_deploy_a_write(
        ironic, use_allocations):
    """By PATCH, the claim writes the deploy's instance_info with it.

    The deploy then writes none (one conductor round trip less per boot),
    unless the claim's answer says the node's local_gb was not the pool's.
    An allocation cannot carry it: the deploy writes it, as before.  A
    release of a claim that wrote it leaves none of it behind.
    """
    nodes = ironic.enroll_nodes(3, name_prefix='folded',
                                properties={'local_gb': 40})
    ironic_provider = provider.IronicProvider(reservers.make_conf(
        ironic.server.endpoint, state_poll_interval=0.1,
        use_allocations=use_allocations))
    ironic_provider.start()
    calls = []
    real_patch = ironic_provider.api.patch_node

    def patch_node(node, patch, **kwargs):
        calls.append(((node, patch), kwargs))
        return real_patch(node, patch, **kwargs)

    ironic_provider.api.patch_node = patch_node
    requirements = provider_contract.request('baremetal')

    def claim(node, local_gb=40):
        instance = str(uuid.uuid4())
        plan = provider_contract.deployment(instance, 'compute-1')
        candidate = {'uuid': node, 'resource_class': 'baremetal',
                     'properties': {'local_gb': local_gb}}
        return plan, ironic_provider.claim(
            [candidate], instance, requirements, time.monotonic() + 60,
            deployment=plan)

    def info(node):
        return ironic.request('GET', '/v1/nodes/%s' % node).json()[
            'instance_info']

    # A claim, then its deploy.
    plan, reservation = claim(nodes[0])
    claimed = info(nodes[0])
    if use_allocations:
        assert 'image_source' not in claimed
    else:
        assert (claimed['image_source'], claimed['nova_host_id'],
                claimed['root_gb'], claimed['local_gb']) == (
            plan.image_source, 'compute-1', '10', '40')
    del calls[:]
    ironic_provider.deploy(reservation, plan)
    assert len(_instance_info_writes(calls)) == int(use_allocations)
    deployed = info(nodes[0])
    assert (deployed['image_source'], deployed['local_gb']) == (
        plan.image_source, '40')

    # A deploy that begins long after its claim (it waited for a turn)
    # writes again: its guarded write checks the node still holds it.
    plan, reservation = claim(nodes[1])
    time.sleep(provider._CLAIM_ANSWER_TRUSTED + 0.1)
    del calls[:]
    ironic_provider.deploy(reservation, plan)
    assert len(_instance_info_writes(calls)) == 1
    ironic_provider.teardown(ironic_provider.lookup(plan.instance_uuid))
    ironic_provider.release(plan.instance_uuid)
    ironic.wait_for_node(nodes[1], provision_state='available')

    # The pool's copy was wrong about local_gb: the deploy writes again.
    plan, reservation = claim(nodes[1], local_gb=7)
    del calls[:]
    ironic_provider.deploy(reservation, plan)
    assert len(_instance_info_writes(calls)) == 1
    assert info(nodes[1])['local_gb'] == '40'

    # A claim released before its deploy leaves none of the deploy's
    # instance_info (an allocation leaves Ironic's own traits: []).
    plan, reservation = claim(nodes[2])
    ironic_provider.release(plan.instance_uuid)
    node = ironic.request('GET', '/v1/nodes/%s' % nodes[2]).json()
    assert node['instance_uuid'] is None
    assert not set(node['instance_info']) & {
        'image_source', 'nova_host_id', 'root_gb', 'local_gb'}, node
