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

"""Nova's in-process services on a real Ironic, loading this driver.

The Nova API, conductor, scheduler, placement and N compute services run
in this process (``nova.tests.functional``); Ironic runs as a subprocess
with fake hardware (``ironic_server``).  Tests talk to both through their
public APIs, the way tempest does.

Under pytest the session's Ironic is shared (``conftest.py``); under
another runner each test starts its own.
"""

import os
import sys

import fixtures
# nova.tests.functional decides eventlet monkey patching (tox, and
# tests/conftest.py, select native threads).
from nova.tests.functional import integrated_helpers
import pytest

# Registers the [ironic_multi] options before the driver is loaded.
import ironic_multi.conf  # noqa: F401
from tests.functional import ironic_nodes
from tests.functional import ironic_server

COMPUTE_DRIVER = 'ironic_multi.IronicMultiDriver'
RESOURCE_CLASS = 'baremetal'
BAREMETAL_SPECS = {
    'resources:CUSTOM_BAREMETAL': '1',
    'resources:VCPU': '0',
    'resources:MEMORY_MB': '0',
    'resources:DISK_GB': '0',
}
# The wheel of nova puts its paste config under the venv's prefix.
API_PASTE_CONFIG = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')


class IronicMultiTestBase(integrated_helpers._IntegratedTestBase):
    """N compute services with IronicMultiDriver on one real Ironic.

    Set ``COMPUTES`` (hosts ``compute1``...) and ``NODES`` (enrolled,
    available, powered off, resource class ``baremetal``) in subclasses.
    After setUp: ``self.ironic`` (node helpers), ``self.flavor_id`` (a
    bare metal flavor), ``self.computes``.
    """

    ADMIN_API = True
    microversion = 'latest'
    COMPUTES = 1
    NODES = 2
    NODE_PROPERTIES = None

    _ironic = None

    @pytest.fixture(autouse=True)
    def _session_ironic(self, ironic):
        # Runs before setUp under pytest: reuse the session's Ironic.
        self._ironic = ironic

    def setUp(self):
        self.flags(compute_driver=COMPUTE_DRIVER)
        self.flags(api_paste_config=API_PASTE_CONFIG, group='wsgi')
        super().setUp()
        self.flavor_id = self._create_flavor(
            name='baremetal', memory_mb=4096, vcpu=2, disk=40, ephemeral=0,
            extra_spec=BAREMETAL_SPECS)

    def _clear_attrs(self):
        # Nova's version deletes every public attribute after the test,
        # including the one pytest still needs to report it.
        pass

    @property
    def ironic(self):
        return self._ironic

    def _setup_ironic(self):
        if self._ironic is None:
            server = self.useFixture(ironic_server.IronicServer())
            self._ironic = ironic_nodes.IronicNodes(server)
        coordination = self.useFixture(fixtures.TempDir()).path
        self.flags(auth_type='none',
                   endpoint_override=self._ironic.server.endpoint,
                   group='ironic')
        self.flags(coordination_url='file://%s' % coordination,
                   membership_timeout=5, state_poll_interval=0.05,
                   group='ironic_multi')
        if self.NODES:
            self.ironic.enroll_nodes(self.NODES,
                                     resource_class=RESOURCE_CLASS,
                                     properties=self.NODE_PROPERTIES)

    def _setup_services(self):
        # Nodes first: each compute service reports capacity at start.
        self._setup_ironic()
        super()._setup_services()

    def _setup_compute_service(self):
        for index in range(1, self.COMPUTES + 1):
            compute = self._start_compute('compute%d' % index)
            self.addCleanup(self.driver_of(compute).cleanup_host,
                            compute.host)
        self.refresh_capacity()
        return self.computes['compute1']

    # -- helpers ----------------------------------------------------------

    @staticmethod
    def driver_of(compute):
        return compute.manager.driver

    def refresh_capacity(self):
        """Make every service publish its counts, then report them.

        Services publish on their own every pool_refresh_interval; tests
        do not wait for that.
        """
        for compute in self.computes.values():
            self.driver_of(compute).reserver.refresh()
        self._run_periodics()

    def node_of(self, server_id):
        """The Ironic node whose instance_uuid is the server, or None."""
        nodes = self.ironic.list_nodes(instance_uuid=server_id)
        self.assertLessEqual(len(nodes), 1, nodes)
        return nodes[0] if nodes else None

    def provider_inventory(self, host):
        return self._get_provider_inventory(
            self._get_provider_uuid_by_host(host))
