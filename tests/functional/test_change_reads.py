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

"""Incremental refreshes of the ready pool on a real Ironic.

Nodes copied in bulk keep a null ``updated_at`` (never updated since they
were created, as after a database import).  On PostgreSQL those sort first
in a newest-first listing, and Ironic pages past a null marker on ``id``
alone: a changed node with a higher ``id`` than the marker was skipped.

A mark is a change stamped before the listing started, and these tests
allow no clock skew (one host): a change becomes a mark once a second
boundary has passed after it (:func:`_settle`).
"""

import datetime
import random
import time
import uuid

import pytest

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers

MARK = ownership.mark('change-reads')

SHARD = 'changes'
# More than a page of nodes never updated: the first incremental page
# (25 records) ends inside them on PostgreSQL.
NEVER_UPDATED = 60


def _provider(ironic, **overrides):
    conf = reservers.make_conf(ironic.server.endpoint, pool_clock_skew=0,
                               **overrides)
    provider = ironic_provider.IronicProvider(conf)
    provider.start()
    return provider


def _settle(seconds=2.1):
    """Let the changes so far fall behind the next listing's horizon.

    Ironic's clock is read in whole seconds (the Date header), less the
    request's time, and marks come from the seconds before it.
    """
    time.sleep(seconds)


def _next_second():
    """Sleep to just after the start of the next second; return it."""
    time.sleep(1.02 - time.time() % 1)
    return int(time.time())


def _holders(provider):
    return {n['uuid']: n['instance_uuid'] for n in provider.nodes({SHARD})}


def _truth(ironic):
    return {n['uuid']: n['instance_uuid']
            for n in ironic.list_nodes(fields=['uuid', 'instance_uuid'])}


def _fleet(ironic):
    template, = ironic.enroll_nodes(1, shard=SHARD)
    copies = ironic.bulk_clone(template, NEVER_UPDATED, shard=SHARD)
    _settle()
    return template, copies


def test_a_change_behind_nodes_never_updated_is_seen(ironic):
    template, copies = _fleet(ironic)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    provider.refresh({SHARD})
    # The newest copy: the highest id, first of the null run on PostgreSQL.
    changed = copies[-1]
    provider.api.claim_node(changed, str(uuid.uuid4()), MARK)

    read = provider.refresh({SHARD})

    assert _holders(provider) == _truth(ironic)
    # The change and a few records around it, not the nodes never updated.
    assert read < 10, read


def test_every_change_is_seen_pass_after_pass(ironic):
    template, copies = _fleet(ironic)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    chooser = random.Random(7)
    held = {}
    for _ in range(6):
        # Claims and releases anywhere: on nodes never updated, on nodes
        # just changed, and on whichever node the pool reads from.
        for node in chooser.sample([template] + copies, 4):
            if held.get(node):
                provider.api.patch_node(node, [
                    {'op': 'remove', 'path': '/instance_uuid'}])
                held[node] = None
            else:
                held[node] = str(uuid.uuid4())
                provider.api.claim_node(node, held[node], MARK)
        provider.refresh({SHARD})
        assert _holders(provider) == _truth(ironic)


def test_a_deleted_mark_costs_a_full_read_not_a_change(ironic):
    template, copies = _fleet(ironic)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    for node in copies[:5]:
        provider.api.claim_node(node, str(uuid.uuid4()), MARK)
    provider.refresh({SHARD})
    # Whatever the pool reads after: Ironic answers 404 for a marker it
    # cannot find, and the pool's read-back finds no node.
    for node in {template} | set(copies[:5]):
        provider.api.patch_node(node, [
            {'op': 'remove', 'path': '/instance_uuid'}])
        ironic.request('DELETE', '/v1/nodes/%s' % node, expect=(204,))
    changed = copies[-1]
    provider.api.claim_node(changed, str(uuid.uuid4()), MARK)

    provider.refresh({SHARD})

    assert _holders(provider) == _truth(ironic)


def test_a_node_that_left_the_shard_leaves_the_pool(ironic):
    template, copies = _fleet(ironic)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    moved = copies[0]
    assert moved in _holders(provider)
    provider.api.patch_node(moved, [
        {'op': 'add', 'path': '/shard', 'value': 'elsewhere'}])

    provider.refresh({SHARD})

    assert moved not in {n['uuid'] for n in provider.pool.nodes()}
    assert _holders(provider) == {
        n: i for n, i in _truth(ironic).items() if n != moved}


def test_a_node_that_left_the_conductor_group_leaves_the_pool(ironic):
    # The test Ironic's conductor serves the default group only: nodes of
    # "rack1" are copies, and Ironic moves one out of it to the default
    # group (not into a group no conductor serves).
    template, = ironic.enroll_nodes(1, shard=SHARD)
    # A change in the group, which its own conductor would have made: the
    # pool's first mark.
    changed = (datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - datetime.timedelta(seconds=5))
    rack = ironic.bulk_clone(
        template, 3, shard=SHARD, conductor_group='rack1',
        updated_at=lambda i: changed if i == 0 else None)
    _settle()
    provider = _provider(ironic, conductor_group='rack1')
    provider.refresh({SHARD})
    assert set(_holders(provider)) == set(rack)
    ironic.request('PATCH', '/v1/nodes/%s' % rack[1], json=[
        {'op': 'replace', 'path': '/conductor_group', 'value': ''}])

    provider.refresh({SHARD})

    assert set(_holders(provider)) == {rack[0], rack[2]}


@pytest.fixture(scope='module')
def whole_second_ironic():
    """An Ironic on MariaDB (whole-second ``updated_at``), one node a page.

    Every page of a listing is a request of its own: changes can come
    between two of them.
    """
    with ironic_server.IronicServer(db_kind='mysql', max_limit=1) as server:
        yield server


def test_a_change_in_a_second_the_listing_passed_is_seen_next(
        whole_second_ironic):
    """A change behind a running listing, stamped in a second it passed.

    The listing reaches ``behind``'s change, stamped in second S.  Between
    two of its pages ``skipped`` is claimed, stamped in S too and sorted
    before ``behind`` (a lower id), and two seconds later ``late`` changes:
    the listing sees ``late`` but not ``skipped``.  The next listing must
    start before S.
    """
    ironic = ironic_nodes.IronicNodes(whole_second_ironic)
    provider = _provider(ironic)
    api = provider.api
    # Older than the marks: none of them is listed before it changes.
    skipped, late = ironic.enroll_nodes(2, shard=SHARD)
    _settle(3)
    # Where a pool that marks 2 s before the newest change it saw puts
    # its mark.
    ironic.enroll_nodes(1, shard=SHARD)
    _settle(3)
    others = ironic.enroll_nodes(4, shard=SHARD)
    _settle()
    # A full read, then an incremental one: the marks are past the first
    # nodes.
    provider.refresh({SHARD})
    provider.refresh({SHARD})
    marks = {mark.uuid for mark in provider.pool._marks}
    # The next listing starts after the newest mark.
    assert provider.pool._marks[0].uuid not in {skipped, late}
    behind = next(n for n in others if n not in marks)
    real_pages = api.iter_node_pages
    stamps = {}

    def pages(*args, **kwargs):
        for page in real_pages(*args, **kwargs):
            yield page
            if behind in {n['uuid'] for n in page} and not stamps:
                stamps['skipped'] = api.claim_node(
                    skipped, str(uuid.uuid4()), MARK)['updated_at']
                time.sleep(max(0, second + 2.05 - time.time()))
                stamps['late'] = api.claim_node(
                    late, str(uuid.uuid4()), MARK)['updated_at']

    last_full_read = provider.pool._last_full
    second = _next_second()
    stamps_behind = api.claim_node(behind, str(uuid.uuid4()),
                                   MARK)['updated_at']
    api.iter_node_pages = pages
    provider.refresh({SHARD})
    api.iter_node_pages = real_pages
    assert stamps['skipped'] == stamps_behind, (
        'the claim of %s came in another second than %s\'s (%s, %s): '
        'the machine was too slow for this scenario'
        % (skipped, behind, stamps['skipped'], stamps_behind))
    assert late in {n['uuid'] for n in provider.pool.nodes()
                    if n['instance_uuid']}

    provider.refresh({SHARD})

    assert provider.pool._last_full == last_full_read  # incremental reads
    # The test helpers' listing stops at a short page: this one pages on.
    assert _holders(provider) == {
        n['uuid']: n['instance_uuid']
        for n in api.list_nodes(fields=['uuid', 'instance_uuid'])}


def test_a_retired_node_is_not_capacity(ironic):
    """The pool's fields held no ``retired``: a retired node counted.

    Capacity leaves out retired nodes, but a full read never told them
    apart.  (Ironic retires a deployed or manageable node, never an
    available one.)
    """
    retiring, kept = ironic.enroll_nodes(2, shard=SHARD)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    instance = provider_contract.new_instance()
    request = provider_contract.request('baremetal')
    claimed = provider.claim(
        [n for n in provider.ready_nodes(request, {SHARD})
         if n['uuid'] == retiring], instance, request, time.monotonic() + 30)
    provider.deploy(claimed, provider_contract.deployment(instance))
    ironic.request('PATCH', '/v1/nodes/%s' % retiring, json=[
        {'op': 'replace', 'path': '/retired', 'value': True}])

    provider = _provider(ironic)
    provider.refresh({SHARD})

    counts = provider.capacity({SHARD})[SHARD]['baremetal']
    assert counts == {'total': 1, 'free': 1}, counts
    assert retiring in {n['uuid'] for n in provider.nodes({SHARD})}
