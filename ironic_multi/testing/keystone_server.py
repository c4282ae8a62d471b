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

"""A real Keystone for the tests where authentication and policy matter.

Keystone runs as a subprocess from a virtualenv of its own (its options
collide with Nova's in one process, and its pins need not agree), its WSGI
application under waitress on a free loopback port, with SQLite or a
database of its own (``IRONIC_MULTI_TEST_DB``, see
:mod:`ironic_multi.testing._process`).  It is set up as devstack sets up a
cloud: ``keystone-manage`` db_sync, fernet_setup, credential_setup and
bootstrap (``admin`` in project ``admin`` and on the system, region
``RegionOne``, the identity endpoint), then a ``service`` project, a
``nova`` user with the ``admin`` and ``service`` roles there (devstack's
``create_service_user nova admin``), an ``ironic`` service user for
Ironic's keystonemiddleware, and the ``baremetal`` service when there is an
Ironic to point it at.

Nova authenticates to Ironic in one of two ways, each a set of ``[ironic]``
options (:meth:`KeystoneServer.ironic_options`): system-scoped
(``system_scope = all``; the ``nova`` user holds ``member`` on the system
for it), or project-scoped in project ``service``.  What Ironic then lets
Nova do depends on Ironic's ``rbac_service_role_elevated_access`` too (see
:class:`~ironic_multi.testing.ironic_server.IronicServer`).
"""

import collections
import logging
import os
import subprocess
import time
import uuid

import requests

from ironic_multi.testing import _net
from ironic_multi.testing import _process
from ironic_multi.testing import venvs

LOG = logging.getLogger(__name__)

APP = os.path.join(_process.HERE, '_keystone_app.py')
START_TIMEOUT = 60
# How nova-compute may authenticate to Ironic.
SCOPES = ('system', 'project')
# The three ways a cloud may let nova-compute at Ironic: the scope of its
# token, and Ironic's rbac_service_role_elevated_access (an IronicServer
# argument).  See tests/functional/test_keystone_server.py for what each
# allows.
AUTH_MODES = {
    'system': ('system', False),
    'project-elevated': ('project', True),
    'project-defaults': ('project', False),
}
SERVICE_PROJECT = 'service'
# A region for a second Ironic behind the same Keystone (tests run one with
# Ironic's defaults and one with rbac_service_role_elevated_access).
ELEVATED_REGION = 'RegionElevated'
DOMAIN = 'Default'
# A token is valid for an hour; one is reused for ten minutes.
TOKEN_REUSE_SECONDS = 600

CONFIG = """\
[database]
connection = {db_url}

[fernet_tokens]
key_repository = {base_dir}/fernet-keys

[fernet_receipts]
key_repository = {base_dir}/fernet-receipts

[credential]
key_repository = {base_dir}/credential-keys

[identity]
# bcrypt's lowest cost: every token is one password check.
password_hash_rounds = 4

[token]
provider = fernet
"""

Credentials = collections.namedtuple(
    'Credentials', ('username', 'password', 'user_domain_name',
                    'project_name', 'project_domain_name'))


class KeystoneServerError(_process.ServerError):
    pass


class KeystoneServer(_process.ServerFixture):
    """One Keystone process on a free port, bootstrapped like devstack's.

    :param ironic_endpoint: registered as the ``baremetal`` service in
        ``region``; more endpoints can be added with :meth:`add_endpoint`.
    :param nova_system_roles: the ``nova`` user's roles on the system, for
        system-scoped tokens.  Ironic wants ``member`` (or a role implying
        it) for allocations.

    ``db_url`` and ``log_dir``: see
    :class:`~ironic_multi.testing._process.ServerFixture`, as are
    ``stop``, ``start`` and ``restart`` (same port, database and keys).

    After setUp: ``endpoint``, ``auth_url`` (the v3 API), ``region``,
    ``admin``, ``nova`` and ``ironic`` (:class:`Credentials`), ``db_kind``,
    ``db_url``, ``config_path``, ``log_path``, ``pid`` and
    ``start_seconds``; after cleanUp, ``stop_seconds``.  Like Ironic it
    dies with the test process.
    """

    name = 'keystone'
    error = KeystoneServerError

    start_timeout = START_TIMEOUT

    def __init__(self, db_kind=None, ironic_endpoint=None,
                 region='RegionOne', nova_system_roles=('member',),
                 db_url=None, log_dir=None):
        super().__init__(db_kind, db_url=db_url, log_dir=log_dir)
        self.ironic_endpoint = ironic_endpoint
        self.region = region
        self.nova_system_roles = tuple(nova_system_roles)
        self.endpoint = self.auth_url = self.config_path = None
        self.admin = self._user('admin', 'admin')
        self.nova = self._user('nova', SERVICE_PROJECT)
        self.ironic = self._user('ironic', SERVICE_PROJECT)
        self._tokens = {}

    @staticmethod
    def _user(name, project):
        return Credentials(name, uuid.uuid4().hex, DOMAIN, project, DOMAIN)

    def _setUp(self):
        started = time.monotonic()
        self._prepare(os.path.join(
            os.path.dirname(venvs.ensure_venv('keystone')), 'python'))
        self.config_path = os.path.join(self.base_dir, 'keystone.conf')
        self.port = _net.free_port()
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        self.auth_url = self.endpoint + '/v3'
        # Importing Keystone is most of the start: the server imports while
        # the database and the keys are made, then waits for "go".
        server = self._serve()
        go = False
        try:
            self._create_database()
            with open(self.config_path, 'w') as f:
                f.write(CONFIG.format(db_url=self.db_url,
                                      base_dir=self.base_dir))
            self._run([self.python, APP, 'setup', self.config_path,
                       self.auth_url, self.region], timeout=START_TIMEOUT)
            go = True
        finally:
            # Without "go" (setup failed) the server exits.
            self._go(server, go)
        self.wait_ready(max(1, START_TIMEOUT - (time.monotonic() - started)))
        self._create_accounts()
        if self.ironic_endpoint:
            self.add_endpoint('baremetal', 'ironic', self.ironic_endpoint)
        self.start_seconds = time.monotonic() - started
        LOG.info('Keystone on %s (%s) ready in %.1f s', self.endpoint,
                 self.db_kind, self.start_seconds)

    def token(self, user='admin', scope='project'):
        """A token of ``user`` (admin, nova or ironic).

        ``scope`` is ``system`` or ``project`` (the user's own project).
        """
        key = user, scope
        cached = self._tokens.get(key)
        if cached and cached[1] > time.monotonic():
            return cached[0]
        creds = getattr(self, user)
        if scope == 'system':
            scope_body = {'system': {'all': True}}
        elif scope == 'project':
            scope_body = {'project': {
                'name': creds.project_name,
                'domain': {'name': creds.project_domain_name}}}
        else:
            raise ValueError('scope must be one of %s' % ', '.join(SCOPES))
        body = {'auth': {'identity': {'methods': ['password'], 'password': {
            'user': {'name': creds.username, 'password': creds.password,
                     'domain': {'name': creds.user_domain_name}}}},
            'scope': scope_body}}
        answer = requests.post(self.auth_url + '/auth/tokens', json=body,
                               timeout=30)
        if answer.status_code != 201:
            raise KeystoneServerError('No %s token for %s: HTTP %d %s' % (
                scope, user, answer.status_code, answer.text[:300]))
        token = answer.headers['X-Subject-Token']
        self._tokens[key] = token, time.monotonic() + TOKEN_REUSE_SECONDS
        return token

    def ironic_options(self, scope, region_name=None):
        """Nova's ``[ironic]`` keystoneauth options as the ``nova`` user.

        ``scope`` is ``system`` (``system_scope = all``) or ``project``
        (project ``service``).  The result is a dict of oslo.config
        overrides for the ``[ironic]`` group: Ironic is found in the
        catalog of ``region_name`` (by default the server's region).
        """
        options = {
            'auth_type': 'password',
            'auth_url': self.auth_url,
            'username': self.nova.username,
            'password': self.nova.password,
            'user_domain_name': self.nova.user_domain_name,
            'region_name': region_name or self.region,
            'valid_interfaces': ['internal', 'public'],
        }
        if scope == 'system':
            options['system_scope'] = 'all'
        elif scope == 'project':
            options['project_name'] = self.nova.project_name
            options['project_domain_name'] = self.nova.project_domain_name
        else:
            raise ValueError('scope must be one of %s' % ', '.join(SCOPES))
        return options

    def add_endpoint(self, service_type, name, url, region=None):
        """Register ``url`` as the public and internal endpoint of a service.

        The service and the region are created when missing.
        """
        region = region or self.region
        self._admin('POST', '/regions', {'region': {'id': region}},
                    expect=(201, 409))
        services = self._admin('GET', '/services?type=%s' % service_type)
        if services['services']:
            service_id = services['services'][0]['id']
        else:
            service_id = self._admin('POST', '/services', {'service': {
                'type': service_type, 'name': name}},
                expect=(201,))['service']['id']
        for interface in ('public', 'internal'):
            self._admin('POST', '/endpoints', {'endpoint': {
                'service_id': service_id, 'interface': interface,
                'region_id': region, 'url': url}}, expect=(201,))

    def _serve(self):
        return self._spawn([self.python, APP, 'serve', str(self.port)],
                           stdin=subprocess.PIPE)

    @staticmethod
    def _go(server, go=True):
        try:
            if go:
                server.stdin.write(b'go\n')
            server.stdin.close()
        except BrokenPipeError:
            pass  # it died: wait_ready says why

    def _launch(self):
        # Set up already: the server may serve as soon as it has imported.
        self._go(self._serve())

    def _ready(self):
        return requests.get(self.auth_url, timeout=5).ok

    def add_user(self, name, project, roles=(), system_roles=()):
        """Create a user with ``roles`` in ``project`` (made if missing).

        :param system_roles: roles on the system too.
        :returns: its :class:`Credentials` (a random password).
        """
        creds = self._user(name, project)
        self._create_user(creds, roles, system_roles)
        return creds

    def _role_ids(self, names):
        roles = {role['name']: role['id']
                 for role in self._admin('GET', '/roles')['roles']}
        for name in names:
            if name not in roles:
                roles[name] = self._admin(
                    'POST', '/roles', {'role': {'name': name}},
                    expect=(201,))['role']['id']
        return roles

    def _project_id(self, name):
        found = self._admin('GET', '/projects?name=%s' % name)['projects']
        if found:
            return found[0]['id']
        return self._admin('POST', '/projects', {'project': {
            'name': name, 'domain_id': 'default'}},
            expect=(201,))['project']['id']

    def _create_user(self, creds, project_roles, system_roles):
        roles = self._role_ids(set(project_roles) | set(system_roles))
        project = self._project_id(creds.project_name)
        user = self._admin('POST', '/users', {'user': {
            'name': creds.username, 'password': creds.password,
            'domain_id': 'default', 'default_project_id': project}},
            expect=(201,))['user']['id']
        for role in project_roles:
            self._admin('PUT', '/projects/%s/users/%s/roles/%s' % (
                project, user, roles[role]), expect=(204,))
        for role in system_roles:
            self._admin('PUT', '/system/users/%s/roles/%s' % (
                user, roles[role]), expect=(204,))

    def _create_accounts(self):
        self._create_user(self.nova, ('admin', 'service'),
                          self.nova_system_roles)
        self._create_user(self.ironic, ('service',), ())

    def _admin(self, method, path, body=None, expect=(200,)):
        answer = requests.request(
            method, self.auth_url + path, json=body, timeout=30,
            headers={'X-Auth-Token': self.token('admin', 'system')})
        if answer.status_code not in expect:
            raise KeystoneServerError('%s %s: HTTP %d %s' % (
                method, path, answer.status_code, answer.text[:300]))
        return answer.json() if answer.content else None

    def _env(self):
        env = super()._env()
        env['OS_KEYSTONE_CONFIG_DIR'] = self.base_dir
        env['OS_KEYSTONE_CONFIG_FILES'] = os.path.basename(
            self.config_path)
        env['OS_BOOTSTRAP_PASSWORD'] = self.admin.password
        return env
