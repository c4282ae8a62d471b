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

"""The fault-injecting proxy, in front of the real Ironic.

Each fault is proven by its effect on both sides: what the client got, and
whether the change reached Ironic.
"""

import http.server
import threading
import time
import uuid

import pytest
import requests

from ironic_multi._reservation.providers.ironic import client
from ironic_multi.testing import fault_proxy
from ironic_multi.testing import ironic_server as server_lib
from ironic_multi.testing import reservers

NODE_PATH = r'^/v1/nodes/[^/?]+$'


@pytest.fixture
def proxy(ironic_server):
    with fault_proxy.FaultProxy(ironic_server.endpoint) as proxy:
        yield proxy


@pytest.fixture
def session():
    with requests.Session() as session:
        session.headers.update(server_lib.API_HEADERS)
        yield session


def _claim(session, proxy, node):
    """PATCH a new instance_uuid onto ``node``; returns it and the answer."""
    instance = str(uuid.uuid4())
    answer = session.patch(
        '%s/v1/nodes/%s' % (proxy.endpoint, node), timeout=10,
        json=[{'op': 'add', 'path': '/instance_uuid', 'value': instance}])
    return instance, answer


def test_pass_through_keeps_the_connection_alive(proxy, ironic, session):
    node = ironic.enroll_nodes(1)[0]

    codes = [session.get(proxy.endpoint + '/v1/nodes/' + node,
                         timeout=10).status_code for _ in range(25)]
    # A chunked request body.
    chunks = iter([b'[{"op": "add", "path": "/extra/a", ',
                   b'"value": "b"}]'])
    patched = session.patch(proxy.endpoint + '/v1/nodes/' + node,
                            data=chunks, timeout=10,
                            headers={'Content-Type': 'application/json'})

    assert codes == [200] * 25
    assert patched.status_code == 200
    assert ironic.get_node(node)['extra'] == {'a': 'b'}
    assert proxy.connections == 1
    assert len(proxy.seen) == 26
    assert {(s.fault, s.status, s.upstream_status) for s in proxy.seen} == {
        (None, 200, 200)}
    assert proxy._listener.getsockname()[0] == '127.0.0.1'


def test_stall_times_the_client_out(proxy, ironic, session):
    node = ironic.enroll_nodes(1)[0]
    fault = proxy.add_fault('stall', method='GET', path=NODE_PATH)

    started = time.monotonic()
    with pytest.raises(requests.ReadTimeout):
        session.get(proxy.endpoint + '/v1/nodes/' + node, timeout=1)
    assert time.monotonic() - started < 5
    [seen] = proxy.seen
    assert (seen.method, seen.target, seen.fault) == (
        'GET', '/v1/nodes/' + node, 'stall')
    assert (seen.status, seen.upstream_status) == (None, None)

    proxy.remove_fault(fault)
    answer = session.get(proxy.endpoint + '/v1/nodes/' + node, timeout=10)
    assert answer.status_code == 200


def test_drop_answer_loses_an_applied_claim(proxy, ironic, session):
    node = ironic.enroll_nodes(1)[0]
    proxy.add_fault('drop_answer', method='PATCH', path=NODE_PATH)

    with pytest.raises(requests.ConnectionError):
        _claim(session, proxy, node)

    [seen] = proxy.seen
    assert (seen.fault, seen.status, seen.upstream_status) == (
        'drop_answer', None, 200)
    assert ironic.get_node(node)['instance_uuid'] is not None


def test_status_503_is_not_forwarded(proxy, ironic, session):
    node = ironic.enroll_nodes(1)[0]
    proxy.add_fault('status_503', method='PATCH')

    _instance, answer = _claim(session, proxy, node)

    assert answer.status_code == 503
    [seen] = proxy.seen
    assert (seen.fault, seen.status, seen.upstream_status) == (
        'status_503', 503, None)
    assert ironic.get_node(node)['instance_uuid'] is None
    # The connection stays usable.
    assert session.get(proxy.endpoint + '/v1/nodes/' + node,
                       timeout=10).status_code == 200
    assert proxy.connections == 1


def test_reset_is_a_connection_error_and_not_applied(proxy, ironic,
                                                     session):
    node = ironic.enroll_nodes(1)[0]
    proxy.add_fault('reset', method='PATCH', path=NODE_PATH)

    with pytest.raises(requests.ConnectionError) as error:
        _claim(session, proxy, node)

    assert 'reset' in str(error.value).lower()
    assert [s.fault for s in proxy.seen] == ['reset']
    assert ironic.get_node(node)['instance_uuid'] is None


def test_delay_answers_late(proxy, ironic, session):
    node = ironic.enroll_nodes(1)[0]
    proxy.add_fault('delay', method='GET', seconds=1.0)

    started = time.monotonic()
    answer = session.get(proxy.endpoint + '/v1/nodes/' + node, timeout=10)

    assert answer.status_code == 200
    assert time.monotonic() - started >= 1.0
    assert [(s.fault, s.status) for s in proxy.seen] == [('delay', 200)]


def test_faults_match_method_path_and_count(proxy, ironic, session):
    node = ironic.enroll_nodes(1)[0]
    fault = proxy.add_fault('status_503', method='GET', path=NODE_PATH,
                            count=2)
    url = proxy.endpoint + '/v1/nodes/' + node

    codes = [session.get(proxy.endpoint + '/v1/nodes', timeout=10),
             session.get(url, timeout=10),
             session.patch(url, timeout=10, json=[
                 {'op': 'add', 'path': '/extra/x', 'value': 1}]),
             session.get(url, timeout=10),
             session.get(url, timeout=10)]

    assert [c.status_code for c in codes] == [200, 503, 200, 503, 200]
    assert [s.fault for s in proxy.seen] == [
        None, 'status_503', None, 'status_503', None]
    assert (fault.applied, fault.remaining) == (2, 0)


def test_faults_match_the_body(proxy, ironic, session):
    """One instance's claim is picked out among the others' writes."""
    node, other = ironic.enroll_nodes(2)
    instance = str(uuid.uuid4())
    fault = proxy.add_fault('status_503', method='PATCH', body=instance)

    _other_instance, first = _claim(session, proxy, other)
    second = session.patch(
        '%s/v1/nodes/%s' % (proxy.endpoint, node), timeout=10,
        json=[{'op': 'add', 'path': '/instance_uuid', 'value': instance}])

    assert (first.status_code, second.status_code) == (200, 503)
    assert [s.fault for s in proxy.seen] == [None, 'status_503']
    assert ironic.get_node(node)['instance_uuid'] is None
    assert fault.applied == 1


def test_ironic_api_retries_503_transparently(proxy, ironic):
    node = ironic.enroll_nodes(1)[0]
    api = client.IronicAPI(reservers.make_conf(
        proxy.endpoint, ironic=reservers.retry_options(delay=0)))
    api.version  # negotiated before the fault: only node lists get it
    proxy.add_fault('status_503', method='GET', path=r'^/v1/nodes\b',
                    count=2)

    nodes = api.list_nodes(fields=['uuid'])

    assert [n['uuid'] for n in nodes] == [node]
    assert [s.status for s in proxy.seen
            if s.target.startswith('/v1/nodes')] == [503, 503, 200]


def test_stop_ends_a_stalled_request_quickly(ironic_server):
    proxy = fault_proxy.FaultProxy(ironic_server.endpoint)
    proxy.setUp()
    proxy.add_fault('stall')
    outcome = []

    def request():
        try:
            requests.get(proxy.endpoint + '/v1', timeout=30)
            outcome.append('answered')
        except requests.ConnectionError:
            outcome.append('connection error')

    thread = threading.Thread(target=request)
    thread.start()
    deadline = time.monotonic() + 10
    while not proxy.seen and time.monotonic() < deadline:
        time.sleep(0.02)
    started = time.monotonic()
    proxy.cleanUp()
    thread.join(10)

    assert time.monotonic() - started < 3
    assert outcome == ['connection error']
    assert not [t for t in proxy._threads if t.is_alive()]


class _ChunkedHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def do_POST(self):
        body = self.rfile.read(int(self.headers['Content-Length']))
        self.send_response(200)
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        for chunk in (body, b'-', body):
            self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
        self.wfile.write(b'0\r\n\r\n')

    def log_message(self, *args):
        pass


def test_chunked_answers_on_a_kept_alive_connection():
    # Ironic's answers all have a Content-Length; a small local server
    # sends chunked ones.
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                             _ChunkedHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        target = 'http://127.0.0.1:%d' % server.server_address[1]
        with fault_proxy.FaultProxy(target) as proxy, \
                requests.Session() as session:
            bodies = [session.post(proxy.endpoint + '/echo', data=b'ab%d' % i,
                                   timeout=10).content for i in range(3)]
            assert bodies == [b'ab0-ab0', b'ab1-ab1', b'ab2-ab2']
            assert proxy.connections == 1
    finally:
        server.shutdown()
        server.server_close()
