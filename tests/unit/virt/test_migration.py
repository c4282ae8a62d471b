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

import types

import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._virt import host as host_mod
from ironic_multi._virt import migration

NODE = '2b4f1c8e-5d0a-4e7b-9c3f-6a1d2e8b7c90'
INSTANCE = '9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d'
GROUP = 'ironic-multi'


def compute_node(host='intree1', hypervisor_hostname=NODE, uuid=NODE,
                 hypervisor_type='ironic'):
    return types.SimpleNamespace(host=host, uuid=uuid,
                                 hypervisor_hostname=hypervisor_hostname,
                                 hypervisor_type=hypervisor_type)


def instance(vm_state='active', task_state=None):
    return types.SimpleNamespace(uuid=INSTANCE, vm_state=vm_state,
                                 task_state=task_state, node=NODE)


def reservation(node_uuid=NODE, group=None, state=lifecycle.State.ACTIVE,
                node_state='active'):
    return lifecycle.Reservation(instance_uuid=INSTANCE, node_uuid=node_uuid,
                                 state=state, group=group,
                                 node_state=node_state)


def test_in_tree_compute_nodes_are_one_per_ironic_node():
    assert migration.in_tree(compute_node())
    # This driver's: named after its host, UUID derived from it.
    ours = compute_node(host='compute1', hypervisor_hostname='compute1',
                        uuid=host_mod.compute_node_uuid('compute1'))
    assert not migration.in_tree(ours)
    # Another hypervisor altogether.
    assert not migration.in_tree(compute_node(hypervisor_type='QEMU'))


def _refusals(inst=None, res='default', node=None, allocations=None,
              conductor_group=None, moved_to=None):
    return migration.refusals(
        inst or instance(),
        reservation() if res == 'default' else res,
        node if node is not None else {'maintenance': False},
        {NODE: {'CUSTOM_BAREMETAL': 1}} if allocations is None
        else allocations, GROUP, conductor_group, moved_to)


def test_an_active_server_on_its_deployed_node_moves():
    assert _refusals() == []
    assert _refusals(res=reservation(group=GROUP)) == []
    assert _refusals(inst=instance(vm_state='stopped')) == []
    # A move that stopped half way: the allocation is where it goes.
    assert _refusals(allocations={'rp': {'CUSTOM_BAREMETAL': 1}},
                     moved_to='rp') == []


@pytest.mark.parametrize('kwargs, reason', [
    ({'inst': instance(task_state='rebooting')},
     'a task is under way (rebooting)'),
    ({'inst': instance(vm_state='error')}, 'the server is error'),
    ({'inst': instance(vm_state='rescued')}, 'the server is rescued'),
    ({'res': None}, 'no Ironic node holds the instance'),
    ({'res': reservation(node_uuid='other')},
     'node other holds the instance, Nova says %s' % NODE),
    ({'res': reservation(group='another-group')},
     'carries the mark of group another-group'),
    ({'node': {'maintenance': True}}, 'is in maintenance'),
    ({'res': reservation(state=lifecycle.State.ERROR,
                         node_state='deploy failed')},
     'is deploy failed, not active'),
    ({'allocations': {}}, 'its allocation is against nothing'),
    ({'allocations': {'rp': {'CUSTOM_BAREMETAL': 1}}},
     'its allocation is against rp, not only'),
    ({'allocations': {NODE: {'CUSTOM_BAREMETAL': 1},
                      'sharing': {'IPV4_ADDRESS': 1}}},
     'not only against the provider of node %s' % NODE),
    ({'node': {'conductor_group': 'rack-2'}, 'conductor_group': 'Rack-1'},
     'is in conductor group "rack-2", this group serves "Rack-1"'),
])
def test_each_refusal_says_why(kwargs, reason):
    (found,) = _refusals(**kwargs)
    assert reason in found


def test_every_reason_is_given():
    found = _refusals(inst=instance(vm_state='error', task_state='deleting'),
                      node={'maintenance': True}, allocations={})
    assert len(found) == 4, found
