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


"""Logging into a server: the cloud's fake guests.

The fake hardware boots nothing; the cloud's guests process (see
``ironic_multi/testing/cloud/guests.py``) stands in for the booted
instance, from the config drive the driver deployed: the static address
of its ``network_data.json``, the key pair of its ``meta_data.json``.  A
login by SSH with the server's key pair, on its fixed address, proves
that both reached the node as cloud-init would read them.
"""

import time

import paramiko
import pytest

from ironic_multi.testing.cloud import guests
from ironic_multi.testing.cloud import tempest

# How long a deployed server's guest may take to answer.
LOGIN_TIMEOUT = 60


def _login(address, key):
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    try:
        client.connect(address, username=guests.USER, pkey=key,
                       look_for_keys=False, allow_agent=False, timeout=10,
                       banner_timeout=10, auth_timeout=10)
    finally:
        client.close()


def _wait_for_login(address, key):
    deadline = time.monotonic() + LOGIN_TIMEOUT
    while True:
        try:
            return _login(address, key)
        except (OSError, paramiko.SSHException):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_a_server_lets_in_its_key_pair_on_its_address(cloud, servers,
                                                      tmp_path):
    if cloud.guests is None:
        pytest.skip(tempest.NO_GUESTS)
    key = paramiko.RSAKey.generate(2048)
    public = tmp_path / 'login.pub'
    public.write_text('%s %s\n' % (key.get_name(), key.get_base64()))
    cloud.openstack('keypair', 'create', '--public-key', str(public),
                    'login-1')
    try:
        server = cloud.openstack(
            'server', 'create', '--flavor', 'silver', '--image', 'cirros',
            '--network', 'baremetal', '--key-name', 'login-1',
            '--config-drive', 'True', '--wait', 'login-1')
        servers.append(server['id'])
        (address,) = [a for a in cloud.openstack(
            'server', 'show', server['id'])['addresses']['baremetal']]
        _wait_for_login(address, key)
        # Another key is refused: the guest knows the server's only.
        with pytest.raises(paramiko.AuthenticationException):
            _login(address, paramiko.RSAKey.generate(2048))
        cloud.openstack('server', 'delete', '--wait', server['id'],
                        parse=False)
        # Its node torn down, the guest is gone with its address.
        deadline = time.monotonic() + LOGIN_TIMEOUT
        while True:
            try:
                _login(address, key)
            except (OSError, paramiko.SSHException):
                break
            assert time.monotonic() < deadline, 'the guest stayed up'
            time.sleep(1)
    finally:
        cloud.openstack('keypair', 'delete', 'login-1', parse=False)
