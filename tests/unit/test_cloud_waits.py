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

"""What the multi-process cloud's waits take for done."""

import collections
import datetime
import types

import pytest

from ironic_multi.testing.cloud import cloud as cloud_mod

RESTART = datetime.datetime(2026, 11, 27, 21, 0, 0, 400000)


def _service(updated_at):
    return types.SimpleNamespace(updated_at=updated_at)


def test_a_report_before_the_restart_is_not_one_after_it():
    # The stopped process's last report: Nova says up, the new process
    # has not reported yet.
    assert not cloud_mod._reported_since(
        _service('2026-11-27T20:59:58.000000'), RESTART)
    assert not cloud_mod._reported_since(_service(None), RESTART)


def test_a_report_after_the_restart_counts_in_whole_seconds():
    assert cloud_mod._reported_since(
        _service('2026-11-27T21:00:00.000000'), RESTART)
    assert cloud_mod._reported_since(
        _service('2026-11-27T21:00:02.000000'), RESTART)
    assert cloud_mod._reported_since(_service(None), None)


def test_settling_restarts_whenever_the_value_moves(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(cloud_mod.time, 'monotonic', lambda: now[0])
    settling = cloud_mod._Settling(10)
    assert not settling.still({'n1': 'c1'})
    now[0] += 8
    # Moved: the wait starts again.
    assert not settling.still({'n1': 'c2'})
    now[0] += 8
    assert not settling.still({'n1': 'c2'})
    now[0] += 2
    assert settling.still({'n1': 'c2'})


def test_up_after_a_restart_counts_once_the_old_heartbeat_aged_out(
        monkeypatch):
    # The API's updated_at changes at the new process's start, and the
    # stopped process's last heartbeat keeps the host up: only a host
    # still up service_down_time after the restart has beaten since.
    cloud = cloud_mod.Cloud()
    up = types.SimpleNamespace(state='up',
                               updated_at='2026-11-27T21:00:01.000000')
    monkeypatch.setattr(cloud, 'nova_services',
                        lambda: {'compute-1': up})
    seconds = iter([1, 4, 9, cloud.service_down_time, 12])
    clock = []

    def utcnow():
        clock.append(RESTART + datetime.timedelta(seconds=next(seconds)))
        return clock[-1]

    monkeypatch.setattr(cloud_mod, 'utcnow', utcnow)
    monkeypatch.setattr(cloud_mod.time, 'sleep', lambda s: None)
    cloud.wait_for_computes(['compute-1'], since=RESTART)
    assert clock[-1] - RESTART == datetime.timedelta(
        seconds=cloud.service_down_time)
    # Without a restart to wait out, up is up.
    clock.clear()
    cloud.wait_for_computes(['compute-1'])
    assert clock == []


def _in_tree_cloud(monkeypatch, **kwargs):
    """An in-tree cloud object on a clock of its own: ``(cloud, [now])``."""
    cloud = cloud_mod.Cloud(compute_driver=cloud_mod.nova.IN_TREE_DRIVER,
                            **kwargs)
    now = [0.0]
    monkeypatch.setattr(cloud_mod.time, 'monotonic', lambda: now[0])

    def sleep(seconds):
        now[0] += seconds

    monkeypatch.setattr(cloud_mod.time, 'sleep', sleep)
    # The times nova-manage cell_v2 discover_hosts ran.
    cloud.discovered = []
    cloud.nova_conf = 'nova.conf'
    monkeypatch.setattr(cloud_mod.nova, 'discover_hosts',
                        lambda cloud, conf: cloud.discovered.append(now[0]))
    return cloud, now


def test_the_in_tree_cloud_waits_its_settling_on_top_of_the_timeout(
        monkeypatch):
    # With Nova's default update_resources_interval (60 s), the in-tree
    # computes' layout must stay put 120 s: the wait's own 120 s could
    # never see that (the capacity bench's in-tree cloud never started).
    cloud, now = _in_tree_cloud(monkeypatch, update_resources_interval=60)
    cloud.node_groups = {'n0': 'group'}
    inventories = {'n0': {'CUSTOM_%s' % rc.upper(): {}
                          for rc in cloud.layout.resource_classes()}}
    # The first resource update reports the node 30 s in.
    monkeypatch.setattr(cloud, 'provider_inventories',
                        lambda: inventories if now[0] >= 30 else {})
    cloud.computes = ['compute-1']
    monkeypatch.setattr(cloud, 'in_tree_layout', lambda: {'n0': 'compute-1'})
    assert cloud.wait_for_capacity(timeout=120) == inventories
    assert 30 + 120 <= now[0] <= 30 + 120 + 2


def test_the_in_tree_cloud_waits_for_every_compute_to_take_its_nodes(
        monkeypatch):
    # CI, 2026-11-29: compute-0 hashed all 8 nodes over itself until
    # compute-1's first resource update registered a node; that was
    # later than the layout's settling, so discover_hosts left compute-1
    # unmapped and boots there failed.
    cloud, now = _in_tree_cloud(monkeypatch, update_resources_interval=5)
    cloud.computes = ['compute-0', 'compute-1']
    nodes = ['%08d-0000-0000-0000-000000000000' % i for i in range(8)]
    cloud.node_groups = dict.fromkeys(nodes, 'group')
    ring = cloud_mod.nova.in_tree_layout(nodes, cloud.computes)
    assert set(ring.values()) == {'compute-0', 'compute-1'}
    monkeypatch.setattr(cloud, 'provider_inventories', lambda: {
        uuid: {'CUSTOM_GOLD': {}} for uuid in nodes})
    monkeypatch.setattr(cloud, 'in_tree_layout', lambda: (
        ring if now[0] >= 60 else dict.fromkeys(nodes, 'compute-0')))
    cloud.wait_for_capacity(timeout=300)
    assert 60 + 10 <= now[0] <= 60 + 10 + 2


def test_the_in_tree_wait_maps_a_compute_that_registered_after_discovery(
        monkeypatch):
    # CI, 2026-12-03: compute-1 registered its nodes after the cloud's one
    # discover_hosts; Nova's API lists no hypervisor of an unmapped host,
    # so the layout never showed them and the wait ran out.
    cloud, now = _in_tree_cloud(monkeypatch, update_resources_interval=5)
    cloud.computes = ['compute-0', 'compute-1']
    nodes = ['%08d-0000-0000-0000-000000000000' % i for i in range(8)]
    cloud.node_groups = dict.fromkeys(nodes, 'group')
    ring = cloud_mod.nova.in_tree_layout(nodes, cloud.computes)
    monkeypatch.setattr(cloud, 'provider_inventories', lambda: {
        uuid: {'CUSTOM_GOLD': {}} for uuid in nodes})
    # compute-1 registered at 20 s: listed once a discovery after it ran.
    monkeypatch.setattr(cloud, 'in_tree_layout', lambda: (
        ring if any(at >= 20 for at in cloud.discovered)
        else {u: h for u, h in ring.items() if h == 'compute-0'}))
    cloud.wait_for_capacity(timeout=300)
    assert 20 + 10 <= now[0] <= 20 + 10 + 2


class _Exited(object):
    name = 'nova-compute-compute-1'
    running = False

    @staticmethod
    def log_tail():
        return 'Duplicate compute node record found'


def test_a_compute_that_exited_ends_the_capacity_wait_at_once(monkeypatch):
    cloud, now = _in_tree_cloud(monkeypatch, update_resources_interval=5)
    cloud.computes = ['compute-0', 'compute-1']
    cloud.node_groups = {'n0': 'group'}
    cloud.services[cloud.compute_service('compute-1')] = _Exited()
    monkeypatch.setattr(cloud, 'provider_inventories', lambda: {})
    with pytest.raises(cloud_mod.CloudError, match='Duplicate compute node'):
        cloud.wait_for_capacity(timeout=300)
    assert now[0] == 0


def test_the_in_tree_wait_takes_a_settled_layout_off_the_ring(monkeypatch):
    # CI under load: two nodes stayed off their ring host for minutes.
    # Every compute holds nodes (all mapped): the settled layout will do.
    cloud, now = _in_tree_cloud(monkeypatch, update_resources_interval=5)
    cloud.computes = ['compute-0', 'compute-1']
    nodes = ['%08d-0000-0000-0000-000000000000' % i for i in range(8)]
    cloud.node_groups = dict.fromkeys(nodes, 'group')
    layout = cloud_mod.nova.in_tree_layout(nodes, cloud.computes)
    # One node of a host that keeps others moves to the other host.
    counts = collections.Counter(layout.values())
    moved = next(u for u, host in layout.items() if counts[host] > 1)
    layout[moved] = next(h for h in cloud.computes if h != layout[moved])
    monkeypatch.setattr(cloud, 'provider_inventories', lambda: {
        uuid: {'CUSTOM_GOLD': {}} for uuid in nodes})
    monkeypatch.setattr(cloud, 'in_tree_layout', lambda: layout)
    cloud.wait_for_capacity(timeout=300)
    assert 10 <= now[0] <= 12
