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

"""Periodic work of the reservation layer, in one background thread.

The refresh of the ring and the ready pool, and later passes (health
poll, housekeeping), are plain functions decorated with futurist's
``periodic``; one PeriodicWorker runs them.  A failing pass is logged
and retried at its next interval: claims go on from the last pool and
from fresh queries meanwhile.
"""

import threading

from futurist import periodics
from oslo_log import log as logging

from ironic_multi import exception

LOG = logging.getLogger(__name__)

_JOIN_TIMEOUT = 10


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
    """Runs periodic functions in a daemon thread until stopped."""

    def __init__(self, name):
        self._name = name
        self._callables = []
        self._worker = None
        self._thread = None
        # Nova may stop a driver from two threads at once (its service's
        # stop and a clean-up): one of them stops the worker.
        self._stop_lock = threading.Lock()

    def add(self, name, function, interval, run_immediately=False):
        """Run ``function()`` every ``interval`` seconds.

        The first run comes after one interval, or at :meth:`start` with
        ``run_immediately``.  Only before :meth:`start`.
        """
        periodic = periodics.periodic(
            interval, run_immediately=run_immediately)(
                _guarded(name, function))
        self._callables.append((periodic, (), {}))

    def start(self):
        self._worker = periodics.PeriodicWorker(self._callables)
        self._thread = threading.Thread(target=self._worker.start,
                                        name=self._name, daemon=True)
        self._thread.start()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def stop(self):
        with self._stop_lock:
            worker, thread = self._worker, self._thread
            self._worker = self._thread = None
        if worker is None:
            return
        worker.stop()
        thread.join(timeout=_JOIN_TIMEOUT)
        if thread.is_alive():
            LOG.warning('Periodic worker %s did not stop within %d s',
                        self._name, _JOIN_TIMEOUT)
