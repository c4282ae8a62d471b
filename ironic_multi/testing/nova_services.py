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

"""Nova's in-process services on a real Ironic.

The Nova API, conductor, scheduler, placement and K compute services run
in this process, from the ``nova.tests.functional`` package that the nova
wheel ships; Ironic runs as a subprocess with fake hardware
(:class:`~ironic_multi.testing.ironic_server.IronicServer`).  Everything
is driven through public APIs, the way tempest does.

Two ways in:

:class:`NovaServicesCase`
    Nova's ``_IntegratedTestBase`` (a testtools ``TestCase``) set up for a
    bare metal driver.  Test classes subclass it (``tests/functional``).
:class:`NovaServices`
    The same services as a ``fixtures.Fixture``, for code that runs
    outside any test runner: the sandbox, the benchmarks::

        with NovaServices(nodes, driver=IN_TREE_DRIVER, computes=3) as nova:
            server = nova.boot()
            nova.delete_servers([server])

Both drivers are supported:

``ironic_multi.IronicMultiDriver`` (:data:`IRONIC_MULTI_DRIVER`)
    this project's: one compute node per service; ``file://`` (default)
    or any other tooz coordination URL (Redis...).
``ironic.IronicDriver`` (:data:`IN_TREE_DRIVER`)
    Nova's own, in the mode upstream recommends: every compute service
    owns one Ironic shard key (``[ironic] shard``), one compute node and
    one placement provider per Ironic node.  Nova's test services share
    one process and one ``CONF``; :class:`_PerComputeConf` gives each
    compute's driver its own ``[DEFAULT] host`` and ``[ironic] shard``, as
    separate nova.conf files would.

Process-wide: importing this module decides Nova's concurrency mode
(native threads unless ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` says
otherwise; see :func:`.nova_threads.choose`) and registers Nova's options.
Import it early, before anything registers ``[ironic]`` options of its
own; under pytest ``tests/conftest.py`` does the same first.  One set of
services per process at a time: Nova's test fixtures are global, and
every option they override is reset when the services stop.
"""

import collections
import contextlib
import functools
import gc
import itertools
import logging
import os
import sys
import threading
import time

# Decides Nova's concurrency mode before anything imports eventlet (nova.conf
# does, through oslo.service).
from ironic_multi.testing import nova_threads  # noqa: E402,I100

nova_threads.choose()

import fixtures  # noqa: E402,I100,I202
from keystoneauth1 import loading as ks_loading  # noqa: E402
# Nova's options before ours: ironic_multi.conf keeps an [ironic] option
# registered before its own, Nova does not tolerate duplicates.
from nova import conf as nova_conf  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import service as nova_service  # noqa: E402
from nova.tests.functional.api import client as api_client  # noqa: E402
from nova.tests.functional import integrated_helpers  # noqa: E402

from ironic_multi import conf as ironic_multi_conf  # noqa: E402
from ironic_multi.testing import _process  # noqa: E402
from ironic_multi.testing import ironic_nodes  # noqa: E402
from ironic_multi.testing import ironic_server  # noqa: E402

LOG = logging.getLogger(__name__)
CONF = nova_conf.CONF

IRONIC_MULTI_DRIVER = 'ironic_multi.IronicMultiDriver'
IN_TREE_DRIVER = 'ironic.IronicDriver'
DRIVERS = (IRONIC_MULTI_DRIVER, IN_TREE_DRIVER)
# Kept for the tests that import it by its old name.
COMPUTE_DRIVER = IRONIC_MULTI_DRIVER
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
# driver configures the same.  The in-tree driver gets the same list, so
# that both schedule alike; its flavors here have no capabilities.
SCHEDULER_FILTERS = ['ComputeFilter', 'ImagePropertiesFilter',
                     'ServerGroupAntiAffinityFilter',
                     'ServerGroupAffinityFilter']
# The wheel of nova puts its paste config under the venv's prefix.
API_PASTE_CONFIG = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
# What the in-tree driver needs of a node besides the defaults: it reports
# supported_instances from cpu_arch, and Nova's ImagePropertiesFilter
# rejects a host without them for the test images (architecture x86_64).
IN_TREE_NODE_PROPERTIES = dict(ironic_nodes.DEFAULT_PROPERTIES,
                               cpu_arch='x86_64')
# The instance action event of one build attempt on one compute: a build
# rescheduled twice has three.
BUILD_EVENT = 'compute__do_build_and_run_instance'
SETTLED = ('ACTIVE', 'ERROR')
# Seconds NovaServices waits for its threads to end after stopping.
THREADS_TIMEOUT = 10


def register_options(conf=CONF):
    """ironic-multi's options on Nova's ``CONF``; idempotent.

    The driver registers them when Nova loads it; the services set them
    before that.
    """
    ironic_multi_conf.register_opts(conf)


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


class _GroupView(object):
    """An option group with some values replaced."""

    def __init__(self, group, overrides):
        self._group = group
        self._overrides = overrides

    def __getattr__(self, name):
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._group, name)


class _PerComputeConf(object):
    """``CONF`` as one in-tree compute service's nova.conf would say it.

    Nova's in-tree Ironic driver reads ``CONF.host`` and
    ``CONF.ironic.shard`` when it refreshes its node cache and hash ring.
    In a deployment each compute service has a nova.conf of its own; here
    they share one process and one ``CONF`` (whose ``host`` is the last
    started compute's).  This object replaces the driver module's
    ``CONF``: while a driver method runs in :meth:`compute`, ``host`` and
    ``ironic.shard`` are that compute's; everything else, and every other
    thread, reads the real ``CONF``, but for the ``[ironic]`` options in
    ``ironic``, which only the in-tree computes' nova.conf sets (in this
    project's driver they have a meaning too).
    """

    def __init__(self, conf, ironic=None):
        self._conf = conf
        self._ironic = dict(ironic or {})
        self._local = threading.local()

    @contextlib.contextmanager
    def compute(self, host, shard):
        previous = getattr(self._local, 'view', None)
        self._local.view = (host, shard)
        try:
            yield
        finally:
            self._local.view = previous

    def __getattr__(self, name):
        view = getattr(self._local, 'view', None)
        if view is not None:
            host, shard = view
            if name == 'host':
                return host
            if name == 'ironic':
                return _GroupView(self._conf.ironic,
                                  dict(self._ironic, shard=shard))
        if name == 'ironic' and self._ironic:
            return _GroupView(self._conf.ironic, self._ironic)
        return getattr(self._conf, name)


class InTreeComputes(fixtures.Fixture):
    """One ``[DEFAULT] host`` and ``[ironic] shard`` per in-tree driver.

    :param shards: ``{host: shard key}``, read at every node cache
        refresh (so a compute may be pointed at another shard later, as
        an operator would with a config change and a restart).
    :param ironic: ``[ironic]`` options of every in-tree compute.

    Each IronicDriver remembers the host it was made for (Nova makes a
    compute's driver while ``CONF.host`` is that compute's); its cache
    and hash ring refreshes then see that host and its shard.
    """

    # The in-tree driver's methods that read CONF.host or the shard.
    VIEWED = ('_refresh_cache', '_refresh_hash_ring')

    def __init__(self, shards, ironic=None):
        super().__init__()
        self.shards = shards
        self.ironic = ironic

    def _setUp(self):
        from nova.virt.ironic import driver as ironic_driver

        view = _PerComputeConf(ironic_driver.CONF, ironic=self.ironic)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.ironic.driver.CONF', view))
        cls = ironic_driver.IronicDriver
        real_init = cls.__init__

        @functools.wraps(real_init)
        def init(driver, *args, **kwargs):
            driver._nova_services_host = CONF.host
            real_init(driver, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.ironic.driver.IronicDriver.__init__', init))
        for name in self.VIEWED:
            self.useFixture(fixtures.MonkeyPatch(
                'nova.virt.ironic.driver.IronicDriver.%s' % name,
                self._viewed(view, getattr(cls, name))))

    def _viewed(self, view, method):
        shards = self.shards

        @functools.wraps(method)
        def viewed(driver, *args, **kwargs):
            host = getattr(driver, '_nova_services_host', None)
            if host is None:
                return method(driver, *args, **kwargs)
            with view.compute(host, shards.get(host)):
                return method(driver, *args, **kwargs)

        return viewed


class NovaServicesCase(integrated_helpers._IntegratedTestBase):
    """K compute services loading a bare metal driver, on one real Ironic.

    Set in subclasses (or through :class:`NovaServices`):

    ``COMPUTE_DRIVER``
        :data:`IRONIC_MULTI_DRIVER` or :data:`IN_TREE_DRIVER`.
    ``COMPUTES``
        compute services started, hosts ``compute1``...; 0 starts none
        (:meth:`start_compute` adds some later).
    ``NODES``
        nodes enrolled through the API (available, powered off, resource
        class ``baremetal``); override :meth:`enroll` for other layouts.
        With the in-tree driver they are spread over the computes'
        shards.
    ``COMPUTE_SHARDS``
        in-tree driver: the shard key of each compute, in order
        (``shard-1``... by default); :attr:`compute_shards` maps hosts to
        them.
    ``COORDINATION_URL``
        this project's driver: tooz URL; a ``file://`` directory of the
        test's own when None.
    ``FLAGS``
        more options, ``{group: {option: value}}``.

    After setUp: ``self.ironic`` (node helpers), ``self.flavor_id`` (a
    bare metal flavor), ``self.computes``, ``self.api``.
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
    COMPUTE_DRIVER = IRONIC_MULTI_DRIVER
    COMPUTES = 1
    NODES = 2
    NODE_PROPERTIES = None
    COMPUTE_SHARDS = None
    COORDINATION_URL = None
    MEMBERSHIP_TIMEOUT = 5
    # Seconds between the driver's reads of a node it waits for: with a
    # dozen builds at once, shorter intervals only load the 2 cores.
    STATE_POLL_INTERVAL = 0.2
    # None: the driver's default.
    CLAIM_TIMEOUT = None
    # More options, set before the services start:
    # {group: {option: value}} ('DEFAULT' for the default group).
    FLAGS = None
    # The in-tree driver polls Ironic every [ironic] api_retry_interval
    # seconds, an integer (Nova's default: 2); 0 would poll in a tight
    # loop.
    API_RETRY_INTERVAL = 1
    # Nova's test logging formats every DEBUG message (to check that they
    # format) and keeps INFO; a level here (logging.INFO) makes the root
    # logger skip what a deployment with debug = False skips.
    LOG_LEVEL = None

    _ironic = None

    def setUp(self):
        if self.COMPUTE_DRIVER not in DRIVERS:
            raise ValueError('Unknown compute driver %r, expected one of %s'
                             % (self.COMPUTE_DRIVER, ', '.join(DRIVERS)))
        self.compute_shards = {}
        self.compute_drivers = {}
        register_options()
        self.flags(compute_driver=self.COMPUTE_DRIVER)
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
        self._keep_executors_up()
        # Nova's test base makes its temporary directories (tempfile's,
        # HOME, the SQLite databases; the file:// coordination below) in
        # tempfile's directory: one that a later run reaps if this one
        # is killed.
        self.useFixture(_process.OwnedTempDir('nova', tempfile_root=True))
        super().setUp()
        if self.LOG_LEVEL is not None:
            self._set_log_level(self.LOG_LEVEL)
        self.flavor_id = self._create_flavor(
            name='baremetal', memory_mb=4096, vcpu=2, disk=40, ephemeral=0,
            extra_spec=BAREMETAL_SPECS)

    def _keep_executors_up(self):
        """No service stop shuts down the executors, until every one ended.

        ``Service.stop()`` returns before its manager's graceful shutdown
        ends (here ``manager_shutdown_timeout`` is 0), and that thread
        ends with ``shutdown_all_executors()``: the process-wide ones,
        which the other services of this process still use.  Nova's
        ServiceFixture makes that call a no-op only while the service's
        fixture lives, so a shutdown still running when it goes shut them
        down for good: Nova's executor fixture then fails the clean-up,
        and every later service of the process could start no executor.
        Set up before Nova's fixtures, this outlives them, and its
        clean-up waits for the shutdowns first.
        """
        self.useFixture(fixtures.MonkeyPatch(
            'nova.thread_pool_factory.shutdown_all_executors', lambda: None))
        shutdowns = []
        real = nova_service.Service._run_manager_graceful_shutdown

        @functools.wraps(real)
        def run_manager_graceful_shutdown(service):
            before = set(threading.enumerate())
            try:
                return real(service)
            finally:
                # Python names a thread after its target: "Thread-7 (_run)".
                shutdowns.extend(t for t in threading.enumerate()
                                 if t not in before
                                 and t.name.endswith('(_run)'))

        self.useFixture(fixtures.MonkeyPatch(
            'nova.service.Service._run_manager_graceful_shutdown',
            run_manager_graceful_shutdown))
        self.addCleanup(_join, shutdowns, THREADS_TIMEOUT)

    def _clear_attrs(self):
        # Nova's version deletes every public attribute after the test,
        # including the one pytest still needs to report it.
        pass

    def _set_log_level(self, level):
        root = logging.getLogger()
        self.addCleanup(root.setLevel, root.level)
        root.setLevel(level)

    @property
    def ironic(self):
        return self._ironic

    @property
    def in_tree(self):
        return self.COMPUTE_DRIVER == IN_TREE_DRIVER

    def _setup_ironic(self):
        if self._ironic is None:
            server = self.useFixture(ironic_server.IronicServer())
            self._ironic = ironic_nodes.IronicNodes(server)
        self.flags(auth_type='none',
                   endpoint_override=self._ironic.server.endpoint,
                   group='ironic')
        # Both drivers' options: start_compute(driver=...) may start
        # computes of the other driver too.
        self._setup_ironic_multi()
        self._setup_in_tree()
        flags = self.FLAGS or {}
        self._register_auth_plugin(flags.get('ironic', {}).get('auth_type'))
        for group, options in flags.items():
            self.flags(group=None if group == 'DEFAULT' else group,
                       **options)
        self.enroll()

    def _register_auth_plugin(self, auth_type):
        """The ``[ironic]`` auth plugin's options, as a config file has.

        Loading a config file registers them; overrides need them first.
        They go again at the end: the plugin's required options would
        fail the next set of services' parse.
        """
        if auth_type in (None, 'none'):
            return
        opts = ks_loading.get_auth_plugin_conf_options(auth_type)
        CONF.register_opts(opts, group='ironic')

        def unregister():
            # Unregistering needs the parsed arguments cleared; Nova's
            # ConfFixture resets CONF afterwards too.
            CONF.reset()
            CONF.unregister_opts(opts, group='ironic')

        self.addCleanup(unregister)

    def _setup_ironic_multi(self):
        url = self.COORDINATION_URL
        if url is None:
            url = 'file://%s' % self.useFixture(fixtures.TempDir()).path
        options = dict(coordination_url=url,
                       membership_timeout=self.MEMBERSHIP_TIMEOUT,
                       state_poll_interval=self.STATE_POLL_INTERVAL)
        if self.CLAIM_TIMEOUT is not None:
            options['claim_timeout'] = self.CLAIM_TIMEOUT
        self.flags(group='ironic_multi', **options)

    def _setup_in_tree(self):
        shards = self.COMPUTE_SHARDS or [
            'shard-%d' % i for i in range(1, self.COMPUTES + 1)]
        if self.in_tree and len(shards) < self.COMPUTES:
            raise ValueError('%d computes need as many shard keys, not %s'
                             % (self.COMPUTES, shards))
        if self.in_tree:
            self.compute_shards.update(
                ('compute%d' % i, shard) for i, shard in enumerate(shards, 1))
        # Only the in-tree computes' nova.conf sets it: for this project's
        # driver it would say how often to read a node's state.
        self.useFixture(InTreeComputes(self.compute_shards, ironic={
            'api_retry_interval': self.API_RETRY_INTERVAL}))

    def enroll(self):
        """Enroll the nodes; subclasses override for other layouts."""
        if not self.NODES:
            return
        if not self.in_tree:
            self.ironic.enroll_nodes(self.NODES,
                                     resource_class=RESOURCE_CLASS,
                                     properties=self.NODE_PROPERTIES)
            return
        shards = list(self.compute_shards.values()) or [None]
        for index, shard in enumerate(shards):
            count = len(range(index, self.NODES, len(shards)))
            if count:
                self.ironic.enroll_nodes(
                    count, resource_class=RESOURCE_CLASS, shard=shard,
                    properties=(self.NODE_PROPERTIES
                                or IN_TREE_NODE_PROPERTIES))

    def _setup_services(self):
        # Nodes first: each compute service reports capacity at start.
        self._setup_ironic()
        super()._setup_services()

    def _setup_compute_service(self):
        for index in range(1, self.COMPUTES + 1):
            self.start_compute('compute%d' % index)
        # This project's services publish their counts on a timer: make
        # them publish and report now.  The in-tree driver reported its
        # nodes as each service started.
        if self.computes and not self.in_tree:
            self.refresh_capacity()
        return self.computes.get('compute1')

    def start_compute(self, host, driver=None, shard=None):
        """Start a compute service.

        :param driver: its compute driver, ``COMPUTE_DRIVER`` by default:
            computes of both drivers may run side by side (each loads its
            driver when it starts).
        :param shard: in-tree driver: its ``[ironic] shard``; may be
            changed later in :attr:`compute_shards`.
        """
        driver = driver or self.COMPUTE_DRIVER
        if driver not in DRIVERS:
            raise ValueError('Unknown compute driver %r' % driver)
        if shard is not None:
            self.compute_shards[host] = shard
        self.flags(compute_driver=driver)
        try:
            compute = self._start_compute(host)
        finally:
            self.flags(compute_driver=self.COMPUTE_DRIVER)
        self.compute_drivers[host] = driver
        self.addCleanup(self.driver_of(compute).cleanup_host, compute.host)
        return compute

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

    def refresh_capacity(self, hosts=None):
        """Make every service publish its counts, then report them.

        Services publish on their own every pool_refresh_interval; tests
        do not wait for that.  Two rounds: one publishes every service's
        counts, the next reads them all, as two intervals of the services'
        own refreshes would.  The in-tree driver reads Ironic in its
        periodic.

        :param hosts: only these computes (the running ones); all of them
            by default.
        """
        computes = (list(self.computes.values()) if hosts is None
                    else [self.computes[host] for host in hosts])
        reservers = [getattr(self.driver_of(c), 'reserver', None)
                     for c in computes]
        reservers = [r for r in reservers if r is not None]
        for reserver in reservers + reservers:
            reserver.refresh()
        if hosts is None:
            self._run_periodics()
        else:
            for host in hosts:
                self.update_available_resource(host)

    def update_available_resource(self, host):
        """Run one compute's resource periodic, as its service would."""
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.host_mappings[host].cell_mapping) as cctxt:
            self.computes[host].manager.update_available_resource(cctxt)

    def run_periodics(self, hosts=None):
        """``update_available_resource`` of the (running) computes."""
        for host in hosts or list(self.computes):
            self.update_available_resource(host)

    def stop_compute(self, host, force_down=False):
        """Stop a compute service; optionally force it down in the API.

        Nova's scheduler only learns that a stopped service is down after
        ``service_down_time`` (60 s); an operator forces it down.
        """
        self.computes[host].stop()
        if force_down:
            self.force_down(host)

    def force_down(self, host, down=True):
        """``PUT /os-services/{id}`` forced_down for a compute's service."""
        (service,) = self.api.get_services(host=host, binary='nova-compute')
        self.api.put_service_force_down(service['id'], down)
        return service['id']

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

    def place_nodes(self, counts):
        """Move free nodes into shard keys that ``counts``' hosts own.

        Each compute offers placement the free nodes of its own shards:
        a test that boots on a given host (``boot(host=...)``) gives it
        the nodes first.  Then every compute flushes its pool (new shard
        keys are read with a full refresh, as ``pool flush`` does) and
        reports.

        :param counts: ``{host: nodes}``, over the free nodes.
        :returns: ``{host: [node uuid]}``.
        """
        reservers = [self.driver_of(c).reserver
                     for c in self.computes.values()]
        ring = reservers[0].ring
        keys = ('placed-%d' % n for n in itertools.count())
        free = [n['uuid'] for n in self.ironic.list_nodes()
                if n['provision_state'] == 'available'
                and not n['instance_uuid']]
        self.assertLessEqual(sum(counts.values()), len(free))
        placed = {}
        for host, count in sorted(counts.items()):
            key = next(k for k in keys if ring.owner(k) == host)
            placed[host] = [free.pop() for _ in range(count)]
            for node in placed[host]:
                self.ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
                    {'op': 'add', 'path': '/shard', 'value': key}])
        for reserver in reservers:
            reserver.provider.flush()
        self.refresh_capacity()
        return placed

    def offered_in_placement(self, hosts=None,
                             resource_class='CUSTOM_BAREMETAL'):
        """What placement offers the scheduler over the computes' providers.

        Each offers the free nodes of its own shards: their free counts
        added up, a provider over its capacity offering nothing.

        :param hosts: these computes; all of them by default.
        """
        return sum(max(self.free_in_placement(host, resource_class), 0)
                   for host in (self.computes if hosts is None else hosts))

    def providers(self):
        """Every resource provider in placement (``uuid``, ``name``...)."""
        return self._get_all_providers()

    def placement_totals(self, resource_class='CUSTOM_BAREMETAL'):
        """``{'total', 'reserved', 'used', 'free'}`` over every provider.

        One request per provider for inventories and one for usages: with
        the in-tree driver, that is two per Ironic node.
        """
        totals = dict.fromkeys(('total', 'reserved', 'used'), 0)
        for provider in self.providers():
            inventory = self._get_provider_inventory(
                provider['uuid']).get(resource_class)
            if inventory is None:
                continue
            totals['total'] += inventory['total']
            totals['reserved'] += inventory['reserved']
            totals['used'] += self._get_provider_usages(
                provider['uuid']).get(resource_class, 0)
        totals['free'] = (totals['total'] - totals['reserved']
                          - totals['used'])
        return totals

    def server_allocation(self, server_id):
        """``{provider uuid: resources}`` of the server in placement."""
        return {rp: alloc['resources'] for rp, alloc in
                self._get_allocations_by_server_uuid(server_id).items()}

    def associated_nodes(self):
        """``{node uuid: instance uuid}`` of the associated Ironic nodes."""
        return {n['uuid']: n['instance_uuid']
                for n in self.ironic.list_nodes() if n['instance_uuid']}

    def record(self, name, value):
        """A measured figure; printed (subclasses also report it)."""
        print('%s: %s = %s' % (self.id(), name, value))

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

    def post_servers(self, count, flavor_id=None, **kwargs):
        """POST ``count`` servers without waiting; returns the answers.

        Each build then runs in its compute service's build pool,
        concurrently with the others.
        """
        return [self.api.post_server({'server': self._build_server(
            flavor_id=flavor_id or self.flavor_id, networks='none',
            **kwargs)}) for _ in range(count)]

    def wait_for_servers(self, servers, timeout=240, poll=0.5):
        """Poll each server until it is ACTIVE or ERROR (with its fault).

        Each server is read on its own: listing servers (GET
        /servers/detail) scatters over cell0 and cell1, and Nova's test
        fixtures serialize cell switches with a reader-writer lock that
        deadlocked against a dozen concurrent builds in one run.

        :returns: the settled servers, in the order given.
        :raises: AssertionError after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        pending = {s['id']: s for s in servers}
        settled = {}
        while pending:
            for server_id in list(pending):
                server = self.api.get_server(server_id)
                if (server['status'] in SETTLED
                        and server['OS-EXT-STS:task_state'] is None
                        and (server['status'] != 'ERROR'
                             or 'fault' in server)):
                    del pending[server_id]
                    settled[server_id] = server
            if not pending:
                break
            if time.monotonic() > deadline:
                self.fail('servers not settled: %s' % collections.Counter(
                    (s['status'], s['OS-EXT-STS:task_state'])
                    for s in map(self.api.get_server, pending)))
            time.sleep(poll)
        return [settled[s['id']] for s in servers]

    def delete_servers(self, servers, timeout=240, poll=0.5):
        """DELETE every server, then wait until the API knows none."""
        for server in servers:
            self.api.delete_server(server['id'])
        deadline = time.monotonic() + timeout
        pending = [s['id'] for s in servers]
        while pending:
            still = []
            for server_id in pending:
                try:
                    self.api.get_server(server_id)
                except api_client.OpenStackApiNotFoundException:
                    continue
                still.append(server_id)
            pending = still
            if pending and time.monotonic() > deadline:
                self.fail('%d servers not deleted' % len(pending))
            if pending:
                time.sleep(poll)

    def build_attempts(self, server_id):
        """Hosts a server's build ran on, in order (one per attempt).

        From the ``create`` instance action: each attempt on a compute
        records a ``compute__do_build_and_run_instance`` event there, so
        ``len(...) - 1`` is the number of reschedules.  A server that
        never reached a compute (no valid host at the first try) has
        none.
        """
        actions = self.api.get_instance_actions(server_id)
        hosts = []
        for action in actions:
            if action['action'] != 'create':
                continue
            details = self.api.get_instance_action_details(
                server_id, action['request_id'])
            events = sorted((e for e in details.get('events', ())
                             if e['event'] == BUILD_EVENT),
                            key=lambda e: e['start_time'])
            hosts.extend(e.get('host') for e in events)
        return hosts

    def assert_on_ironic(self, server, host=None):
        """Both sides agree: the server is ACTIVE on an active node.

        Checks that placement holds the server's allocation against the
        provider of the compute that hosts it (this project's driver:
        the host's one provider; the in-tree driver: the node's).
        Returns the node.
        """
        self.assertEqual('ACTIVE', server['status'])
        node = self.node_of(server['id'])
        self.assertIsNotNone(node, 'no Ironic node holds %s' % server['id'])
        self.assertEqual('active', node['provision_state'])
        self.assertEqual(server['id'], node['instance_uuid'])
        hosted_by = server['OS-EXT-SRV-ATTR:host']
        if host is not None:
            self.assertEqual(host, hosted_by)
        provider = (node['uuid']
                    if self.compute_drivers[hosted_by] == IN_TREE_DRIVER
                    else self._get_provider_uuid_by_host(hosted_by))
        self.assertEqual({provider: {'CUSTOM_BAREMETAL': 1}},
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


class _RunnerlessCase(NovaServicesCase):
    """A NovaServicesCase that :class:`NovaServices` drives by hand."""

    def services(self):
        """The "test": never run; the case is only set up and cleaned up."""


class NovaServices(fixtures.Fixture):
    """Nova's in-process services, outside any test runner.

    :param ironic: an :class:`~ironic_multi.testing.ironic_nodes.IronicNodes`
        on a started IronicServer (the caller owns both); None starts a
        server of its own for the services' lifetime.
    :param driver: :data:`IRONIC_MULTI_DRIVER` or :data:`IN_TREE_DRIVER`.
    :param computes: compute services started (``compute1``...).
    :param nodes: nodes enrolled through the API first (usually 0: bring
        a fleet with ``IronicNodes.bulk_clone``).
    :param shards: in-tree driver: the shard key of each compute.
    :param coordination_url: this project's driver; ``file://`` by
        default.
    :param flags: more options, ``{group: {option: value}}``.
    :param log_level: e.g. ``logging.INFO`` to skip DEBUG messages as a
        deployment does (Nova's test logging formats them all).
    :param options: more ``NovaServicesCase`` class attributes
        (``STATE_POLL_INTERVAL``, ``MEMBERSHIP_TIMEOUT``, ``CLAIM_TIMEOUT``,
        ``API_RETRY_INTERVAL``, ``STATE_TIMEOUT``...).

    After setUp, :attr:`case` is the set-up NovaServicesCase, and its
    helpers are attributes of this fixture too: ``boot``,
    ``post_servers``, ``wait_for_servers``, ``delete_servers``,
    ``build_attempts``, ``start_compute``, ``stop_compute``,
    ``force_down``, ``update_available_resource``, ``run_periodics``,
    ``refresh_capacity``, ``provider_inventory``, ``provider_usage``,
    ``free_in_placement``, ``providers``, ``placement_totals``,
    ``server_allocation``, ``driver_of``, ``computes``, ``api``,
    ``flavor_id``, ``compute_shards``...

    How: Nova's ``_IntegratedTestBase`` is a testtools TestCase, so the
    case is made with a no-op "test" method, its ``setUp()`` is called,
    and cleanUp runs its cleanups, last added first, as a test runner
    would.  This is the only place that does so.  Side effects for the
    lifetime of the services, as in Nova's tests: ``HOME`` and the
    ``tempfile`` directory point to temporary directories, Nova's
    options are overridden in the global ``CONF``, logging is captured
    (``case.stdlog.logger.output``), and only one set of services can
    run in a process at a time.
    """

    def __init__(self, ironic=None, driver=IRONIC_MULTI_DRIVER, computes=1,
                 nodes=0, shards=None, coordination_url=None, flags=None,
                 log_level=None, **options):
        super().__init__()
        attributes = dict(COMPUTE_DRIVER=driver, COMPUTES=computes,
                          NODES=nodes, COMPUTE_SHARDS=shards,
                          COORDINATION_URL=coordination_url,
                          FLAGS=flags, LOG_LEVEL=log_level)
        unknown = [name for name in options
                   if not hasattr(NovaServicesCase, name)]
        if unknown:
            raise TypeError('Unknown NovaServicesCase attributes: %s'
                            % ', '.join(sorted(unknown)))
        attributes.update(options)
        self._ironic = ironic
        self._case_class = type('NovaServices', (_RunnerlessCase,),
                                attributes)
        self.case = None

    def _setUp(self):
        self.leftover_threads = []
        threads = set(threading.enumerate())
        self.addCleanup(self._wait_for_threads, threads)
        case = self._case_class('services')
        case._ironic = self._ironic
        started = time.monotonic()
        try:
            case.setUp()
        except BaseException:
            _run_cleanups(case)
            raise
        self.addCleanup(self._release, case)
        self.case = case
        self.start_seconds = time.monotonic() - started

    def _release(self, case):
        self.case = None
        try:
            _run_cleanups(case)
        finally:
            # Idle worker threads of Nova's executors end when their
            # executor is collected: drop what the case still holds
            # (services, managers, drivers), as Nova's _clear_attrs does.
            case.__dict__.clear()

    def _wait_for_threads(self, before):
        """Wait for the threads started since setUp to end."""
        gc.collect()
        deadline = time.monotonic() + THREADS_TIMEOUT
        while True:
            left = [t for t in threading.enumerate()
                    if t not in before and t.is_alive()]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.leftover_threads = left
        if left:
            LOG.warning('Threads still running after Nova stopped: %s',
                        ', '.join(sorted(t.name for t in left)))

    def __getattr__(self, name):
        # Only called for what the fixture itself lacks.
        case = self.__dict__.get('case')
        if case is None or name.startswith('__'):
            raise AttributeError(name)
        return getattr(case, name)


def _join(threads, timeout):
    """Wait up to ``timeout`` seconds in all for ``threads`` to end."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0, deadline - time.monotonic()))
    left = [t.name for t in threads if t.is_alive()]
    if left:
        LOG.warning('Graceful shutdowns still running after %d s: %s',
                    timeout, ', '.join(left))


def _run_cleanups(case):
    """Run a testtools TestCase's cleanups as its runner would.

    Last added first; every one runs even when an earlier one failed; the
    first failure is raised at the end, the others are logged.
    """
    errors = []
    while case._cleanups:
        function, args, kwargs = case._cleanups.pop()
        try:
            function(*args, **kwargs)
        except Exception as e:
            LOG.exception('Cleanup %r failed', function)
            errors.append(e)
    if errors:
        raise errors[0]
