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

"""A RabbitMQ broker of the cloud's own.

Debian's ``rabbitmq-server`` (``tox.sh`` installs it), run as a node of
its own (``rabbit-<random>@localhost``) on free loopback ports, with its
database, logs, configuration and Erlang cookie in the cloud's directory:
two clouds never share a queue, and the machine's broker (if any) is left
alone.  It is started through the package's start script directly, not the
``/usr/sbin`` wrapper that switches to the ``rabbitmq`` user.  The chaos
tests restart it: its database directory is kept across restarts, so a
restarted broker is the same node (users and all).
"""

import os
import shutil
import uuid

from ironic_multi.testing import _net
from ironic_multi.testing.cloud import process

SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'
# The broker allows its default user (guest) from loopback only: enough.
USER = PASSWORD = 'guest'
START_TIMEOUT = 60


class RabbitMQError(process.ServiceError):
    pass


def server_path():
    """The broker's start script; raises when rabbitmq-server is missing."""
    if os.access(SERVER, os.X_OK):
        return SERVER
    found = shutil.which('rabbitmq-server')
    if found is None:
        raise RabbitMQError('RabbitMQ is not installed (Debian package '
                            'rabbitmq-server; ./tox.sh installs it)')
    return found


def make_service(base_dir, log_dir):
    """The broker as a :class:`~.process.Service`; ``.transport_url``."""
    home = os.path.join(base_dir, 'rabbitmq')
    os.makedirs(home, exist_ok=True)
    files = {
        # No plugins (the management UI is not needed).
        'enabled_plugins': '[].\n',
        'rabbitmq.conf': 'log.console = true\nlog.file = false\n',
        # Debian's /etc/rabbitmq/rabbitmq-env.conf names the system node;
        # an empty one of our own replaces it.
        'rabbitmq-env.conf': '',
    }
    for name, text in files.items():
        with open(os.path.join(home, name), 'w') as f:
            f.write(text)
    port = _net.free_port()
    env = {
        'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
        'LANG': 'C.UTF-8',
        # The Erlang cookie is made in $HOME.
        'HOME': home,
        'RABBITMQ_CONF_ENV_FILE': os.path.join(home, 'rabbitmq-env.conf'),
        'RABBITMQ_CONFIG_FILE': os.path.join(home, 'rabbitmq.conf'),
        'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(home,
                                                      'enabled_plugins'),
        'RABBITMQ_NODENAME': 'rabbit-%s@localhost' % uuid.uuid4().hex[:8],
        'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
        'RABBITMQ_NODE_PORT': str(port),
        'RABBITMQ_DIST_PORT': str(_net.free_port()),
        'RABBITMQ_MNESIA_BASE': os.path.join(home, 'mnesia'),
        'RABBITMQ_LOG_BASE': os.path.join(home, 'log'),
        'RABBITMQ_LOGS': '-',
        'RABBITMQ_PID_FILE': os.path.join(home, 'rabbitmq.pid'),
        'ERL_EPMD_ADDRESS': '127.0.0.1',
    }
    service = process.Service(
        'rabbitmq', [server_path()], log_dir, env,
        ready=lambda: _net.listening('127.0.0.1', port),
        start_timeout=START_TIMEOUT)
    service.port = port
    service.transport_url = 'rabbit://%s:%s@127.0.0.1:%d/' % (USER, PASSWORD,
                                                              port)
    return service
