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


"""A VNC server that shows nothing: the RFB handshake, then a blank screen.

Enough for what a VNC client checks of a server before it draws: the
protocol version (3.8), the security type None and its result, and the
ServerInit message with the screen's size, pixel format and name (RFC
6143, sections 7.1 to 7.3).  The framebuffer update requests a client
sends after that are read and left unanswered.

Standard library only: it runs inside the test Ironic's own virtualenv.
"""

import socket
import socketserver
import struct
import threading

VERSION = b'RFB 003.008\n'
SECURITY_NONE = 1
WIDTH, HEIGHT = 640, 480
# 32 bits per pixel, depth 24, little-endian true colour, 8 bits per
# channel (red shifted 16, green 8, blue 0), 3 bytes of padding.
PIXEL_FORMAT = struct.pack('>BBBBHHHBBB3x', 32, 24, 0, 1, 255, 255, 255,
                           16, 8, 0)
# Without a client's answer the handshake ends after this long.
TIMEOUT = 30


class HandshakeError(Exception):
    """The client broke off or answered out of protocol."""


def _read(sock, size):
    data = b''
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise HandshakeError('the client closed the connection after '
                                 '%d of %d bytes' % (len(data), size))
        data += chunk
    return data


def server_init(name):
    """The ServerInit message of a ``WIDTH`` x ``HEIGHT`` screen."""
    name = name.encode('utf-8')
    return (struct.pack('>HH', WIDTH, HEIGHT) + PIXEL_FORMAT
            + struct.pack('>I', len(name)) + name)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        sock.settimeout(TIMEOUT)
        try:
            sock.sendall(VERSION)
            version = _read(sock, len(VERSION))
            if version == b'RFB 003.003\n':
                # 3.3: the server chooses the security type.
                sock.sendall(struct.pack('>I', SECURITY_NONE))
            else:
                sock.sendall(struct.pack('>BB', 1, SECURITY_NONE))
                if _read(sock, 1) != bytes([SECURITY_NONE]):
                    raise HandshakeError('the client chose a security '
                                         'type other than None')
                sock.sendall(struct.pack('>I', 0))
            _read(sock, 1)  # ClientInit: whether to share the desktop
            sock.sendall(server_init(self.server.name))
            while sock.recv(4096):
                pass
        except (HandshakeError, OSError):
            pass


class Server(socketserver.ThreadingTCPServer):
    """A blank VNC screen named ``name`` on ``host``, on a free port."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, name, host='127.0.0.1'):
        super().__init__((host, 0), _Handler)
        self.name = name
        self._thread = threading.Thread(target=self.serve_forever,
                                        name='vnc %s' % name, daemon=True)

    @property
    def address(self):
        """``(host, port)`` a client connects to."""
        return self.server_address[:2]

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.shutdown()
        self.server_close()


def greeting(host, port, timeout=5):
    """Shake hands with the VNC server at ``host``; returns its ServerInit."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        return handshake(sock)


def handshake(sock):
    """Shake hands as a VNC client does; returns the ServerInit message."""
    version = _read(sock, len(VERSION))
    sock.sendall(version)
    count = _read(sock, 1)[0]
    if SECURITY_NONE not in _read(sock, count):
        raise HandshakeError('the server offers no security type None')
    sock.sendall(bytes([SECURITY_NONE]))
    if _read(sock, 4) != b'\0\0\0\0':
        raise HandshakeError('the server refused security type None')
    sock.sendall(b'\1')
    head = _read(sock, 24)
    (length,) = struct.unpack('>I', head[20:24])
    return head + _read(sock, length)
