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

"""The cloud fixture: every service its own process, started in order."""

import collections
import concurrent.futures
import datetime
import json
import logging
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import uuid

import fixtures
from oslo_utils import timeutils
import requests
import yaml

from ironic_multi._reservation.providers.ironic import states as ironic_states
from ironic_multi.testing import _net
from ironic_multi.testing import _process
from ironic_multi.testing.cloud import cinder
from ironic_multi.testing.cloud import database
from ironic_multi.testing.cloud import glance
from ironic_multi.testing.cloud import ironic as cloud_ironic
from ironic_multi.testing.cloud import neutron
from ironic_multi.testing.cloud import nova
from ironic_multi.testing.cloud import overlay
from ironic_multi.testing.cloud import placement
from ironic_multi.testing.cloud import process
from ironic_multi.testing.cloud import rabbitmq
from ironic_multi.testing import coordination
from ironic_multi.testing import fault_proxy
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server
from ironic_multi.testing import keystone_server
from ironic_multi.testing import partition_proxy
from ironic_multi.testing import venvs

LOG = logging.getLogger(__name__)

HERE = os.path.dirname(os.path.abspath(__file__))
# The databases of the cloud's own services (Keystone and Ironic make
# theirs).
DATABASES = ('nova_api', 'nova_cell0', 'nova_cell1', 'placement', 'glance',
             'neutron', 'cinder')
# Service users in project "service", devstack's way.
SERVICE_USERS = ('placement', 'glance', 'neutron', 'cinder')
DEMO = 'demo'
# Names in clouds.yaml.
ADMIN_CLOUD, DEMO_CLOUD, SYSTEM_CLOUD = 'admin', 'demo', 'system-admin'
# Seconds one setup command (a database migration...) may take.
COMMAND_TIMEOUT = 600
# Seconds the computes may take to register and report capacity.
COMPUTE_TIMEOUT = 120
COMPUTE_BINARY = 'nova-compute'
# Nova API microversion of the fixture's own requests (2.37: networks
# "none").
NOVA_MICROVERSION = '2.95'
# Seconds a server may take to become ACTIVE or ERROR.
SETTLE_TIMEOUT = 300
SETTLED = ('ACTIVE', 'ERROR')
# ironic-multi-manage from the code under test (it is not installed in the
# cloud venv, see overlay.py).
MANAGE = ('import sys; from ironic_multi.cmd import manage; '
          'sys.exit(manage.main(sys.argv[1:]))')
# The last one without extra spec validation.
EXTRA_SPECS_MICROVERSION = '2.85'
# Services to restart once a service is back: networking-baremetal's
# agent stops reporting for good at its first failed Ironic request (its
# report loop dies with the exception), and Neutron then refuses to bind
# ports to the nodes' "dead" agents.  An operator restarts it too.
RESTART_AFTER = {'ironic': ('ironic-neutron-agent',)}


class CloudError(process.ServiceError):
    pass


class _Settling(object):
    """Whether a value has stayed the same for ``seconds``."""

    def __init__(self, seconds):
        self._seconds = seconds
        self._value = self._since = None

    def still(self, value):
        now = time.monotonic()
        if self._since is None or value != self._value:
            self._value, self._since = value, now
        return now - self._since >= self._seconds


def utcnow():
    """Naive UTC now, as :meth:`Cloud.wait_for_computes` takes ``since``."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _reported_since(service, since):
    if since is None:
        return True
    if not service.updated_at:
        return False
    # Nova keeps whole seconds.
    return (timeutils.parse_isotime(service.updated_at).replace(tzinfo=None)
            >= since.replace(microsecond=0))


def offers(placement, placement_class):
    """``{provider uuid: free units}`` placement offers for one unit.

    One ``GET /allocation_candidates``: what the scheduler would see;
    only the providers with a free unit.

    :param placement: an openstacksdk placement proxy.
    """
    answer = placement.get(
        '/allocation_candidates?resources=%s:1' % placement_class,
        microversion='1.29')
    return {uuid: (summary['resources'][placement_class]['capacity']
                   - summary['resources'][placement_class]['used'])
            for uuid, summary in answer.json()['provider_summaries'].items()
            if placement_class in summary['resources']}


class Cloud(fixtures.Fixture):
    """A whole OpenStack cloud on this machine, one process per service.

    :param computes: nova-compute processes (hosts ``compute-1``...).
    :param nodes: Ironic nodes of the default fleet (ignored when
        ``layout`` is given).
    :param layout: a :class:`ironic_multi.testing.fleet.Layout`.
    :param debug: ``debug = true`` in every service's configuration.
    :param db_kind: ``mysql`` (MariaDB; the default: Neutron's migrations
        support no other any more) or ``postgresql`` (for Keystone and
        Ironic only; the others stay on MariaDB).
    :param log_dir: where the services' logs go; kept after cleanup
        (by default a directory in the cloud's, removed with it).
    :param nova_options: ``{section: {option: value}}`` for every
        ``nova.conf``; ``compute_options`` for the computes' only.
    :param takeover_down_after, membership_timeout, pool_refresh_interval:
        the computes' ``[ironic_multi]`` options.
    :param report_interval, service_down_time, rpc_response_timeout:
        Nova's options (short: the tests wait for Nova to see a service
        down).
    :param instance_build_timeout: Nova's, on the computes: a build
        stuck in BUILD (its RPC messages lost) is set to ERROR after it.
    :param deploy_delay: seconds each step of a fake deploy or teardown
        takes in Ironic (``[fake] deploy_delay``): a build lasts long
        enough to be interrupted.  Fake deploys end powered on, as real
        ones do.
    :param compute_driver: the computes' ``compute_driver``: ours by
        default; Nova's in-tree ``ironic.IronicDriver`` or
        ``fake.FakeDriver`` for comparisons (one provider per Ironic node,
        or one fake host, instead of ours per compute).
    :param private_database: run a MariaDB server of the cloud's own
        (``database``, see :mod:`.database`) for every database, Keystone's
        and Ironic's included, instead of the machine's; it can be
        restarted (``restart('database')``).  ``db_kind`` must then be
        ``mysql`` or None.
    :param ironic_proxy: put a
        :class:`~ironic_multi.testing.fault_proxy.FaultProxy` between the
        computes (only them) and Ironic (``ironic_proxy``).
    :param coordination_proxies: give each compute a
        :class:`~ironic_multi.testing.partition_proxy.PartitionProxy` of
        its own in front of etcd, for :meth:`partition` and :meth:`heal`.

    After setUp:

    ``clouds_yaml``
        a clouds.yaml with the clouds ``admin`` (project admin),
        ``demo`` (a member of project demo) and ``system-admin``
        (system scope, for Ironic); :meth:`openstack` runs the client on
        it, :meth:`connection` gives an openstacksdk connection.
    ``services``
        ``{name: Service}`` of every process of the cloud, each controlled
        by name (:meth:`stop`, :meth:`start`, :meth:`restart`,
        :meth:`kill`): rabbitmq, etcd, keystone, ironic (API and
        conductor in one process), placement, nova-api, nova-conductor,
        nova-scheduler, glance-api, neutron-api, nova-compute-HOST,
        nova-novncproxy where the cloud venv has noVNC's web client
        (``novnc_web``; consoles on ``novncproxy_port``), guests when
        the cloud runs as root (``guests``: an SSH login on every
        deployed node's address, see :mod:`.guests`), and database with
        ``private_database``.  The fixtures of Keystone,
        Ironic and etcd are ``keystone``, ``ironic_server`` and
        ``etcd``.  Every process logs to ``log_dir/<name>.log``.
    ``ironic_proxy``
        with ``ironic_proxy``, the computes' FaultProxy to Ironic.
    ``coordination_proxies``
        with ``coordination_proxies``, ``{host: PartitionProxy}``.
    ``computes``
        the compute hosts, in order.
    ``ironic``
        node helpers on Ironic as its system administrator.
    ``layout``, ``node_groups``
        the fleet, and ``{node uuid: group name}``.
    ``flavors``, ``image_id``, ``network_id``
        what was created (``network_id`` None when the flat network
        could not be made).
    ``start_seconds``, ``phases``
        how long the start took, in all and per phase.
    """

    WSGI = os.path.join(HERE, '_wsgi.py')

    def __init__(self, computes=3, nodes=24, layout=None, debug=False,
                 db_kind=None, log_dir=None, nova_options=None,
                 compute_options=None, takeover_down_after=5,
                 membership_timeout=20, pool_refresh_interval=2,
                 report_interval=2, service_down_time=10,
                 rpc_response_timeout=30, update_resources_interval=5,
                 deploy_delay='1', instance_build_timeout=60, venv=None,
                 compute_driver=nova.COMPUTE_DRIVER, private_database=False,
                 ironic_proxy=False, coordination_proxies=False):
        super().__init__()
        self.initial_computes = computes
        self.layout = layout or cloud_ironic.default_layout(nodes, computes)
        self.debug = debug
        self.db_kind = db_kind or 'mysql'
        if private_database and self.db_kind != 'mysql':
            raise ValueError('A private database is MariaDB: db_kind must '
                             'be mysql, not %r' % db_kind)
        self.private_database = private_database
        self.use_ironic_proxy = ironic_proxy
        self.use_coordination_proxies = coordination_proxies
        self.ironic_proxy = None
        self.coordination_proxies = {}
        self.database = None
        self.requested_log_dir = log_dir
        self.nova_options = nova_options or {}
        self.compute_options = compute_options or {}
        self.takeover_down_after = takeover_down_after
        self.membership_timeout = membership_timeout
        self.pool_refresh_interval = pool_refresh_interval
        self.report_interval = report_interval
        self.service_down_time = service_down_time
        self.rpc_response_timeout = rpc_response_timeout
        self.update_resources_interval = update_resources_interval
        self.venv_dir = venv
        self.deploy_delay = deploy_delay
        self.instance_build_timeout = instance_build_timeout
        self.compute_driver = compute_driver
        self.services = collections.OrderedDict()
        self.computes = []
        self.databases = {}
        self.accounts = {}
        self.phases = collections.OrderedDict()
        self.flavors = {}
        self.node_groups = {}
        self.image_id = self.network_id = None
        self.guests = self.guests_label = None
        self.base_dir = self.log_dir = self.clouds_yaml = None
        self.start_seconds = self.stop_seconds = None
        self._db_python = None
        self._next_compute = 1
        self._connections = {}

    # -- start ------------------------------------------------------------

    def _setUp(self):
        started = time.monotonic()
        _process._install_safety_net()
        _process._LIVE.add(self)
        self.addCleanup(self._release)
        self._phase('directories')
        server = venvs.ensure_venv('cloud', self.venv_dir)
        self.venv = os.path.dirname(os.path.dirname(server))
        self.python = os.path.join(self.venv, 'bin', 'python')
        self.base_dir = _process.owned_directory('cloud', self.python)
        self.log_dir = self.requested_log_dir or os.path.join(
            self.base_dir, 'logs')
        os.makedirs(self.log_dir, exist_ok=True)
        self.overlay = overlay.make(os.path.join(self.base_dir, 'overlay'))
        self.coordination_group = 'cloud-%s' % uuid.uuid4().hex[:8]
        ports = {name: _net.free_port() for name in (
            'placement', 'nova-api', 'glance-api', 'neutron-api',
            'cinder-api', 'nova-novncproxy')}
        self.novncproxy_port = ports['nova-novncproxy']
        self.novnc_web = venvs.novnc_web(self.venv)

        self._phase('rabbitmq, etcd, keystone, databases')
        rabbit = self._add(rabbitmq.make_service(self.base_dir,
                                                 self.log_dir))
        rabbit.start(wait=False)
        self.transport_url = rabbit.transport_url
        if self.private_database:
            self.database = self._add(database.make_service(
                self.base_dir, self.log_dir))
            self.database.start()
        self.etcd = self.useFixture(coordination.EtcdServer(
            log_dir=self.log_dir))
        self._add(process.ServerService('etcd', self.etcd))
        self.coordination_url = self.etcd.url
        if self.database is None:
            self._allow_connections()
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            databases = pool.map(self._create_database, DATABASES)
            self.keystone = self.useFixture(keystone_server.KeystoneServer(
                db_kind=self.db_kind, log_dir=self.log_dir,
                db_url=self._private_database_url('keystone')))
            list(databases)
        self._add(process.ServerService('keystone', self.keystone))

        self._phase('keystone accounts and catalog')
        self._create_accounts(ports)
        self._write_clouds_yaml()

        self._phase('configuration, schemas, ironic, nodes')
        confs = {
            'nova': nova.control_config(self),
            'placement': placement.write_config(self),
            'glance': glance.write_config(self, ports['glance-api']),
            'neutron': neutron.write_config(self),
            'cinder': cinder.write_config(self),
        }
        syncs = concurrent.futures.ThreadPoolExecutor(4)
        try:
            pending = [syncs.submit(nova.setup_cells, self, confs['nova']),
                       syncs.submit(placement.sync, self,
                                    confs['placement']),
                       syncs.submit(glance.sync, self, confs['glance']),
                       syncs.submit(neutron.sync, self, confs['neutron']),
                       syncs.submit(cinder.sync, self, confs['cinder'])]
            self.ironic_server = self.useFixture(
                ironic_server.IronicServer(
                    db_kind=self.db_kind, keystone=self.keystone,
                    deploy_powers_on=True, deploy_delay=self.deploy_delay,
                    glance=True, neutron=neutron.NETWORK,
                    log_dir=self.log_dir,
                    db_url=self._private_database_url('ironic')))
            self._add(process.ServerService('ironic', self.ironic_server))
            self.keystone.add_endpoint('baremetal', 'ironic',
                                       self.ironic_server.endpoint)
            if self.use_ironic_proxy:
                # Stopped after the computes (cleanups run in reverse).
                self.ironic_proxy = self.useFixture(
                    fault_proxy.FaultProxy(self.ironic_server.endpoint))
            # Before Keystone, Ironic and etcd stop: the computes leave
            # the ring and finish their work first.
            self.addCleanup(self._stop_services)
            self.ironic = ironic_nodes.admin_nodes(self.ironic_server)
            self.node_groups = cloud_ironic.enroll(self.ironic, self.layout)
            for future in pending:
                future.result()
        finally:
            syncs.shutdown(wait=True, cancel_futures=True)

        self._phase('control services')
        self.nova_conf = confs['nova']
        controls = [
            placement.service(self, confs['placement'], ports['placement']),
            nova.api_service(self, confs['nova'], ports['nova-api']),
            glance.service(self, confs['glance'], ports['glance-api']),
            neutron.service(self, confs['neutron'], ports['neutron-api']),
            neutron.rpc_service(self, confs['neutron']),
            cinder.api_service(self, confs['cinder'], ports['cinder-api']),
            cinder.binary_service(self, 'cinder-scheduler', confs['cinder']),
            cinder.binary_service(self, 'cinder-volume', confs['cinder']),
            nova.binary_service(self, 'nova-conductor', confs['nova']),
            nova.binary_service(self, 'nova-scheduler', confs['nova']),
        ]
        if self.novnc_web is not None:
            controls.append(nova.binary_service(
                self, 'nova-novncproxy', confs['nova'],
                ready=self.http_ready(self.novncproxy_port, '/vnc_lite.html')))
        if self._guests_module().can_run():
            self.guests = self._guests_service()
            controls.append(self.guests)
        for service in controls:
            self._add(service).start(wait=False)
        rabbit.wait_ready()
        for service in controls:
            service.wait_ready()
        # Once neutron-rpc-server has had the others' start to begin
        # consuming: the agent's first call at start has no retry.  Its
        # reports begin before any server can be active.
        self._add(neutron.agent_service(
            self, confs['neutron'], neutron.write_agent_config(self))).start(
                wait=False)

        self._phase('computes')
        first = self.add_compute(wait=False)
        if self.compute_driver == nova.IN_TREE_DRIVER:
            # In-tree computes started together each hash every node over
            # itself alone (none has a compute node yet) and create the
            # same compute node records: the one that loses the insert
            # exits at start ("Duplicate compute node record found").
            # An operator brings the first one up alone for that reason.
            self._wait_for_in_tree_nodes(first)
        for _ in range(self.initial_computes - 1):
            self.add_compute(wait=False)
        self.wait_for_computes(self.computes)
        nova.discover_hosts(self, self.nova_conf)

        self._phase('flavors, image, network')
        self._create_resources()
        self._phase('capacity in placement')
        self.wait_for_capacity()
        # Again: discover_hosts maps the hosts that have compute nodes,
        # and the in-tree driver's come with its first resource update,
        # which may end after the first call (a build scheduled to such a
        # host fails: "Host 'compute-2' is not mapped to any cell").
        nova.discover_hosts(self, self.nova_conf)
        self._phase(None)
        self.start_seconds = time.monotonic() - started
        LOG.info('Cloud ready in %.1f s (%s); RSS %.0f MiB',
                 self.start_seconds,
                 ', '.join('%s %.1f s' % item for item in self.phases.items()),
                 self.rss() / 2 ** 20)

    @staticmethod
    def _guests_module():
        # Not at the top: the guests process runs that module as
        # __main__, after importing this package.
        from ironic_multi.testing.cloud import guests
        return guests

    def _guests_service(self):
        """The fake guests (see :mod:`.guests`), on Ironic's database."""
        guests = self._guests_module()
        log_path = os.path.join(self.log_dir, 'guests.log')

        def ready():
            with open(log_path) as f:
                return guests.READY in f.read()

        # A label of this cloud's own for its loopback addresses.
        label = self.guests_label = 'lo:g%s' % self.coordination_group[-8:]
        return process.Service(
            'guests', [self.python, '-m', 'ironic_multi.testing.cloud.guests',
                       '--db-url', self.ironic_server.db_url,
                       '--label', label], self.log_dir, self.env(),
            ready=ready)

    def _phase(self, name):
        now = time.monotonic()
        current = getattr(self, '_current_phase', None)
        if current is not None:
            self.phases[current[0]] = round(now - current[1], 1)
        self._current_phase = (name, now) if name else None

    def _add(self, service):
        self.services[service.name] = service
        return service

    def _private_database_url(self, label):
        """A new database on the private server, or None without one."""
        if self.database is None:
            return None
        return _process.create_database(
            self.python, 'mysql', label, error=CloudError,
            admin_url=self.database.admin_url)

    def _allow_connections(self):
        limits = _process.allow_connections(
            self.python, 'mysql', database.MAX_CONNECTIONS, error=CloudError)
        if limits and limits[0] != limits[1]:
            LOG.info('Raised the MariaDB server\'s max_connections from '
                     '%d to %d', *limits)

    def _create_database(self, label):
        if self.database is not None:
            # Goes with the server's data directory.
            self.databases[label] = self._private_database_url(label)
            return
        # Neutron 29's migrations are MySQL's only (ALTER TABLE ... CONVERT
        # TO CHARACTER SET fails on PostgreSQL).
        kind = 'mysql'
        name = _process.database_name(label)
        self._db_python = self.python
        _process.watch_database(self.base_dir, self.python, kind, name)
        self._db_created = getattr(self, '_db_created', [])
        self._db_created.append((kind, name))
        self.databases[label] = _process.create_database(
            self.python, kind, name, error=CloudError)

    def _create_accounts(self, ports):
        keystone = self.keystone
        self.accounts['nova'] = keystone.nova
        for name in SERVICE_USERS:
            self.accounts[name] = keystone.add_user(
                name, keystone_server.SERVICE_PROJECT,
                roles=('admin', 'service'))
        self.accounts[DEMO] = keystone.add_user(DEMO, DEMO,
                                                roles=('member', 'reader'))
        catalog = (
            ('placement', 'placement', 'http://127.0.0.1:%d'
             % ports['placement']),
            ('compute', 'nova', 'http://127.0.0.1:%d/v2.1'
             % ports['nova-api']),
            ('image', 'glance', 'http://127.0.0.1:%d' % ports['glance-api']),
            ('network', 'neutron', 'http://127.0.0.1:%d'
             % ports['neutron-api']),
        ) + tuple((service_type, 'cinder', 'http://127.0.0.1:%d/v3'
                   % ports['cinder-api'])
                  for service_type in cinder.SERVICE_TYPES)
        for service_type, name, url in catalog:
            keystone.add_endpoint(service_type, name, url)

    def _write_clouds_yaml(self):
        keystone = self.keystone

        def entry(creds, **scope):
            auth = {'auth_url': keystone.auth_url,
                    'username': creds.username, 'password': creds.password,
                    'user_domain_name': creds.user_domain_name}
            if scope:
                auth.update(scope)
            else:
                auth.update(project_name=creds.project_name,
                            project_domain_name=creds.project_domain_name)
            return {'auth': auth, 'region_name': keystone.region,
                    'identity_api_version': 3, 'interface': 'public'}

        clouds = {
            ADMIN_CLOUD: entry(keystone.admin),
            DEMO_CLOUD: entry(self.accounts[DEMO]),
            SYSTEM_CLOUD: entry(keystone.admin, system_scope='all'),
        }
        self.clouds_yaml = os.path.join(self.base_dir, 'clouds.yaml')
        with open(self.clouds_yaml, 'w') as f:
            yaml.safe_dump({'clouds': clouds}, f, default_flow_style=False)

    def _create_resources(self):
        admin = self.connection(ADMIN_CLOUD)
        for flavor in self.layout.flavors:
            created = admin.compute.create_flavor(
                name=flavor.name, ram=4096, vcpus=2, disk=40,
                is_public=True)
            # Microversion 2.86 and later reject "capabilities:boot_mode"
            # (Nova validates the capabilities: namespace against its own
            # host state fields, not Ironic's); 2.85 accepts it, as
            # "openstack --os-compute-api-version 2.85 flavor set" does.
            admin.compute.post(
                '/flavors/%s/os-extra_specs' % created.id,
                json={'extra_specs': flavor.extra_specs},
                microversion=EXTRA_SPECS_MICROVERSION).raise_for_status()
            self.flavors[flavor.name] = created.id
        image = admin.image.create_image(
            name=glance.IMAGE_NAME, data=glance.IMAGE_DATA,
            disk_format='raw', container_format='bare',
            visibility='public', wait=True)
        self.image_id = image.id
        self.network_id = self._create_network(admin)

    def _create_network(self, admin):
        """A shared flat network on physnet1, or None (logged)."""
        try:
            network = admin.network.create_network(
                name=neutron.NETWORK, shared=True,
                provider_network_type='flat',
                provider_physical_network=neutron.PHYSNET)
            admin.network.create_subnet(
                network_id=network.id, name='baremetal-subnet',
                ip_version=4, cidr='192.0.2.0/24', enable_dhcp=False)
        except Exception as e:  # a report, not a failure of the cloud
            LOG.warning('No flat network: %s', e)
            return None
        return network.id

    # -- computes ---------------------------------------------------------

    def add_compute(self, host=None, wait=True):
        """Start one more nova-compute; returns its host name.

        With ``wait``, until Nova reports it up and ``nova-manage
        cell_v2 discover_hosts`` has mapped it, as an operator scaling
        out does.
        """
        if host is None:
            host = 'compute-%d' % self._next_compute
            self._next_compute += 1
        if self.use_coordination_proxies:
            # Stopped in _stop_services, after the computes.
            proxy = partition_proxy.PartitionProxy(self._etcd_address())
            proxy.setUp()
            self.coordination_proxies[host] = proxy
        conf = nova.compute_config(self, host)
        service = nova.binary_service(self, COMPUTE_BINARY, conf,
                                      name=self.compute_service(host))
        service.host = host
        self._add(service).start(wait=False)
        self.computes.append(host)
        if wait:
            self.wait_for_computes([host])
            nova.discover_hosts(self, self.nova_conf)
        return host

    @staticmethod
    def compute_service(host):
        """The name of a compute host's service in :attr:`services`."""
        return '%s-%s' % (COMPUTE_BINARY, host)

    def remove_compute(self, host):
        """Stop a compute's process and forget it (no Nova changes).

        The scale-in runbook (force down, adopt, ``compute service
        delete``) is the caller's: see doc/source/cloud.rst.
        """
        service = self.services.pop(self.compute_service(host))
        service.stop()
        self.computes.remove(host)
        proxy = self.coordination_proxies.pop(host, None)
        if proxy is not None:
            proxy.cleanUp()
        return service

    def _etcd_address(self):
        parts = urllib.parse.urlsplit(self.coordination_url.split('+', 1)[1])
        return parts.hostname, parts.port

    def coordination_url_of(self, host):
        """The ``coordination_url`` of a compute: its proxy's, if any."""
        proxy = self.coordination_proxies.get(host)
        if proxy is None:
            return self.coordination_url
        return 'etcd3+http://%s:%d' % proxy.address

    def partition(self, host):
        """Cut ``host``'s compute off from etcd (it still reaches the rest).

        Its requests to etcd get no answer and its connections there are
        cut, until :meth:`heal`.  Needs ``coordination_proxies``.
        """
        self._coordination_proxy(host).partition()

    def heal(self, host):
        """Undo :meth:`partition`."""
        self._coordination_proxy(host).heal()

    def _coordination_proxy(self, host):
        try:
            return self.coordination_proxies[host]
        except KeyError:
            raise CloudError('No coordination proxy for %r (the cloud needs '
                             'coordination_proxies=True)' % host)

    def nova_services(self, binary=COMPUTE_BINARY):
        """``{host: service}`` as Nova's API reports them."""
        admin = self.connection(ADMIN_CLOUD)
        return {s.host: s for s in admin.compute.services()
                if s.binary == binary}

    def wait_for_computes(self, hosts, state='up', timeout=COMPUTE_TIMEOUT,
                          since=None):
        """Until Nova reports every host's nova-compute ``state``.

        :param since: a UTC datetime: also until each host's service has
            reported after it.  After a restart, the stopped process's
            last heartbeat keeps the host up for ``service_down_time``, and
            the new one beats only once it has started: in between Nova
            takes the host for down (a delete then skips the compute).
            The API shows no heartbeat time (its ``updated_at`` changes
            at the new process's start, before its first beat): a host up
            ``service_down_time`` after ``since`` has beaten since.
        """
        deadline = time.monotonic() + timeout
        beaten = since and since + datetime.timedelta(
            seconds=self.service_down_time)
        while True:
            known = self.nova_services()
            # The same for every host: read the clock once a look.
            aging = bool(beaten) and utcnow() < beaten
            missing = [h for h in hosts
                       if aging or h not in known or known[h].state != state
                       or not _reported_since(known[h], since)]
            if not missing:
                return
            if state == 'up':
                self._check_computes_run(missing)
            if time.monotonic() > deadline:
                raise CloudError('Computes not %s after %d s: %s' % (
                    state, timeout, ', '.join(missing)))
            time.sleep(0.5)

    def _check_computes_run(self, hosts):
        """Raise :class:`CloudError` if a compute of ``hosts`` exited."""
        for host in hosts:
            service = self.services.get(self.compute_service(host))
            if service and not service.running:
                raise CloudError('%s exited: %s' % (
                    service.name, service.log_tail()))

    def _wait_for_in_tree_nodes(self, host, timeout=COMPUTE_TIMEOUT):
        """Until the in-tree compute ``host`` has every node's record.

        Read in placement: Nova's API lists no hypervisor of a host that
        ``discover_hosts`` has not mapped, and a node's provider comes
        after its compute node record.
        """
        deadline = time.monotonic() + timeout
        while True:
            have = sum(1 for found in self.provider_inventories().values()
                       if found)
            if have >= len(self.node_groups):
                return
            self._check_computes_run([host])
            if time.monotonic() > deadline:
                raise CloudError('%s registered %d of %d nodes in %d s' % (
                    host, have, len(self.node_groups), timeout))
            time.sleep(1)

    def wait_for_capacity(self, hosts=None, timeout=COMPUTE_TIMEOUT):
        """Until each compute's provider has every resource class.

        Other drivers: until the in-tree driver has a provider with
        inventory per Ironic node, every compute to which its hash ring
        gives nodes holds some, and the layout has stayed put for two
        resource updates; or the fake driver its one provider.
        """
        wanted = {'CUSTOM_%s' % rc.upper()
                  for rc in self.layout.resource_classes()}
        providers = {nova.IN_TREE_DRIVER: len(self.node_groups)}.get(
            self.compute_driver, 1)
        settle = 2 * self.update_resources_interval
        settling = _Settling(settle)
        if self.compute_driver == nova.IN_TREE_DRIVER:
            # The layout must stay put that long once every node reports:
            # on top of the wait for the reports.
            timeout += settle
        deadline = time.monotonic() + timeout
        while True:
            inventories = self.provider_inventories()
            if self.compute_driver == nova.COMPUTE_DRIVER:
                short = [h for h in (hosts or self.computes)
                         if not wanted <= set(inventories.get(h, {}))]
            else:
                have = sum(1 for found in inventories.values() if found)
                short = [] if have >= providers else [
                    '%d of %d providers' % (have, providers)]
            if not short and self.compute_driver == nova.IN_TREE_DRIVER:
                short = self._in_tree_layout_short(settling)
            if not short:
                return inventories
            # A compute that exited reports nothing: say so now.
            self._check_computes_run(hosts or self.computes)
            if time.monotonic() > deadline:
                raise CloudError('No %s inventory on %s after %d s' % (
                    ', '.join(sorted(wanted)), ', '.join(short), timeout))
            time.sleep(1)

    def _in_tree_layout_short(self, settling):
        """What keeps the in-tree computes' layout from being final."""
        layout = self.in_tree_layout()
        ring = nova.in_tree_layout(self.node_groups, self.computes)
        missing = set(ring.values()) - set(layout.values())
        if missing:
            # Until a compute has registered a node, the others hash every
            # node over themselves alone; discover_hosts maps no compute
            # without one (a boot there fails: "Host 'compute-1' is not
            # mapped to any cell), and Nova's API lists no hypervisor of
            # a host it has not mapped: map the ones registered since.
            nova.discover_hosts(self, self.nova_conf)
            return ['the nodes of %s (no compute node yet)'
                    % ', '.join(sorted(missing))]
        if not settling.still(layout):
            # A compute that starts takes its share of the nodes from the
            # others at its next resource update: a boot scheduled to a
            # node on the move fails on the host that lost it.
            return ['the in-tree computes\' nodes (still moving)']
        elsewhere = sorted(u for u, host in ring.items()
                           if layout.get(u) != host)
        if elsewhere:
            # Seen in CI under load (2026-11-29): two nodes stayed off
            # their ring host for over two minutes, cause not traced.
            # Boots work wherever a node is, as long as it stays there.
            LOG.info('In-tree nodes settled off the hosts of a hash ring '
                     'over %s: %s', ', '.join(self.computes), ', '.join(
                         '%s on %s' % (u, layout.get(u)) for u in elsewhere))
        return []

    def in_tree_layout(self):
        """``{hypervisor (node) name: host}`` as Nova's API reports it."""
        admin = self.connection(ADMIN_CLOUD)
        return {h.name: (h.service_details or {}).get('host')
                for h in admin.compute.hypervisors(details=True)}

    def offers(self, placement_class):
        """``{provider name: free units}`` placement offers of a class."""
        placement = self.connection(ADMIN_CLOUD).placement
        names = {p.id: p.name for p in placement.resource_providers()}
        return {names.get(uuid, uuid): units for uuid, units in
                offers(placement, placement_class).items()}

    def provider_inventories(self):
        """``{provider name: {resource class: inventory}}`` in placement."""
        placement = self.connection(ADMIN_CLOUD).placement
        result = {}
        for provider in placement.resource_providers():
            result[provider.name] = {
                inv.resource_class: inv for inv in
                placement.resource_provider_inventories(provider)}
        return result

    # -- servers and nodes --------------------------------------------------

    def wait_for_servers(self, server_ids, timeout=SETTLE_TIMEOUT,
                         settled=SETTLED, poll=0.5):
        """Until every server's status is in ``settled`` with no task.

        Polls Nova's API (all projects) through openstacksdk.  Returns
        ``{server id: server}``; raises CloudError after ``timeout``
        seconds with the states of the others.
        """
        compute = self.connection(ADMIN_CLOUD).compute
        pending = set(server_ids)
        done = {}
        deadline = time.monotonic() + timeout
        while pending:
            for server_id in list(pending):
                server = compute.get_server(server_id)
                if server.status in settled and not server.task_state:
                    done[server_id] = server
                    pending.discard(server_id)
            if not pending:
                break
            if time.monotonic() > deadline:
                states = collections.Counter(
                    (s.status, s.task_state) for s in
                    map(compute.get_server, pending))
                raise CloudError('%d servers not %s after %d s: %s' % (
                    len(pending), '/'.join(settled), timeout, dict(states)))
            time.sleep(poll)
        return done

    def wait_for_deleted(self, server_ids, timeout=SETTLE_TIMEOUT,
                         poll=0.5):
        """Until Nova knows none of the servers."""
        compute = self.connection(ADMIN_CLOUD).compute
        deadline = time.monotonic() + timeout
        pending = set(server_ids)
        while pending:
            pending = {i for i in pending
                       if compute.find_server(i, ignore_missing=True,
                                              all_projects=True)}
            if pending and time.monotonic() > deadline:
                raise CloudError('%d servers not deleted after %d s'
                                 % (len(pending), timeout))
            if pending:
                time.sleep(poll)

    def wait_for_nodes_at_rest(self, timeout=SETTLE_TIMEOUT, poll=1):
        """Until no Ironic node is being torn down or cleaned.

        A deleted server's node is cleaned before it is free again, and
        until then it counts in no capacity: a test that compares counts
        right after deletes waits here first.  Returns the nodes.
        """
        deadline = time.monotonic() + timeout
        while True:
            nodes = self.ironic.list_nodes(
                fields=('uuid', 'provision_state', 'resource_class'))
            busy = collections.Counter(
                n['provision_state'] for n in nodes
                if n['provision_state'] in ironic_states.RELEASING)
            if not busy:
                return nodes
            if time.monotonic() > deadline:
                raise CloudError('Nodes still being released after %d s: %s'
                                 % (timeout, dict(busy)))
            time.sleep(poll)

    def held_nodes(self):
        """``{instance uuid: [node uuid, ...]}`` of the associated nodes."""
        held = collections.defaultdict(list)
        for node in self.ironic.list_nodes():
            if node['instance_uuid']:
                held[node['instance_uuid']].append(node['uuid'])
        return dict(held)

    def manage(self, *args, host=None):
        """Run ``ironic-multi-manage ARGS -f json``; returns its output.

        With a compute's configuration (the first compute's by default).
        """
        conf = nova.compute_config_path(self, host or self.computes[0])
        output = self.run([self.python, '-c', MANAGE, '--config-file',
                           conf] + [str(a) for a in args] + ['-f', 'json'])
        return json.loads(output)

    # -- processes --------------------------------------------------------

    def service(self, name):
        try:
            return self.services[name]
        except KeyError:
            raise CloudError('No service %r; the cloud runs %s' % (
                name, ', '.join(self.services)))

    def stop(self, name, timeout=None):
        """SIGTERM a service (SIGKILL after a timeout); returns its code."""
        return self.service(name).stop(timeout)

    def start(self, name, wait=True):
        service = self.service(name).start(wait=wait)
        self._restart_after(name, wait)
        return service

    def restart(self, name, wait=True):
        service = self.service(name).restart(wait=wait)
        self._restart_after(name, wait)
        return service

    def _restart_after(self, name, ready):
        for dependent in RESTART_AFTER.get(name, ()):
            service = self.services.get(dependent)
            if service is None or not service.running:
                continue
            if not ready:
                LOG.warning('%s started without waiting: %s may have '
                            'stopped reporting and is not restarted',
                            name, dependent)
                continue
            LOG.info('Restarting %s after %s', dependent, name)
            service.restart()

    def kill(self, name, signum=signal.SIGKILL):
        """Send any signal; for SIGKILL and SIGTERM, wait for the exit."""
        service = self.service(name)
        if signum in (signal.SIGKILL, signal.SIGTERM):
            return service.kill(signum)
        service.send_signal(signum)
        return None

    def pids(self):
        """``{name: pid}`` of every running process (group) of the cloud."""
        # A copy: a fault schedule's thread may add or remove computes.
        return {name: s.pid for name, s in list(self.services.items())
                if s.running}

    def rss(self, per_process=False):
        """Resident memory of the whole cloud in bytes.

        Every process of every group summed; ``per_process``: ``{name:
        bytes}``.
        """
        sizes = {name: process.group_rss(pid)
                 for name, pid in self.pids().items()}
        return sizes if per_process else sum(sizes.values())

    # -- clients ----------------------------------------------------------

    def env(self):
        """The environment of the cloud's processes and commands."""
        env = {k: v for k, v in os.environ.items()
               if k not in ('PYTHONPATH', 'VIRTUAL_ENV', 'PYTHONHOME')
               and not k.startswith('OS_')}
        env['PATH'] = os.path.join(self.venv, 'bin') + os.pathsep + env.get(
            'PATH', '/usr/bin:/bin')
        # The code under test, before the venv's site-packages.
        env['PYTHONPATH'] = self.overlay
        return env

    def bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def run(self, argv, timeout=COMMAND_TIMEOUT, env=None):
        """Run a command of the venv; its output goes to the log dir."""
        log_path = os.path.join(self.log_dir, 'commands.log')
        result = subprocess.run(argv, capture_output=True, text=True,
                                env=env or self.env(), timeout=timeout)
        with open(log_path, 'a') as log:
            log.write('$ %s\n%s%s(exit %d)\n' % (' '.join(argv),
                                                 result.stdout,
                                                 result.stderr,
                                                 result.returncode))
        if result.returncode:
            raise CloudError('%s exited with %d:\n%s' % (
                ' '.join(os.path.basename(a) for a in argv[:4]),
                result.returncode, (result.stderr or result.stdout)[-3000:]))
        return result.stdout

    def client_env(self, cloud=DEMO_CLOUD):
        """The environment of ``openstack`` as ``cloud`` of clouds.yaml."""
        return dict(self.env(), OS_CLIENT_CONFIG_FILE=self.clouds_yaml,
                    OS_CLOUD=cloud)

    def openstack(self, *args, cloud=DEMO_CLOUD, parse=True,
                  timeout=COMMAND_TIMEOUT):
        """Run ``openstack ARGS`` (python-openstackclient) as ``cloud``.

        With ``parse``, ``-f json`` is added and the output parsed.
        """
        argv = [self.bin('openstack')] + [str(a) for a in args]
        if parse:
            argv += ['-f', 'json']
        output = self.run(argv, timeout=timeout,
                          env=self.client_env(cloud))
        if not parse or not output.strip():
            return output
        # "server rebuild --wait" says "Complete" before its JSON.
        starts = [i for i in (output.find('{'), output.find('[')) if i >= 0]
        return json.loads(output[min(starts):] if starts else output)

    def connection(self, cloud=ADMIN_CLOUD, shared=True):
        """An openstacksdk connection of this process, by cloud name.

        ``shared``: the one this fixture keeps per cloud name; otherwise
        a new one, for a thread of its own (a session is not meant to be
        shared between threads).
        """
        if not shared or cloud not in self._connections:
            import openstack.config
            import openstack.connection

            config = openstack.config.OpenStackConfig(
                config_files=[self.clouds_yaml])
            region = config.get_one(
                cloud=cloud, compute_api_version=NOVA_MICROVERSION)
            connection = openstack.connection.Connection(config=region)
            if not shared:
                return connection
            self._connections[cloud] = connection
        return self._connections[cloud]

    @staticmethod
    def http_ready(port, path='/'):
        """A ready() that GETs ``path``: any answer below 500 will do."""
        url = 'http://127.0.0.1:%d%s' % (port, path)
        return lambda: requests.get(url, timeout=5).status_code < 500

    # -- stop ---------------------------------------------------------------

    def _stop_services(self):
        """Stop the processes, each group in parallel.

        The computes first (they leave the ring and finish their work
        while the rest still serves), then the control services, then the
        broker.
        """
        started = time.monotonic()
        services = list(self.services.values())
        last = ('rabbitmq', database.KIND)
        waves = (
            [s for s in services if s.kind == COMPUTE_BINARY],
            [s for s in services
             if s.kind != COMPUTE_BINARY and s.kind not in last],
            [s for s in services if s.kind in last],
        )
        for number, wave in enumerate(waves):
            if number == 1:
                # The computes have left the group through them.
                for proxy in self.coordination_proxies.values():
                    proxy.cleanUp()
                self.coordination_proxies.clear()
            with concurrent.futures.ThreadPoolExecutor(
                    max(1, len(wave))) as pool:
                for service, future in zip(wave, [pool.submit(s.stop)
                                                  for s in wave]):
                    try:
                        future.result()
                    except Exception:
                        LOG.exception('Could not stop %s', service.name)
        self.services.clear()
        if services:
            self.stop_seconds = time.monotonic() - started

    def _release(self):
        """Stop every process, drop the databases, remove the files.

        Idempotent: it runs from the clean-up, atexit and signal handlers.
        """
        self._stop_services()
        if self.guests_label:
            # A guests process killed before its own clean-up leaves its
            # addresses on the loopback device.
            subprocess.run(['ip', 'addr', 'flush', 'dev', 'lo', 'label',
                            self.guests_label], capture_output=True,
                           check=False)
            self.guests_label = None
        for kind, name in getattr(self, '_db_created', []):
            try:
                _process.drop_database(self._db_python, kind, name,
                                       error=CloudError)
                _process.reaper().forget_database(kind, name)
            except CloudError as e:
                LOG.warning('Could not drop database %s: %s', name, e)
        self._db_created = []
        if self.base_dir:
            # The logs stay when they were asked for somewhere else.
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
        _process._LIVE.discard(self)
