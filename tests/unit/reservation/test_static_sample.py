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

"""The sample static inventory that the documentation shows works."""

import pathlib
import shutil

import pytest
import yaml

from ironic_multi._reservation.providers.static import inventory
from ironic_multi._reservation.providers.static import provider as static
from ironic_multi._reservation import shards
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers

ROOT = pathlib.Path(__file__).resolve().parents[3]
SAMPLE = ROOT / 'etc' / 'ironic-multi' / 'static-nodes.yaml.sample'
request = provider_contract.request


@pytest.fixture
def sample(tmp_path):
    """The sample, started by the static provider in a copy of its own.

    The provider keeps its reservations next to the inventory.
    """
    path = tmp_path / 'static-nodes.yaml'
    shutil.copy(SAMPLE, path)
    provider = static.StaticProvider(reservers.make_conf(),
                                     inventory_path=str(path))
    provider.start()
    return provider


def test_the_sample_uses_every_key_of_an_entry():
    used = set()
    for entry in yaml.safe_load(SAMPLE.read_text()):
        used.update(entry)
    assert used == set(inventory._KEYS)


def test_the_sample_loads(sample):
    nodes = {n['name']: n for n in sample.nodes()}
    assert sorted(nodes) == ['lab-01', 'rack1-u07', 'rack1-u09',
                             'rack2-u01', 'rack2-u02']
    # No shard key: the hash of its UUID.
    unsharded = nodes['rack1-u09']
    assert unsharded['shard'] == shards.ShardKeys(64).fallback_of(
        unsharded['uuid'])
    assert nodes['rack2-u02']['maintenance'] is True


def test_the_sample_gpu_node_is_claimed_for_a_gpu_flavor(sample):
    gpu = request('baremetal-gold', **{'trait:CUSTOM_GPU': 'required'})
    candidates = sample.ready_nodes(gpu, None)
    assert [n['name'] for n in candidates] == ['rack1-u07']
    held = sample.claim(candidates, provider_contract.new_instance(), gpu,
                        deadline=None)
    assert held.node_uuid == candidates[0]['uuid']


def test_only_the_owner_project_gets_the_owned_node(sample):
    owner = '5b8b0c2ce0d34bdbb2f5f1e5a7a6d3c1'
    silver = sorted(n['name'] for n in sample.ready_nodes(
        request('baremetal-silver', project_id=owner), None))
    others = sorted(n['name'] for n in sample.ready_nodes(
        request('baremetal-silver', project_id='another'), None))
    # Never the node in maintenance; lab-01 is in conductor group "lab",
    # which a service of no conductor group serves too.
    assert silver == ['lab-01', 'rack2-u01']
    assert others == ['lab-01']
