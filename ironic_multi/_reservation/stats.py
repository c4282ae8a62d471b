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

"""Counters and latencies of one service, for logs and the operator CLI.

Each member publishes a snapshot with its capacity, so that
``ironic-multi-manage stats`` shows every live service's.
"""

import collections
import statistics
import threading

# Latency samples kept per name: enough for a p99, bounded in memory.
WINDOW = 1000


class Stats(object):
    def __init__(self, window=WINDOW):
        self._lock = threading.Lock()
        self._counters = collections.Counter()
        self._samples = collections.defaultdict(
            lambda: collections.deque(maxlen=window))

    def count(self, name, amount=1):
        with self._lock:
            self._counters[name] += amount

    def observe(self, name, seconds):
        with self._lock:
            self._samples[name].append(seconds)

    def snapshot(self):
        """``{'counters': {...}, 'latency': {name: {...}}}``, JSON-ready."""
        with self._lock:
            counters = dict(self._counters)
            samples = {name: sorted(values)
                       for name, values in self._samples.items() if values}
        return {'counters': counters,
                'latency': {name: _summary(values)
                            for name, values in samples.items()}}


def _summary(values):
    def rank(fraction):
        return values[min(len(values) - 1, int(fraction * len(values)))]

    return {'count': len(values),
            'p50': round(statistics.median(values), 4),
            'p99': round(rank(0.99), 4),
            'max': round(values[-1], 4)}
