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


"""The sampler: placement's free counts beside Ironic's, over time.

:class:`Sampler` reads placement's free counts and Ironic's truth every
period, in a thread of the reservation layer's periodic worker; the
scenario marks its phases on the same clock.  A failed read is counted
and skipped (the services may be starting or stopping).
"""

import logging
import threading

from ironic_multi._reservation import worker as worker_mod

LOG = logging.getLogger(__name__)


class Sampler(object):
    """Samples ``read()`` every ``period`` seconds in a thread of its own.

    :param read: returns one sample (any JSON-able value).
    :param period: seconds between two samples.
    :param clock: seconds since the scenario started.
    """

    def __init__(self, read, period, clock):
        self.period = period
        self._read = read
        self._clock = clock
        self._lock = threading.Lock()
        self.samples = []
        self.events = []
        self.failed_reads = 0
        self._worker = worker_mod.Worker('sandbox-sampler')
        self._worker.add('sample', self._take, period, run_immediately=True)

    def __enter__(self):
        self._worker.start()
        return self

    def __exit__(self, *exc_info):
        self._worker.stop()

    def mark(self, label):
        """A phase boundary, drawn as a vertical line on the chart."""
        with self._lock:
            self.events.append((round(self._clock(), 2), label))

    def sample_now(self):
        """Take one sample in the caller's thread (the final one)."""
        self._take()

    def _take(self):
        at = self._clock()
        try:
            value = self._read()
        except Exception as e:
            self.failed_reads += 1
            LOG.debug('Sample at %.1f s failed: %s', at, e)
            return
        with self._lock:
            self.samples.append({'t': round(at, 2), **value})
