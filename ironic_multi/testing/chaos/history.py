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

"""What a chaos run did and saw, on one clock, from many threads.

Times are seconds since the run began (``clock()``); ``wall`` is the
wall-clock time of that beginning, to place the services' log lines.
"""

import json
import threading
import time


class History(object):
    """The faults, operations, samples, violations and recoveries of a run.

    Every list holds plain dicts (written out as JSON).
    """

    def __init__(self, seed):
        self.seed = seed
        self._started = time.monotonic()
        self.wall = time.time()
        self._lock = threading.Lock()
        self.faults = []
        self.operations = []
        self.samples = []
        self.violations = []
        self.recoveries = []
        self.phases = []
        # Processes the supervisor started again; servers whose state
        # Nova itself left unsettled (see run.py), with the evidence.
        self.respawns = []
        self.excused = []

    def clock(self):
        return round(time.monotonic() - self._started, 2)

    def at_wall(self, wall_time):
        """A wall-clock time on the run's clock."""
        return round(wall_time - self.wall, 2)

    def _append(self, items, item):
        with self._lock:
            items.append(item)
        return item

    def fault(self, kind, target=None, **details):
        """A fault begins now; set ``end`` (and details) when it ends."""
        return self._append(self.faults, dict(
            kind=kind, target=target, start=self.clock(), end=None,
            **details))

    @staticmethod
    def ended(record, **details):
        record.update(details)
        record['end'] = record.get('end') or None

    def end(self, record, **details):
        record.update(details, end=self.clock())

    def operation(self, kind, **details):
        """An operation begins now; :meth:`end` it with its outcome."""
        return self._append(self.operations, dict(
            kind=kind, start=self.clock(), end=None, outcome=None,
            **details))

    def sample(self, sample):
        return self._append(self.samples, dict(sample, t=self.clock()))

    def violation(self, invariant, detail):
        return self._append(self.violations, {
            't': self.clock(), 'invariant': invariant, 'detail': detail})

    def recovery(self, what, seconds, detail=''):
        return self._append(self.recoveries, {
            'what': what, 'seconds': round(seconds, 1), 'detail': detail,
            't': self.clock()})

    def phase(self, name):
        return self._append(self.phases, {'t': self.clock(), 'name': name})

    def as_dict(self):
        with self._lock:
            return {'seed': self.seed, 'wall': self.wall,
                    'faults': list(self.faults),
                    'operations': list(self.operations),
                    'samples': list(self.samples),
                    'violations': list(self.violations),
                    'recoveries': list(self.recoveries),
                    'phases': list(self.phases),
                    'respawns': list(self.respawns),
                    'excused': list(self.excused)}

    def save(self, path, **extra):
        with open(path, 'w') as f:
            json.dump(dict(self.as_dict(), **extra), f, indent=1,
                      sort_keys=True, default=str)
