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
``IRONIC_MULTI_TEST_DB``: ``postgresql``, ``mysql``, ``sqlite``, or ``auto``
(the default: PostgreSQL if it listens on 127.0.0.1:5432, else MariaDB on
127.0.0.1:3306, else SQLite).  ``IRONIC_MULTI_TEST_PG_URL`` and
``IRONIC_MULTI_TEST_MYSQL_URL`` override the admin URLs used to create a
database per server.
"""

import atexit
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid

import fixtures
import requests
from sqlalchemy.engine import url as sa_url

from ironic_multi.testing import _net
from ironic_multi.testing import venvs

LOG = logging.getLogger(__name__)

HERE = os.path.dirname(os.path.abspath(__file__))
DB_TOOL = os.path.join(HERE, '_ironic_db.py')
SQLITE_SHIM = os.path.join(HERE, 'sqlite_serialize')

DB_KINDS = ('auto', 'postgresql', 'mysql', 'sqlite')
ADMIN_URLS = {
    'postgresql': os.environ.get(
        'IRONIC_MULTI_TEST_PG_URL',
        'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres'),
    'mysql': os.environ.get(
        'IRONIC_MULTI_TEST_MYSQL_URL', 'mysql+pymysql://root@127.0.0.1:3306/'),
}

# Shards, owner and lessee, allocations and allocation_uuid all work here;
# ironic_multi.ironic.versions asks for no more either.
API_VERSION = '1.82'
API_HEADERS = {'X-OpenStack-Ironic-API-Version': API_VERSION}

START_TIMEOUT = 60
STOP_TIMEOUT = 10

CONFIG = """\
[DEFAULT]
auth_strategy = noauth
rpc_transport = none
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake,no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake
enabled_firmware_interfaces = fake,no-firmware
enabled_inspect_interfaces = fake,no-inspect
enabled_management_interfaces = fake
enabled_network_interfaces = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
enabled_vendor_interfaces = fake,no-vendor
default_deploy_interface = fake
default_network_interface = noop

[api]
host_ip = 127.0.0.1
port = {port}
max_limit = 1000
# Under noauth every request counts as a project-scoped admin; this lets
# nodes be created with any owner.
project_admin_can_manage_own_nodes = false

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

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
"""


class IronicServerError(Exception):
    pass


class IronicServer(fixtures.Fixture):
    """One Ironic process on a free port with a database of its own.

    Its conductor serves ``conductor_group`` only: nodes of other groups
    can be listed but not managed.  After setUp: ``endpoint``, ``db_kind``
    (never ``auto``), ``db_url``, ``config_path``, ``log_path``, ``pid``
    (also the process group of everything Ironic runs), and
    ``start_seconds`` (database, schema and start); after cleanUp,
    ``stop_seconds``.  Ironic dies with the thread that started it, so
    start it from a thread that outlives its use (the main one).
    """

    def __init__(self, db_kind=None, automated_clean=False,
                 conductor_group=''):
        super().__init__()
        self.db_kind = db_kind or os.environ.get('IRONIC_MULTI_TEST_DB',
                                                 'auto')
        if self.db_kind not in DB_KINDS:
            raise ValueError('Unknown database kind %r, expected one of %s'
                             % (self.db_kind, ', '.join(DB_KINDS)))
        self.automated_clean = automated_clean
        self.conductor_group = conductor_group
        self.endpoint = self.db_url = self.base_dir = self.python = None
        self.start_seconds = self.stop_seconds = None
        self.pid = self._process = self._database = None

    def _setUp(self):
        self.python = os.path.join(os.path.dirname(ironic_executable()),
                                   'python')
        started = time.monotonic()
        _install_safety_net()
        _LIVE.add(self)
        self.addCleanup(self._release)
        self.base_dir = tempfile.mkdtemp(prefix='ironic-multi-')
        self.config_path = os.path.join(self.base_dir, 'ironic.conf')
        self.log_path = os.path.join(self.base_dir, 'ironic.log')
        self.db_kind, self.db_url = self._create_database()
        port = _net.free_port()
        self.endpoint = 'http://127.0.0.1:%d' % port
        self._write_config(port)
        self._run([self._bin('ironic-dbsync'), '--config-file',
                   self.config_path, 'create_schema'])
        self._start()
        self._wait_until_ready()
        self.start_seconds = time.monotonic() - started
        LOG.info('Ironic on %s (%s) ready in %.1f s', self.endpoint,
                 self.db_kind, self.start_seconds)

    def run_db_tool(self, *args, stdin=None):
        """Run ironic_db.py in the Ironic venv; returns its stdout."""
        return self._run([self.python, DB_TOOL, *args], stdin=stdin)

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except OSError as e:
            return '(no log: %s)' % e

    def _create_database(self):
        auto = self.db_kind == 'auto'
        for kind in DB_KINDS[1:] if auto else (self.db_kind,):
            if kind == 'sqlite':
                return kind, 'sqlite:///%s/ironic.sqlite' % self.base_dir
            admin = sa_url.make_url(ADMIN_URLS[kind])
            if auto and not _net.listening(admin.host, admin.port):
                continue
            name = 'ironic_multi_%d_%s' % (os.getpid(), uuid.uuid4().hex[:8])
            # Known before it exists: an interrupt may come at any time.
            self._database = kind, name
            try:
                self.run_db_tool('create', ADMIN_URLS[kind], name)
            except IronicServerError as e:
                if not auto:
                    raise
                LOG.warning('Not using %s: %s', kind, e)
                self._database = None
                continue
            url = admin.set(database=name)
            if kind == 'mysql':
                url = url.update_query_dict({'charset': 'utf8mb4'})
            return kind, url.render_as_string(hide_password=False)

    def _write_config(self, port):
        with open(self.config_path, 'w') as f:
            f.write(CONFIG.format(
                port=port, db_url=self.db_url,
                automated_clean=str(self.automated_clean).lower(),
                conductor_group=self.conductor_group,
                lock_path=os.path.join(self.base_dir, 'locks')))

    def _start(self):
        with open(self.log_path, 'wb') as log:
            # A session of its own lets cleanup signal every process Ironic
            # forks; _net.die_with_parent covers a runner killed by SIGKILL.
            self._process = subprocess.Popen(
                [self._bin('ironic'), '--config-file', self.config_path],
                stdout=log, stderr=subprocess.STDOUT, env=self._env(),
                start_new_session=True, preexec_fn=_net.die_with_parent)
        self.pid = self._process.pid

    def _wait_until_ready(self):
        # The conductor registers fake-hardware before the API answers for
        # it; nodes cannot be enrolled before that.
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise IronicServerError(
                    'Ironic exited with %s during startup; log tail:\n%s'
                    % (self._process.returncode, self.log_tail()))
            try:
                drivers = requests.get(self.endpoint + '/v1/drivers',
                                       headers=API_HEADERS, timeout=5)
                if drivers.ok and drivers.json()['drivers']:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        raise IronicServerError(
            'Ironic did not answer on %s within %d s; log tail:\n%s'
            % (self.endpoint, START_TIMEOUT, self.log_tail()))

    def _release(self):
        """Stop Ironic, drop its database, remove its files; idempotent."""
        started = time.monotonic()
        self._stop_process()
        if self._database:
            kind, name = self._database
            try:
                self.run_db_tool('drop', ADMIN_URLS[kind], name)
                self._database = None
            except IronicServerError as e:
                LOG.warning('Could not drop database %s: %s', name, e)
        if self.base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
        _LIVE.discard(self)
        self.stop_seconds = time.monotonic() - started

    def _stop_process(self):
        process, self._process = self._process, None
        if process is None:
            return
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            LOG.warning('Ironic did not stop within %d s, killing it',
                        STOP_TIMEOUT)
        # Also whatever the master left behind.
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()

    def _run(self, argv, stdin=None):
        result = subprocess.run(argv, input=stdin, capture_output=True,
                                text=True, env=self._env())
        if result.returncode:
            raise IronicServerError('%s exited with %d:\n%s' % (
                ' '.join(os.path.basename(a) for a in argv[:3]),
                result.returncode, result.stderr[-3000:]))
        return result.stdout

    def _env(self):
        env = dict(os.environ)
        env.pop('PYTHONPATH', None)
        if self.db_kind == 'sqlite':
            env['PYTHONPATH'] = SQLITE_SHIM
        return env

    def _bin(self, name):
        return os.path.join(os.path.dirname(self.python), name)


def ironic_executable():
    """The Ironic venv's ``ironic``; builds the venv when it is missing."""
    return venvs.ensure_venv('ironic')


def _signal_group(pgid, signum):
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


# Servers that may hold a process, a database or files.
_LIVE = set()
_previous_handlers = {}
_safety_net_installed = False


def _release_all():
    for server in list(_LIVE):
        server._release()


def _on_signal(signum, frame):
    _release_all()
    previous = _previous_handlers.pop(signum)
    signal.signal(signum, signal.SIG_DFL if previous is None else previous)
    os.kill(os.getpid(), signum)


def _install_safety_net():
    """Release every server at exit and on SIGTERM/SIGHUP, once."""
    global _safety_net_installed
    if _safety_net_installed:
        return
    _safety_net_installed = True
    atexit.register(_release_all)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            _previous_handlers[signum] = signal.signal(signum, _on_signal)
