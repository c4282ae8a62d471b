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

"""The chaos run's checks, each fed a violation made on the real cloud.

A check is only as good as the defects it has been shown to catch
(``invariants.PROVEN_BY``).  Here each violation happens on the
multi-process cloud: Ironic written behind the driver's back, every
compute frozen, placement told otherwise.  The run's own observer and
checks must report it, which fails a run; then the cloud is put right.
"""

import os
import shutil
import signal
import time
import uuid

import pytest

from ironic_multi.testing.chaos import history as history_mod
from ironic_multi.testing.chaos import invariants
from ironic_multi.testing.chaos import logscan
from ironic_multi.testing.chaos import observer as observer_mod
from ironic_multi.testing.chaos import run as run_mod
from ironic_multi.testing.chaos import workload
from ironic_multi.testing import checks
from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing import ironic_nodes
from tests.cloud import faults

ADMIN = cloud_mod.ADMIN_CLOUD
# How often a plant is tried before the test gives up: the cloud may put
# placement right before the observer reads it.
ATTEMPTS = 5


@pytest.fixture
def observer(cloud):
    return observer_mod.Observer(cloud, history_mod.History(seed=0))


@pytest.fixture
def ironic(cloud):
    """Ironic itself, not the computes' fault proxy."""
    return ironic_nodes.admin_nodes(cloud.ironic_server)


def _fails_the_run(observer, invariant):
    result = run_mod.Result(observer.history, {}, [])
    assert not result.passed
    return [v['detail'] for v in result.violations
            if v['invariant'] == invariant]


def _set_instance(ironic, node_uuid, instance_uuid):
    patch = [{'op': 'remove', 'path': '/instance_uuid'}]
    if instance_uuid:
        patch = [{'op': 'add', 'path': '/instance_uuid',
                  'value': instance_uuid}]
    ironic.request('PATCH', '/v1/nodes/%s' % node_uuid, json=patch)


def _active(cloud, servers, count):
    ids = faults.post_servers(cloud, ['gold'] * count, 'planted')
    servers.extend(ids)
    settled = cloud.wait_for_servers(ids)
    assert faults.statuses(settled) == {'ACTIVE': count}, settled
    held = cloud.held_nodes()
    return [(server_id, held[server_id][0]) for server_id in ids]


def test_a_node_given_to_another_instance_by_a_direct_patch(
        cloud, servers, observer, ironic):
    (first, _), (second, second_node) = _active(cloud, servers, 2)
    assert observer.look() == []
    # Ironic itself keeps an instance on one node: the first server's
    # UUID on the second's node is refused.
    _set_instance(ironic, second_node, None)
    try:
        with pytest.raises(ironic_nodes.IronicRequestError,
                           match='already associated with a node'):
            _set_instance(ironic, second_node, first)
        # Behind the driver's back: the second server's node now serves
        # an instance of someone else's.
        someone = str(uuid.uuid4())
        _set_instance(ironic, second_node, someone)
        found = observer.look()
    finally:
        _set_instance(ironic, second_node, None)
        _set_instance(ironic, second_node, second)
    assert [invariant for invariant, _ in found] == [
        invariants.GIVEN_TWICE], found
    (detail,) = _fails_the_run(observer, invariants.GIVEN_TWICE)
    assert second_node in detail and someone in detail, detail
    # Put right, the next look is clean.
    assert observer.look() == []


def test_a_leaked_node(cloud, observer, ironic):
    free = next(n['uuid'] for n in ironic.list_nodes(
        fields=('uuid', 'provision_state', 'instance_uuid'))
        if n['provision_state'] == 'available' and not n['instance_uuid'])
    gone = str(uuid.uuid4())
    compute = cloud.connection(ADMIN).compute
    _set_instance(ironic, free, gone)
    try:
        found = invariants.check_leaks(workload.server_dicts(compute),
                                       ironic.list_nodes())
    finally:
        _set_instance(ironic, free, None)
    observer.report(found)
    (detail,) = _fails_the_run(observer, invariants.NO_LEAK)
    assert free in detail and gone in detail
    assert invariants.check_leaks(workload.server_dicts(compute),
                                  ironic.list_nodes()) == []


def test_a_server_hung_in_build(cloud, servers, observer):
    compute = cloud.connection(ADMIN).compute
    frozen = [cloud.compute_service(host) for host in cloud.computes]
    for service in frozen:
        cloud.kill(service, signal.SIGSTOP)
    try:
        (server_id,) = faults.post_servers(cloud, ['gold'], 'hung')
        servers.append(server_id)
        # Scheduled (placement holds its allocation) to a compute that
        # does not answer: BUILD it stays.
        placement = cloud.connection(ADMIN).placement
        deadline = time.monotonic() + 60
        while not placement.get('/allocations/%s' % server_id).json()[
                'allocations']:
            assert time.monotonic() < deadline, 'never scheduled'
            time.sleep(0.5)
        found = invariants.check_settled(workload.server_dicts(compute))
    finally:
        for service in frozen:
            cloud.kill(service, signal.SIGCONT)
    observer.report(found)
    hung = [detail for detail in _fails_the_run(observer, invariants.SETTLED)
            if server_id in detail]
    assert hung and 'BUILD' in hung[0], found
    settled = cloud.wait_for_servers([server_id])
    assert settled[server_id].status == 'ACTIVE'
    assert invariants.check_settled(workload.server_dicts(compute)) == []


def test_an_untyped_exception_in_a_compute_log(cloud, observer, tmp_path):
    # The computes' own logs, and one more record as oslo.log writes an
    # unexpected exception (a KeyError out of a driver call).
    for name in os.listdir(cloud.log_dir):
        if name.startswith('nova-compute'):
            shutil.copy(os.path.join(cloud.log_dir, name), tmp_path)
    before = logscan.errors(str(tmp_path))
    assert [r for r in before if logscan.classify(r) == logscan.UNTYPED] \
        == []
    log = sorted(p for p in os.listdir(tmp_path) if p.endswith('.log'))[0]
    stamp = '2026-11-27 12:00:00.123 4242'
    with open(tmp_path / log, 'a') as f:
        f.write(
            '%(s)s ERROR nova.compute.manager [None req-1 admin admin - - '
            '- - -] [instance: %(i)s] Instance failed to spawn: KeyError: '
            "'node'\n"
            '%(s)s ERROR nova.compute.manager Traceback (most recent call '
            'last):\n'
            '%(s)s ERROR nova.compute.manager   File "/x/ironic_multi/'
            '_virt/driver.py", line 1, in spawn\n'
            "%(s)s ERROR nova.compute.manager KeyError: 'node'\n"
            '%(s)s ERROR nova.compute.manager \n' % {
                's': stamp, 'i': uuid.uuid4()})
    untyped = [r for r in logscan.errors(str(tmp_path))
               if logscan.classify(r) == logscan.UNTYPED]
    assert [(r.exception, r.logger) for r in untyped] == [
        ('KeyError', 'nova.compute.manager')]
    observer.report(invariants.check_typed(untyped))
    (detail,) = _fails_the_run(observer, invariants.TYPED_ERRORS)
    assert 'KeyError' in detail, detail


def test_placement_held_apart_from_ironic(cloud, observer, ironic):
    placement = cloud.connection(ADMIN).placement
    name = checks.placement_class(observer.classes[0])

    def wrong():
        truth = checks.ironic_truth(ironic.list_nodes(
            fields=checks.NODE_FIELDS))
        return checks.compare_capacity(truth, observer.placement_views())

    def until_right():
        # Each compute corrects its inventory at its next refresh, as the
        # run's own capacity check allows for.
        deadline = time.monotonic() + run_mod.CAPACITY_TIMEOUT
        while wrong():
            assert time.monotonic() < deadline, wrong()
            time.sleep(1)

    assert observer.look() == []
    until_right()
    # The provider that offers most: each offers its own shards' nodes.
    views = observer.placement_views()
    host = max(sorted(views), key=lambda h: views[h][name]['free'])
    if views[host][name]['free'] <= 0:
        pytest.skip('no free %s node to hide' % name)
    (provider,) = [p for p in placement.resource_providers()
                   if p.name == host]
    url = '/resource_providers/%s/inventories' % provider.id
    planted = None
    try:
        for _ in range(ATTEMPTS):
            # One unit more reserved than the driver said: one free node
            # hidden from the scheduler.  Nova's report client writes an
            # inventory only when the driver's changes, so it stays.
            body = placement.get(url, microversion='1.26').json()
            inventory = body['inventories'][name]
            if inventory['reserved'] >= inventory['total']:
                pytest.skip('no free %s node to hide' % name)
            inventory['reserved'] = planted = inventory['reserved'] + 1
            placement.put(url, json=body, microversion='1.26')
            # Only the plant: another provider may still be catching up
            # with nodes the previous test's deletes left cleaning.
            found = [item for item in wrong() if item[1] == name]
            if found:
                break
    finally:
        # Put right, unless the driver wrote its own since.
        body = placement.get(url, microversion='1.26').json()
        inventory = body['inventories'][name]
        if planted is not None and inventory['reserved'] == planted:
            inventory['reserved'] -= 1
            placement.put(url, json=body, microversion='1.26')
    observer.report(invariants.check_capacity(found))
    (detail,) = _fails_the_run(observer, invariants.CAPACITY)
    assert detail.startswith('%s %s: ' % (
        ', '.join(sorted(views)), name)), detail
    until_right()
