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

"""Ports and child processes of the test servers."""

import concurrent.futures
import ctypes
import queue
import random
import signal
import socket
import subprocess
import threading

_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


_EPHEMERAL_RANGE = '/proc/sys/net/ipv4/ip_local_port_range'
# Linux's default, for a kernel that does not say.
_DEFAULT_EPHEMERAL = (32768, 60999)
_LOWEST = 10000
_handed_out = set()
_handed_out_lock = threading.Lock()


def ephemeral_range(path=_EPHEMERAL_RANGE):
    """The (low, high) ports the kernel gives to outgoing connections."""
    try:
        with open(path) as f:
            low, high = (int(value) for value in f.read().split())
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL
    return low, high


def _candidates(low, high):
    below = range(_LOWEST, low)
    above = range(high + 1, 65536)
    return below if len(below) >= len(above) else above


def free_port():
    """A TCP port on 127.0.0.1 that nothing is bound to right now.

    A test server binds the port later, a minute later in a cloud that
    starts a dozen services first.  A port from the kernel's ephemeral
    range (what binding port 0 gives) can be taken in between as the local
    end of any outgoing connection, and the server dies with EADDRINUSE.
    So the port comes from outside that range, where the kernel never puts
    a connection by itself, and no port is handed out twice by a process.
    """
    candidates = _candidates(*ephemeral_range())
    with _handed_out_lock:
        for port in random.sample(candidates, min(len(candidates), 200)):
            if port in _handed_out:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(('127.0.0.1', port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    # A kernel whose ephemeral range covers nearly every port: its choice.
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def listening(host, port):
    """Whether something accepts connections on ``host:port``."""
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def accept_until(listener, stopping, serve, poll=0.2):
    """Accept connections until ``stopping`` (an Event) is set.

    ``serve(client)`` is called with each client socket (blocking); it
    must not block for long.  Returns once the listener is closed.
    """
    listener.settimeout(poll)
    while not stopping.is_set():
        try:
            client, _address = listener.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        client.settimeout(None)
        serve(client)


def die_with_parent():
    """``preexec_fn``: the kernel kills the child when its parent dies.

    It runs in the child before exec, and covers a test runner killed by
    SIGKILL, which no cleanup of its own can.
    """
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_spawns = queue.Queue()
_spawner = None
_spawner_lock = threading.Lock()


def popen(argv, **kwargs):
    """``subprocess.Popen(argv, **kwargs)`` that dies with this process.

    The child gets :func:`die_with_parent`.  PR_SET_PDEATHSIG fires when
    the *thread* that forked the child ends, not the process: a server
    (re)started from a short-lived thread, as a fault schedule's, would be
    killed with that thread.  So every child is forked by one daemon
    thread that lives as long as this process.
    """
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawn_forever, daemon=True,
                                        name='ironic-multi-spawner')
            _spawner.start()
    future = concurrent.futures.Future()
    _spawns.put((future, argv, kwargs))
    return future.result()


def _spawn_forever():
    while True:
        future, argv, kwargs = _spawns.get()
        try:
            future.set_result(subprocess.Popen(
                argv, preexec_fn=die_with_parent, **kwargs))
        except Exception as e:
            future.set_exception(e)
