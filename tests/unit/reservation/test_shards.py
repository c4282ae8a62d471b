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

import collections
import random
import uuid

from ironic_multi._reservation import shards

NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'


def test_fallback_shard_is_pinned():
    # The CLI writes these keys to Ironic: they must never change.
    keys = shards.ShardKeys(64)
    assert keys.fallback_of(NODE) == 'ironic-multi-29'
    assert keys.fallback_of(NODE.upper()) == 'ironic-multi-29'
    assert keys.fallback_of(uuid.UUID(NODE)) == 'ironic-multi-29'
    assert shards.ShardKeys(1000).fallback_of(NODE) == 'ironic-multi-853'
    assert shards.ShardKeys(1).fallback_of(NODE) == 'ironic-multi-0'


def test_fallback_shard_spread():
    rand = random.Random(42)
    keys = shards.ShardKeys(64)
    counts = collections.Counter(
        keys.fallback_of(uuid.UUID(int=rand.getrandbits(128)))
        for _ in range(64 * 200))
    assert set(counts) == keys.fallback
    # 200 per key expected; binomial sd is about 14.
    assert 140 < min(counts.values()) <= max(counts.values()) < 260


def test_a_node_keeps_its_own_key():
    keys = shards.ShardKeys(8)
    assert keys.of({'uuid': NODE, 'shard': 'rack-1'}) == 'rack-1'
    assert keys.of({'uuid': NODE, 'shard': None}) == keys.fallback_of(NODE)


def test_fallback_among():
    keys = shards.ShardKeys(4)
    assert keys.fallback_among({'rack-1', 'ironic-multi-3',
                                'ironic-multi-4'}) == {'ironic-multi-3'}
