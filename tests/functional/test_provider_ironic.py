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

import pytest

from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import provider
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
