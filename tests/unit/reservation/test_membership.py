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

"""Membership over ``file://``: a real tooz driver, no server."""

import concurrent.futures
import subprocess
import sys
import time
import typing
import urllib.parse

from oslo_config import fixture as config_fixture
import pytest
from tooz import coordination
from tooz.drivers import file as file_driver
from tooz import locking

from ironic_multi._reservation import leader
from ironic_multi._reservation import membership
from ironic_multi import conf
from ironic_multi import exception


@pytest.fixture
def url(tmp_path):
    # The synchronous executor: the threaded one takes a second to stop.
    return 'file://%s?executor=sync' % tmp_path


@pytest.fixture
def members(url):
    started = []

    def start(host, **kwargs):
        member = membership.Membership(url, 'group', 5, host=host, **kwargs)
        started.append(member)
        member.start()
        return member

    yield start
    for member in started:
        member.stop()


@pytest.mark.parametrize('url, expected', [
    ('file:///d', 'file:///d?timeout=7'),
    ('file:///d?timeout=2', 'file:///d?timeout=2'),
    ('redis://h:6379?db=1',
     'redis://h:6379?db=1&membership_timeout=7&lock_timeout=7'),
    ('etcd3+http://h:2379',
     'etcd3+http://h:2379?membership_timeout=7&lock_timeout=7'),
    ('etcd3+http://h?membership_timeout=1&lock_timeout=2',
     'etcd3+http://h?membership_timeout=1&lock_timeout=2'),
    ('zookeeper://h:2181', 'zookeeper://h:2181?timeout=7'),
])
def test_backend_url_sets_the_timeout_once(url, expected):
    assert membership.backend_url(url, 7) == expected


def test_redact_hides_passwords():
    assert membership.redact('redis://:s3cret@h:6379') == 'redis://:***@h:6379'
    assert 's3cret' not in membership.redact('redis://h?password=s3cret')


def test_member_ids_are_unique_and_keep_the_host():
    first, second = (membership.make_member_id('a:b') for _ in range(2))
    assert first != second
    assert membership.host_of(first) == membership.host_of(second) == 'a:b'


def test_defaults_come_from_the_configuration(tmp_path):
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    try:
        fixture.config(coordination_url='file://%s' % tmp_path,
                       coordination_group='g1', membership_timeout=9,
                       group='ironic_multi')
        member = membership.Membership.from_conf(conf.CONF, host='h')
        assert member.url == 'file://%s?timeout=9' % tmp_path
        assert member.group == 'g1'
        assert member.host == 'h'
    finally:
        fixture.cleanUp()


def test_members_see_joins_and_leaves(members):
    first, second = members('a'), members('b')
    assert first.members() == second.members() == {first.member_id,
                                                   second.member_id}
    second.stop()
    second.stop()
    assert first.members() == {first.member_id}


def test_namesakes_are_the_other_members_under_the_host_name(members):
    first, second, other = members('a'), members('a'), members('b')
    assert first.namesakes() == [second.member_id]
    assert other.namesakes() == []
    second.stop()
    assert first.namesakes() == []


def test_published_payloads(url, members):
    # Published before the start: sent with the join.
    first = membership.Membership(url, 'group', 5, host='a')
    first.publish({'CUSTOM_GOLD': 3})
    first.start()
    try:
        second = members('b')
        second.publish({'CUSTOM_GOLD': 1})
        assert second.published() == {first.member_id: {'CUSTOM_GOLD': 3},
                                      second.member_id: {'CUSTOM_GOLD': 1}}
        first.publish({'CUSTOM_GOLD': 2, 'CUSTOM_TIN': [1, 2]})
        assert second.published()[first.member_id] == {
            'CUSTOM_GOLD': 2, 'CUSTOM_TIN': [1, 2]}
    finally:
        first.stop()
    assert list(second.published()) == [second.member_id]


def test_only_json_is_published(members):
    with pytest.raises(TypeError):
        members('a').publish({'when': object()})


def test_a_dropped_member_joins_again(members):
    first, second = members('a'), members('b')
    first.publish({'n': 1})
    # What the backend does to a member that missed its heartbeats.
    first._coordinator.leave_group(b'group').get()
    assert second.members() == {second.member_id}
    assert first.members() == {first.member_id, second.member_id}
    assert second.members() == {first.member_id, second.member_id}
    assert second.published()[first.member_id] == {'n': 1}


def test_unusable_backend_is_unavailable(tmp_path):
    not_a_dir = tmp_path / 'file'
    not_a_dir.write_text('')
    member = membership.Membership('file://%s' % not_a_dir, 'g', 5)
    with pytest.raises(exception.CoordinationUnavailable) as raised:
        member.start()
    assert raised.value.url == 'file://%s?timeout=5' % not_a_dir
    with pytest.raises(exception.CoordinationUnavailable):
        member.members()


# Holds tooz's file driver lock, as a member stopped inside a call would.
_HOLD_DRIVER_LOCK = """
import sys, time, fasteners
lock = fasteners.InterProcessLock(sys.argv[1])
lock.acquire()
print('held', flush=True)
time.sleep(60)
"""


def test_a_stalled_backend_call_ends_within_the_timeout(tmp_path):
    # The threaded executor, as services run it: the wait can be bounded.
    member = membership.Membership('file://%s' % tmp_path, 'g', 1)
    member.start()
    holder = subprocess.Popen(
        [sys.executable, '-c', _HOLD_DRIVER_LOCK,
         str(tmp_path / '.driver_lock')], stdout=subprocess.PIPE, text=True)
    calls = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        assert holder.stdout.readline() == 'held\n'
        started = time.monotonic()
        # Bounded here too: without a bound of its own, the call waits for
        # the holder's 60 s.
        call = calls.submit(member.members)
        with pytest.raises(exception.CoordinationUnavailable) as raised:
            call.result(timeout=10)
        assert time.monotonic() - started < 3
        assert 'no answer within 1 s' in str(raised.value)
    finally:
        holder.kill()
        holder.wait()
        calls.shutdown()
        member.stop()


def test_an_error_without_text_is_named(tmp_path):
    # etcd3gw's connection errors carry no text: the class says something.
    member = membership.Membership('file://%s' % tmp_path, 'g', 5)

    class ConnectionFailedError(Exception):
        pass

    with pytest.raises(exception.CoordinationUnavailable) as raised:
        with member._translated('listing members of g',
                                errors=(ConnectionFailedError,)):
            raise ConnectionFailedError()
    assert str(raised.value).endswith(
        'listing members of g: ConnectionFailedError')


def test_unknown_backend_is_a_configuration_error():
    with pytest.raises(exception.ConfigInvalid):
        membership.Membership('nosuch://h', 'g', 5).start()


def test_unknown_backend_names_the_scheme_and_the_known_ones():
    with pytest.raises(exception.ConfigInvalid) as raised:
        membership.Membership('nosuch://h', 'g', 5).start()
    assert 'no tooz driver for "nosuch" (installed: ' in str(raised.value)
    assert 'redis' in raised.value.cause


def test_check_backend_reads_a_working_backend(url, tmp_path):
    membership.check_backend(url, timeout=5)
    # It joined nothing and made no group.
    checker = membership.Membership(url, 'g', 5)
    checker.start()
    try:
        assert checker._client().get_groups().get() == [b'g']
    finally:
        checker.stop()


def test_check_backend_without_a_driver_is_a_configuration_error():
    with pytest.raises(exception.ConfigInvalid) as raised:
        membership.check_backend('bogus://user:secret@x', timeout=1)
    assert raised.value.url == 'bogus://user:***@x'
    assert 'secret' not in str(raised.value)
    assert raised.value.cause.startswith('no tooz driver for "bogus"')


def test_check_backend_refused_names_the_cause():
    # Nothing listens on port 1: refused at once.
    started = time.monotonic()
    with pytest.raises(exception.CoordinationUnavailable) as raised:
        membership.check_backend('redis://:secret@127.0.0.1:1', timeout=5)
    assert time.monotonic() - started < 5
    assert raised.value.url == 'redis://:***@127.0.0.1:1'
    assert 'refused' in raised.value.reason.lower()
    assert 'secret' not in str(raised.value)


def test_check_backend_that_does_not_answer_is_bounded():
    # A listening socket that never answers: connected, then silence.
    import socket
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        started = time.monotonic()
        with pytest.raises(exception.CoordinationUnavailable) as raised:
            membership.check_backend('redis://127.0.0.1:%d' % port,
                                     timeout=1)
        assert time.monotonic() - started < 3
        assert raised.value.reason == 'no answer within 1 s'
    finally:
        server.close()


# Nothing listens on port 1: had anything been tried, it would be refused.
@pytest.mark.parametrize('url', [
    'mysql://user:secret@127.0.0.1:1/tooz',
    'postgresql://user:secret@127.0.0.1:1/tooz',
])
@pytest.mark.parametrize('check', ['start', 'check_backend'])
def test_a_driver_without_groups_is_a_configuration_error(url, check):
    """tooz's database drivers have locks but no group membership."""
    with pytest.raises(exception.ConfigInvalid) as raised:
        if check == 'start':
            membership.Membership(url, 'g', 5).start()
        else:
            membership.check_backend(url, timeout=5)
    scheme = url.split(':')[0]
    assert raised.value.cause == (
        'the "%s" tooz driver has no group membership (use etcd3+http, '
        'redis, zookeeper, memcached or file)' % scheme)
    assert 'secret' not in str(raised.value)


class _AskNobodyLock(locking.Lock):
    """A lock that cannot say whether it is still held (tooz's IPC one)."""

    def acquire(self, blocking=True, shared=False):
        return True

    def release(self):
        return True


class _AskNobodyDriver(file_driver.FileDriver):
    """Groups, as tooz's IPC driver, and locks that cannot tell."""

    def get_lock(self, name: bytes) -> _AskNobodyLock:
        return _AskNobodyLock(name)


def test_a_driver_whose_locks_cannot_tell_is_a_configuration_error(
        monkeypatch, tmp_path):
    """Every leader would stand down at its first check: no housekeeping.

    tooz's ipc:// driver is such a one; its sysv_ipc is not installed
    here, so a driver of the same shape stands in for it.
    """
    def get_coordinator(url, member_id):
        return _AskNobodyDriver(member_id, urllib.parse.urlparse(
            'file://%s' % tmp_path), {})

    monkeypatch.setattr(membership.coordination, 'get_coordinator',
                        get_coordinator)
    with pytest.raises(exception.ConfigInvalid) as raised:
        membership.Membership('ipc://', 'g', 5).start()
    assert raised.value.cause == (
        'the "ipc" tooz driver cannot tell a member whether it still holds '
        'a lock, so no member could lead housekeeping (use etcd3+http, '
        'redis, zookeeper, memcached or file)')


@pytest.mark.parametrize('url', [
    'file:///nowhere', 'redis://127.0.0.1:1', 'etcd3+http://127.0.0.1:1',
    'zookeeper://127.0.0.1:1',
])
def test_the_drivers_installed_can_tell_who_holds_a_lock(url):
    """The check reads real tooz drivers' annotations, not a list."""
    coordinator = coordination.get_coordinator(url, b'member')
    assert typing.get_type_hints(type(coordinator).get_lock)['return']
    assert not leader.cannot_tell_owner(coordinator)
