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

    def add(self, name, function, interval):
        """Run ``function()`` every ``interval`` seconds, after a first wait.

        Only before :meth:`start`.
        """
        periodic = periodics.periodic(interval, run_immediately=False)(
            _guarded(name, function))
        self._callables.append((periodic, (), {}))

    def start(self):
        self._worker = periodics.PeriodicWorker(self._callables)
        self._thread = threading.Thread(target=self._worker.start,
                                        name=self._name, daemon=True)
        self._thread.start()

    def stop(self):
        if self._worker is None:
            return
        self._worker.stop()
        self._thread.join(timeout=_JOIN_TIMEOUT)
        if self._thread.is_alive():
            LOG.warning('Periodic worker %s did not stop within %d s',
                        self._name, _JOIN_TIMEOUT)
        self._worker = self._thread = None
