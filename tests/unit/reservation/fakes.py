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

"""A coordination backend's locks whose answers a test holds back."""

import threading
import time


class Locks(object):
    """The backend: lock name -> the lock object holding it.

    A lock acquired is held until released, as a tooz lock that its
    member's heartbeat renews.  ``stalled`` holds back each acquire's
    answer until it is set (the backend answers late).
    """

    def __init__(self):
        self.holders = {}
        self.stalled = threading.Event()
        self.stalled.set()
        self._mutex = threading.Lock()

    def lock(self, name):
        return _Lock(self, name)

    def stall(self):
        self.stalled.clear()

    def answer(self):
        self.stalled.set()

    def free(self, name, timeout=10):
        """Whether ``name`` is free, or becomes free within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while self.holders.get(name) is not None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True


class _Lock(object):
    def __init__(self, backend, name):
        self._backend = backend
        self.name = name
        self.answered = threading.Event()

    def acquire(self, blocking=True):
        assert blocking is False
        taken = False
        with self._backend._mutex:
            if self._backend.holders.get(self.name) is None:
                self._backend.holders[self.name] = self
                taken = True
        # Taken in the backend; the answer comes when it comes.
        self._backend.stalled.wait()
        self.answered.set()
        return taken

    def is_still_owner(self):
        return self._backend.holders.get(self.name) is self

    def release(self):
        with self._backend._mutex:
            if self._backend.holders.get(self.name) is not self:
                return False
            del self._backend.holders[self.name]
            return True
