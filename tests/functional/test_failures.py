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

"""Lost answers, stalls, deleted nodes and stale tenancy on a real Ironic.

A FaultProxy between the provider and Ironic makes Ironic fail exactly
when a test needs it to.  Each test names the defect it pins.
"""

import socket
import threading
import time

import pytest

from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi import exception
from ironic_multi.testing import fault_proxy
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import ironic_server
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from tests.functional.waiting import wait_for

INSTANCE_X = provider_contract.new_instance()
INSTANCE_Y = provider_contract.new_instance()
STALLED = provider_contract.new_instance()
SURVIVOR = provider_contract.new_instance()
INSTANCE_A = provider_contract.new_instance()
UNLUCKY = provider_contract.new_instance()
REQUEST = provider_contract.request('baremetal')
SHARD = 'failures'
# How much longer than its bound an operation may take, on a loaded
# 2-core machine.
SLACK = 5.0


@pytest.fixture
def proxy(ironic_server):
    with fault_proxy.FaultProxy(ironic_server.endpoint) as proxy:
        yield proxy


def provider_via(endpoint, **options):
    options.setdefault('state_poll_interval', 0.1)
    conf = reservers.make_conf(
        endpoint, ironic=reservers.retry_options(delay=1), **options)
    started = ironic_provider.IronicProvider(conf)
    started.start()
    return started


def claim(provider, instance, shards=(SHARD,), deadline=60):
    provider.refresh(set(shards))
    candidates = provider.ready_nodes(REQUEST, set(shards))
    return provider.claim(candidates, instance, REQUEST,
                          time.monotonic() + deadline)


def test_a_lost_release_never_clears_the_next_claim(ironic, proxy):
    """Defect 1: PATCH mode re-sent a removal of instance_uuid blindly.

    Host A's release of X reaches Ironic, its answer is lost; host B
    claims the node for Y; A's retry would clear Y.
    """
    (node,) = ironic.enroll_nodes(1, shard=SHARD)
    a = provider_via(proxy.endpoint, use_allocations=False)
    b = provider_via(ironic.server.endpoint, use_allocations=False)
    claim(a, INSTANCE_X)
    seen_before = len(proxy.seen)
    proxy.add_fault('drop_answer', method='PATCH', path='^/v1/nodes/',
                    count=1)
    releasing = threading.Thread(target=a.release, args=(INSTANCE_X,))
    releasing.start()
    # The removal reached Ironic: B claims the node meanwhile.
    wait_for(lambda: any(s.fault == 'drop_answer' for s in proxy.seen), 30,
             'the lost answer')
    wait_for(lambda: ironic.get_node(node)['instance_uuid'] is None, 30,
             'the removal')
    assert claim(b, INSTANCE_Y).node_uuid == node
    releasing.join(60)
    assert not releasing.is_alive()

    assert ironic.get_node(node)['instance_uuid'] == INSTANCE_Y
    assert b.lookup(INSTANCE_Y).node_uuid == node
    # The removal was sent once, and read back instead of sent again.
    patches = [s for s in proxy.seen[seen_before:] if s.method == 'PATCH']
    assert len(patches) == 1, patches


def stall_everything(proxy):
    return proxy.add_fault('stall')


def test_a_stalled_ironic_bounds_claims(ironic, proxy):
    """Defect 2: no request had a timeout; a claim could hang for good."""
    ironic.enroll_nodes(2, shard=SHARD)
    provider = provider_via(proxy.endpoint, claim_timeout=4)
    provider.refresh({SHARD})
    candidates = provider.ready_nodes(REQUEST, {SHARD})
    stall_everything(proxy)

    started = time.monotonic()
    with pytest.raises(exception.IronicMultiError):
        provider.claim(candidates, STALLED, REQUEST, started + 4)
    assert time.monotonic() - started < 4 + SLACK


def test_a_stalled_ironic_bounds_deploy_waits_and_destroy(ironic, proxy):
    """Defect 2: a deploy's wait, and destroy, hung on a silent Ironic."""
    ironic.enroll_nodes(1, shard=SHARD)
    provider = provider_via(proxy.endpoint, deploy_timeout=4,
                            unprovision_timeout=3, power_timeout=3)
    claimed = claim(provider, STALLED)
    deployed = provider.deploy(claimed, provider_contract.deployment(
        STALLED))
    stall = stall_everything(proxy)

    started = time.monotonic()
    with pytest.raises(exception.PowerActionFailed):
        provider.power(deployed, base.PowerAction.OFF)
    assert time.monotonic() - started < 3 + SLACK
    started = time.monotonic()
    with pytest.raises(exception.TeardownFailed):
        provider.teardown(deployed)
    assert time.monotonic() - started < 3 + SLACK

    proxy.remove_fault(stall)
    provider.teardown(deployed)
    provider.release(STALLED)
    assert provider.lookup(STALLED) is None


def test_the_refresh_recovers_when_ironic_answers_again(ironic, proxy):
    """Defect 2: the refresh thread held its lock for good on a stall."""
    ironic.enroll_nodes(2, shard=SHARD)
    conf = reservers.make_conf(proxy.endpoint, ironic=dict(
        reservers.retry_options(2, 1), timeout=2))
    provider = ironic_provider.IronicProvider(conf)
    provider.start()
    stall = stall_everything(proxy)

    started = time.monotonic()
    with pytest.raises(exception.IronicUnavailable):
        provider.refresh({SHARD})
    # Three attempts of two seconds, a second apart.
    assert time.monotonic() - started < 8 + SLACK
    proxy.remove_fault(stall)
    assert provider.refresh({SHARD}) >= 2
    assert len(provider.ready_nodes(REQUEST, {SHARD})) == 2


def test_a_node_deleted_from_ironic_is_not_a_dead_end(ironic):
    """Defect 3: a node deleted from Ironic stayed a candidate.

    Every claim of a batch holding it failed until the next full refresh.
    """
    for use_allocations in (True, False):
        gone, kept = ironic.enroll_nodes(2, shard=SHARD)
        provider = provider_via(ironic.server.endpoint,
                                use_allocations=use_allocations)
        provider.refresh({SHARD})
        candidates = sorted(provider.ready_nodes(REQUEST, {SHARD}),
                            key=lambda n: n['uuid'] != gone)
        ironic.request('DELETE', '/v1/nodes/%s' % gone, expect=(204,))

        reservation = provider.claim(candidates, SURVIVOR, REQUEST,
                                     time.monotonic() + 30)
        assert reservation.node_uuid == kept
        assert gone not in {n['uuid'] for n in provider.nodes({SHARD})}
        provider.release(SURVIVOR)
        ironic.wipe()


def test_a_deploy_ironic_refuses_fails_with_its_reason(ironic):
    """No validation request of its own: the provision request's 400.

    Ironic validates a node when asked to deploy it; here it refuses
    instance traits the node lacks.
    """
    for use_allocations in (True, False):
        (node,) = ironic.enroll_nodes(1, shard=SHARD)
        provider = provider_via(ironic.server.endpoint,
                                use_allocations=use_allocations)
        claimed = claim(provider, INSTANCE_A)
        deployment = provider_contract.deployment(INSTANCE_A)
        deployment.instance_info['traits'] = ['CUSTOM_NOT_ON_THE_NODE']

        with pytest.raises(exception.DeployFailed) as e:
            provider.deploy(claimed, deployment)

        assert e.value.node == node
        assert 'CUSTOM_NOT_ON_THE_NODE' in str(e.value)
        # Taken back, but still claimed: nothing deployed, nothing of the
        # deploy's left in instance_info but the ownership mark.
        found = ironic.get_node(node)
        assert found['provision_state'] == 'available'
        assert found['instance_uuid'] == INSTANCE_A
        assert set(found['instance_info']) <= {'ironic_multi'}
        provider.release(INSTANCE_A)
        assert ironic.get_node(node)['instance_uuid'] is None
        ironic.wipe()


@pytest.fixture
def small_pages():
    """An Ironic that answers at most 2 nodes a page."""
    with ironic_server.IronicServer(max_limit=2) as server:
        yield ironic_nodes.IronicNodes(server)


def test_every_listing_reads_every_page(small_pages):
    """Defect 4: listings stopped at the first page shorter than 1000."""
    uuids = set(small_pages.enroll_nodes(5, shard=SHARD))
    provider = provider_via(small_pages.server.endpoint)

    assert provider.shard_keys() == {SHARD: 5}
    assert provider.refresh({SHARD}) >= 5
    assert {n['uuid'] for n in provider.ready_nodes(REQUEST,
                                                    {SHARD})} == uuids
    assert {n['uuid'] for n in provider.search(REQUEST, {SHARD})} == uuids
    assert provider.capacity({SHARD})[SHARD]['baremetal']['total'] == 5
    for node in sorted(uuids):
        provider.claim([{'uuid': node, 'resource_class': 'baremetal'}],
                       provider_contract.new_instance(), REQUEST,
                       time.monotonic() + 30)
    assert len(provider.reservations()) == 5


@pytest.mark.parametrize('use_allocations', [True, False],
                         ids=['allocations', 'patch'])
def test_a_claim_never_ends_on_another_projects_node(ironic,
                                                     use_allocations):
    """Defect 5: tenancy was checked only on pool data minutes old."""
    node, public = ironic.enroll_nodes(2, shard=SHARD)
    provider = provider_via(ironic.server.endpoint,
                            use_allocations=use_allocations)
    provider.refresh({SHARD})
    stale = sorted(provider.ready_nodes(REQUEST, {SHARD}),
                   key=lambda n: n['uuid'] != node)
    # Given to another project after the pool read it.
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'add', 'path': '/owner', 'value': 'project-b'}])
    mine = provider_contract.request('baremetal', project_id='project-a')

    with pytest.raises(exception.NodeAlreadyClaimed):
        provider.claim(stale[:1], INSTANCE_A, mine, time.monotonic() + 30)
    assert ironic.get_node(node)['instance_uuid'] is None
    reservation = provider.claim(stale, INSTANCE_A, mine,
                                 time.monotonic() + 30)
    assert reservation.node_uuid == public


def test_claim_timeout_bounds_the_whole_claim(ironic, proxy, tmp_path):
    """Defect 6: claim_timeout was checked only between batches.

    The searches of other hosts' shards that find nothing went on.
    """
    ironic.enroll_nodes(2, shard='elsewhere')
    url = 'file://%s' % tmp_path
    others = [reservers.build_reserver(ironic.server.endpoint, host,
                                       coordination_url=url)
              for host in ('other-1', 'other-2', 'other-3')]
    for other in others:
        other.start(background=False)
    reserver = reservers.build_reserver(proxy.endpoint, 'slow',
                                        coordination_url=url,
                                        claim_timeout=4)
    reserver.start(background=False)
    try:
        # Nothing matches anywhere; every listing takes 3 s.
        proxy.add_fault('delay', method='GET', path='^/v1/nodes', seconds=3)
        impossible = provider_contract.request('no-such-class')
        started = time.monotonic()
        with pytest.raises(exception.IronicMultiError):
            reserver.claim(provider_contract.new_instance(), impossible)
        assert time.monotonic() - started < 4 + SLACK
    finally:
        for member in others + [reserver]:
            member.stop()


def test_lost_allocation_answers_end_in_a_typed_error(ironic, proxy):
    """Defect 9: repeated lost answers recursed without bound."""
    ironic.enroll_nodes(1, shard=SHARD)
    provider = provider_via(proxy.endpoint, use_allocations=True,
                            claim_timeout=5)
    provider.refresh({SHARD})
    candidates = provider.ready_nodes(REQUEST, {SHARD})
    proxy.add_fault('reset', method='POST', path='^/v1/allocations')

    started = time.monotonic()
    # Sent again and read back until the deadline: then the claim ends,
    # typed (the last read-back may be what the deadline cut).
    with pytest.raises((exception.ClaimTimeout,
                        exception.IronicUnavailable)):
        provider.claim(candidates, UNLUCKY, REQUEST, started + 5)
    posts = [s for s in proxy.seen if s.method == 'POST']
    assert len(posts) > 1
    assert time.monotonic() - started < 5 + SLACK
    assert ironic.list_allocations() == []


def test_real_shard_keys_named_like_fallback_ones_are_seen(ironic):
    """Defect 10: a real key ``ironic-multi-N`` passed for a virtual one.

    Its nodes were never listed.
    """
    conf = reservers.make_conf(ironic.server.endpoint,
                               fallback_shard_count=4)
    provider = ironic_provider.IronicProvider(conf)
    provider.start()
    (real,) = ironic.enroll_nodes(1, shard='ironic-multi-2')
    unsharded = ironic.enroll_nodes(8)
    hashed = [u for u in unsharded
              if provider.keys.fallback_of(u) == 'ironic-multi-2']

    provider.refresh({'ironic-multi-2'})
    seen = {n['uuid'] for n in provider.nodes({'ironic-multi-2'})}
    assert seen == {real} | set(hashed)
    assert provider.shard_keys()['ironic-multi-2'] == 1 + len(hashed)


def test_start_is_bounded_when_coordination_does_not_answer(ironic):
    """Defect 12: tooz's Redis driver blocked the start for a minute."""
    silent = socket.socket()
    silent.bind(('127.0.0.1', 0))
    silent.listen(16)  # accepts connections, never answers
    port = silent.getsockname()[1]
    try:
        reserver = reservers.build_reserver(
            ironic.server.endpoint, 'lonely',
            coordination_url='redis://127.0.0.1:%d' % port,
            membership_timeout=3)
        started = time.monotonic()
        reserver.start(background=False)
        took = time.monotonic() - started
        assert took < 3 + SLACK
        # Alone, it owns every shard and claims go on.
        assert not reserver.membership.started
        assert reserver.ring.hosts == frozenset()
        reserver.stop()
    finally:
        silent.close()
    print('start with an unreachable coordination backend: %.1f s' % took)
