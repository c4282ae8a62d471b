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

"""A TCP proxy in front of a test server that injects faults on demand.

Failure paths need failures that happen when a test wants them: a request
that never gets an answer, an answer lost after the change was made, a 503,
a reset connection, a slow server.  :class:`FaultProxy` listens on a free
loopback port, forwards HTTP/1.1 to its target (keep-alive, Content-Length
and chunked bodies), and applies the first matching fault to each request::

    proxy = self.useFixture(FaultProxy(ironic_server.endpoint))
    with proxy.fault('drop_answer', method='PATCH', path=r'^/v1/nodes/'):
        ...  # the client talks to proxy.endpoint

Faults (``KINDS``): ``stall`` reads the request and never answers (until
the fault is removed or the proxy stops, then closes the connection);
``drop_answer`` forwards the request, reads the whole answer and closes the
client's connection without sending it; ``status_503`` answers 503 without
forwarding; ``reset`` resets the client's connection (RST) without
forwarding; ``delay`` forwards after ``seconds``.  Every request is
recorded (:attr:`FaultProxy.seen`) with the fault applied to it.
``Expect: 100-continue`` is not supported.
"""

import contextlib
import dataclasses
import logging
import re
import select
import socket
import struct
import threading
import typing
import urllib.parse

import fixtures

from ironic_multi.testing import _net

LOG = logging.getLogger(__name__)

KINDS = ('stall', 'drop_answer', 'status_503', 'reset', 'delay')
JOIN_TIMEOUT = 2
MAX_LINE = 65536
_503 = (b'HTTP/1.1 503 Service Unavailable\r\n'
        b'Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s')
_503_BODY = b'{"error_message": "Service Unavailable (FaultProxy)"}'


class Fault:
    """One fault; matches requests by method and a regex on the target."""

    def __init__(self, kind, method=None, path=None, count=None,
                 seconds=0.0, body=None):
        if kind not in KINDS:
            raise ValueError('Unknown fault %r, expected one of %s'
                             % (kind, ', '.join(KINDS)))
        self.kind = kind
        self.method = method.upper() if method else None
        self.path = re.compile(path) if path else None
        self.body = re.compile(body.encode()) if body else None
        self.remaining = count
        self.seconds = seconds
        self.applied = 0
        self.active = True

    def matches(self, method, target, raw=b''):
        return (self.active and self.remaining != 0
                and self.method in (None, method)
                and (self.path is None or bool(self.path.search(target)))
                and (self.body is None or bool(self.body.search(raw))))


@dataclasses.dataclass
class Seen:
    """A request the proxy read, and what became of it.

    ``status``: what the client got (None: no answer); ``upstream_status``:
    what the target answered (None: not forwarded, or no answer).
    """

    method: str
    target: str
    fault: typing.Optional[str]
    status: typing.Optional[int] = None
    upstream_status: typing.Optional[int] = None


class _Closed(Exception):
    """A peer closed its connection in the middle of a message."""


class FaultProxy(fixtures.Fixture):
    """A fault-injecting HTTP/1.1 proxy to ``target`` (``http://host:port``).

    After setUp, ``endpoint`` is ``http://127.0.0.1:PORT``; ``connections``
    counts the client connections accepted so far.  Each client
    connection is served by a thread of its own with a connection of its
    own to the target.  Stopping closes every socket and joins the threads
    for at most ``JOIN_TIMEOUT`` seconds each; they are daemons.
    """

    def __init__(self, target):
        super().__init__()
        parts = urllib.parse.urlsplit(target)
        if parts.scheme != 'http' or not parts.port:
            raise ValueError('target must be http://host:port, not %r'
                             % target)
        self.target = (parts.hostname, parts.port)
        self.endpoint = None
        self.connections = 0
        self._faults = []
        self._seen = []
        self._lock = threading.Lock()
        self._sockets = set()
        self._threads = []
        self._stopping = threading.Event()

    def _setUp(self):
        self._stopping.clear()
        self._listener = socket.create_server(('127.0.0.1', 0), backlog=64)
        self.endpoint = 'http://127.0.0.1:%d' % (
            self._listener.getsockname()[1])
        self.addCleanup(self._stop)
        self._start_thread(self._accept_loop, 'fault-proxy-accept')

    # -- what tests use ---------------------------------------------------

    def add_fault(self, kind, method=None, path=None, count=None,
                  seconds=0.0, body=None):
        """Apply ``kind`` to the matching requests from now on.

        :param path: a regex searched in the request target (path and
            query), e.g. ``r'^/v1/nodes/[^/?]+$'``.
        :param body: a regex searched in the whole request (head and
            body), e.g. an instance's UUID: its claim.
        :param count: apply it to the next ``count`` matches only.
        :param seconds: the delay of ``delay``.
        """
        fault = Fault(kind, method, path, count, seconds, body)
        with self._lock:
            self._faults.append(fault)
        return fault

    def remove_fault(self, fault):
        with self._lock:
            fault.active = False
            if fault in self._faults:
                self._faults.remove(fault)

    def clear_faults(self):
        with self._lock:
            for fault in self._faults:
                fault.active = False
            self._faults = []

    @contextlib.contextmanager
    def fault(self, kind, **kwargs):
        """:meth:`add_fault` for the duration of a ``with`` block."""
        fault = self.add_fault(kind, **kwargs)
        try:
            yield fault
        finally:
            self.remove_fault(fault)

    @property
    def seen(self):
        """The requests read so far (a copy), oldest first."""
        with self._lock:
            return list(self._seen)

    # -- plumbing ---------------------------------------------------------

    def _start_thread(self, target, name, *args):
        thread = threading.Thread(target=target, name=name, args=args,
                                  daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self):
        _net.accept_until(self._listener, self._stopping, self._accepted)

    def _accepted(self, client):
        self.connections += 1
        self._track(client)
        self._start_thread(self._serve, 'fault-proxy-conn', client)

    def _stop(self):
        self._stopping.set()
        self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
            if thread.is_alive():
                LOG.warning('FaultProxy thread %s did not stop', thread.name)

    def _track(self, sock):
        with self._lock:
            self._sockets.add(sock)

    def _close(self, sock, reset=False):
        if sock is None:
            return
        with self._lock:
            self._sockets.discard(sock)
        if reset:
            # Close with a zero linger time: the peer gets an RST.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack('ii', 1, 0))
        with contextlib.suppress(OSError):
            sock.close()

    def _pick_fault(self, method, target, raw):
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, target, raw):
                    fault.applied += 1
                    if fault.remaining is not None:
                        fault.remaining -= 1
                    return fault
        return None

    def _serve(self, client):
        upstream = None
        reader = client.makefile('rb')
        try:
            while not self._stopping.is_set():
                request = _read_message(reader, is_request=True)
                if request is None:
                    return
                head, raw, keep_alive = request
                method, target = head[0], head[1]
                fault = self._pick_fault(method, target, raw)
                seen = Seen(method, target, fault and fault.kind)
                with self._lock:
                    self._seen.append(seen)
                kind = fault.kind if fault else None
                if kind == 'reset':
                    self._close(client, reset=True)
                    return
                if kind == 'status_503':
                    seen.status = 503
                    client.sendall(_503 % (len(_503_BODY), _503_BODY))
                    if not keep_alive:
                        return
                    continue
                if kind == 'stall':
                    while fault.active and not self._stopping.wait(0.05):
                        pass
                    return
                if kind == 'delay' and self._stopping.wait(fault.seconds):
                    return
                upstream = self._upstream(upstream)
                upstream.sock.sendall(raw)
                answer = _read_message(upstream.reader, method=method)
                if answer is None:
                    return
                status, raw_answer, upstream_alive = answer
                seen.upstream_status = status
                if kind == 'drop_answer':
                    return
                seen.status = status
                client.sendall(raw_answer)
                if not upstream_alive:
                    self._close_upstream(upstream)
                    upstream = None
                if not (keep_alive and upstream_alive):
                    return
        except (OSError, _Closed, ValueError, IndexError) as e:
            if not self._stopping.is_set():
                LOG.debug('FaultProxy connection ended: %s', e)
        except Exception:
            LOG.exception('FaultProxy connection failed')
        finally:
            reader.close()
            self._close(client)
            self._close_upstream(upstream)

    def _upstream(self, upstream):
        """The connection to the target, new if the old one was closed."""
        if upstream is not None:
            readable, _, _ = select.select([upstream.sock], [], [], 0)
            if not readable:
                return upstream
            # Nothing is due from an idle target: that is its close.
            self._close_upstream(upstream)
        sock = socket.create_connection(self.target)
        self._track(sock)
        return _Upstream(sock, sock.makefile('rb'))

    def _close_upstream(self, upstream):
        if upstream is not None:
            upstream.reader.close()
            self._close(upstream.sock)


class _Upstream(typing.NamedTuple):
    sock: socket.socket
    reader: typing.BinaryIO


def _read_message(reader, is_request=False, method=None):
    """Read one HTTP/1.1 message; None at a clean end of the connection.

    Returns ``(head, raw, keep_alive)``: for a request ``head`` is
    ``(method, target)``, for a response the status (after any 1xx
    answers, which are included in ``raw``).  ``keep_alive`` says whether
    the connection may carry another message.
    """
    raw = []
    while True:
        line = reader.readline(MAX_LINE)
        while is_request and line in (b'\r\n', b'\n'):
            line = reader.readline(MAX_LINE)
        if not line:
            if raw:
                raise _Closed('connection closed before the answer')
            return None
        raw.append(line)
        start = line.decode('latin-1').split()
        headers = {}
        while True:
            header = reader.readline(MAX_LINE)
            if not header:
                raise _Closed('connection closed in the headers')
            raw.append(header)
            if header in (b'\r\n', b'\n'):
                break
            name, _, value = header.decode('latin-1').partition(':')
            headers[name.strip().lower()] = value.strip().lower()
        version = start[0] if not is_request else start[2]
        connection = headers.get('connection', '')
        keep_alive = 'close' not in connection and (
            version != 'HTTP/1.0' or 'keep-alive' in connection)
        if is_request:
            _read_body(reader, headers, raw, until_close=False)
            return (start[0], start[1]), b''.join(raw), keep_alive
        status = int(start[1])
        if 100 <= status < 200:
            continue
        if method != 'HEAD' and status not in (204, 304):
            if _read_body(reader, headers, raw, until_close=True):
                keep_alive = False
        return status, b''.join(raw), keep_alive


def _read_body(reader, headers, raw, until_close):
    """Append the body to ``raw``; True if it ended with the connection."""
    if 'chunked' in headers.get('transfer-encoding', ''):
        while True:
            size_line = reader.readline(MAX_LINE)
            raw.append(size_line)
            size = int(size_line.split(b';')[0], 16)
            if size == 0:
                break
            raw.append(_read_exactly(reader, size + 2))
        while True:  # trailers, then the blank line
            line = reader.readline(MAX_LINE)
            raw.append(line)
            if line in (b'\r\n', b'\n', b''):
                return False
    if 'content-length' in headers:
        raw.append(_read_exactly(reader, int(headers['content-length'])))
        return False
    if until_close:
        raw.append(reader.read())
        return True
    return False


def _read_exactly(reader, size):
    data = reader.read(size)
    if len(data) != size:
        raise _Closed('connection closed in a body')
    return data
