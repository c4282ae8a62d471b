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


"""The test Ironic's blank VNC server: the handshake a VNC client sees."""

import socket
import struct

import pytest

from ironic_multi.testing.vnc_console import fake_rfb


@pytest.fixture
def server():
    server = fake_rfb.Server('console of node-1').start()
    yield server
    server.stop()


def _connect(server):
    sock = socket.create_connection(server.address, timeout=5)
    sock.settimeout(5)
    return sock


def test_a_client_gets_through_the_handshake(server):
    init = fake_rfb.greeting(*server.address)
    width, height = struct.unpack('>HH', init[:4])
    assert (width, height) == (fake_rfb.WIDTH, fake_rfb.HEIGHT)
    assert init[4:20] == fake_rfb.PIXEL_FORMAT
    assert init[24:] == b'console of node-1'
    # Each client has a handshake of its own.
    assert fake_rfb.greeting(*server.address) == init


def test_an_rfb_3_3_client_is_told_the_security_type(server):
    with _connect(server) as sock:
        assert fake_rfb._read(sock, 12) == fake_rfb.VERSION
        sock.sendall(b'RFB 003.003\n')
        assert fake_rfb._read(sock, 4) == struct.pack('>I', 1)
        sock.sendall(b'\1')
        init = fake_rfb._read(sock, 24)
        assert init[:4] == struct.pack('>HH', fake_rfb.WIDTH,
                                       fake_rfb.HEIGHT)


def test_a_client_asking_for_a_password_is_sent_away(server):
    with _connect(server) as sock:
        sock.sendall(fake_rfb._read(sock, 12))
        assert fake_rfb._read(sock, 2) == b'\1\1'
        sock.sendall(b'\2')  # VNC authentication: not offered
        assert sock.recv(16) == b''


def test_a_server_that_offers_no_none_security_is_caught():
    listener = socket.create_server(('127.0.0.1', 0))
    with listener:
        host, port = listener.getsockname()[:2]
        client = socket.create_connection((host, port), timeout=5)
        peer, _ = listener.accept()
        with client, peer:
            # A server that only knows VNC authentication (2).
            peer.sendall(fake_rfb.VERSION + b'\1\2')
            client.settimeout(5)
            with pytest.raises(fake_rfb.HandshakeError):
                fake_rfb.handshake(client)


def test_a_stopped_server_refuses_connections():
    server = fake_rfb.Server('gone').start()
    address = server.address
    server.stop()
    with pytest.raises(OSError):
        fake_rfb.greeting(*address, timeout=2)
