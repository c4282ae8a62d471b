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

"""Which etcd events wake the member watch, and how it outlives etcd.

The watch on a real etcd: ``tests/functional/test_member_watch.py``.
"""

import json
import threading

from ironic_multi._reservation import member_watch


def test_joins_and_leaves_wake_it_payload_updates_do_not():
    assert member_watch.membership_changed({'type': 'DELETE', 'kv': {}})
    # etcd's JSON gateway writes int64 fields as strings.
    assert member_watch.membership_changed({'kv': {'version': '1'}})
    assert not member_watch.membership_changed({'kv': {'version': '2'}})
    assert not member_watch.membership_changed({})


def test_the_range_covers_the_prefix():
    assert member_watch._range_end(b'tooz/groups/g/') == b'tooz/groups/g0'


class _Response(object):
    ok = True

    def __init__(self, lines):
        self.lines = lines
        self.closed = False

    def raise_for_status(self):
        pass

    def iter_lines(self):
        return iter(self.lines)

    def close(self):
        self.closed = True


class _Session(object):
    """Fails ``failures`` times, then streams ``lines`` once."""

    def __init__(self, failures, lines):
        self.failures = failures
        self.lines = lines
        self.posts = []

    def post(self, url, json=None, stream=False, timeout=None):
        self.posts.append(json)
        if len(self.posts) <= self.failures:
            raise ConnectionError('etcd is away')
        return _Response(self.lines if len(self.posts) == self.failures + 1
                         else [])


class _Membership(object):
    def __init__(self, session):
        self.session = session

    def watch_target(self):
        return self.session, 'http://etcd/v3/watch', b'tooz/groups/g/'


def _watch_until(session, on_change, event, on_payload=None):
    """Watch ``session``'s stream until ``event`` is set; then stop."""
    watch = member_watch.MemberWatch(_Membership(session), on_change,
                                     on_payload=on_payload)
    watch.start()
    try:
        assert event.wait(5)
    finally:
        watch.stop()
    watch._thread.join(5)
    assert not watch._thread.is_alive()


def test_it_watches_again_after_etcd_went_away(monkeypatch, caplog):
    monkeypatch.setattr(member_watch, 'RETRY', 0.01)
    lines = [b'', json.dumps({'result': {'created': True}}).encode(),
             json.dumps({'result': {'events': [
                 {'kv': {'version': '3'}}]}}).encode(),
             json.dumps({'result': {'events': [
                 {'type': 'DELETE', 'kv': {}}]}}).encode()]
    session = _Session(failures=3, lines=lines)
    woken = threading.Event()
    _watch_until(session, woken.set, woken)
    assert session.posts[0] == {'create_request': {
        'key': 'dG9vei9ncm91cHMvZy8=', 'range_end': 'dG9vei9ncm91cHMvZzA='}}
    # One warning for the three failures in a row.
    warned = [r for r in caplog.records
              if 'The watch on the coordination group ended' in r.message]
    assert len(warned) == 1


def test_a_failed_refresh_keeps_the_stream(caplog):
    lines = [json.dumps({'result': {'events': [
        {'type': 'DELETE', 'kv': {}}]}}).encode()] * 2
    session = _Session(failures=0, lines=lines)
    # The stream each call came in: how many were opened by then.
    calls = []
    done = threading.Event()

    def refresh():
        calls.append(len(session.posts))
        if len(calls) == 2:
            done.set()
        else:
            raise RuntimeError('Ironic is away')

    _watch_until(session, refresh, done)
    assert calls == [1, 1]
    assert any('Following a join or a leave' in r.message
               for r in caplog.records)


def test_a_payload_update_wakes_the_payload_follower_only():
    update = json.dumps({'result': {'events': [
        {'kv': {'version': '7'}}]}}).encode()
    leave = json.dumps({'result': {'events': [
        {'type': 'DELETE', 'kv': {}}]}}).encode()
    session = _Session(failures=0, lines=[update, update, leave])
    seen = []
    done = threading.Event()

    def left():
        seen.append('ring')
        done.set()

    _watch_until(session, left, done,
                 on_payload=lambda: seen.append('payload'))
    assert seen == ['payload', 'payload', 'ring']


def test_it_is_streaming_only_while_the_stream_is_up():
    session = _Session(failures=0, lines=[])
    watch = member_watch.MemberWatch(_Membership(session), lambda: None)
    assert not watch.streaming
    watch._response = _Response([])
    assert watch.streaming
