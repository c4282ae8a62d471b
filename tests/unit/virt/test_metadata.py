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

import base64
import gzip
import json
from unittest import mock

import pytest

from ironic_multi import exception
from ironic_multi.virt import instances
from ironic_multi.virt import metadata
from tests.unit.virt import fakes


def patch_values(patch):
    assert all(op['op'] == 'add' for op in patch)
    return {op['path']: op['value'] for op in patch}


def test_requirements_from_flavor_image_and_project():
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'trait:CUSTOM_RAID': 'required',
                                  'capabilities:boot_mode': 'uefi'})))
    reqs = metadata.requirements_for(inst, fakes.image_meta(
        **{'trait:CUSTOM_IMAGE': 'required'}))
    assert reqs.resource_class == 'CUSTOM_BAREMETAL'
    assert reqs.required_traits == {'CUSTOM_RAID', 'CUSTOM_IMAGE'}
    assert reqs.project_id == 'project'
    # The standard resources are zeroed: no size minimums.
    assert reqs.minimums == ()


def test_requirements_name_the_bad_key():
    inst = fakes.instance(flavor=fakes.flavor(dict(
        fakes.BAREMETAL_SPECS, **{'trait:CUSTOM_X': 'maybe'})))
    with pytest.raises(exception.InvalidRequestSpec) as e:
        metadata.requirements_for(inst, fakes.image_meta())
    assert 'trait:CUSTOM_X' in str(e.value)


def test_instance_info_patch():
    inst = fakes.instance(flavor=fakes.flavor(
        dict(fakes.BAREMETAL_SPECS, **{'capabilities:boot_mode': 'uefi'}),
        ephemeral_gb=10, swap=512))
    reqs = metadata.requirements_for(inst, fakes.image_meta())
    values = patch_values(metadata.instance_info_patch(
        inst, fakes.image_meta(), reqs, fakes.HOST))
    assert values == {
        '/instance_info/image_source': fakes.IMAGE,
        '/instance_info/root_gb': '40',
        '/instance_info/swap_mb': '512',
        '/instance_info/ephemeral_gb': '10',
        '/instance_info/vcpus': '2',
        '/instance_info/memory_mb': '4096',
        '/instance_info/flavor_name': 'baremetal',
        '/instance_info/display_name': 'server-1',
        '/instance_info/project_id': 'project',
        '/instance_info/user_id': 'user',
        '/instance_info/%s' % instances.HOST_KEY: fakes.HOST,
        '/instance_info/capabilities': json.dumps({'boot_mode': 'uefi'}),
    }


def test_build_configdrive_is_gzipped_base64():
    def make_drive(path):
        with open(path, 'wb') as f:
            f.write(b'iso9660 image')

    builder = mock.MagicMock()
    builder.__enter__.return_value.make_drive.side_effect = make_drive
    inst = fakes.instance()
    with mock.patch.object(metadata.instance_metadata, 'InstanceMetadata') \
            as i_meta, \
            mock.patch.object(metadata.configdrive, 'ConfigDriveBuilder',
                              return_value=builder):
        encoded = metadata.build_configdrive(inst, [], 'pw', [('/f', b'x')])
    assert gzip.decompress(base64.b64decode(encoded)) == b'iso9660 image'
    i_meta.assert_called_once_with(inst, content=[('/f', b'x')],
                                   extra_md={'admin_pass': 'pw'},
                                   network_info=[])
