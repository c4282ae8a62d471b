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


"""The sandbox's layout and checks: pure functions, no servers."""

import pytest

from ironic_multi.testing import checks
from ironic_multi.testing import fleet


def test_layout_fits_every_flavor():
    """Only the oversubscribed class can fail, whatever N and M."""
    for nodes in range(fleet.MIN_NODES, 41):
        for servers in (fleet.MIN_SERVERS, 6, 12, 20):
            try:
                layout = fleet.make_layout(nodes, 3, servers)
            except fleet.LayoutError:
                continue
            assert sum(g.count for g in layout.groups) == nodes
            requested = layout.requested()
            assert sum(requested.values()) == servers
            for flavor in layout.flavors:
                if flavor.name == layout.oversubscribed:
                    assert requested[flavor.name] == (
                        layout.group(flavor.serves).count + layout.surplus)
                else:
                    assert requested[flavor.name] <= layout.group(
                        flavor.serves).count
            # Of the sandbox project's nodes, a flavor fits its own group's
            # and no other: no race between claims can starve a flavor.
            for flavor in layout.flavors:
                for group in layout.groups:
                    if group.owner:
                        continue
                    node = {'resource_class': group.resource_class,
                            'traits': list(group.traits),
                            'properties': group.properties}
                    assert flavor.matches(node) == (
                        group.name == flavor.serves), (flavor, group)


def test_audit_finds_double_bookings():
    servers = [{'id': 'a', 'name': 'a', 'status': 'ACTIVE',
                'tenant_id': 'p'},
               {'id': 'b', 'name': 'b', 'status': 'ACTIVE',
                'tenant_id': 'p'},
               {'id': 'c', 'name': 'c', 'status': 'ERROR',
                'tenant_id': 'p'}]
    nodes = [{'uuid': 'n1', 'name': 'n1', 'instance_uuid': 'a',
              'provision_state': 'active', 'resource_class': 'gold',
              'owner': 'other'},
             {'uuid': 'n2', 'name': 'n2', 'instance_uuid': 'c',
              'provision_state': 'active', 'resource_class': 'gold'}]
    found = checks.audit(servers, nodes, {}, 'p')
    # b is ACTIVE with no node: its node went to someone else.
    assert len(found['double_bookings']) == 1
    assert 'b (b)' in found['double_bookings'][0]
    assert len(found['leaked']) == 1
    assert len(found['other_project']) == 1
    truth = checks.ironic_truth(nodes + [
        {'uuid': 'n3', 'resource_class': 'gold', 'instance_uuid': None,
         'provision_state': 'available', 'power_state': 'power off'}])
    assert truth == {'gold': {'total': 3, 'used': 2, 'free': 1}}
    assert checks.compare_capacity(truth, {'c1': {'CUSTOM_GOLD': {
        'free': 2}}}) == [('c1', 'CUSTOM_GOLD', 2, 1)]
    # Each provider offers its own shards' nodes: they add up, and one
    # over its capacity offers nothing (it takes nothing from the rest).
    assert checks.compare_capacity(truth, {
        'c1': {'CUSTOM_GOLD': {'free': 1}},
        'c2': {'CUSTOM_GOLD': {'free': 0}},
        'c3': {'CUSTOM_GOLD': {'free': -1}}}) == []
    assert checks.compare_capacity(truth, {
        'c1': {'CUSTOM_GOLD': {'free': 1}},
        'c2': {'CUSTOM_GOLD': {'free': 1}}}) == [
            ('c1, c2', 'CUSTOM_GOLD', 2, 1)]
    assert checks.compare_capacity(truth, {
        'c1': {'CUSTOM_GOLD': {'free': 1}}, 'c2': {}}) == [
            ('c1, c2', 'CUSTOM_GOLD', None, 1)]


@pytest.mark.parametrize('nodes, computes, servers, says', [
    (24, 3, 40, '--servers must be between'),
    (7, 3, 20, '--nodes'),
    (24, 1, 20, '--computes'),
    (24, 3, 3, '--servers'),
])
def test_layout_errors_say_what_would_work(nodes, computes, servers, says):
    with pytest.raises(fleet.LayoutError, match=says):
        fleet.make_layout(nodes, computes, servers)
