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

"""The fake Reserver must stay the Reserver the driver talks to."""

import inspect

import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation import reserver as reserver_mod
from tests.unit.virt import fakes

# Every Reserver method the driver calls.
USED = ('start', 'stop', 'claim', 'release', 'lookup', 'node', 'instances',
        'deploy', 'teardown', 'rebuild', 'power', 'attach_vif',
        'detach_vif', 'cluster_capacity', 'cluster_traits', 'offer',
        'set_offering', 'add_periodic', 'add_request_handler')


@pytest.mark.parametrize('name', USED)
def test_the_fake_has_the_reservers_signatures(name):
    real = inspect.signature(getattr(reserver_mod.Reserver, name))
    fake = inspect.signature(getattr(fakes.FakeReserver, name))
    assert list(fake.parameters) == list(real.parameters)
    assert [p.default for p in fake.parameters.values()] == [
        p.default for p in real.parameters.values()]


def test_the_fakes_reservations_follow_the_lifecycle():
    reserver = fakes.FakeReserver()
    claimed = reserver.claim(fakes.INSTANCE, None)
    assert claimed.state == lifecycle.State.CLAIMED
    assert claimed.host is None
    assert reserver.instances() == {}
    deployed = reserver.deploy(claimed, base.Deployment(
        instance_uuid=fakes.INSTANCE, host=fakes.HOST, image_source=None))
    assert deployed.state == lifecycle.State.ACTIVE
    assert reserver.instances() == {fakes.INSTANCE: deployed}
    assert reserver.release(fakes.INSTANCE).state == lifecycle.State.RELEASED
    assert reserver.release(fakes.INSTANCE) is None
