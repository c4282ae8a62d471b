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

"""Operator requests through the coordination group (file://)."""

import threading

import pytest

from ironic_multi._reservation import board
from ironic_multi._reservation import housekeeper
from ironic_multi._reservation import membership
from ironic_multi._reservation import ring
from ironic_multi.testing import reservers
from ironic_multi.testing import static_nodes


@pytest.fixture
def services(tmp_path):
    """Two started Reservers on one static inventory, and an operator."""
    inventory = static_nodes.StaticInventory(tmp_path / 'nodes')
    inventory.add_nodes(4, 'gold')
    started = []

    def start(host):
        reserver = reservers.build_reserver(
            None, host, coordination_url='file://%s' % (tmp_path / 'c'),
            node_provider='static', static_inventory=inventory.path)
        reserver.start(background=False)
        started.append(reserver)
        return reserver

    operator = membership.Membership('file://%s' % (tmp_path / 'c'),
                                     'ironic-multi', 5,
                                     host=membership.OPERATOR_PREFIX + 'cli')
    operator.start()
    yield start, operator
    operator.stop()
    for reserver in started:
        reserver.stop()


def test_operators_own_no_shard(services):
    start, operator = services
    a = start('a')
    a.refresh()
    assert a.ring.hosts == {'a'}
    assert a.owned_shards()


def test_requests_are_served_once_by_the_hosts_they_name(services):
    start, operator = services
    a, b = start('a'), start('b')
    requester = board.Requester(operator)
    everyone = requester.ask('flush')
    only_b = requester.ask('flush', host='b')
    unknown = requester.ask('nonsense', host='a')

    for reserver in (a, b, a, b):
        reserver.serve_requests()

    answers = requester.answers(everyone, expected={'a', 'b'}, timeout=5)
    assert set(answers) == {'a', 'b'}
    assert all('read' in answer['result'] for answer in answers.values())
    assert set(requester.answers(only_b, timeout=5)) == {'b'}
    assert requester.answers(unknown, timeout=5)['a']['error'] == (
        'unknown request nonsense')
    # Served once: a second pass publishes nothing new.
    assert len(a.desk.answers) == 2


def test_an_answer_is_not_taken_back_by_an_older_list(services):
    # Two requests end at once; the thread of the first one reaches the
    # publishing last, with the list of answers it saw.  .ci/run saw the
    # operator wait 5 s for answers that were served.
    start, operator = services
    a = start('a')
    first = {'id': 'first', 'host': 'a', 'result': {}}
    second = {'id': 'second', 'host': 'a', 'result': {}}
    a.desk.answers = [first, second]
    a.desk._on_answer([first])
    requester = board.Requester(operator)
    assert set(requester.answers('second', timeout=2, poll=0.1)) == {'a'}
    assert set(requester.answers('first', timeout=2, poll=0.1)) == {'a'}


def test_a_request_that_fails_unexpectedly_is_answered(services, caplog):
    start, operator = services
    a = start('a')

    def broken(request):
        raise KeyError('pool')

    a.add_request_handler('flush', broken)
    requester = board.Requester(operator)
    asked = requester.ask('flush', host='a')

    a.serve_requests()

    answer = requester.answers(asked, timeout=5)['a']
    assert 'result' not in answer
    assert "KeyError: 'pool'" in answer['error']
    assert 'see its log' in answer['error']
    assert 'Traceback' in caplog.text and 'broken' in caplog.text
    # Served once, all the same.
    a.serve_requests()
    assert len(a.desk.answers) == 1


def test_a_long_request_holds_up_no_other(services):
    """A pool flush is answered while a housekeeping pass asked for runs.

    The periodic serves requests again only once its last run returned:
    a run that waits for the pass would hold every request back with it.
    """
    start, operator = services
    a = start('a')
    in_pass, end_pass = threading.Event(), threading.Event()

    def long_pass(dry_run=False):
        in_pass.set()
        end_pass.wait(30)
        return housekeeper.Report()

    a.housekeeper.run = long_pass
    requester = board.Requester(operator)
    try:
        slow = requester.ask('housekeeping', host='a')
        periodic = threading.Thread(target=a.serve_requests, daemon=True)
        periodic.start()
        assert in_pass.wait(10)
        periodic.join(5)
        assert not periodic.is_alive(), 'serving waits for the pass'
        flush = requester.ask('flush', host='a')
        a.serve_requests()
        assert 'read' in requester.answers(flush, timeout=5)['a']['result']
        assert not end_pass.is_set() and requester.answers(
            slow, timeout=0) == {}
    finally:
        end_pass.set()
    assert requester.answers(slow, timeout=5)['a']['result']['actions'] == []


def test_only_the_leader_keeps_house_on_request(services):
    start, operator = services
    a, b = start('a'), start('b')
    assert a.leadership.try_lead()
    requester = board.Requester(operator)
    asked = requester.ask('housekeeping', {'dry_run': True})
    for reserver in (a, b):
        reserver.serve_requests()
    answers = requester.answers(asked, timeout=2)
    assert set(answers) == {'a'}
    assert answers['a']['result']['actions'] == []


def test_the_ring_ignores_operators(tmp_path):
    url = 'file://%s' % tmp_path
    service = membership.Membership(url, 'g', 5, host='a')
    operator = membership.Membership(url, 'g', 5, host='@cli')
    service.start()
    operator.start()
    try:
        shard_ring = ring.ShardRing(service, partitions=8)
        shard_ring.refresh(['k1', 'k2'])
        assert shard_ring.hosts == {'a'}
    finally:
        operator.stop()
        service.stop()
