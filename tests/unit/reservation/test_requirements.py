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

import dataclasses

from hypothesis import given
from hypothesis import strategies as st
import pytest

from ironic_multi._reservation import requirements
from ironic_multi import exception

try:
    import os_resource_classes
except ImportError:
    os_resource_classes = None

Requirements = requirements.Requirements

# The usual Ironic flavor: one custom class, standard resources zeroed.
ZEROED = {'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
          'resources:DISK_GB': '0'}
FLAVOR = {'memory_mb': 4096, 'vcpus': 8, 'root_gb': 40, 'ephemeral_gb': 0,
          'swap': 0}


def parse(extra_specs=None, image_properties=None, project_id=None,
          **flavor):
    flavor = dict(FLAVOR, **flavor)
    flavor['extra_specs'] = extra_specs or {}
    return Requirements.from_request(flavor, image_properties, project_id)


def assert_invalid(key, value, extra_specs=None, image_properties=None,
                   **flavor):
    with pytest.raises(exception.InvalidRequestSpec) as info:
        parse(extra_specs, image_properties, **flavor)
    assert info.value.key == key
    assert info.value.value == value
    return info.value


class TestBasics:
    def test_empty_request_accepts_any_node(self):
        result = Requirements.from_request({})
        assert result == Requirements()
        assert result.describe() == 'any node'

    def test_frozen_and_hashable(self):
        result = parse(ZEROED)
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.resource_class = 'CUSTOM_X'
        assert hash(result) == hash(parse(ZEROED))

    def test_project(self):
        assert parse(project_id='p1').project_id == 'p1'

    def test_unknown_namespaces_ignored(self):
        result = parse(dict(ZEROED, **{'hw:cpu_policy': '>= abc',
                                       'quota:disk_read_bytes_sec': 'x',
                                       'hw_rng:allowed': 'True'}))
        assert result == Requirements()

    def test_describe(self):
        result = parse(dict(ZEROED, **{
            'resources:CUSTOM_GOLD': '1', 'resources:MEMORY_MB': '512',
            'trait:CUSTOM_A': 'required', 'trait:CUSTOM_B': 'forbidden',
            'capabilities:boot_mode': 's== uefi', 'cpu_arch': 'x86_64'}),
            project_id='p1')
        expected = ('resource_class=CUSTOM_GOLD, memory_mb>=512, '
                    'traits=+CUSTOM_A,-CUSTOM_B, boot_mode=s== uefi, '
                    'cpu_arch=x86_64, project=p1')
        assert result.describe() == expected
        assert str(result) == expected


class TestResourceClass:
    def test_custom_class(self):
        result = parse(dict(ZEROED, **{'resources:CUSTOM_BAREMETAL_GOLD':
                                       ' 1 '}))
        assert result.resource_class == 'CUSTOM_BAREMETAL_GOLD'
        assert result.minimums == ()

    def test_none_requested(self):
        assert parse(ZEROED).resource_class is None

    def test_other_standard_class_zero_allowed(self):
        assert parse({'resources:VGPU': '0'}).resource_class is None

    @pytest.mark.parametrize('key, value', [
        ('resources:CUSTOM_X', 'one'),
        ('resources:CUSTOM_X', '1.0'),
        ('resources:CUSTOM_X', '-1'),
        ('resources:CUSTOM_X', ''),
        ('resources:CUSTOM_X', '0'),
        ('resources:CUSTOM_X', '2'),
        ('resources:VCPU', 'x'),
        ('resources:custom_x', '1'),
        ('resources:CUSTOM_', '1'),
        ('resources:CUSTOM_A-B', '1'),
        ('resources:VGPU', '1'),
        ('resources1:CUSTOM_X', '2'),
        ('resources_gpu:VGPU', '1'),
    ])
    def test_malformed(self, key, value):
        assert_invalid(key, value, {key: value})

    def test_granular_groups_are_one_node(self):
        # One node is one provider: every group's resources are its own.
        result = parse(dict(ZEROED, **{'resources1:CUSTOM_X': '1',
                                       'resources_a:VCPU': '2',
                                       'resources2:VCPU': '1'}))
        assert result.resource_class == 'CUSTOM_X'
        assert result.minimums == (('cpus', 3),)
        error = assert_invalid('resources2:CUSTOM_Y', '1', {
            'resources1:CUSTOM_X': '1', 'resources2:CUSTOM_Y': '1'})
        assert 'CUSTOM_X' in error.message

    def test_two_custom_classes(self):
        error = assert_invalid('resources:CUSTOM_B', '1',
                               {'resources:CUSTOM_A': '1',
                                'resources:CUSTOM_B': '1'})
        assert 'CUSTOM_A' in error.message

    @pytest.mark.parametrize('name, expected', [
        ('baremetal-gold', 'CUSTOM_BAREMETAL_GOLD'),
        ('baremetal_gold', 'CUSTOM_BAREMETAL_GOLD'),
        ('BareMetal.Gold', 'CUSTOM_BAREMETAL_GOLD'),
        ('bm--_x', 'CUSTOM_BM_X'),
        ('CUSTOM_GOLD', 'CUSTOM_CUSTOM_GOLD'),
    ])
    def test_normalize(self, name, expected):
        assert requirements.normalize_resource_class(name) == expected

    @pytest.mark.skipif(os_resource_classes is None,
                        reason='os-resource-classes is not installed')
    @given(st.text(min_size=1, max_size=12))
    def test_normalize_agrees_with_placement(self, name):
        assert (requirements.normalize_resource_class(name)
                == os_resource_classes.normalize_name(name))


class TestMinimums:
    def test_from_flavor(self):
        result = parse(root_gb=10, ephemeral_gb=5, swap=1025)
        assert dict(result.minimums) == {'memory_mb': 4096, 'cpus': 8,
                                         'local_gb': 17}

    def test_zeroed_standard_resources_are_not_compared(self):
        result = parse(dict(ZEROED, **{'resources:CUSTOM_X': '1'}))
        assert result.minimums == ()

    def test_each_resource_counts_on_its_own(self):
        result = parse({'resources:VCPU': '0', 'resources:CUSTOM_X': '1'})
        assert dict(result.minimums) == {'memory_mb': 4096, 'local_gb': 40}

    def test_override(self):
        result = parse(dict(ZEROED, **{'resources:VCPU': '2'}))
        assert result.minimums == (('cpus', 2),)

    def test_zero_sizes_are_dropped(self):
        result = parse(memory_mb=0, vcpus=None, root_gb='0')
        assert result.minimums == ()

    @pytest.mark.parametrize('key, value', [
        ('memory_mb', 'lots'), ('vcpus', -1), ('root_gb', 1.5),
        ('ephemeral_gb', '2G'), ('swap', 'x')])
    def test_malformed_flavor(self, key, value):
        assert_invalid(key, value, **{key: value})


class TestTraits:
    def test_flavor_traits(self):
        result = parse({'trait:HW_CPU_X86_AVX2': 'required',
                        'trait:CUSTOM_RAID': 'forbidden'})
        assert result.required_traits == {'HW_CPU_X86_AVX2'}
        assert result.forbidden_traits == {'CUSTOM_RAID'}

    def test_image_traits(self):
        result = parse({'trait:CUSTOM_A': 'required'},
                       {'traits_required': ['CUSTOM_B'],
                        'trait:CUSTOM_C': 'required',
                        'trait:CUSTOM_D': 'forbidden',
                        'trait:lower': 'ignored'})
        assert result.required_traits == {'CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C'}
        assert result.forbidden_traits == frozenset()

    @pytest.mark.parametrize('key, value', [
        ('trait:CUSTOM_A', 'Required'),
        ('trait:CUSTOM_A', 'yes'),
        ('trait:CUSTOM_A', ''),
        ('trait:custom_a', 'required'),
        ('trait:CUSTOM_', 'required'),
        ('trait:CUSTOM_A-B', 'forbidden'),
        ('trait1:CUSTOM_A', 'maybe'),
        ('trait1:custom_a', 'required'),
    ])
    def test_malformed(self, key, value):
        assert_invalid(key, value, {key: value})

    def test_granular_groups_count_as_unnumbered(self):
        # As Nova's in-tree driver: the group suffix does not matter to
        # one node.
        result = parse({'resources:CUSTOM_X': '1',
                        'trait1:CUSTOM_A': 'required',
                        'trait_gpu:CUSTOM_B': 'required',
                        'trait2:CUSTOM_C': 'forbidden'})
        assert result.required_traits == {'CUSTOM_A', 'CUSTOM_B'}
        assert result.forbidden_traits == {'CUSTOM_C'}
        assert_invalid('trait:CUSTOM_A', 'forbidden', {
            'trait1:CUSTOM_A': 'required', 'trait:CUSTOM_A': 'forbidden'})

    @pytest.mark.parametrize('image_traits', [
        'CUSTOM_A', ['CUSTOM_A', 3], ['bad name'],
        # Not a list at all: was a TypeError.
        5, 2.5, {'CUSTOM_A': 'required'}])
    def test_malformed_image_traits(self, image_traits):
        assert_invalid('traits_required', image_traits, None,
                       {'traits_required': image_traits})

    def test_malformed_image_trait_property(self):
        assert_invalid('trait:bad', 'required', None,
                       {'trait:bad': 'required'})

    def test_required_and_forbidden(self):
        assert_invalid('trait:CUSTOM_A', 'forbidden',
                       {'trait:CUSTOM_A': 'forbidden'},
                       {'traits_required': ['CUSTOM_A']})


class TestCapabilities:
    def test_scoped(self):
        result = parse({'capabilities:boot_mode': 'uefi',
                        'capabilities:cpu:count': '>= 2'})
        parsed = [(scope, str(expr)) for scope, expr in result.capabilities]
        assert parsed == [(('boot_mode',), 'uefi'), (('cpu', 'count'), '>= 2')]
        assert result.legacy_capabilities == ()

    def test_legacy(self):
        result = parse({'cpu_arch': 's== x86_64'})
        parsed = [(scope, str(expr))
                  for scope, expr in result.legacy_capabilities]
        assert parsed == [(('cpu_arch',), 's== x86_64')]
        assert result.capabilities == ()

    @pytest.mark.parametrize('key, value', [
        ('capabilities:raid', '>= abc'),
        ('capabilities:raid', '<or>'),
        ('capabilities:raid', ''),
        ('capabilities:', 'uefi'),
        ('capabilities:a::b', 'uefi'),
        ('cpu_arch', 's=='),
    ])
    def test_malformed(self, key, value):
        assert_invalid(key, value, {key: value})
