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
