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

"""A MariaDB server of the cloud's own, safe to restart.

The machine's MariaDB is shared with every other test run on the box:
restarting it is not the cloud's to do.  With ``Cloud(private_database=
True)`` the cloud runs Debian's ``mariadbd`` itself: a data directory made
by ``mariadb-install-db`` in the cloud's directory, a free loopback port,
a socket of its own in the data directory, root without a password from
loopback only.  Every database of the cloud (Nova's three, Placement's,
Glance's, Neutron's, Keystone's and Ironic's) lives there, and
``cloud.restart('database')``
restarts it as an operator would (SIGTERM: a clean InnoDB shutdown; the
data directory stays).
"""

import getpass
import os
import shutil
import subprocess

import pymysql

from ironic_multi.testing import _net
from ironic_multi.testing.cloud import process

SERVERS = ('mariadbd', 'mysqld')
INSTALLERS = ('mariadb-install-db', 'mysql_install_db')
SBIN = ('/usr/sbin', '/usr/bin')
INSTALL_TIMEOUT = 120
START_TIMEOUT = 60
# A clean InnoDB shutdown flushes to disk: on a machine whose disk every
# other test run shares, that took more than the 15 s of the other
# services.  SIGKILL is the last resort: the data directory outlives it.
STOP_TIMEOUT = 60
KIND = 'mariadb'
SOCKET = 'mysqld.sock'
NAME = 'database'
# Small: the cloud's databases are a few MB each.
# Each of the cloud's services opens a pool of its own, which grows in a
# burst: Debian's default of 151 ran out once on the machine's server.
MAX_CONNECTIONS = 500
SETTINGS = (
    '--bind-address=127.0.0.1',
    '--skip-name-resolve',
    '--character-set-server=utf8mb4',
    '--collation-server=utf8mb4_general_ci',
    '--innodb-buffer-pool-size=32M',
    '--performance-schema=off',
    '--max-connections=%d' % MAX_CONNECTIONS,
    # Nothing to warm up: a dump at each stop is writes for nothing.
    '--innodb-buffer-pool-dump-at-shutdown=OFF',
    '--innodb-buffer-pool-load-at-startup=OFF',
)


class DatabaseError(process.ServiceError):
    pass


def _which(names):
    for name in names:
        found = shutil.which(name, path=os.pathsep.join(
            (os.environ.get('PATH', ''),) + SBIN))
        if found:
            return found
    raise DatabaseError('%s is not installed (Debian package '
                        'mariadb-server)' % names[0])


def server_path():
    """``mariadbd``; raises DatabaseError when it is not installed."""
    return _which(SERVERS)


def installer_path():
    return _which(INSTALLERS)


def _user_args():
    # mariadbd refuses to run as root unless told to.
    return ['--user=%s' % getpass.getuser()] if os.getuid() == 0 else []


def _answers(port):
    """Whether the server on ``port`` lets root log in.

    Not only listening: MariaDB listens before its start-up ends, and a
    SIGTERM then is left unanswered (seen: a stop 0.1 s after the port
    opened, killed 60 s later).
    """
    try:
        pymysql.connect(host='127.0.0.1', port=port, user='root',
                        connect_timeout=1, read_timeout=1).close()
        return True
    except (pymysql.MySQLError, OSError):
        return False


def make_service(base_dir, log_dir):
    """Install a data directory and return the server as a Service.

    ``.admin_url`` is the SQLAlchemy URL of its root (PyMySQL, over TCP).
    """
    home = os.path.join(base_dir, 'mariadb')
    data = os.path.join(home, 'data')
    os.makedirs(home, exist_ok=True)
    install = subprocess.run(
        [installer_path(), '--no-defaults', '--datadir=' + data,
         '--auth-root-authentication-method=normal', '--skip-test-db']
        + _user_args(), capture_output=True, text=True,
        timeout=INSTALL_TIMEOUT)
    if install.returncode:
        raise DatabaseError('mariadb-install-db exited with %d:\n%s' % (
            install.returncode, (install.stderr or install.stdout)[-3000:]))
    port = _net.free_port()
    # Relative: the server makes it in its data directory, where it runs.
    # An absolute path under a deep TMPDIR passes the 107 bytes a Unix
    # socket's path may have, and the server refuses to start.  Clients
    # use TCP.
    argv = [server_path(), '--no-defaults', '--datadir=' + data,
            '--socket=' + SOCKET,
            '--pid-file=' + os.path.join(home, 'mysqld.pid'),
            '--port=%d' % port] + list(SETTINGS) + _user_args()
    service = process.Service(
        NAME, argv, log_dir, {'PATH': os.environ.get('PATH', '/usr/bin')},
        ready=lambda: _answers(port), kind=KIND,
        start_timeout=START_TIMEOUT, stop_timeout=STOP_TIMEOUT)
    service.port = port
    service.admin_url = 'mysql+pymysql://root@127.0.0.1:%d/' % port
    return service
