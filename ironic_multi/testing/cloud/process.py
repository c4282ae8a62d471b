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

"""One process of the cloud: start, signal, stop, restart, measure.

Each process is the leader of a process group of its own (everything it
forks is signalled with it), writes its output to a log file of its own
(appended to across restarts), and is registered with the test process's
reaper (:class:`~ironic_multi.testing._process.Reaper`) while it runs.
"""

import logging
import os
import signal
import subprocess
import threading
import time

from ironic_multi.testing import _net
from ironic_multi.testing import _process

LOG = logging.getLogger(__name__)

START_TIMEOUT = 120
STOP_TIMEOUT = 15
PAGE_SIZE = os.sysconf('SC_PAGE_SIZE')


class ServiceError(_process.ServerError):
    pass


class Service(object):
    """One long-running process of the cloud.

    :param name: unique in the cloud (``nova-compute-2``...); the log is
        ``<name>.log`` in ``log_dir``.
    :param argv: the command.
    :param env: its whole environment.
    :param ready: a callable that returns true once the process serves
        (it may raise OSError while it starts); None: started is ready.
    :param kind: what it is (``nova-compute``, ``rabbitmq``...).
    """

    def __init__(self, name, argv, log_dir, env, ready=None, kind=None,
                 start_timeout=START_TIMEOUT, stop_timeout=STOP_TIMEOUT):
        self.name = name
        self.kind = kind or name
        self.argv = list(argv)
        self.env = env
        self.log_path = os.path.join(log_dir, '%s.log' % name)
        self.ready = ready
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.start_seconds = None
        self._process = None
        self._lock = threading.RLock()

    def __repr__(self):
        return '<Service %s pid=%s>' % (self.name, self.pid)

    @property
    def pid(self):
        """The process id (and process group id), None when not started."""
        return self._process.pid if self._process else None

    @property
    def running(self):
        return self._process is not None and self._process.poll() is None

    @property
    def returncode(self):
        return self._process.poll() if self._process else None

    def start(self, wait=True):
        """Start the process; with ``wait``, until it is ready."""
        with self._lock:
            if self.running:
                raise ServiceError('%s is already running' % self.name)
            self._forget()
            # The reaper up first: the window between the fork and
            # watch_group() is then a write, not a Python start.
            reaper = _process.reaper()
            self._started = time.monotonic()
            with open(self.log_path, 'ab') as log:
                log.write(b'\n===== ironic-multi cloud: starting %s =====\n'
                          % ' '.join(self.argv).encode())
                log.flush()
                # Forked by a thread that outlives this one (see
                # _net.popen): a fault schedule's thread may restart it.
                self._process = _net.popen(
                    self.argv, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, env=self.env,
                    start_new_session=True)
            reaper.watch_group(self._process.pid)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self):
        """Wait until ``ready()``; fail early if the process exits."""
        deadline = self._started + self.start_timeout
        while True:
            if not self.running:
                raise ServiceError('%s exited with %s while starting; log '
                                   'tail:\n%s' % (self.name, self.returncode,
                                                  self.log_tail()))
            try:
                if self.ready is None or self.ready():
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ServiceError('%s was not ready within %d s; log tail:'
                                   '\n%s' % (self.name, self.start_timeout,
                                             self.log_tail()))
            time.sleep(0.1)
        self.start_seconds = time.monotonic() - self._started
        LOG.info('%s ready in %.1f s (pid %d)', self.name,
                 self.start_seconds, self.pid)
        return self

    def send_signal(self, signum):
        """Send ``signum`` to the process group; nothing if it is gone."""
        with self._lock:
            if self._process is not None:
                _process._signal_group(self._process.pid, signum)

    def kill(self, signum=signal.SIGKILL, timeout=None):
        """Signal the process group and wait for the leader to exit.

        For a signal that need not end it (SIGSTOP, SIGHUP...) use
        :meth:`send_signal`.  Returns the exit code.
        """
        self.send_signal(signum)
        code = self._wait(self.stop_timeout if timeout is None else timeout)
        # What it forked goes with it.
        self.send_signal(signal.SIGKILL)
        self._forget()
        return code

    def stop(self, timeout=None):
        """SIGTERM, as an init system stops a service; returns the code.

        SIGKILL after ``timeout`` seconds.  Idempotent.
        """
        with self._lock:
            if self._process is None:
                return None
            self.send_signal(signal.SIGCONT)
            self.send_signal(signal.SIGTERM)
            code = self._wait(self.stop_timeout if timeout is None
                              else timeout)
            if code is None:
                LOG.warning('%s did not stop within %s s, killing it',
                            self.name, timeout or self.stop_timeout)
            self.send_signal(signal.SIGKILL)
            if self._process is not None:
                code = self._process.wait()
            self._forget()
            return code

    def restart(self, wait=True):
        # Under the lock: a start by another thread (the chaos run's
        # supervisor) cannot come between the stop and this start.
        with self._lock:
            self.stop()
            self.start(wait=False)
        if wait:
            self.wait_ready()
        return self

    def rss(self):
        """Resident memory in bytes of every process of the group."""
        if not self.running:
            return 0
        return group_rss(self.pid)

    def log_tail(self, lines=40):
        return _tail(self.log_path, lines)

    def _wait(self, timeout):
        process = self._process
        if process is None:
            return None
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _forget(self):
        process = self._process
        if process is not None and process.poll() is not None:
            _process.reaper().forget_group(process.pid)


class ServerService(object):
    """A server fixture (Keystone, Ironic, etcd) seen as a :class:`Service`.

    The same calls (start, stop, restart, kill, send_signal, rss,
    log_tail) through the fixture's own public ones: ``start(wait)``,
    ``wait_ready()``, ``stop(timeout)``, ``send_signal(signum)``,
    ``wait(timeout)``, ``running``, ``pid`` and ``log_path``.  The fixture
    keeps its port, data and configuration across restarts.
    """

    def __init__(self, name, server, kind=None,
                 stop_timeout=STOP_TIMEOUT):
        self.name = name
        self.kind = kind or name
        self.server = server
        self.stop_timeout = stop_timeout
        self.start_seconds = None
        # One change at a time, from whichever thread.
        self._lock = threading.RLock()

    def __repr__(self):
        return '<ServerService %s pid=%s>' % (self.name, self.pid)

    @property
    def pid(self):
        return self.server.pid if self.server.running else None

    @property
    def running(self):
        return self.server.running

    @property
    def log_path(self):
        return self.server.log_path

    def start(self, wait=True):
        started = time.monotonic()
        with self._lock:
            self.server.start(wait=wait)
        if wait:
            self.start_seconds = time.monotonic() - started
            LOG.info('%s ready in %.1f s (pid %d)', self.name,
                     self.start_seconds, self.pid)
        return self

    def wait_ready(self):
        self.server.wait_ready()
        return self

    def send_signal(self, signum):
        self.server.send_signal(signum)

    def kill(self, signum=signal.SIGKILL, timeout=None):
        """Signal it and wait for it to exit (SIGKILL after ``timeout``)."""
        with self._lock:
            self.send_signal(signum)
            code = self.server.wait(self.stop_timeout if timeout is None
                                    else timeout)
            # Reaps it, and kills what it forked.
            self.server.stop(timeout=0)
            return code

    def stop(self, timeout=None):
        with self._lock:
            return self.server.stop(self.stop_timeout if timeout is None
                                    else timeout)

    def restart(self, wait=True):
        with self._lock:
            self.stop()
            return self.start(wait=wait)

    def rss(self):
        return group_rss(self.pid) if self.running else 0

    def log_tail(self, lines=40):
        return _tail(self.log_path, lines)


def _tail(path, lines):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except (OSError, TypeError) as e:
        return '(no log: %s)' % e


def process_group_pids(pgid):
    """PIDs of the processes whose process group is ``pgid``."""
    pids = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                # The command name may hold spaces: split after it.
                fields = f.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            pids.append(int(entry))
    return pids


def group_rss(pgid):
    """Resident memory in bytes of the processes of group ``pgid``.

    A process that leads no group (etcd is started in the test's own)
    counts alone.
    """
    total = 0
    for pid in process_group_pids(pgid) or [pgid]:
        try:
            total += _rss(pid)
        except (OSError, IndexError, ValueError):
            continue
    return total


def _rss(pid):
    with open('/proc/%s/statm' % pid) as f:
        return int(f.read().split()[1]) * PAGE_SIZE
