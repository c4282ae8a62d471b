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

"""When the cloud's private MariaDB counts as started."""

import socket

import pytest

from ironic_multi.testing import _net
from ironic_multi.testing.cloud import database


def test_a_port_that_listens_without_a_server_behind_is_not_ready():
    # MariaDB's state between opening its port and the end of its
    # start-up: connections wait in the backlog, nobody answers.
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        assert _net.listening('127.0.0.1', port)
        assert database._answers(port) is False


def test_a_server_that_lets_root_log_in_is_ready():
    # The machine's own MariaDB (root, no password, on 3306).
    if not _net.listening('127.0.0.1', 3306):
        pytest.skip('no MariaDB server on 127.0.0.1:3306')
    assert database._answers(3306) is True
