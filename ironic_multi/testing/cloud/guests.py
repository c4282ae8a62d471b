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


"""The fake hardware's guests: a login for each deployed node.

Fake hardware boots nothing, and tempest's tests that log into a server
(``[validation] run_validation``) wait for an SSH server on its address.
This process plays the part of the booted instance, from what the driver
deployed, as cloud-init reads it from the config drive: for each node
Ironic holds ``active`` and powered on with an instance,

- the static IPv4 addresses of ``network_data.json`` are brought up on
  the loopback device (``/32``, under a label of this cloud's own) for as
  long as the guest runs;
- an SSH server listens on port 22 of each, and lets in ``--user`` with a
  key of ``meta_data.json``'s ``public_keys``.  It offers no shell and runs
  no command: a login is all it proves.

The nodes are read from Ironic's database every ``--interval`` seconds (the
config drive is masked by Ironic's API).  A node that leaves ``active``,
is powered off, or gets another instance stops its guest.  On SIGTERM
every address comes off the loopback device again.  Adding addresses
takes root: :class:`~ironic_multi.testing.cloud.Cloud` starts this process
only when it runs as root (:func:`can_run`).

Usage: ``python -m ironic_multi.testing.cloud.guests --db-url URL --label
LABEL [--user NAME] [--interval SECONDS]``
"""

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import paramiko
import sqlalchemy as sa

from ironic_multi.testing import _ironic_db

LOG = logging.getLogger('guests')
# Who logs in: the default user of the cloud's image (cirros).
USER = 'cirros'
# What the log says once the guests follow Ironic.
READY = 'guests ready'
# The deployed instances' files, as cloud-init reads them.
META_DATA = '/openstack/latest/meta_data.json'
NETWORK_DATA = '/openstack/latest/network_data.json'
SSH_PORT = 22
# A client that connected and said nothing is let go after this long.
LOGIN_TIMEOUT = 30


def can_run():
    """Whether this machine lets the cloud start its guests (root, ip)."""
    return os.geteuid() == 0 and shutil.which('ip') is not None


def addresses(network_data):
    """The static IPv4 addresses of a ``network_data.json`` document."""
    return sorted({network['ip_address']
                   for network in network_data.get('networks', ())
                   if network.get('type') == 'ipv4'
                   and network.get('ip_address')})


def public_keys(meta_data):
    """``{(type, base64)}`` of a ``meta_data.json``'s ``public_keys``."""
    keys = set()
    for line in (meta_data.get('public_keys') or {}).values():
        fields = line.split()
        if len(fields) >= 2:
            keys.add((fields[0], fields[1]))
    return keys


class Login(paramiko.ServerInterface):
    """``user`` with one of ``keys`` (``{(type, base64)}``), and no more."""

    def __init__(self, user, keys):
        self._user = user
        self._keys = keys

    def get_allowed_auths(self, username):
        return 'publickey'

    def check_auth_publickey(self, username, key):
        if (username == self._user
                and (key.get_name(), key.get_base64()) in self._keys):
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        # No shell, no command: a login is all a guest proves.
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED


class Guest(object):
    """The guest of one deployed node: its addresses and SSH servers."""

    def __init__(self, node, instance, addresses, user, keys, host_key,
                 label):
        self.node = node
        self.instance = instance
        self.addresses = addresses
        self._user = user
        self._keys = keys
        self._host_key = host_key
        self._label = label
        self._sockets = []

    def boot(self):
        for address in self.addresses:
            _ip('addr', 'replace', '%s/32' % address, 'dev', 'lo', 'label',
                self._label)
            listener = socket.create_server((address, SSH_PORT))
            self._sockets.append(listener)
            threading.Thread(target=self._serve, args=(listener,),
                             daemon=True).start()
        LOG.info('node %s: instance %s answers SSH on %s', self.node,
                 self.instance, ', '.join(self.addresses))

    def shut_down(self):
        for listener in self._sockets:
            listener.close()
        for address in self.addresses:
            _ip('addr', 'del', '%s/32' % address, 'dev', 'lo', check=False)
        LOG.info('node %s: instance %s is down', self.node, self.instance)

    def _serve(self, listener):
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # shut down
            threading.Thread(target=self._session, args=(connection,),
                             daemon=True).start()

    def _session(self, connection):
        transport = paramiko.Transport(connection)
        try:
            transport.add_server_key(self._host_key)
            transport.start_server(server=Login(self._user, self._keys))
            deadline = time.monotonic() + LOGIN_TIMEOUT
            while transport.is_active() and not transport.is_authenticated():
                if time.monotonic() > deadline:
                    return
                time.sleep(0.1)
            # Logged in: held open until the client closes it.
            while transport.is_active():
                transport.accept(1)
        except (paramiko.SSHException, EOFError, OSError) as e:
            LOG.debug('node %s: session ended: %s', self.node, e)
        finally:
            transport.close()


def _ip(*args, check=True):
    subprocess.run(['ip'] + list(args), check=check, capture_output=True)


class Guests(object):
    """Every deployed node's guest, kept in step with Ironic's database."""

    def __init__(self, db_url, user, label):
        self._engine = sa.create_engine(db_url)
        self._nodes = sa.Table('nodes', sa.MetaData(),
                               autoload_with=self._engine)
        self._user = user
        self._label = label
        self._host_key = paramiko.RSAKey.generate(2048)
        self._running = {}

    def deployed(self):
        """``{node uuid: (instance uuid, instance_info)}`` of live nodes."""
        nodes = self._nodes
        query = sa.select(
            nodes.c.uuid, nodes.c.instance_uuid, nodes.c.instance_info).where(
                nodes.c.provision_state == 'active',
                nodes.c.power_state == 'power on',
                nodes.c.instance_uuid.isnot(None))
        with self._engine.connect() as conn:
            return {uuid: (instance, json.loads(info or '{}'))
                    for uuid, instance, info in conn.execute(query)}

    def step(self):
        deployed = self.deployed()
        for node, guest in list(self._running.items()):
            if deployed.get(node, (None,))[0] != guest.instance:
                self._running.pop(node).shut_down()
        for node, (instance, info) in deployed.items():
            if node not in self._running:
                guest = self._guest(node, instance, info)
                if guest is not None:
                    guest.boot()
                    self._running[node] = guest

    def _guest(self, node, instance, info):
        drive = info.get('configdrive')
        if not isinstance(drive, str):
            LOG.warning('node %s: instance %s has no config drive: no '
                        'guest', node, instance)
            return None
        meta = json.loads(_ironic_db.config_drive_file(drive, META_DATA))
        network = json.loads(_ironic_db.config_drive_file(drive,
                                                          NETWORK_DATA))
        keys = public_keys(meta)
        found = addresses(network)
        if not found:
            LOG.warning('node %s: instance %s has no static address: no '
                        'guest', node, instance)
            return None
        return Guest(node, instance, found, self._user, keys,
                     self._host_key, self._label)

    def shut_down(self):
        for guest in self._running.values():
            guest.shut_down()
        self._running.clear()


def main(argv=None):
    parser = argparse.ArgumentParser(prog='guests')
    parser.add_argument('--db-url', required=True)
    parser.add_argument('--user', default=USER)
    parser.add_argument('--label', required=True,
                        help='label of the loopback addresses (lo:...)')
    parser.add_argument('--interval', type=float, default=1.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format='%(asctime)s %(levelname)s %(message)s')
    logging.getLogger('paramiko').setLevel(logging.WARNING)
    guests = Guests(args.db_url, args.user, args.label)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    LOG.info(READY)
    try:
        while not stopping.is_set():
            try:
                guests.step()
            except Exception:
                LOG.exception('cannot follow the deployed nodes')
            stopping.wait(args.interval)
    finally:
        guests.shut_down()


if __name__ == '__main__':
    main()
