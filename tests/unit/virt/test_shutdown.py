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

"""Leaving the group when Nova's graceful shutdown begins."""

import threading
import time
import types
from unittest import mock

from ironic_multi._virt import shutdown


def _virtapi(event):
    """Nova's ComputeVirtAPI: the compute manager as ``_compute``."""
    return types.SimpleNamespace(
        _compute=types.SimpleNamespace(_shutdown_in_progress=event))


def test_leaves_once_nova_begins_to_stop():
    event, left = threading.Event(), threading.Event()
    thread = shutdown.leave_when_stopping(_virtapi(event), left.set, 'h')
    assert not left.wait(0.2)
    event.set()   # nova.service.Service.stop(): set_shutdown_in_progress()
    assert left.wait(10)
    thread.join(10)
    assert not thread.is_alive()


def test_a_failed_leave_is_logged_not_raised(caplog):
    event = threading.Event()
    event.set()
    leave = mock.Mock(side_effect=RuntimeError('backend down'))
    shutdown.leave_when_stopping(_virtapi(event), leave, 'h').join(10)
    leave.assert_called_once_with()
    assert 'Could not leave the coordination group at once' in caplog.text


def test_without_nova_s_event_the_group_is_left_at_cleanup_host():
    leave = mock.Mock()
    # An older Nova, or a test double that only looks like one: a mock's
    # wait() would return at once and leave a running service.
    for virtapi in (types.SimpleNamespace(), mock.MagicMock(),
                    _virtapi(None), _virtapi(mock.Mock())):
        assert shutdown.leave_when_stopping(virtapi, leave, 'h') is None
    leave.assert_not_called()


def test_the_driver_leaves_when_its_compute_manager_begins_to_stop(
        reserver):
    from ironic_multi._virt import driver
    from tests.unit.virt import fakes

    event = threading.Event()
    drv = driver.IronicMultiDriver(_virtapi(event), reserver=reserver)
    drv.init_host(fakes.HOST)
    assert ('leave',) not in reserver.calls
    event.set()
    for _ in range(200):
        if ('leave',) in reserver.calls:
            break
        time.sleep(0.05)
    assert ('leave',) in reserver.calls
    assert not reserver.stopped
