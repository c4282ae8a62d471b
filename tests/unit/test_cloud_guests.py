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


"""The cloud's fake guests: what they read, whom they let in."""

import socket
import threading
from unittest import mock

import paramiko
import pytest

from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import guests

NETWORK_DATA = {
    'links': [{'id': 'tap1', 'type': 'phy'}],
    'networks': [
        {'id': 'network0', 'link': 'tap1', 'type': 'ipv4',
         'ip_address': '192.0.2.7', 'netmask': '255.255.255.0'},
        {'id': 'network1', 'link': 'tap1', 'type': 'ipv4_dhcp'},
        {'id': 'network2', 'link': 'tap1', 'type': 'ipv6',
         'ip_address': '2001:db8::7'}],
}


def test_the_static_ipv4_addresses_are_the_guests():
    assert guests.addresses(NETWORK_DATA) == ['192.0.2.7']
    assert guests.addresses({}) == []


def test_the_public_keys_of_the_meta_data():
    meta = {'public_keys': {'login-1': 'ssh-rsa AAAAB3Nza login@host\n',
                            'broken': 'garbage'}}
    assert guests.public_keys(meta) == {('ssh-rsa', 'AAAAB3Nza')}
    assert guests.public_keys({}) == set()


@pytest.fixture
def key():
    return paramiko.RSAKey.generate(2048)


def _login(server_login, user, key):
    """Log in as ``user`` with ``key`` to a transport of ``server_login``."""
    ours, theirs = socket.socketpair()
    server = paramiko.Transport(ours)
    server.add_server_key(paramiko.RSAKey.generate(2048))
    started = threading.Thread(
        target=server.start_server, kwargs={'server': server_login},
        daemon=True)
    started.start()
    client = paramiko.Transport(theirs)
    try:
        client.connect()
        client.auth_publickey(user, key)
        return client.is_authenticated()
    finally:
        client.close()
        server.close()


def test_the_user_with_a_key_of_the_server_gets_in(key):
    login = guests.Login('cirros', {(key.get_name(), key.get_base64())})
    assert _login(login, 'cirros', key)


@pytest.mark.parametrize('user, right_key', [('cirros', False),
                                             ('root', True)])
def test_another_key_or_user_is_refused(key, user, right_key):
    login = guests.Login('cirros', {(key.get_name(), key.get_base64())})
    with pytest.raises(paramiko.AuthenticationException):
        _login(login, user,
               key if right_key else paramiko.RSAKey.generate(2048))


def test_a_logged_in_client_gets_no_shell(key):
    login = guests.Login('cirros', {(key.get_name(), key.get_base64())})
    assert login.check_channel_request('session', 1) == (
        paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED)


def test_the_cloud_takes_back_the_addresses_a_killed_guest_left():
    cloud = cloud_mod.Cloud()
    cloud.guests_label = 'lo:gtest'
    with mock.patch.object(cloud_mod.subprocess, 'run') as run:
        cloud._release()
        cloud._release()
    # Once, by the cloud's label; the second release has nothing to do.
    run.assert_called_once_with(
        ['ip', 'addr', 'flush', 'dev', 'lo', 'label', 'lo:gtest'],
        capture_output=True, check=False)
