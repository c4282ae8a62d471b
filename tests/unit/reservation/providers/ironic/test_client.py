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

import datetime
import json
import logging
import time
from unittest import mock
import urllib.parse

from ironicclient.common.apiclient import exceptions as ic_exc
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from oslo_config import fixture as config_fixture
import pytest
import requests

from ironic_multi._reservation.providers.ironic import client
from ironic_multi.conf import CONF
from ironic_multi import exception
from ironic_multi.testing import reservers


def _root(version):
    return {'default_version': {'version': version, 'min_version': '1.1'}}


@pytest.fixture
def conf():
    fixture = config_fixture.Config(CONF)
    fixture.setUp()
    fixture.config(group='ironic', **reservers.retry_options(3, 0))
    yield fixture
    fixture.cleanUp()


def make_api(*answers, version='1.115'):
    """An IronicAPI whose HTTP layer returns (or raises) ``answers``."""
    api = client.IronicAPI(CONF, session=ks_session.Session(),
                           endpoint='http://ironic.test:6385')
    api._http = mock.Mock()
    results = [(None, _root(version))] + [
        a if isinstance(a, Exception) else (None, a) for a in answers]
    api._http.json_request.side_effect = results
    api.version  # negotiate now: tests count only their own calls
    return api


def calls(api):
    """(method, url, headers, body) of every request after negotiation."""
    return [(c.args[0], c.args[1], c.kwargs['headers'], c.kwargs.get('body'))
            for c in api._http.json_request.call_args_list[1:]]


def _http_error(cls, status, message='boom'):
    return cls(message=message, http_status=status, details=message)


class TestNegotiation:

    def test_caps_at_known_maximum(self, conf):
        api = make_api(version='1.115')
        assert api.version == (1, 82)
        assert api.supports('shards') and api.supports('allocations')

    def test_older_server_falls_back(self, conf):
        api = make_api(version='1.60')
        assert api.version == (1, 60)
        assert api.supports('allocations')
        assert not api.supports('shards')
        assert not api.supports('lessee')

    def test_too_old_server_is_a_typed_error(self, conf):
        api = client.IronicAPI(CONF, session=ks_session.Session(),
                               endpoint='http://ironic.test:6385')
        api._http = mock.Mock()
        api._http.json_request.return_value = (None, _root('1.31'))
        with pytest.raises(exception.IronicVersionUnsupported) as info:
            api.version
        assert info.value.server_max == '1.31'

    def test_every_request_carries_the_version(self, conf):
        api = make_api({'uuid': 'n1'})
        api.get_node('n1')
        (_m, _u, headers, _b), = calls(api)
        assert headers['X-OpenStack-Ironic-API-Version'] == '1.82'


class TestListing:

    def test_pages_with_marker_and_keeps_filters(self, conf):
        page1 = {'nodes': [{'uuid': 'a'}, {'uuid': 'b'}],
                 'next': 'http://ironic.test/v1/nodes?limit=2&marker=b'}
        page2 = {'nodes': [{'uuid': 'c'}]}
        api = make_api(page1, page2)
        nodes = api.list_nodes(fields=['name'], page_size=2,
                               shard=['s2', 's1'], associated=False)
        assert [n['uuid'] for n in nodes] == ['a', 'b', 'c']
        queries = [urllib.parse.parse_qs(urllib.parse.urlsplit(u).query)
                   for _m, u, _h, _b in calls(api)]
        for query in queries:
            assert query['shard'] == ['s1,s2']
            assert query['associated'] == ['False']
            assert query['fields'] == ['name,uuid']
        assert 'marker' not in queries[0]
        assert queries[1]['marker'] == ['b']

    def test_a_short_page_with_a_next_link_is_not_the_last(self, conf):
        # Ironic's [api]max_limit below the page size: every page is short.
        more = 'http://ironic.test/v1/nodes?limit=2'
        api = make_api({'nodes': [{'uuid': 'a'}, {'uuid': 'b'}],
                        'next': more},
                       {'nodes': [{'uuid': 'c'}, {'uuid': 'd'}],
                        'next': more},
                       {'nodes': [{'uuid': 'e'}]})
        nodes = api.list_nodes(page_size=1000)
        assert [n['uuid'] for n in nodes] == ['a', 'b', 'c', 'd', 'e']
        assert len(calls(api)) == 3

    def test_pages_grow_up_to_a_bound(self, conf):
        more = 'http://ironic.test/v1/nodes?limit=2'
        api = make_api(*[{'nodes': [{'uuid': 'n%d' % i}], 'next': more}
                         for i in range(5)], {'nodes': []})
        nodes = list(api.iter_nodes(page_size=2, grow_to=10))
        assert len(nodes) == 5
        limits = [urllib.parse.parse_qs(urllib.parse.urlsplit(u).query)[
            'limit'] for _m, u, _h, _b in calls(api)]
        assert limits == [['2'], ['4'], ['8'], ['10'], ['10'], ['10']]

    def test_no_next_link_ends_the_listing(self, conf):
        api = make_api({'nodes': [{'uuid': 'a'}]})
        assert len(api.list_nodes(page_size=1)) == 1
        assert len(calls(api)) == 1


class TestServerTime:

    def _api(self, headers):
        api = make_api()
        api._http.json_request.side_effect = [
            (mock.Mock(headers=headers), _root('1.115'))]
        return api

    def test_the_date_header_less_the_time_the_request_took(self, conf):
        api = self._api({'Date': 'Sat, 21 Nov 2026 12:00:05 GMT'})
        with mock.patch.object(client.time, 'monotonic',
                               side_effect=[100.0, 102.5]):
            now = api.server_time()
        assert now == datetime.datetime(2026, 11, 21, 12, 0, 2, 500000)
        assert now.tzinfo is None

    @pytest.mark.parametrize('headers', [{}, {'Date': 'yesterday'}])
    def test_without_a_date_this_hosts_clock(self, conf, headers):
        api = self._api(headers)
        asked = datetime.datetime(2026, 11, 21, 12, 0, 0, 250000,
                                  tzinfo=datetime.timezone.utc)
        with mock.patch.object(client.time, 'time',
                               return_value=asked.timestamp()):
            now = api.server_time()
        assert now == asked.replace(tzinfo=None)


class TestTimeouts:

    def timeouts(self, api):
        return [c.kwargs['timeout']
                for c in api._http.json_request.call_args_list[1:]]

    def test_every_request_has_one(self, conf):
        api = make_api({'uuid': 'n1'})
        api.get_node('n1')
        assert self.timeouts(api) == [client.DEFAULT_TIMEOUT]

    def test_the_option_sets_it(self, conf):
        conf.config(timeout=7, group='ironic')
        api = make_api({'uuid': 'n1'})
        api.get_node('n1')
        assert self.timeouts(api) == [7]

    def test_the_deadline_cuts_it(self, conf):
        api = make_api({'uuid': 'n1'}, {'uuid': 'n1'})
        with api.bounded(time.monotonic() + 3):
            api.get_node('n1')
        api.patch_node('n1', [], deadline=time.monotonic() + 2)
        first, second = self.timeouts(api)
        assert 2 < first <= 3
        assert 1 < second <= 2

    def test_a_passed_deadline_sends_nothing(self, conf):
        api = make_api({'uuid': 'n1'})
        with pytest.raises(exception.IronicUnavailable):
            with api.bounded(time.monotonic() - 1):
                api.get_node('n1')
        assert calls(api) == []


class TestRetries:

    def test_unavailable_is_retried_then_succeeds(self, conf):
        api = make_api(_http_error(ic_exc.ServiceUnavailable, 503),
                       ks_exc.ConnectFailure('reset'), {'uuid': 'n1'})
        assert api.get_node('n1') == {'uuid': 'n1'}
        assert len(calls(api)) == 3

    def test_gives_up_after_max_retries(self, conf):
        api = make_api(*[_http_error(ic_exc.ServiceUnavailable, 503)] * 4)
        with pytest.raises(exception.IronicUnavailable):
            api.get_node('n1')
        assert len(calls(api)) == 4

    @pytest.mark.parametrize('error, option, delay_option', [
        (_http_error(ic_exc.ServiceUnavailable, 503),
         'status_code_retries', 'status_code_retry_delay'),
        (ks_exc.ConnectFailure('reset'),
         'connect_retries', 'connect_retry_delay'),
    ])
    def test_keystoneauths_retry_options_as_in_tree(self, conf, error,
                                                    option, delay_option):
        # Nova's in-tree driver retries through openstacksdk with these.
        conf.config(group='ironic', **{option: 1, delay_option: 0.25})
        api = make_api(*[error] * 3)
        with mock.patch.object(client.time, 'sleep') as sleep, \
                pytest.raises(exception.IronicUnavailable):
            api.get_node('n1')
        assert len(calls(api)) == 2
        sleep.assert_called_once_with(0.25)

    def test_unset_retry_options_give_two_minutes(self, conf):
        for name in reservers.retry_options(0, 0):
            conf.conf.clear_override(name, group='ironic')
        api = make_api(*[_http_error(ic_exc.ServiceUnavailable, 503)] * 61)
        with mock.patch.object(client.time, 'sleep') as sleep, \
                pytest.raises(exception.IronicUnavailable):
            api.get_node('n1')
        assert len(calls(api)) == 61
        assert sleep.call_count == 60
        assert {c.args for c in sleep.call_args_list} == {(2.0,)}

    def test_in_tree_api_options_are_no_retries(self, conf):
        # In-tree they pace and bound Nova's reads of a node's state.
        conf.config(group='ironic', api_max_retries=0, api_retry_interval=0,
                    **reservers.retry_options(1, 0))
        api = make_api(_http_error(ic_exc.ServiceUnavailable, 503),
                       {'uuid': 'n1'})
        assert api.get_node('n1') == {'uuid': 'n1'}

    def test_deadline_stops_retries(self, conf):
        conf.config(group='ironic', **reservers.retry_options(delay=1))
        api = make_api(_http_error(ic_exc.ServiceUnavailable, 503))
        with pytest.raises(exception.IronicUnavailable):
            api.patch_node('n1', [], deadline=time.monotonic() + 0.5)
        assert len(calls(api)) == 1

    def test_conflict_is_never_retried(self, conf):
        api = make_api(_http_error(ic_exc.Conflict, 409,
                                   'Node n1 is associated with instance x'))
        with pytest.raises(exception.NodeAlreadyClaimed) as info:
            api.claim_node('n1', 'inst-1', {'group': 'g'})
        assert info.value.node == 'n1'
        assert info.value.instance == 'inst-1'
        assert len(calls(api)) == 1

    def test_lost_claim_answer_is_not_repeated(self, conf):
        api = make_api(ks_exc.ConnectFailure('connection reset'))
        with pytest.raises(exception.RequestOutcomeUnknown):
            api.claim_node('n1', 'inst-1', {'group': 'g'})
        assert len(calls(api)) == 1

    def test_refused_connection_is_safe_to_repeat_for_writes(self, conf):
        api = make_api(ic_exc.ConnectionRefused('refused'), {'uuid': 'n1'})
        api.claim_node('n1', 'inst-1', {'group': 'g'})
        assert len(calls(api)) == 2

    def test_keystone_failing_to_give_a_token_is_retried(self, conf):
        """Keystone's 500 while the session gets a token.

        Its database was restarting: nova-compute died at start with an
        untyped error.
        """
        api = make_api(_http_error(ks_exc.http.InternalServerError, 500),
                       {'uuid': 'n1'})
        # Not applied: safe to repeat even for a claim.
        api.claim_node('n1', 'inst-1', {'group': 'g'})
        assert len(calls(api)) == 2

    def test_keystone_down_for_good_is_ironic_unavailable(self, conf):
        api = make_api(*[_http_error(ks_exc.http.ServiceUnavailable, 503)]
                       * 4)
        with pytest.raises(exception.IronicUnavailable) as info:
            api.get_node('n1')
        assert 'Keystone' in str(info.value)
        assert len(calls(api)) == 4

    def test_keystone_refusing_the_credentials_is_not_retried(self, conf):
        api = make_api(_http_error(ks_exc.http.Unauthorized, 401))
        with pytest.raises(exception.IronicUnavailable) as info:
            api.get_node('n1')
        assert 'cannot authenticate to Keystone' in str(info.value)
        assert len(calls(api)) == 1


class TestErrors:

    def test_missing_node(self, conf):
        api = make_api(_http_error(ic_exc.NotFound, 404))
        with pytest.raises(exception.NodeNotFound) as info:
            api.get_node('n1')
        assert info.value.node == 'n1'

    def test_other_errors_keep_status(self, conf):
        api = make_api(_http_error(ic_exc.BadRequest, 400, 'bad field'))
        with pytest.raises(exception.IronicAPIError) as info:
            api.list_nodes(fields=['nonsense'])
        assert info.value.status_code == 400
        assert 'bad field' in info.value.reason

    def test_absent_allocation_is_none(self, conf):
        api = make_api(_http_error(ic_exc.NotFound, 404),
                       _http_error(ic_exc.NotFound, 404))
        assert api.get_allocation('a1') is None
        api.delete_allocation('a1')  # idempotent: no error

    def test_claim_body(self, conf):
        api = make_api({'uuid': 'n1'})
        api.claim_node('n1', 'inst-1', {'group': 'g', 'claimer': 'm'})
        (method, url, _h, body), = calls(api)
        assert (method, url) == ('PATCH', '/v1/nodes/n1')
        # One PATCH: the instance and its ownership mark, or neither.
        assert body == [{'op': 'add', 'path': '/instance_uuid',
                         'value': 'inst-1'},
                        {'op': 'add', 'path': '/instance_info/ironic_multi',
                         'value': {'inst-1': {'group': 'g',
                                              'claimer': 'm'}}}]


class TestIronicDown:
    """A real closed port: what a service sees while Ironic is down."""

    def _closed_port(self):
        import socket
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            return sock.getsockname()[1]

    def test_bounded_calls_give_up_at_the_deadline(self, conf):
        conf.config(group='ironic', **reservers.retry_options(1000, 0.1))
        api = client.IronicAPI(
            CONF, session=ks_session.Session(),
            endpoint='http://127.0.0.1:%d' % self._closed_port())
        api._version = (1, 82)  # negotiated before Ironic went down
        started = time.monotonic()
        with api.bounded(started + 1.0):
            with pytest.raises(exception.IronicUnavailable):
                api.get_node('n1')
            with pytest.raises(exception.IronicUnavailable):
                api.claim_node('n1', 'inst-1', {'group': 'g'})
        assert time.monotonic() - started < 2.0


class TestVifs:

    def test_a_conflict_with_the_vif_attached_is_success(self, conf):
        api = make_api(_http_error(ic_exc.Conflict, 409, 'already attached'),
                       {'vifs': [{'id': 'vif-1'}]})
        api.attach_vif('n1', 'vif-1')
        assert [(m, u) for m, u, _h, _b in calls(api)] == [
            ('POST', '/v1/nodes/n1/vifs'), ('GET', '/v1/nodes/n1/vifs')]

    def test_a_locked_node_is_an_error(self, conf):
        # Was taken for "already attached": the deploy went on without
        # its port.
        api = make_api(_http_error(ic_exc.Conflict, 409,
                                   'Node n1 is locked by host h'),
                       {'vifs': []})
        with pytest.raises(exception.NodeConflict):
            api.attach_vif('n1', 'vif-1')


def _answer(status, message):
    """A requests.Response of Ironic's, with its error body."""
    response = requests.Response()
    response.status_code = status
    response.headers['Content-Type'] = 'application/json'
    response._content = json.dumps({'error_message': json.dumps(
        {'faultstring': message, 'debuginfo': None})}).encode()
    return response


class TestClientLogs:
    """ironicclient's own record of an HTTP error (its ``with_retries``).

    The real ironicclient, over a keystoneauth session that answers 409:
    a claim race, which this layer handles.
    """

    LOGGER = 'ironicclient.common.http'

    @pytest.fixture
    def api(self, conf):
        api = client.IronicAPI(CONF, session=ks_session.Session(),
                               endpoint='http://ironic.test:6385')
        api._version = (1, 82)
        answer = _answer(409, 'Node n1 is locked by host conductor-1')
        with mock.patch.object(ks_session.Session, 'request',
                               return_value=answer):
            yield api

    def _records(self, caplog):
        return [r for r in caplog.records if r.name == self.LOGGER]

    def test_a_handled_conflict_is_no_error(self, api, caplog):
        caplog.set_level(logging.DEBUG)
        with pytest.raises(exception.NodeConflict, match='locked by host'):
            api.patch_node('n1', [])
        (record,) = self._records(caplog)
        # Kept for debugging, as DEBUG.
        assert record.getMessage().startswith(
            'Error contacting Ironic server')
        assert (record.levelno, record.levelname) == (logging.DEBUG,
                                                      'DEBUG')
        assert not [r for r in caplog.records
                    if r.levelno >= logging.ERROR]

    def test_without_debug_it_is_not_logged(self, api, caplog):
        caplog.set_level(logging.INFO)
        with pytest.raises(exception.NodeConflict):
            api.patch_node('n1', [])
        assert self._records(caplog) == []

    def test_other_users_of_the_client_keep_their_errors(self, api,
                                                         caplog):
        # The filter is this layer's: a call that does not go through
        # IronicAPI's requests is logged as ironicclient logs it.
        caplog.set_level(logging.INFO)
        with pytest.raises(ic_exc.Conflict):
            api._http.json_request('PATCH', '/v1/nodes/n1', body=[])
        (record,) = self._records(caplog)
        assert record.levelno == logging.ERROR
        assert len([f for f in logging.getLogger(self.LOGGER).filters
                    if isinstance(f, client._HandledHere)]) == 1
