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

"""Why a server does not go back to the in-tree driver.

The moves themselves run against the real services in
``tests/functional/test_migrate_plan.py`` (``RollbackTest``).
"""

import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._virt import host as host_mod
from ironic_multi._virt import rollback
from tests.unit.virt import test_migration

NODE = test_migration.NODE
GROUP = test_migration.GROUP
OURS = host_mod.compute_node_uuid('compute1')


def _refusals(inst=None, res='default', allocations=None):
    if res == 'default':
        res = lifecycle.Reservation(
            instance_uuid=test_migration.INSTANCE, node_uuid=NODE,
            state=lifecycle.State.ACTIVE, group=GROUP,
            resource_class='baremetal')
    return rollback.refusals(
        inst or test_migration.instance(), res,
        {OURS: {'CUSTOM_BAREMETAL': 1}} if allocations is None
        else allocations, GROUP, (OURS, NODE))


def test_an_active_server_of_this_group_goes_back():
    assert [] == _refusals()
    assert [] == _refusals(inst=test_migration.instance('stopped'))


def test_a_run_that_stopped_half_way_is_finished():
    # The allocation moved to the node's provider, the mark went.
    assert [] == _refusals(allocations={NODE: {'CUSTOM_BAREMETAL': 1}})
    assert [] == _refusals(res=lifecycle.Reservation(
        instance_uuid=test_migration.INSTANCE, node_uuid=NODE,
        state=lifecycle.State.ACTIVE, resource_class='baremetal'))


@pytest.mark.parametrize('kwargs, reason', [
    ({'inst': test_migration.instance(task_state='rebooting')},
     'a task is under way (rebooting)'),
    ({'inst': test_migration.instance(vm_state='error')},
     'the server is error; only active or stopped servers move'),
    ({'res': None}, 'no Ironic node holds the instance'),
    ({'res': lifecycle.Reservation(
        instance_uuid=test_migration.INSTANCE, node_uuid=NODE,
        state=lifecycle.State.ACTIVE, group='another',
        resource_class='baremetal')},
     'node %s carries the mark of group another' % NODE),
    ({'allocations': {}}, 'its allocation is nothing'),
    ({'allocations': {'elsewhere': {'CUSTOM_BAREMETAL': 1}}},
     'its allocation is'),
    ({'allocations': {OURS: {'CUSTOM_BAREMETAL': 1, 'VCPU': 4}}},
     "not {'CUSTOM_BAREMETAL': 1}"),
    ({'allocations': {OURS: {'CUSTOM_BAREMETAL': 1},
                      NODE: {'CUSTOM_BAREMETAL': 1}}},
     'its allocation is'),
])
def test_each_refusal_says_why(kwargs, reason):
    reasons = _refusals(**kwargs)
    assert 1 == len(reasons), reasons
    assert reason in reasons[0]
