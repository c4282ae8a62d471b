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

"""The shared backend suite against a real Ironic (fake hardware).

Run once with allocations (API 1.52) and once with the PATCH of
``instance_uuid``: both claim paths must pass the same contract.
"""

from keystoneauth1 import session as ks_session
from oslo_config import fixture as config_fixture
import pytest

from ironic_multi import conf
from ironic_multi.ironic import client
from tests import backend_suite

try:
    from ironic_multi.reservation.backends import ironic as ironic_backend
except ImportError as e:  # the backend is still being written
    pytest.skip('the Ironic backend cannot be imported: %s' % e,
                allow_module_level=True)

CONF = conf.CONF


class IronicHarness(object):
    """Nodes enrolled in the session's Ironic through its API."""

    def __init__(self, ironic):
        self.ironic = ironic

    def add_nodes(self, count, resource_class, traits=(), properties=None,
                  shard=None, owner=None):
        return self.ironic.enroll_nodes(
            count, resource_class=resource_class, properties=properties,
            traits=traits, shard=shard, owner=owner)

    def backend(self):
        # A client of its own, too: nothing is shared with older objects.
        api = client.IronicAPI(CONF, session=ks_session.Session(),
                               endpoint=self.ironic.server.endpoint)
        backend = ironic_backend.IronicBackend(CONF, api=api)
        backend.start()
        return backend

    def snapshot(self):
        return self.ironic.snapshot()


@pytest.fixture(params=[True, False], ids=['allocations', 'patch'])
def harness(request, ironic):
    with config_fixture.Config(CONF) as config:
        config.config(group='ironic_multi', use_allocations=request.param)
        yield IronicHarness(ironic)


class TestIronicBackendSuite(backend_suite.BackendSuite):
    """The shared backend suite, against a real Ironic."""
