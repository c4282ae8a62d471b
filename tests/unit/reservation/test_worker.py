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

"""The periodic worker: lanes that do not wait for each other, a stop
that is bounded and safe from two threads."""

import threading
import time

from ironic_multi._reservation import worker as worker_mod

# Bounds of the waits below: a safety net, never a measure.
_PATIENCE = 20


class _Counter(object):
    """Counts the runs of a periodic; waits for more of them."""

    def __init__(self):
        self._cond = threading.Condition()
        self.runs = 0

    def __call__(self):
        with self._cond:
            self.runs += 1
            self._cond.notify_all()

    def wait_for(self, runs):
        with self._cond:
            return self._cond.wait_for(lambda: self.runs >= runs,
                                       timeout=_PATIENCE)


class _Blocker(object):
    """A periodic whose runs wait until released."""

    def __init__(self):
        self.started = threading.Event()
        self.release = threading.Event()
        self.runs = 0

    def __call__(self):
        self.runs += 1
        self.started.set()
        self.release.wait(_PATIENCE)


def test_a_blocking_periodic_does_not_stall_the_others():
    # The review's probe: a long housekeeping pass held the 0.5 s refresh
    # back to the pass's own pace.
    blocker, counter = _Blocker(), _Counter()
    worker = worker_mod.Worker('test-worker')
    worker.add('housekeeping', blocker, 0.01)
    worker.add('refresh', counter, 0.01)
    with worker:
        try:
            assert blocker.started.wait(_PATIENCE)
            before = counter.runs
            assert counter.wait_for(before + 5), (
                'the refresh ran %d times while a pass blocked'
                % (counter.runs - before))
            assert not blocker.release.is_set()  # still blocked meanwhile
        finally:
            blocker.release.set()


def test_a_periodic_never_runs_twice_at_once():
    lock = threading.Lock()
    running, overlaps = [], []
    counter = _Counter()

    def slow():
        with lock:
            running.append(1)
            if len(running) > 1:
                overlaps.append(len(running))
        time.sleep(0.02)  # much longer than its interval
        with lock:
            running.pop()
        counter()

    worker = worker_mod.Worker('test-worker')
    worker.add('slow', slow, 0.001, run_immediately=True)
    with worker:
        assert counter.wait_for(10)
    assert overlaps == []


def test_stop_is_bounded_while_a_pass_blocks():
    blocker = _Blocker()
    worker = worker_mod.Worker('test-worker', stop_timeout=0.2)
    worker.add('housekeeping', blocker, 0.01, run_immediately=True)
    worker.start()
    scheduler = worker._thread
    assert blocker.started.wait(_PATIENCE)
    stopper = threading.Thread(target=worker.stop)
    stopper.start()
    stopper.join(_PATIENCE)
    try:
        assert not stopper.is_alive()
        assert scheduler.is_alive()  # it waits for the pass...
    finally:
        blocker.release.set()
    scheduler.join(_PATIENCE)
    assert not scheduler.is_alive()
    assert blocker.runs == 1  # ...which is the last one


def test_two_concurrent_stops_stop_it_once_without_error():
    worker = worker_mod.Worker('test-worker')
    worker.add('nothing', lambda: None, 60)
    worker.start()
    thread = worker._thread
    periodic = worker._worker
    real_stop = periodic.stop
    second_call = threading.Event()
    first_stop_returned = threading.Event()
    calls = []

    def stop():
        # The interleaving that broke: the second stop passes its check
        # while the first is stopping, and goes on after the first ended.
        calls.append(threading.current_thread().name)
        real_stop()
        if len(calls) == 1:
            second_call.wait(1)
        else:
            second_call.set()
            first_stop_returned.wait(5)

    periodic.stop = stop
    errors = []

    def stop_worker(done=None):
        try:
            worker.stop()
        except Exception as e:
            errors.append(e)
        if done is not None:
            done.set()

    first = threading.Thread(target=stop_worker, args=(first_stop_returned,),
                             name='first')
    second = threading.Thread(target=stop_worker, name='second')
    first.start()
    second.start()
    first.join(10)
    second.join(10)
    assert errors == []
    assert not thread.is_alive()
    assert len(calls) == 1
    worker.stop()  # and once more, when stopped: nothing to do


def test_asks_during_a_pass_make_one_more_pass():
    started, release = threading.Event(), threading.Event()
    runs = []

    def follow():
        runs.append(time.monotonic())
        started.set()
        release.wait(5)

    on_demand = worker_mod.OnDemand('test-on-demand', follow)
    on_demand.start()
    try:
        on_demand.ask()
        assert started.wait(5)
        started.clear()
        for _ in range(5):
            on_demand.ask()
        release.set()
        assert started.wait(5)
        # The five asks came during the first pass: one pass serves them.
        time.sleep(0.2)
        assert len(runs) == 2
    finally:
        on_demand.stop()
    on_demand._thread.join(5)
    assert not on_demand._thread.is_alive()


def test_a_failing_pass_does_not_end_it(caplog):
    runs = []
    again = threading.Event()

    def follow():
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError('placement is away')
        again.set()

    on_demand = worker_mod.OnDemand('test-on-demand', follow)
    on_demand.start()
    try:
        on_demand.ask()
        deadline = time.monotonic() + 5
        while not runs and time.monotonic() < deadline:
            time.sleep(0.01)
        on_demand.ask()
        assert again.wait(5)
    finally:
        on_demand.stop()
    assert any('test-on-demand failed' in r.message for r in caplog.records)
