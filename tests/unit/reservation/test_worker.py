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

"""The periodic worker's life: stops from two threads at once."""

import threading

from ironic_multi._reservation import worker as worker_mod


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
