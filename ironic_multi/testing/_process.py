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

"""What the test servers (Ironic, Keystone) share: database, process, cleanup.

Each server is a process group of its own started from a virtualenv of its
own, with a temporary directory and (on PostgreSQL or MariaDB) a database
of its own.  The database is chosen by ``IRONIC_MULTI_TEST_DB``:
``postgresql``, ``mysql``, ``sqlite``, or ``auto`` (the default: PostgreSQL
if it listens on 127.0.0.1:5432, else MariaDB on 127.0.0.1:3306, else
SQLite).  ``IRONIC_MULTI_TEST_PG_URL`` and ``IRONIC_MULTI_TEST_MYSQL_URL``
override the admin URLs used to create the databases.

Whatever a server holds is released by the fixture's cleanup, at exit, and
on SIGTERM or SIGHUP; the kernel kills the server when the test process
dies (a runner killed by SIGKILL; see ``_net.popen``), and the next
fixture to start removes the directory and database such a runner left
(:mod:`~ironic_multi.testing._leftovers`).  :func:`owned_directory`,
:class:`OwnedTempDir` and :func:`watch_database` give the other fixtures'
directories and databases (etcd, Nova's temporary tree, the multi-process
cloud) the same treatment.
"""

import atexit
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

import fixtures
from sqlalchemy.engine import url as sa_url

from ironic_multi.testing import _leftovers
from ironic_multi.testing import _net
from ironic_multi.testing import venvs

LOG = logging.getLogger(__name__)

HERE = os.path.dirname(os.path.abspath(__file__))
# Creates and drops databases; any server venv can run it (each has
# SQLAlchemy and the PostgreSQL and MySQL drivers), the test venv need not.
DB_TOOL = os.path.join(HERE, '_ironic_db.py')

DB_KINDS = ('auto', 'postgresql', 'mysql', 'sqlite')
ADMIN_URLS = {
    'postgresql': os.environ.get(
        'IRONIC_MULTI_TEST_PG_URL',
        'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres'),
    'mysql': os.environ.get(
        'IRONIC_MULTI_TEST_MYSQL_URL', 'mysql+pymysql://root@127.0.0.1:3306/'),
}

STOP_TIMEOUT = 10


class ServerError(Exception):
    pass


class ServerFixture(fixtures.Fixture):
    """One server process with a directory and a database of its own.

    Subclasses name the server (``name``, also used in directory and
    database names), give their error class and venv python, call
    :meth:`_prepare` first thing in ``_setUp``, and say how the server
    process starts (:meth:`_launch`) and when it serves (:meth:`_ready`).
    Attributes: ``db_kind`` (never ``auto`` after setUp), ``db_url``,
    ``base_dir``, ``log_path``, ``pid`` (also the process group; the last
    one after a stop), ``start_seconds`` (set by the subclass) and, after
    cleanUp, ``stop_seconds``.

    :param db_url: a database of the caller's (SQLAlchemy URL) instead of
        one made and dropped by the fixture.
    :param log_dir: where the log goes (``<name>.log``; kept after
        cleanUp) instead of the server's directory.

    Once set up, the server process can be stopped, started and restarted
    (:meth:`stop`, :meth:`start`, :meth:`restart`) on the same port with
    the same database, configuration and files, as an init system
    restarts a service.
    """

    name = 'server'
    error = ServerError
    start_timeout = 60

    def __init__(self, db_kind=None, db_url=None, log_dir=None):
        super().__init__()
        self.db_kind = db_kind or os.environ.get('IRONIC_MULTI_TEST_DB',
                                                 'auto')
        if db_url is not None:
            self.db_kind = sa_url.make_url(db_url).get_backend_name()
        if self.db_kind not in DB_KINDS:
            raise ValueError('Unknown database kind %r, expected one of %s'
                             % (self.db_kind, ', '.join(DB_KINDS)))
        self.given_db_url = db_url
        self.log_dir = log_dir
        self.db_url = self.base_dir = self.python = self.log_path = None
        self.start_seconds = self.stop_seconds = None
        self.pid = self._process = self._database = None

    def _prepare(self, python):
        """Arm the cleanups, then make the server's directory."""
        self.python = python
        _install_safety_net()
        _LIVE.add(self)
        self.addCleanup(self._release)
        self.base_dir = owned_directory(self.name, python)
        self.log_path = os.path.join(self.log_dir or self.base_dir,
                                     '%s.log' % self.name)

    def run_db_tool(self, *args, stdin=None):
        """Run _ironic_db.py in the server's venv; returns its stdout."""
        return self._run([self.python, DB_TOOL, *args], stdin=stdin)

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except (OSError, TypeError) as e:
            return '(no log: %s)' % e

    def _create_database(self):
        """Set ``db_kind`` and ``db_url``, creating the database if needed."""
        if self.given_db_url is not None:
            self.db_url = self.given_db_url
            return
        if self.db_kind == 'sqlite' or (
                self.db_kind == 'auto' and resolve_db_kind('auto') is None):
            self.db_kind = 'sqlite'
            self.db_url = 'sqlite:///%s/%s.sqlite' % (self.base_dir,
                                                      self.name)
            return
        kind = resolve_db_kind(self.db_kind)
        name = database_name(self.name)
        # Known before it exists: an interrupt may come at any time, and a
        # kill leaves the record for the next run to reap.
        self._database = kind, name
        _leftovers.record(self.base_dir, database=(kind, name))
        try:
            self.db_url = create_database(self.python, kind, name,
                                          error=self.error)
        except self.error as e:
            if self.db_kind != 'auto':
                raise
            LOG.warning('Not using %s: %s', kind, e)
            self._database = None
            self.db_kind = 'sqlite'
            self.db_url = 'sqlite:///%s/%s.sqlite' % (self.base_dir,
                                                      self.name)
            return
        self.db_kind = kind

    def _spawn(self, argv, env=None, stdin=None):
        """Start the server process, its output going to ``log_path``."""
        with open(self.log_path, 'ab') as log:
            # A session of its own lets cleanup signal every process the
            # server forks; _net.popen's die_with_parent covers a runner
            # killed by SIGKILL.
            self._process = _net.popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=stdin,
                env=env or self._env(), start_new_session=True)
        self.pid = self._process.pid
        return self._process

    def _launch(self):
        """Start the server process of a set-up server (:meth:`start`)."""
        raise NotImplementedError()

    def _ready(self):
        """Whether the server serves; may raise OSError while it starts."""
        raise NotImplementedError()

    # -- process control, once set up ---------------------------------------

    @property
    def running(self):
        return self._process is not None and self._process.poll() is None

    def start(self, wait=True):
        """Start the server process again after :meth:`stop`.

        Same port, database, configuration and files.  With ``wait``,
        until it serves.
        """
        if self.base_dir is None:
            raise self.error('%s is not set up' % self.name)
        if self.running:
            raise self.error('%s is already running' % self.name)
        self._launch()
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=None):
        """Until the server serves; fails early if it exits."""
        self._wait_until(self._ready, timeout or self.start_timeout,
                         'ready')

    def stop(self, timeout=None):
        """SIGTERM the server's process group (SIGKILL after ``timeout``).

        Returns the exit code (None if it had to be killed).  Its port,
        database and files stay for :meth:`start`.  Idempotent.
        """
        return self._stop_process(timeout)

    def restart(self, wait=True):
        self.stop()
        self.start(wait=wait)

    def send_signal(self, signum):
        """Send ``signum`` to the server's process group, if it runs."""
        if self._process is not None:
            _signal_group(self._process.pid, signum)

    def wait(self, timeout):
        """The exit code once the server exits; None after ``timeout``."""
        if self._process is None:
            return None
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _wait_until(self, ready, timeout, what):
        """Poll ``ready()`` until it is true; fail early if the server dies.

        ``ready`` may raise ``OSError`` (connection refused and the like,
        requests' errors included) while the server is still starting.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise self.error(
                    '%s exited with %s during startup; log tail:\n%s'
                    % (self.name, self._process.returncode, self.log_tail()))
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise self.error('%s was not %s within %d s; log tail:\n%s'
                         % (self.name, what, timeout, self.log_tail()))

    def _release(self):
        """Stop the server, drop its database, remove its files; idempotent.

        Runs from cleanups, atexit and signal handlers, possibly twice.
        """
        started = time.monotonic()
        self._stop_process()
        if self._database:
            kind, name = self._database
            try:
                drop_database(self.python, kind, name, error=self.error)
                self._database = None
            except self.error as e:
                # The directory's record lets a later run drop it.
                LOG.warning('Could not drop database %s: %s', name, e)
                self.base_dir = None
        if self.base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
        _LIVE.discard(self)
        self.stop_seconds = time.monotonic() - started

    def _stop_process(self, timeout=None):
        process, self._process = self._process, None
        if process is None:
            return None
        timeout = STOP_TIMEOUT if timeout is None else timeout
        # A stopped (SIGSTOP) server handles SIGTERM once continued.
        _signal_group(process.pid, signal.SIGCONT)
        _signal_group(process.pid, signal.SIGTERM)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            LOG.warning('%s did not stop within %d s, killing it',
                        self.name, timeout)
            code = None
        # Also whatever the master left behind.
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
        return code

    def _run(self, argv, stdin=None, timeout=None):
        try:
            result = subprocess.run(argv, input=stdin, capture_output=True,
                                    text=True, env=self._env(),
                                    timeout=timeout)
        except subprocess.TimeoutExpired as e:
            stderr = e.stderr or ''
            if isinstance(stderr, bytes):
                stderr = stderr.decode(errors='replace')
            raise self.error('%s did not finish within %d s:\n%s' % (
                ' '.join(os.path.basename(a) for a in argv[:3]), timeout,
                stderr[-3000:]))
        if result.returncode:
            raise self.error('%s exited with %d:\n%s' % (
                ' '.join(os.path.basename(a) for a in argv[:3]),
                result.returncode, result.stderr[-3000:]))
        return result.stdout

    def _env(self):
        env = dict(os.environ)
        env.pop('PYTHONPATH', None)
        return env

    def _bin(self, name):
        return os.path.join(os.path.dirname(self.python), name)


def owned_directory(kind, python=None):
    """A new directory of this process for ``kind``, reaped if it dies.

    What killed runs left is removed first (:func:`_reap_leftovers`).
    """
    _reap_leftovers(python)
    return _leftovers.make_directory(kind)


class OwnedTempDir(fixtures.Fixture):
    """``fixtures.TempDir`` whose directory the next run reaps after a kill.

    :param kind: the directory's kind, in its name.
    :param tempfile_root: make it ``tempfile``'s directory meanwhile, so
        that every temporary file or directory made in this process
        (Nova's test base makes many) is in it.
    """

    def __init__(self, kind, tempfile_root=False):
        super().__init__()
        self.kind = kind
        self.tempfile_root = tempfile_root
        self.path = None

    def _setUp(self):
        self.path = owned_directory(self.kind)
        self.addCleanup(shutil.rmtree, self.path, ignore_errors=True)
        if self.tempfile_root:
            self.useFixture(fixtures.MonkeyPatch('tempfile.tempdir',
                                                 self.path))


def watch_database(directory, python, kind, name):
    """Before creating database ``name``: have it dropped if this dies.

    The reaper drops it when this process ends without dropping it; the
    record in ``directory`` lets the next run drop it if the reaper could
    not (killed with this process, a machine that went down).
    """
    _leftovers.record(directory, database=(kind, name))
    reaper().watch_database(python, kind, name)


def _reap_leftovers(python=None):
    """Remove what killed runs left, once per process.

    :param python: an interpreter with the database drivers (a server
        venv's); without one, the directories that record a database are
        left for the first call that has one.
    """
    scope = 'all' if python else 'directories'
    if scope in _reaped or 'all' in _reaped:
        return
    _reaped.add(scope)

    def drop(kind, name):
        if kind in ADMIN_URLS:
            drop_database(python, kind, name)

    _leftovers.reap(drop if python else None)


def resolve_db_kind(kind):
    """``kind``, or for ``auto`` the first server that listens (or None).

    PostgreSQL first, then MariaDB; None means SQLite.
    """
    if kind != 'auto':
        return kind
    for candidate in ('postgresql', 'mysql'):
        admin = sa_url.make_url(ADMIN_URLS[candidate])
        if _net.listening(admin.host, admin.port):
            return candidate
    return None


def database_name(label):
    """A database name of this process's own for ``label``."""
    return 'ironic_multi_%s_%d_%s' % (label, os.getpid(),
                                      uuid.uuid4().hex[:8])


def create_database(python, kind, name, error=ServerError, admin_url=None):
    """Create database ``name`` on the ``kind`` server; return its URL.

    ``python`` is a venv's interpreter with SQLAlchemy and the drivers
    (every server venv has them).  ``admin_url``: another server than the
    machine's (:data:`ADMIN_URLS`).
    """
    admin_url = admin_url or ADMIN_URLS[kind]
    _run_db_tool(python, error, 'create', admin_url, name)
    url = sa_url.make_url(admin_url).set(database=name)
    if kind == 'mysql':
        url = url.update_query_dict({'charset': 'utf8mb4'})
    return url.render_as_string(hide_password=False)


def allow_connections(python, kind, minimum, error=ServerError,
                      admin_url=None):
    """At least ``minimum`` connections on the ``kind`` server.

    :param admin_url: another server than the machine's.
    :returns: ``(limit before, limit after)``, or None (PostgreSQL).
    """
    output = _run_db_tool(python, error, 'connections',
                          admin_url or ADMIN_URLS[kind], str(minimum))
    return tuple(int(n) for n in output.split()) or None


def drop_database(python, kind, name, error=ServerError):
    _run_db_tool(python, error, 'drop', ADMIN_URLS[kind], name)


def _run_db_tool(python, error, *args):
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    result = subprocess.run([python, DB_TOOL, *args], capture_output=True,
                            text=True, env=env)
    if result.returncode:
        raise error('%s %s exited with %d:\n%s' % (
            os.path.basename(DB_TOOL), args[0], result.returncode,
            result.stderr[-3000:]))
    return result.stdout


def _signal_group(pgid, signum):
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


# Servers that may hold a process, a database or files.
_LIVE = set()
_previous_handlers = {}
_safety_net_installed = False
# What _reap_leftovers did: 'directories' (those without a database),
# 'all'.
_reaped = set()


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


def databases(kind, pattern):
    """Names of the ``kind`` databases that match ``pattern`` (SQL LIKE).

    For tests that check what a run left; run by the Ironic venv's python.
    """
    python = os.path.join(os.path.dirname(venvs.ensure_venv('ironic')),
                          'python')
    result = subprocess.run([python, DB_TOOL, 'databases', ADMIN_URLS[kind],
                             pattern], capture_output=True, text=True,
                            check=True)
    return result.stdout.split()


class Reaper(object):
    """Kills process groups and drops databases if this process dies.

    A watchdog child (``_reaper.py``) that acts when its standard input
    closes: see there.  Register what may outlive a hard death, forget it
    once cleaned up.  Thread-safe; one per process (:func:`reaper`).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, '_reaper.py')],
            stdin=subprocess.PIPE, start_new_session=True, text=True,
            env=dict(os.environ, PYTHONPATH=''))

    def _say(self, *words):
        with self._lock:
            try:
                self._process.stdin.write(' '.join(map(str, words)) + '\n')
                self._process.stdin.flush()
            except (BrokenPipeError, ValueError):
                LOG.warning('The reaper is gone: %s not registered', words)

    def watch_group(self, pgid):
        self._say('group', pgid)

    def forget_group(self, pgid):
        self._say('forget-group', pgid)

    def watch_database(self, python, kind, name):
        self._say('database', python, ADMIN_URLS[kind], name)

    def forget_database(self, kind, name):
        self._say('forget-database', ADMIN_URLS[kind], name)


_reaper = None
_reaper_lock = threading.Lock()


def reaper():
    """This process's :class:`Reaper`, started on first use."""
    global _reaper
    with _reaper_lock:
        if _reaper is None:
            _reaper = Reaper()
        return _reaper
