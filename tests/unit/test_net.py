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

"""The ports the test servers are given."""

import socket

from ironic_multi.testing import _net


def test_ports_come_from_outside_the_ephemeral_range():
    # An outgoing connection can take an ephemeral port before the server
    # that was given it binds it (a cloud's cinder-api died of that).
    low, high = _net.ephemeral_range()
    ports = [_net.free_port() for _ in range(50)]
    assert not [port for port in ports if low <= port <= high]


def test_no_port_is_handed_out_twice():
    ports = [_net.free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)


def test_a_bound_port_is_not_handed_out(monkeypatch):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        port = taken.getsockname()[1]
        # The bound port is the only candidate: the kernel chooses.
        monkeypatch.setattr(_net, '_candidates', lambda low, high: [port])
        monkeypatch.setattr(_net, '_handed_out', set())
        assert _net.free_port() != port


def test_the_range_the_kernel_reports(tmp_path):
    path = tmp_path / 'ip_local_port_range'
    path.write_text('40000\t50000\n')
    assert _net.ephemeral_range(str(path)) == (40000, 50000)
    path.write_text('garbage\n')
    assert _net.ephemeral_range(str(path)) == _net._DEFAULT_EPHEMERAL
    assert (_net.ephemeral_range(str(tmp_path / 'missing'))
            == _net._DEFAULT_EPHEMERAL)


def test_candidates_take_the_wider_side():
    assert _net._candidates(32768, 60999) == range(10000, 32768)
    assert _net._candidates(10500, 40000) == range(40001, 65536)
