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

"""At most N deploys in flight per service; the others wait in order.

Octavia's housekeeper throttles the builds of its spare pool: a burst of
deploys on one service would load Ironic and its conductors at once.
Waiters are served first come, first served, each for a bounded time.
"""

import collections
import contextlib
import threading
import time

from oslo_log import log as logging

from ironic_multi import exception

LOG = logging.getLogger(__name__)


class DeployThrottle(object):
    """A first-in first-out semaphore with a bounded wait.

    :param limit: deploys at once; 0 means no limit.
    :param timeout: seconds one deploy may wait for its turn.
    """

    def __init__(self, limit, timeout):
        self.limit = limit
        self._timeout = timeout
        self._cond = threading.Condition()
        self._running = 0
        self._queue = collections.deque()

    @property
    def waiting(self):
        return len(self._queue)

    @property
    def running(self):
        return self._running

    @contextlib.contextmanager
    def turn(self, what):
        """Wait for a turn for ``what``, then hold it.

        :raises DeployThrottled: no turn came within the timeout.
        """
        if not self.limit:
            yield
            return
        ticket = object()
        deadline = time.monotonic() + self._timeout
        with self._cond:
            self._queue.append(ticket)
            try:
                while not (self._queue[0] is ticket
                           and self._running < self.limit):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise exception.DeployThrottled(
                            what=what, running=self._running,
                            timeout=self._timeout)
                    if self._queue[0] is ticket:
                        LOG.debug('%(what)s waits for one of %(limit)d '
                                  'deploys to finish', {'what': what,
                                                        'limit': self.limit})
                    self._cond.wait(left)
            finally:
                self._queue.remove(ticket)
                # The next in line may go now (or after us, on timeout).
                self._cond.notify_all()
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()
