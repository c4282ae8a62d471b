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

import contextlib
import os
import sys
import threading
import time

import fixtures
# nova.tests.functional decides eventlet monkey patching (tox, and
# tests/conftest.py, select native threads).
from nova.tests.functional import integrated_helpers
import pytest

# Registers the [ironic_multi] options before the driver is loaded.
import ironic_multi.conf  # noqa: F401
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server

COMPUTE_DRIVER = 'ironic_multi.IronicMultiDriver'
RESOURCE_CLASS = 'baremetal'
BAREMETAL_SPECS = {
    'resources:CUSTOM_BAREMETAL': '1',
    'resources:VCPU': '0',
    'resources:MEMORY_MB': '0',
    'resources:DISK_GB': '0',
}
# Nova's default filters without ComputeCapabilitiesFilter: it matches
# ``capabilities:*`` extra specs against the compute node's host stats,
# which are empty for this driver's single compute node (the capabilities
# are the Ironic nodes', checked at claim time).  An operator of this
# driver configures the same.
SCHEDULER_FILTERS = ['ComputeFilter', 'ImagePropertiesFilter',
                     'ServerGroupAntiAffinityFilter',
                     'ServerGroupAffinityFilter']
# The wheel of nova puts its paste config under the venv's prefix.
API_PASTE_CONFIG = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')


class ReaderPreferringLock(object):
    """Replaces the reader-writer lock of Nova's CellDatabases fixture.

    The fixture switches its global "current cell" under a writer-
    preferring lock, and every untargeted database access takes it as a
    reader.  With a dozen builds on native threads that deadlocked: a
    thread inside a targeted block (read lock held) waited for the
    resource tracker's semaphore; the holder of the semaphore (the
    driver's update_provider_tree reading instances with an untargeted
    context) waited for a read lock, queued behind a writer (the API
    switching cells), which waited for the first reader.  Readers here
    only wait while a writer holds the lock.  The fixture's contract is
    kept: reentrant for readers and for the writer, and a reader asking
    to write gets RuntimeError (the fixture retries on it).
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = {}
        self._writer = None
        self._depth = 0

    @contextlib.contextmanager
    def read_lock(self):
        me = threading.current_thread()
        with self._cond:
            while self._writer is not None and self._writer is not me:
                self._cond.wait()
            self._readers[me] = self._readers.get(me, 0) + 1
        try:
            yield self
        finally:
            with self._cond:
                self._readers[me] -= 1
                if not self._readers[me]:
                    del self._readers[me]
                self._cond.notify_all()

    @contextlib.contextmanager
    def write_lock(self):
        me = threading.current_thread()
        with self._cond:
            if self._writer is me:
                self._depth += 1
            else:
                if me in self._readers:
                    raise RuntimeError('a reader cannot become a writer')
                while self._writer is not None or self._readers:
                    self._cond.wait()
                self._writer, self._depth = me, 1
        try:
            yield self
        finally:
            with self._cond:
                self._depth -= 1
                if not self._depth:
                    self._writer = None
                self._cond.notify_all()


class IronicMultiTestBase(integrated_helpers._IntegratedTestBase):
    """N compute services with IronicMultiDriver on one real Ironic.

    Set ``COMPUTES`` (hosts ``compute1``...) and ``NODES`` (enrolled,
    available, powered off, resource class ``baremetal``) in subclasses,
    or override ``enroll()`` for another layout (traits, shards, ...).
    After setUp: ``self.ironic`` (node helpers), ``self.flavor_id`` (a
    bare metal flavor), ``self.computes``.
    """

    ADMIN_API = True
    microversion = 'latest'
    # Casts stay casts, as in a real deployment.  With casts turned into
    # calls, a compute service calling itself deadlocks until the RPC
    # timeout: the power state sync holds the instance's lock while it
    # calls the stop API, whose stop_instance takes the same lock.
    CAST_AS_CALL = False
    # Seconds the waits for a server's state allow (Nova's helpers: 5).
    STATE_TIMEOUT = 60
    COMPUTES = 1
    NODES = 2
    NODE_PROPERTIES = None
    MEMBERSHIP_TIMEOUT = 5
    # Seconds between the driver's reads of a node it waits for: with a
    # dozen builds at once, shorter intervals only load the 2 cores.
    STATE_POLL_INTERVAL = 0.2

    _ironic = None
    _record_property = None

    @pytest.fixture(autouse=True)
    def _session_ironic(self, ironic):
        # Runs before setUp under pytest: reuse the session's Ironic.
        self._ironic = ironic

    @pytest.fixture(autouse=True)
    def _pytest_properties(self, record_property):
        self._record_property = record_property

    def setUp(self):
        self.flags(compute_driver=COMPUTE_DRIVER)
        self.flags(api_paste_config=API_PASTE_CONFIG, group='wsgi')
        self.flags(enabled_filters=SCHEDULER_FILTERS,
                   group='filter_scheduler')
        # Default quotas (10 instances, 20 cores) are below what the
        # scenarios boot.
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        self.boot_times = []
        self.useFixture(fixtures.MockPatch(
            'nova.tests.fixtures.nova.ReaderWriterLock',
            ReaderPreferringLock))
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
                   membership_timeout=self.MEMBERSHIP_TIMEOUT,
                   state_poll_interval=self.STATE_POLL_INTERVAL,
                   group='ironic_multi')
        self.enroll()

    def enroll(self):
        """Enroll the nodes; subclasses override for other layouts."""
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

    def _wait_for_state_change(self, server, expected_status,
                               max_retries=None, wait_for_fault_key=True):
        # Nova polls every 0.5 s; its default of 10 tries is too short for
        # a bare metal boot on a loaded 2-core machine.
        return super()._wait_for_state_change(
            server, expected_status,
            max_retries=max_retries or self.STATE_TIMEOUT * 2,
            wait_for_fault_key=wait_for_fault_key)

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

    def provider_usage(self, host, resource_class='CUSTOM_BAREMETAL'):
        usages = self._get_provider_usages(
            self._get_provider_uuid_by_host(host))
        return usages.get(resource_class, 0)

    def free_in_placement(self, host, resource_class='CUSTOM_BAREMETAL'):
        """``total - reserved - used`` of the host's provider."""
        inventory = self.provider_inventory(host).get(resource_class)
        if inventory is None:
            return 0
        return (inventory['total'] - inventory['reserved']
                - self.provider_usage(host, resource_class))

    def server_allocation(self, server_id):
        """``{provider uuid: resources}`` of the server in placement."""
        return {rp: alloc['resources'] for rp, alloc in
                self._get_allocations_by_server_uuid(server_id).items()}

    def associated_nodes(self):
        """``{node uuid: instance uuid}`` of the associated Ironic nodes."""
        return {n['uuid']: n['instance_uuid']
                for n in self.ironic.list_nodes() if n['instance_uuid']}

    def record(self, name, value):
        """A property in pytest's report (junit XML), and on stdout."""
        print('%s: %s = %s' % (self.id(), name, value))
        if self._record_property is not None:
            self._record_property(name, value)

    def boot(self, flavor_id=None, expected_state='ACTIVE', **kwargs):
        """Boot one server through the API, wait for it, time it."""
        started = time.monotonic()
        server = self._create_server(
            flavor_id=flavor_id or self.flavor_id, networks='none',
            expected_state=expected_state, **kwargs)
        seconds = time.monotonic() - started
        self.boot_times.append(seconds)
        self.record('boot_seconds_%d' % len(self.boot_times),
                    round(seconds, 3))
        return server

    def assert_on_ironic(self, server, host=None):
        """Both sides agree: the server is ACTIVE on an active node.

        Checks that placement holds the server's allocation against the
        provider of the compute that hosts it.  Returns the node.
        """
        self.assertEqual('ACTIVE', server['status'])
        node = self.node_of(server['id'])
        self.assertIsNotNone(node, 'no Ironic node holds %s' % server['id'])
        self.assertEqual('active', node['provision_state'])
        self.assertEqual(server['id'], node['instance_uuid'])
        hosted_by = server['OS-EXT-SRV-ATTR:host']
        if host is not None:
            self.assertEqual(host, hosted_by)
        self.assertEqual(
            {self._get_provider_uuid_by_host(hosted_by):
             {'CUSTOM_BAREMETAL': 1}},
            self.server_allocation(server['id']))
        return node

    def delete_and_check(self, server):
        """Delete; the node goes back to available, the allocation away."""
        node = self.node_of(server['id'])
        started = time.monotonic()
        self._delete_server(server)
        self.record('delete_seconds', round(time.monotonic() - started, 3))
        if node is not None:
            node = self.ironic.wait_for_node(node['uuid'],
                                             provision_state='available',
                                             instance_uuid=None)
        self.assertIsNone(self.node_of(server['id']))
        self.assertEqual({}, self.server_allocation(server['id']))
        return node
