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

"""What the multi-process cloud's waits take for done."""

import datetime
import types

from ironic_multi.testing.cloud import cloud as cloud_mod

RESTART = datetime.datetime(2026, 11, 27, 21, 0, 0, 400000)


def _service(updated_at):
    return types.SimpleNamespace(updated_at=updated_at)


def test_a_report_before_the_restart_is_not_one_after_it():
    # The stopped process's last report: Nova says up, the new process
    # has not reported yet.
    assert not cloud_mod._reported_since(
        _service('2026-11-27T20:59:58.000000'), RESTART)
    assert not cloud_mod._reported_since(_service(None), RESTART)


def test_a_report_after_the_restart_counts_in_whole_seconds():
    assert cloud_mod._reported_since(
        _service('2026-11-27T21:00:00.000000'), RESTART)
    assert cloud_mod._reported_since(
        _service('2026-11-27T21:00:02.000000'), RESTART)
    assert cloud_mod._reported_since(_service(None), None)


def test_settling_restarts_whenever_the_value_moves(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(cloud_mod.time, 'monotonic', lambda: now[0])
    settling = cloud_mod._Settling(10)
    assert not settling.still({'n1': 'c1'})
    now[0] += 8
    # Moved: the wait starts again.
    assert not settling.still({'n1': 'c2'})
    now[0] += 8
    assert not settling.still({'n1': 'c2'})
    now[0] += 2
    assert settling.still({'n1': 'c2'})


def test_up_after_a_restart_counts_once_the_old_heartbeat_aged_out(
        monkeypatch):
    # The API's updated_at changes at the new process's start, and the
    # stopped process's last heartbeat keeps the host up: only a host
    # still up service_down_time after the restart has beaten since.
    cloud = cloud_mod.Cloud()
    up = types.SimpleNamespace(state='up',
                               updated_at='2026-11-27T21:00:01.000000')
    monkeypatch.setattr(cloud, 'nova_services',
                        lambda: {'compute-1': up})
    seconds = iter([1, 4, 9, cloud.service_down_time, 12])
    clock = []

    def utcnow():
        clock.append(RESTART + datetime.timedelta(seconds=next(seconds)))
        return clock[-1]

    monkeypatch.setattr(cloud_mod, 'utcnow', utcnow)
    monkeypatch.setattr(cloud_mod.time, 'sleep', lambda s: None)
    cloud.wait_for_computes(['compute-1'], since=RESTART)
    assert clock[-1] - RESTART == datetime.timedelta(
        seconds=cloud.service_down_time)
    # Without a restart to wait out, up is up.
    clock.clear()
    cloud.wait_for_computes(['compute-1'])
    assert clock == []
