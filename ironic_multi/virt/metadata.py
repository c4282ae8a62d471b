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

"""What the driver tells Ironic and the reservation layer about an
instance: requirements, ``instance_info`` and the config drive."""

import base64
import gzip
import io
import shutil
import tempfile

from nova.api.metadata import base as instance_metadata
import nova.conf
from nova.virt import configdrive
from oslo_serialization import jsonutils

from ironic_multi.reservation import requirements
from ironic_multi.virt import instances

NOVA_CONF = nova.conf.CONF

_CAPABILITIES = 'capabilities:'


def flavor_dict(flavor):
    """The plain mapping ``Requirements.from_request`` reads."""
    return {
        'memory_mb': flavor.memory_mb,
        'vcpus': flavor.vcpus,
        'root_gb': flavor.root_gb,
        'ephemeral_gb': flavor.ephemeral_gb,
        'swap': flavor.swap,
        'extra_specs': dict(flavor.extra_specs or {}),
    }


def image_properties(image_meta):
    """The image properties that are set, as a plain dict."""
    props = getattr(image_meta, 'properties', None)
    if props is None:
        return {}
    return {name: getattr(props, name) for name in props.fields
            if props.obj_attr_is_set(name)}


def requirements_for(instance, image_meta):
    """What a node must offer to serve ``instance``.

    :raises: ironic_multi.exception.InvalidRequestSpec
    """
    return requirements.Requirements.from_request(
        flavor_dict(instance.flavor), image_properties(image_meta),
        instance.project_id)


def instance_info_patch(instance, image_meta, reqs, host,
                        preserve_ephemeral=None):
    """JSON patch setting what Ironic's deploy reads in ``instance_info``.

    The same keys as Nova's Ironic driver, plus the host that deployed the
    instance (``nova_host_id``), which is how a service recognizes its own
    instances.
    """
    flavor = instance.flavor
    info = {
        'image_source': image_meta.id,
        'root_gb': str(flavor.root_gb),
        'swap_mb': str(flavor.swap),
        'vcpus': str(flavor.vcpus),
        'memory_mb': str(flavor.memory_mb),
        'flavor_name': flavor.name,
        'display_name': instance.display_name,
        'project_id': instance.project_id,
        'user_id': instance.user_id,
        instances.HOST_KEY: host,
    }
    if flavor.ephemeral_gb:
        info['ephemeral_gb'] = str(flavor.ephemeral_gb)
        if NOVA_CONF.default_ephemeral_format:
            info['ephemeral_format'] = NOVA_CONF.default_ephemeral_format
    if preserve_ephemeral is not None:
        info['preserve_ephemeral'] = str(preserve_ephemeral)
    # Ironic reads boot_mode, boot_option, ... from here.
    capabilities = {key[len(_CAPABILITIES):]: value
                    for key, value in (flavor.extra_specs or {}).items()
                    if key.startswith(_CAPABILITIES)}
    if capabilities:
        info['capabilities'] = jsonutils.dumps(capabilities)
    # Ironic picks deploy templates by the instance's required traits.
    if reqs.required_traits:
        info['traits'] = sorted(reqs.required_traits)
    return [{'op': 'add', 'path': '/instance_info/%s' % key, 'value': value}
            for key, value in sorted(info.items())]


def configdrive_required(instance):
    return configdrive.required_by(instance)


def build_configdrive(instance, network_info, admin_password=None,
                      injected_files=None):
    """The config drive, gzipped and base64-encoded as Ironic takes it."""
    extra_md = {'admin_pass': admin_password} if admin_password else {}
    i_meta = instance_metadata.InstanceMetadata(
        instance, content=injected_files, extra_md=extra_md,
        network_info=network_info)
    compressed = io.BytesIO()
    with tempfile.NamedTemporaryFile() as image:
        with configdrive.ConfigDriveBuilder(instance_md=i_meta) as builder:
            builder.make_drive(image.name)
        image.seek(0)
        with gzip.GzipFile(fileobj=compressed, mode='wb') as gzipped:
            shutil.copyfileobj(image, gzipped)
    return base64.b64encode(compressed.getvalue()).decode()
