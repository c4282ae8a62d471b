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


"""Ironic's graphical consoles, each served by a real (blank) VNC server.

Ironic's ``fake`` console container provider answers with an address no
server listens on (192.0.2.1:5900), so nothing can connect through it.
This provider, ``ironic-multi-rfb``, starts a :mod:`fake_rfb` server on
127.0.0.1 for each node whose console is started, and stops it with the
console: a VNC client, Nova's noVNC proxy among them, gets through the
RFB handshake as with a real node's console container.

:class:`~ironic_multi.testing.ironic_server.IronicServer` puts this
directory on the PYTHONPATH of the Ironic it starts; the ``dist-info``
beside this module registers the provider in ``ironic.console.container``
for ``[vnc] container_provider``.
"""

import threading

import fake_rfb
from ironic.console.container import base


class RFBConsoleContainer(base.BaseConsoleContainer):

    provider_name = 'ironic-multi-rfb'

    def __init__(self):
        self._lock = threading.Lock()
        self._servers = {}

    def start_container(self, task, app_name, app_info):
        uuid = task.node.uuid
        server = fake_rfb.Server('ironic-multi console of %s' % uuid)
        with self._lock:
            old = self._servers.pop(uuid, None)
            self._servers[uuid] = server.start()
        if old is not None:
            old.stop()
        return server.address

    def stop_container(self, task):
        with self._lock:
            server = self._servers.pop(task.node.uuid, None)
        if server is not None:
            server.stop()

    def stop_all_containers(self):
        with self._lock:
            servers, self._servers = self._servers, {}
        for server in servers.values():
            server.stop()
