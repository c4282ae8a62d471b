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

"""What the driver tells the reservation layer about an instance: its
requirements, and the deployment (image, deploy parameters, VIFs, config
drive)."""

import nova.conf
from nova.network import model as network_model
from nova import utils as nova_utils
from nova.virt import configdrive
from nova.virt import driver
from oslo_serialization import jsonutils

from ironic_multi import _configdrive as configdrive_image
from ironic_multi._reservation.providers import base
from ironic_multi._reservation import requirements

NOVA_CONF = nova.conf.CONF

_CAPABILITIES = 'capabilities:'
# The values of Ironic's instance_info/image_type for a Glance image.
PARTITION, WHOLE_DISK = 'partition', 'whole-disk'


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


def deployment_for(instance, image_meta, reqs, host, network_info=None,
                   admin_password=None, injected_files=None,
                   preserve_ephemeral=None, volume_targets=()):
    """The :class:`~.base.Deployment` of ``instance`` on ``host``.

    Its deploy parameters are those Nova's Ironic driver writes to
    ``instance_info``.  With ``volume_targets`` (see
    :func:`volume_targets`) the node boots from them: no image is written.
    """
    flavor = instance.flavor
    # Whose server it is and its addresses, as Nova's in-tree driver
    # writes them (get_instance_driver_metadata's values): ``baremetal
    # node show`` is where operators look.
    system_metadata = instance.system_metadata or {}
    networks = network_model.NetworkInfo.hydrate(network_info or [])
    info = {
        'root_gb': str(flavor.root_gb),
        'swap_mb': str(flavor.swap),
        'vcpus': str(flavor.vcpus),
        'memory_mb': str(flavor.memory_mb),
        'flavor_name': flavor.name,
        'display_name': instance.display_name,
        'project_id': instance.project_id,
        'project_name': str(system_metadata.get('owner_project_name',
                                                'N/A')),
        'user_id': instance.user_id,
        'user_name': str(system_metadata.get('owner_user_name', 'N/A')),
        'fixed_ips': str(networks.fixed_ips()),
        'floating_ips': str(networks.floating_ips()),
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
    if not volume_targets:
        info['image_type'] = image_type(system_metadata)
    configdrive = None
    if configdrive_required(instance):
        configdrive = (lambda node_network=None: build_configdrive(
            instance, network_info, admin_password, injected_files,
            node_network))
    return base.Deployment(
        instance_uuid=instance.uuid, host=host,
        image_source=None if volume_targets else image_meta.id,
        instance_info=info, vifs=vif_ids(network_info),
        configdrive=configdrive, volume_targets=tuple(volume_targets))


def image_type(system_metadata):
    """Ironic's ``image_type`` of the instance's image.

    Without it, Ironic's conductor asks Glance for the image's properties
    on every deploy, inside the provision request Nova waits for (half of
    that request's time in a burst, when measured); with it, Ironic takes
    it as given.  The rule is Ironic's own for a Glance image
    (``ironic.common.images.is_whole_disk_image``): the ``img_type``
    property if set, else a partition image when the image names a kernel
    or a ramdisk; applied to the properties Nova stored with the instance
    (and stores anew on rebuild).
    """
    properties = nova_utils.get_image_from_system_metadata(
        system_metadata)['properties']

    def prop(name):
        value = properties.get(name)
        # Nova stores str(value): a property set to null reads 'None'.
        return None if value in (None, '', 'None') else value

    img_type = prop('img_type')
    if img_type is not None:
        return PARTITION if img_type == PARTITION else WHOLE_DISK
    if prop('kernel_id') or prop('ramdisk_id'):
        return PARTITION
    return WHOLE_DISK


def volume_targets(block_device_info):
    """The :class:`~.base.VolumeTarget` s of the instance's volumes.

    From Cinder's connection info of each volume Nova attached (to the
    node's connectors), as Nova's in-tree driver makes Ironic's volume
    targets.
    """
    targets = []
    for bdm in driver.block_device_info_get_mapping(block_device_info):
        connection_info = bdm['connection_info'] or {}
        targets.append(base.VolumeTarget(
            volume_id=bdm.volume_id,
            volume_type=connection_info.get('driver_volume_type'),
            properties=dict(connection_info.get('data') or {}),
            boot_index=bdm['boot_index']))
    return tuple(targets)


def vif_ids(network_info):
    """The IDs of the VIFs (Neutron ports) of ``network_info``."""
    return tuple(vif['id'] for vif in network_info or ())


def configdrive_required(instance):
    return configdrive.required_by(instance)


def build_configdrive(instance, network_info, admin_password=None,
                      injected_files=None, node_network=None):
    """The config drive, gzipped and base64-encoded as Ironic takes it."""
    return configdrive_image.build(instance, network_info, admin_password,
                                   injected_files, node_network)
