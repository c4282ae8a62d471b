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

"""A claim's candidates from the ready pool: drawn, not all filtered."""

import itertools

import pytest

from ironic_multi._reservation.providers.ironic import pool as ready_pool
from ironic_multi._reservation.providers.ironic import provider as provider_mod
from ironic_multi._reservation import requirements as reqs
from ironic_multi.testing import reservers

GOLD = reqs.Requirements(resource_class='CUSTOM_GOLD')


@pytest.fixture
def conf():
    return reservers.make_conf()


def node(index, resource_class='gold', **fields):
    return dict({'uuid': 'n%04d' % index, 'resource_class': resource_class,
                 'provision_state': 'available', 'maintenance': False,
                 'power_state': 'power off', 'instance_uuid': None,
                 'shard': 's1'}, **fields)


def pooled(provider, nodes):
    """Fill the provider's pool with ``nodes``, as a refresh would."""
    provider.pool._nodes = ready_pool._Nodes(nodes)
    provider.pool._shards = frozenset({'s1'})


def test_the_candidates_are_the_ready_nodes_in_another_order(provider):
    pooled(provider, [node(i) for i in range(40)]
           + [node(100, resource_class='bronze'),
              node(101, provision_state='active'),
              node(102, instance_uuid='i-1'),
              node(103, maintenance=True)])
    ready = [n['uuid'] for n in provider.ready_nodes(GOLD, {'s1'})]
    drawn = [n['uuid'] for n in provider.ready_candidates(GOLD, {'s1'})]
    assert sorted(drawn) == sorted(ready) == ['n%04d' % i for i in range(40)]
    # 40! orders: the pool's own is as unlikely as any other.
    assert drawn != ready


def test_only_the_nodes_drawn_are_filtered(conf, api, monkeypatch):
    # At 10^5 nodes a class holds thousands: a claim that filtered them
    # all spent more than its PATCH (the scale bench).
    asked = []
    why_cooling = provider_mod.IronicProvider._why_cooling
    monkeypatch.setattr(
        provider_mod.IronicProvider, '_why_cooling',
        lambda self, n: asked.append(n['uuid']) or why_cooling(self, n))
    provider = provider_mod.IronicProvider(conf, api=api)
    pooled(provider, [node(i) for i in range(2000)])
    first = list(itertools.islice(provider.ready_candidates(GOLD, {'s1'}), 3))
    assert len(first) == 3
    assert sorted(asked) == sorted(n['uuid'] for n in first)


def test_a_node_that_fails_a_filter_is_skipped_not_offered(provider):
    pooled(provider, [node(i, maintenance=bool(i % 2)) for i in range(100)])
    drawn = [n['uuid'] for n in provider.ready_candidates(GOLD, {'s1'})]
    assert sorted(drawn) == ['n%04d' % i for i in range(0, 100, 2)]
