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

"""Periodic work of the reservation layer, in background threads.

The refresh of the ring and the ready pool, the health poll, the
operator requests and the housekeeping are plain functions decorated
with futurist's ``periodic``; one PeriodicWorker schedules them.  Each
pass runs in a daemon thread of its own, so a slow one (a housekeeping
pass waiting for a tear down, a takeover) delays only its own next run,
never the refresh or the operator's requests.  futurist schedules a
function again only when its pass has ended: no function ever runs twice
at once.

A failing pass is logged and retried at its next interval: claims go on
from the last pool and from fresh queries meanwhile.
"""

from concurrent import futures
import threading

from futurist import periodics
from oslo_log import log as logging

from ironic_multi import exception

LOG = logging.getLogger(__name__)

_JOIN_TIMEOUT = 10


def in_daemon_thread(name, function, *args):
    """Run ``function(*args)`` in a new daemon thread; return its future.

    A call that outlives its caller's patience goes on there, and ends
    on its own; it never holds up the end of the process (a pool's
    threads are joined at exit).
    """
    future = futures.Future()

    def run():
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(function(*args))
        except BaseException as e:
            future.set_exception(e)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


class _DaemonThreadExecutor(futures.Executor):
    """Runs each call in a daemon thread of its own."""

    def __init__(self, name):
        self._name = name

    def submit(self, fn, /, *args, **kwargs):
        return in_daemon_thread(self._name, lambda: fn(*args, **kwargs))


def _guarded(name, function):
    def run():
        try:
            function()
        except exception.IronicMultiError as e:
            LOG.warning('Periodic %(name)s failed, will retry: %(error)s',
                        {'name': name, 'error': e})
        except Exception:
            # A bug must not stop the other periodics.
            LOG.exception('Periodic %s failed unexpectedly', name)
    run.__name__ = name
    return run


class Worker(object):
    """Runs periodic functions in daemon threads until stopped.

    :param name: the name of its threads.
    :param stop_timeout: seconds :meth:`stop` waits for running passes.
    """

    def __init__(self, name, stop_timeout=_JOIN_TIMEOUT):
        self._name = name
        self._stop_timeout = stop_timeout
        self._callables = []
        self._worker = None
        self._thread = None
        # Nova may stop a driver from two threads at once (its service's
        # stop and a clean-up): one of them stops the worker.
        self._stop_lock = threading.Lock()

    def add(self, name, function, interval, run_immediately=False):
        """Run ``function()`` every ``interval`` seconds.

        The first run comes after one interval, or at :meth:`start` with
        ``run_immediately``.  The next comes one interval after a pass
        started, or as soon as it ended if it took longer.  Only before
        :meth:`start`.
        """
        periodic = periodics.periodic(
            interval, run_immediately=run_immediately)(
                _guarded(name, function))
        self._callables.append((periodic, (), {}))

    def start(self):
        # futurist runs a pass of its synchronous executor while it holds
        # its scheduling lock, which its stop() waits for: with a thread
        # per pass, a stop is immediate and the others keep their pace.
        worker = periodics.PeriodicWorker(
            self._callables,
            executor_factory=lambda: _DaemonThreadExecutor(self._name))
        thread = threading.Thread(target=worker.start, name=self._name,
                                  daemon=True)
        thread.start()
        with self._stop_lock:
            self._worker, self._thread = worker, thread

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def stop(self):
        """No pass starts after it; running ones get ``stop_timeout``.

        A pass still running then goes on in its daemon thread, and is
        the last one.
        """
        with self._stop_lock:
            worker, thread = self._worker, self._thread
            self._worker = self._thread = None
        if worker is None:
            return
        worker.stop()
        # The scheduling thread ends once the running passes have.
        thread.join(timeout=self._stop_timeout)
        if thread.is_alive():
            LOG.warning('Periodic work of %(name)s still running %(seconds)s '
                        's after the stop; it ends on its own',
                        {'name': self._name, 'seconds': self._stop_timeout})


class OnDemand(object):
    """Runs ``function()`` in a daemon thread each time it is asked to.

    Asks that come while a pass runs are served by one more pass after
    it: a burst of asks costs two passes, not one per ask, and the last
    ask is always followed by a pass that started after it.

    :param name: the name of its thread.
    :param function: what to run; its failures are logged like a
        periodic's.
    """

    def __init__(self, name, function):
        self._name = name
        self._run = _guarded(name, function)
        self._asked = threading.Event()
        self._stopped = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._loop, name=self._name,
                                        daemon=True)
        self._thread.start()

    def ask(self):
        """Run a pass soon; returns at once."""
        self._asked.set()

    def stop(self):
        """No pass starts after it; a running one ends on its own."""
        self._stopped.set()
        self._asked.set()

    def _loop(self):
        while True:
            self._asked.wait()
            if self._stopped.is_set():
                return
            self._asked.clear()
            self._run()
