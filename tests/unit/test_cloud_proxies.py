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

"""The cloud's proxies: a partition of one client, a server restarted.

Real sockets and small servers of the test's own (an echo server in a
thread, an HTTP/1.1 server as a child process that can be killed).
"""

import socket
import socketserver
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import requests

from ironic_multi.testing import _net
from ironic_multi.testing import fault_proxy
from ironic_multi.testing import partition_proxy

TIMEOUT = 10
# How long a request must stay unanswered to count as "no answer".
NO_ANSWER = 0.5


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        with self.server.lock:
            self.server.open += 1
        try:
            while True:
                data = self.request.recv(4096)
                if not data:
                    return
                self.request.sendall(data)
        except OSError:
            return
        finally:
            with self.server.lock:
                self.server.open -= 1


@pytest.fixture
def echo():
    server = socketserver.ThreadingTCPServer(('127.0.0.1', 0), _Echo)
    server.daemon_threads = True
    server.lock = threading.Lock()
    server.open = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _connect(proxy):
    return socket.create_connection(proxy.address, TIMEOUT)


def _round_trip(sock, data):
    sock.settimeout(TIMEOUT)
    sock.sendall(data)
    return sock.recv(4096)


def _no_answer(sock, data):
    sock.sendall(data)
    sock.settimeout(NO_ANSWER)
    with pytest.raises(socket.timeout):
        sock.recv(4096)


def _until(condition):
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_partition_leaves_requests_unanswered_until_heal(echo):
    with partition_proxy.PartitionProxy(echo.server_address) as proxy:
        before = _connect(proxy)
        assert _round_trip(before, b'one') == b'one'
        assert echo.open == 1

        proxy.partition()
        # The server sees the client go; the client sees nothing.
        _until(lambda: echo.open == 0)
        _no_answer(before, b'two')
        during = _connect(proxy)
        _no_answer(during, b'three')
        assert echo.open == 0 and proxy.partitioned

        proxy.heal()
        # What was held is broken; a new connection is relayed.
        for sock in (before, during):
            sock.settimeout(TIMEOUT)
            assert sock.recv(4096) == b''
        after = _connect(proxy)
        assert _round_trip(after, b'four') == b'four'
        assert proxy.connections == 3
        for sock in (before, during, after):
            sock.close()


HTTP_SERVER = textwrap.dedent('''
    import http.server, sys

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def do_GET(self):
            body = b'ok'
            self.send_response(200)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(
        ('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
''')


class _Restartable(object):
    """An HTTP/1.1 server in a child process, on one port for good."""

    def __init__(self, tmp_path):
        self.script = tmp_path / 'server.py'
        self.script.write_text(HTTP_SERVER)
        self.port = _net.free_port()
        self.address = ('127.0.0.1', self.port)
        self.url = 'http://127.0.0.1:%d' % self.port
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [sys.executable, str(self.script), str(self.port)])
        _until(lambda: _net.listening(*self.address))

    def kill(self):
        # As a SIGKILLed server: every connection of its own goes with it.
        self.process.kill()
        self.process.wait()


@pytest.fixture
def http_server(tmp_path):
    server = _Restartable(tmp_path)
    server.start()
    yield server
    server.kill()


def test_fault_proxy_outlives_a_restart_of_its_target(http_server):
    """One kept-alive client connection, the server restarted under it."""
    with fault_proxy.FaultProxy(http_server.url) as proxy, \
            requests.Session() as session:
        url = proxy.endpoint + '/v1/nodes'
        assert session.get(url, timeout=TIMEOUT).text == 'ok'
        http_server.kill()
        with pytest.raises(requests.ConnectionError):
            session.get(url, timeout=TIMEOUT)
        http_server.start()
        answers = [session.get(url, timeout=TIMEOUT).status_code
                   for _ in range(3)]
        assert answers == [200] * 3
        # Faults still apply after the restart.
        with proxy.fault('status_503'):
            assert session.get(url, timeout=TIMEOUT).status_code == 503


def test_partition_proxy_outlives_a_restart_of_its_target(http_server):
    with partition_proxy.PartitionProxy(http_server.address) as proxy, \
            requests.Session() as session:
        url = 'http://%s:%d/' % proxy.address
        assert session.get(url, timeout=TIMEOUT).text == 'ok'
        http_server.kill()
        http_server.start()
        # The old connection ended with the server; the next is new.
        assert session.get(url, timeout=TIMEOUT).text == 'ok'
        proxy.partition()
        with pytest.raises(requests.Timeout):
            session.get(url, timeout=NO_ANSWER)
        proxy.heal()
        assert session.get(url, timeout=TIMEOUT).text == 'ok'
