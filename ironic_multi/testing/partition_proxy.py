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

"""A TCP proxy that can cut its clients off from the server: a partition.

One client's link to a shared server (a compute's to the coordination
backend) goes through a proxy of its own; :meth:`PartitionProxy.partition`
cuts it as a network partition would, :meth:`PartitionProxy.heal` mends
it.  Bytes are relayed as they come, whatever the protocol (etcd's HTTP
gateway, gRPC, Redis).

While partitioned:

* the connections to the server are closed: the server sees the client
  go, and keeps nothing of it alive;
* the client's connections stay open, but nothing they send is forwarded
  and nothing comes back: requests get no answer, and the client's own
  timeouts decide;
* new connections are accepted and held the same way.

On heal the held client connections are closed (what was sent on them is
lost, as on a TCP connection broken by the cut) and new ones are relayed
again.  Each client connection gets a server connection of its own, so
the proxy outlives a restart of the server.
"""

import contextlib
import logging
import select
import socket
import threading

import fixtures

from ironic_multi.testing import _net

LOG = logging.getLogger(__name__)

# Seconds a connection's thread waits for bytes before it looks at the
# partition state again.
POLL = 0.1
CONNECT_TIMEOUT = 5
JOIN_TIMEOUT = 2
CHUNK = 65536


class PartitionProxy(fixtures.Fixture):
    """A TCP proxy on a free loopback port to ``target`` ``(host, port)``.

    After setUp: ``address`` (``('127.0.0.1', port)``), ``port``,
    ``connections`` (client connections accepted so far), ``partitioned``.
    """

    def __init__(self, target):
        super().__init__()
        self.target = tuple(target)
        self.address = self.port = None
        self.connections = 0
        self._partitioned = False
        self._lock = threading.Lock()
        # {client socket: its server socket or None (held)}
        self._pairs = {}
        self._threads = []
        self._stopping = threading.Event()

    def _setUp(self):
        self._stopping.clear()
        self._listener = socket.create_server(('127.0.0.1', 0), backlog=128)
        self.address = self._listener.getsockname()[:2]
        self.port = self.address[1]
        self.addCleanup(self._stop)
        self._start_thread(self._accept_loop, 'partition-proxy-accept')

    @property
    def partitioned(self):
        return self._partitioned

    def partition(self):
        """Cut the clients off: no answers, server connections closed."""
        with self._lock:
            self._partitioned = True
            servers = [s for s in self._pairs.values() if s is not None]
        # Wakes the relays, which see the partition before they forward
        # anything more.
        for server in servers:
            _shutdown(server)
        LOG.info('Partitioned %s:%d from %s:%d',
                 *(self.address + self.target))

    def heal(self):
        """Mend the link: held connections are closed, new ones relayed."""
        with self._lock:
            self._partitioned = False
            held = [c for c, s in self._pairs.items() if s is None]
        for client in held:
            _shutdown(client)
        LOG.info('Healed %s:%d to %s:%d', *(self.address + self.target))

    # -- plumbing ---------------------------------------------------------

    def _start_thread(self, target, name, *args):
        thread = threading.Thread(target=target, name=name, args=args,
                                  daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self):
        _net.accept_until(self._listener, self._stopping, self._accepted,
                          POLL)

    def _accepted(self, client):
        self.connections += 1
        self._start_thread(self._serve, 'partition-proxy-conn', client)

    def _connect(self, client):
        """The client's server connection; None when partitioned."""
        with self._lock:
            partitioned = self._partitioned
            self._pairs[client] = None
        if partitioned:
            return None
        server = socket.create_connection(self.target, CONNECT_TIMEOUT)
        server.settimeout(None)
        with self._lock:
            if self._partitioned:
                server.close()
                return None
            self._pairs[client] = server
        return server

    def _serve(self, client):
        server = None
        try:
            server = self._connect(client)
            held = server is None
            while not self._stopping.is_set():
                partitioned = self._partitioned
                if held and not partitioned:
                    return  # healed: the held connection is broken
                if partitioned and not held:
                    held = True
                    self._drop_server(client, server)
                    server = None
                sockets = [client] if held else [client, server]
                readable, _, _ = select.select(sockets, [], [], POLL)
                for sock in readable:
                    if not self._relay(sock, client, server, held):
                        return
        except OSError as e:
            if not self._stopping.is_set():
                LOG.debug('Partition proxy connection ended: %s', e)
        finally:
            with self._lock:
                self._pairs.pop(client, None)
            _close(server)
            _close(client)

    def _relay(self, sock, client, server, held):
        """Move what ``sock`` has to its peer; False once the link ends."""
        try:
            data = sock.recv(CHUNK)
        except OSError:
            if sock is client or not self._partitioned:
                raise
            return True  # the cut closed the server's socket under us
        if held or self._partitioned:
            # Lost in the cut; only the client's end ends a held link.
            return bool(data) or sock is not client
        if not data:
            return False
        try:
            (server if sock is client else client).sendall(data)
        except OSError:
            if sock is not client or not self._partitioned:
                raise
        return True

    def _drop_server(self, client, server):
        with self._lock:
            if client in self._pairs:
                self._pairs[client] = None
        _close(server)

    def _stop(self):
        self._stopping.set()
        self._listener.close()
        with self._lock:
            sockets = [s for pair in self._pairs.items() for s in pair
                       if s is not None]
            threads = list(self._threads)
        for sock in sockets:
            _shutdown(sock)
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
            if thread.is_alive():
                LOG.warning('Partition proxy thread %s did not stop',
                            thread.name)


def _shutdown(sock):
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _close(sock):
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.close()
