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

"""A real Ironic (API and conductor, fake hardware) for tests.

Ironic runs as a subprocess from a virtualenv of its own: in one process its
oslo.config options collide with Nova's.  The database is chosen by
``IRONIC_MULTI_TEST_DB`` (see :mod:`ironic_multi.testing._process`).

By default Ironic runs with ``noauth`` and lenient policies.  Given a
:class:`~ironic_multi.testing.keystone_server.KeystoneServer`, it runs as in
a real cloud instead: ``auth_strategy = keystone``, tokens checked by
keystonemiddleware as the ``ironic`` service user, and Ironic's shipped
default policies (scope and new defaults enforced).
"""

import logging
import os
import time

import requests

from ironic_multi.testing import _net
from ironic_multi.testing import _process
from ironic_multi.testing import venvs

LOG = logging.getLogger(__name__)

SQLITE_SHIM = os.path.join(_process.HERE, 'sqlite_serialize')
POWER_ON_SHIM = os.path.join(_process.HERE, 'fake_power_on')
# Ironic's console container provider "ironic-multi-rfb": a real VNC
# server for each started graphical console (see the directory's module).
VNC_CONSOLES = os.path.join(_process.HERE, 'vnc_console')
DB_TOOL = _process.DB_TOOL
DB_KINDS = _process.DB_KINDS
ADMIN_URLS = _process.ADMIN_URLS
databases = _process.databases

# Shards, owner and lessee, allocations and allocation_uuid all work here;
# ironic_multi._reservation.providers.ironic.versions asks for no more
# either.
API_VERSION = '1.82'
API_HEADERS = {'X-OpenStack-Ironic-API-Version': API_VERSION}

START_TIMEOUT = 60
STOP_TIMEOUT = _process.STOP_TIMEOUT

CONFIG = """\
[DEFAULT]
auth_strategy = {auth_strategy}
rpc_transport = none
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake,no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = fake,fake-graphical,no-console
enabled_deploy_interfaces = fake
enabled_firmware_interfaces = fake,no-firmware
enabled_inspect_interfaces = fake,no-inspect
enabled_management_interfaces = fake
enabled_network_interfaces = {network_interfaces}
enabled_power_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
enabled_vendor_interfaces = fake,no-vendor
default_deploy_interface = fake
default_network_interface = {network_interface}
# A console Nova can show (VNC, served by the ironic-multi-rfb provider)
# and a rescue on every node, as Nova's rescue and console tests need.
default_console_interface = fake-graphical
default_rescue_interface = fake
{default_extra}
[api]
host_ip = 127.0.0.1
port = {port}
max_limit = {max_limit}
{api_extra}
[conductor]
automated_clean = {automated_clean}
conductor_group = {conductor_group}
sync_power_state_interval = -1

[database]
connection = {db_url}

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = {lock_path}

[fake]
deploy_delay = {deploy_delay}

[vnc]
container_provider = ironic-multi-rfb
{sections}"""

NOAUTH = {
    'default_extra': '',
    'api_extra': """\
# Under noauth every request counts as a project-scoped admin; this lets
# nodes be created with any owner.
project_admin_can_manage_own_nodes = false
""",
    'sections': """
[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
""",
}

# Ironic's own policies stay as shipped: this is what a real cloud runs.
KEYSTONE = {
    'default_extra': """\
# Whether the service role in the service project sees every node (as a
# system-scoped member would) instead of those its project owns.
rbac_service_role_elevated_access = {elevated}
""",
    'api_extra': '',
}
# The settings of a section that authenticates as Ironic's service user.
SERVICE_USER = """auth_type = password
auth_url = {auth_url}
username = {username}
password = {password}
user_domain_name = {user_domain_name}
project_name = {project_name}
project_domain_name = {project_domain_name}
region_name = {region_name}
"""
AUTHTOKEN = ('\n[keystone_authtoken]\nwww_authenticate_uri = {auth_url}\n'
             + SERVICE_USER)
# Ironic reads image properties from Glance (found in the catalog) as its
# service user.  Without it Ironic 39 cannot tell the image type, and then
# a rebuild fails with HTTP 500 ("cannot access local variable
# 'auto_lessee'", conductor/deployments.py start_deploy).
GLANCE = '\n[glance]\n' + SERVICE_USER
# Ironic's flat network interface binds each VIF to its node in Neutron
# (found in the catalog) as the service user.  It validates its cleaning
# network at every deploy, though the fake nodes are never cleaned.
NEUTRON = ('\n[neutron]\ncleaning_network = {cleaning_network}\n'
           + SERVICE_USER)


class IronicServerError(_process.ServerError):
    pass


class IronicServer(_process.ServerFixture):
    """One Ironic process on a free port with a database of its own.

    Its conductor serves ``conductor_group`` only: nodes of other groups
    can be listed but not managed.  ``max_limit`` is Ironic's ``[api]
    max_limit``, the largest page it returns.  With ``keystone`` (a
    started KeystoneServer) Ironic authenticates every request through it,
    and ``service_role_elevated_access`` sets Ironic's
    ``[DEFAULT] rbac_service_role_elevated_access``.  With
    ``deploy_powers_on`` a fake deploy ends with the node powered on, as a
    real deploy does (see ``fake_power_on/sitecustomize.py``); otherwise
    it stays off.  A node's graphical console (``fake-graphical``, every
    node's default) is a real, blank VNC server on 127.0.0.1 (see
    ``vnc_console/``).  ``deploy_delay`` is Ironic's ``[fake] deploy_delay``,
    seconds each fake deploy step sleeps (``"1"``, or a range ``"1:3"``).
    With ``glance`` (and ``keystone``) Ironic reads images from the Glance
    of Keystone's catalog.  With ``neutron`` (and ``keystone``), the name
    of a Neutron network of Keystone's catalog, nodes get Ironic's
    ``flat`` network interface, which binds their VIFs in that Neutron;
    the network is their cleaning network.  Otherwise their network
    interface is ``noop``.

    ``db_url`` and ``log_dir``: see
    :class:`~ironic_multi.testing._process.ServerFixture`, as are
    ``stop``, ``start`` and ``restart`` (same port, database and
    configuration).

    After setUp: ``endpoint``, ``db_kind`` (never ``auto``), ``db_url``,
    ``config_path``, ``log_path``, ``pid`` (also the process group of
    everything Ironic runs), and ``start_seconds`` (database, schema and
    start); after cleanUp, ``stop_seconds``.  Ironic dies with the test
    process, whichever thread started it (see ``_net.popen``).
    """

    name = 'ironic'
    error = IronicServerError

    start_timeout = START_TIMEOUT

    def __init__(self, db_kind=None, automated_clean=False,
                 conductor_group='', max_limit=1000, keystone=None,
                 service_role_elevated_access=False, deploy_powers_on=False,
                 deploy_delay='0', glance=False, neutron=None, db_url=None,
                 log_dir=None):
        super().__init__(db_kind, db_url=db_url, log_dir=log_dir)
        if service_role_elevated_access and keystone is None:
            raise ValueError('service_role_elevated_access needs keystone')
        if neutron and keystone is None:
            raise ValueError('neutron needs keystone')
        self.automated_clean = automated_clean
        self.conductor_group = conductor_group
        self.max_limit = max_limit
        self.keystone = keystone
        self.service_role_elevated_access = service_role_elevated_access
        self.deploy_powers_on = deploy_powers_on
        self.deploy_delay = deploy_delay
        self.glance = glance
        self.neutron = neutron
        self.endpoint = self.config_path = None

    def _setUp(self):
        started = time.monotonic()
        self._prepare(os.path.join(os.path.dirname(ironic_executable()),
                                   'python'))
        self.config_path = os.path.join(self.base_dir, 'ironic.conf')
        self._create_database()
        self.endpoint = 'http://127.0.0.1:%d' % _net.free_port()
        self._write_config()
        self._run([self._bin('ironic-dbsync'), '--config-file',
                   self.config_path, 'create_schema'], timeout=START_TIMEOUT)
        self._launch()
        self.wait_ready()
        self.start_seconds = time.monotonic() - started
        LOG.info('Ironic on %s (%s, %s) ready in %.1f s', self.endpoint,
                 self.db_kind, 'keystone' if self.keystone else 'noauth',
                 self.start_seconds)

    def api_headers(self):
        """Headers for a request as Ironic's administrator.

        The API version, and in keystone mode a system-scoped token of
        Keystone's ``admin`` (valid for an hour).
        """
        headers = dict(API_HEADERS)
        if self.keystone is not None:
            headers['X-Auth-Token'] = self.keystone.token('admin', 'system')
        return headers

    def _launch(self):
        self._spawn([self._bin('ironic'), '--config-file', self.config_path])

    def _ready(self):
        # The conductor registers fake-hardware before the API answers for
        # it; nodes cannot be enrolled before that.
        drivers = requests.get(self.endpoint + '/v1/drivers',
                               headers=self.api_headers(), timeout=5)
        return drivers.ok and bool(drivers.json()['drivers'])

    def _write_config(self):
        port = int(self.endpoint.rsplit(':', 1)[1])
        if self.keystone is None:
            parts = dict(NOAUTH)
        else:
            user = self.keystone.ironic
            sections = (AUTHTOKEN + (GLANCE if self.glance else '')
                        + (NEUTRON if self.neutron else ''))
            parts = {
                'default_extra': KEYSTONE['default_extra'].format(
                    elevated=str(self.service_role_elevated_access).lower()),
                'api_extra': KEYSTONE['api_extra'],
                'sections': sections.format(
                    auth_url=self.keystone.auth_url,
                    cleaning_network=self.neutron,
                    region_name=self.keystone.region, **user._asdict()),
            }
        with open(self.config_path, 'w') as f:
            f.write(CONFIG.format(
                auth_strategy='noauth' if self.keystone is None
                else 'keystone',
                port=port, db_url=self.db_url, max_limit=self.max_limit,
                automated_clean=str(self.automated_clean).lower(),
                conductor_group=self.conductor_group,
                deploy_delay=self.deploy_delay,
                network_interfaces='noop,flat' if self.neutron else 'noop',
                network_interface='flat' if self.neutron else 'noop',
                lock_path=os.path.join(self.base_dir, 'locks'), **parts))

    def _env(self):
        env = super()._env()
        shims = []
        if self.db_kind == 'sqlite':
            shims.append(SQLITE_SHIM)
        if self.deploy_powers_on:
            shims.append(POWER_ON_SHIM)
        if len(shims) > 1:
            # Python imports one sitecustomize module only.
            raise IronicServerError('deploy_powers_on needs a database '
                                    'other than SQLite')
        env['PYTHONPATH'] = os.pathsep.join(shims + [VNC_CONSOLES])
        return env


def ironic_executable():
    """The Ironic venv's ``ironic``; builds the venv when it is missing."""
    return venvs.ensure_venv('ironic')
