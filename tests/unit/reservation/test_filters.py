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
import logging

import pytest

from ironic_multi._reservation import filters
from ironic_multi._reservation.providers.ironic import states
from ironic_multi._reservation import requirements

ANY = requirements.Requirements()


def node(**overrides):
    """A node every default filter accepts for ANY."""
    result = {
        'uuid': 'node-1', 'name': 'n1', 'resource_class': 'baremetal-gold',
        'properties': {'memory_mb': 4096, 'cpus': 8, 'local_gb': 100,
                       'cpu_arch': 'x86_64',
                       'capabilities': 'boot_mode:uefi,raid:1'},
        'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_RAID'],
        'instance_uuid': None, 'allocation_uuid': None,
        'provision_state': 'available', 'maintenance': False,
        'power_state': 'power off', 'owner': None, 'lessee': None,
        'conductor_group': '', 'shard': 's1',
    }
    result.update(overrides)
    return result


READY = filters.ReadyFilter(states.why_not_ready)


def ironic_filters(conductor_group=None):
    """What the Ironic provider matches free nodes with."""
    return (READY,) + filters.matching_filters(conductor_group)


def request(extra_specs=None, project_id=None, **flavor):
    flavor.setdefault('extra_specs', extra_specs or {})
    return requirements.Requirements.from_request(flavor,
                                                  project_id=project_id)


def check(node_filter, a_node, reqs=ANY):
    passes = node_filter.passes(a_node, reqs)
    assert passes is (node_filter.reason(a_node, reqs) is None)
    return passes


# (filter, node overrides, requirements, expected)
CASES = [
    (READY, {}, ANY, True),
    (READY, {'provision_state': 'active'}, ANY, False),
    (READY, {'maintenance': None}, ANY, True),
    (READY, {'maintenance': True}, ANY, False),
    (READY, {'instance_uuid': 'i1'}, ANY, False),
    (READY, {'allocation_uuid': 'a1'}, ANY, False),
    (READY, {'power_state': 'power on'}, ANY, True),
    (READY, {'power_state': None}, ANY, False),
    (filters.ConductorGroupFilter(), {'conductor_group': 'x'}, ANY, True),
    (filters.ConductorGroupFilter('Rack1'), {'conductor_group': 'rack1'},
     ANY, True),
    (filters.ConductorGroupFilter('rack1'), {'conductor_group': ''}, ANY,
     False),
    (filters.ConductorGroupFilter(''), {'conductor_group': None}, ANY,
     True),
    (filters.OwnerFilter(), {}, request(project_id='p1'), True),
    (filters.OwnerFilter(), {'owner': 'p1'}, request(project_id='p1'),
     True),
    (filters.OwnerFilter(), {'owner': 'p2', 'lessee': 'p1'},
     request(project_id='p1'), True),
    (filters.OwnerFilter(), {'lessee': 'p2'}, request(project_id='p1'),
     False),
    (filters.OwnerFilter(), {'owner': 'p2'}, request(project_id='p1'),
     False),
    (filters.OwnerFilter(), {'owner': 'p2'}, ANY, False),
    (filters.OwnerFilter(), {'owner': ''}, ANY, True),
    (filters.ResourceClassFilter(), {'resource_class': None}, ANY, True),
    (filters.ResourceClassFilter(), {'resource_class': 'baremetal_gold'},
     request({'resources:CUSTOM_BAREMETAL_GOLD': '1'}), True),
    (filters.ResourceClassFilter(), {'resource_class': 'baremetal'},
     request({'resources:CUSTOM_BAREMETAL_GOLD': '1'}), False),
    (filters.ResourceClassFilter(), {'resource_class': None},
     request({'resources:CUSTOM_BAREMETAL_GOLD': '1'}), False),
    (filters.PropertiesFilter(), {},
     request(memory_mb=4096, vcpus=8, root_gb=99, swap=1), True),
    (filters.PropertiesFilter(), {},
     request(memory_mb=4097), False),
    (filters.PropertiesFilter(), {}, request(vcpus=9), False),
    (filters.PropertiesFilter(), {}, request(root_gb=99, swap=1025), False),
    (filters.PropertiesFilter(),
     {'properties': {'memory_mb': '8192', 'cpus': 'many'}},
     request(memory_mb=8192), True),
    (filters.PropertiesFilter(), {'properties': {'cpus': 'many'}},
     request(vcpus=1), False),
    (filters.PropertiesFilter(), {'properties': None},
     request({'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
              'resources:DISK_GB': '0'}, vcpus=8), True),
    (filters.TraitsFilter(), {'traits': None}, ANY, True),
    (filters.TraitsFilter(), {},
     request({'trait:CUSTOM_RAID': 'required',
              'trait:CUSTOM_GPU': 'forbidden'}), True),
    (filters.TraitsFilter(), {},
     request({'trait:CUSTOM_GPU': 'required'}), False),
    (filters.TraitsFilter(), {},
     request({'trait:CUSTOM_RAID': 'forbidden'}), False),
    (filters.CapabilitiesFilter(), {'properties': None}, ANY, True),
    (filters.CapabilitiesFilter(), {},
     request({'capabilities:boot_mode': 'uefi',
              'capabilities:raid': '>= 1'}), True),
    (filters.CapabilitiesFilter(), {},
     request({'capabilities:boot_mode': 'bios'}), False),
    (filters.CapabilitiesFilter(), {},
     request({'capabilities:secure_boot': 'true'}), False),
    (filters.CapabilitiesFilter(), {},
     request({'capabilities:cpu_arch': 'x86_64'}), True),
    (filters.CapabilitiesFilter(),
     {'properties': {'capabilities': {'boot_mode': 'uefi', 'disks': 2,
                                      'cpu': {'vendor': 'amd'}}}},
     request({'capabilities:disks': '= 2',
              'capabilities:cpu:vendor': 's== amd'}), True),
    (filters.CapabilitiesFilter(),
     {'properties': {'capabilities': {'cpu': 'amd'}}},
     request({'capabilities:cpu:vendor': 's== amd'}), False),
    (filters.CapabilitiesFilter(),
     {'properties': {'capabilities': 'boot_mode:uefi, raid :1,bad,x:y:z'}},
     request({'capabilities:raid': '1'}), True),
    (filters.CapabilitiesFilter(), {},
     request({'capabilities:x': 'y'}), False),
    # Legacy keys are checked only when the node has the capability, and
    # every node has cpu_arch.
    (filters.CapabilitiesFilter(), {}, request({'secure_boot': 'true'}),
     True),
    (filters.CapabilitiesFilter(), {}, request({'boot_mode': 'bios'}),
     False),
    (filters.CapabilitiesFilter(), {}, request({'cpu_arch': 'x86_64'}),
     True),
    (filters.CapabilitiesFilter(), {'properties': {}},
     request({'cpu_arch': 'x86_64'}), False),
]


@pytest.mark.parametrize('node_filter, overrides, reqs, expected', CASES,
                         ids=[str(i) for i in range(len(CASES))])
def test_filter(node_filter, overrides, reqs, expected):
    assert check(node_filter, node(**overrides), reqs) is expected


@pytest.mark.parametrize('node_filter', ironic_filters('g'),
                         ids=lambda f: f.name)
def test_missing_keys_do_not_crash(node_filter):
    reqs = request({'resources:CUSTOM_X': '1', 'trait:CUSTOM_A': 'required',
                    'capabilities:a': 'b', 'cpu_arch': 'x'},
                   project_id='p', memory_mb=1)
    assert check(node_filter, {}, reqs) in (True, False)


def test_reason_names_the_problem():
    reason = filters.PropertiesFilter().reason(node(), request(vcpus=9))
    assert reason == 'cpus is 8, needs 9'


def test_filter_names():
    assert filters.TraitsFilter().name == 'TraitsFilter'


class TestMatch:
    def test_keeps_order_and_rejects(self):
        nodes = [node(uuid='a'), node(uuid='b', maintenance=True),
                 node(uuid='c'), node(uuid='d', resource_class='silver')]
        reqs = request({'resources:CUSTOM_BAREMETAL_GOLD': '1'})
        assert [n['uuid'] for n in filters.match(
            nodes, reqs, ironic_filters())] == ['a', 'c']

    def test_accepts_an_iterator(self):
        assert filters.match(iter([node()]), ANY) == [node()]

    def test_custom_filters(self):
        nodes = [node(conductor_group='a'), node(conductor_group='b')]
        result = filters.match(nodes, ANY, filters.matching_filters('B'))
        assert result == [nodes[1]]
        assert filters.match(nodes, ANY, ()) == nodes

    def test_logs_rejections(self, caplog):
        caplog.set_level(logging.DEBUG, logger=filters.__name__)
        nodes = [node(uuid='a'), node(uuid='b', maintenance=True),
                 node(uuid='c', maintenance=True, power_state=None),
                 node(uuid='d', power_state=None)]
        filters.match(nodes, ANY, ironic_filters())
        assert ('1 of 4 nodes match any node; rejected: ReadyFilter 3 '
                '(e.g. b: in maintenance)') in caplog.text


def test_requested_classes_are_those_normalizing_alike():
    names = ['baremetal-gold', 'baremetal_gold', 'baremetal', None, '']
    assert filters.requested_classes(
        names, request({'resources:CUSTOM_BAREMETAL_GOLD': '1'})) == [
        'baremetal-gold', 'baremetal_gold']
    assert filters.requested_classes(
        names, request({'resources:CUSTOM_SILVER': '1'})) == []
    # A request for no class in particular looks at every class.
    assert filters.requested_classes(names, ANY) is None


@pytest.mark.parametrize('node_filter, overrides, reqs, expected', CASES,
                         ids=[str(i) for i in range(len(CASES))])
def test_a_filter_match_skips_rejects_nothing(node_filter, overrides, reqs,
                                              expected):
    if not node_filter.applies(reqs):
        assert expected is True
        assert node_filter.reason(node(**overrides), reqs) is None


class _AskedTraits(filters.TraitsFilter):
    """The traits filter, noting the nodes it was asked about."""

    def __init__(self):
        self.asked = []

    def reason(self, a_node, reqs):
        self.asked.append(a_node['uuid'])
        return super().reason(a_node, reqs)


def test_match_skips_the_filters_a_request_does_not_need():
    spy = _AskedTraits()
    nodes = [node(uuid='a'), node(uuid='b', traits=['CUSTOM_A'])]
    assert filters.match(nodes, ANY, (spy,)) == nodes
    assert spy.asked == []
    wanted = request({'trait:CUSTOM_A': 'required'})
    assert filters.match(nodes, wanted, (spy,)) == nodes[1:]
    assert spy.asked == ['a', 'b']
    for skippable in (filters.ResourceClassFilter(),
                      filters.ConductorGroupFilter(),
                      filters.PropertiesFilter(), filters.TraitsFilter(),
                      filters.CapabilitiesFilter()):
        assert not skippable.applies(ANY), skippable.name
    assert filters.ConductorGroupFilter('g').applies(ANY)
    assert filters.OwnerFilter().applies(ANY)


def test_matching_is_match_one_node_at_a_time():
    spy = _AskedTraits()
    wanted = request({'trait:CUSTOM_A': 'required'})
    nodes = [node(uuid=str(i), traits=['CUSTOM_A'] if i % 3 else [])
             for i in range(30)]
    lazy = filters.matching(nodes, wanted, (spy,))
    assert spy.asked == []
    assert next(lazy)['uuid'] == '1'
    assert spy.asked == ['0', '1']
    assert [n['uuid'] for n in lazy] == [
        n['uuid'] for n in filters.match(nodes, wanted, (spy,))][1:]


def test_shuffled_draws_every_item_once_in_any_order():
    items = list(range(5))
    orders = collections.Counter(tuple(filters.shuffled(items))
                                 for _ in range(6000))
    assert all(sorted(order) == items for order in orders)
    assert items == list(range(5))  # the caller's list is left alone
    # 120 orders, each about 50 times (a fixed or biased draw is far off).
    assert len(orders) == 120
    assert min(orders.values()) > 15
    assert list(filters.shuffled([])) == []
