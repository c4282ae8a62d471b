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

"""Boot from volume, Nova's way.

Nova exports an instance's volumes to its host before spawn: it asks the
driver for the host's volume connector (here the node's initiator), has
Cinder export each volume to it, then calls spawn with Cinder's
connection info.  So an instance that boots from a volume holds its node
from ``prepare_networks_before_block_device_mapping`` on, where Nova's
in-tree driver holds its node from ``prepare_for_spawn``; other
instances still reserve theirs at spawn.  The connector is the in-tree
driver's, from the node's Ironic volume connectors.
"""

from nova import context as nova_context
from nova import objects


def boots_from_volume(instance):
    """Whether the instance's root disk is a volume (from its BDMs)."""
    return root_is_volume(objects.BlockDeviceMappingList.get_by_instance_uuid(
        nova_context.get_admin_context(), instance.uuid))


def root_is_volume(bdms):
    """Whether the root of the block device mappings ``bdms`` is a volume."""
    return any(bdm.is_root and bdm.is_volume for bdm in bdms or ())


def connector(instance, node, connectors):
    """Nova's volume connector for ``node``, as the in-tree driver's.

    :param node: the node dict (its ``properties``), or None.
    :param connectors: the node's :class:`~.base.VolumeConnector` s.
    """
    values = {}
    for found in connectors:
        values.setdefault(found.type, []).append(found.connector_id)
    props = {}
    ip = _ip(instance, values)
    if ip:
        props['ip'] = props['host'] = ip
    if values.get('iqn'):
        props['initiator'] = values['iqn'][0]
    if values.get('wwpn'):
        props['wwpns'] = values['wwpn']
    if values.get('wwnn'):
        props['wwnns'] = values['wwnn']
    props['platform'] = ((node or {}).get('properties') or {}).get('cpu_arch')
    props['os_type'] = 'baremetal'
    # Cinder's drivers log the host; some need one.
    if 'host' not in props:
        props['host'] = instance.hostname
    props['multipath'] = False
    return props


def _ip(instance, values):
    """The connector's address: an ``ip`` connector, else a fixed IP.

    Unlike the in-tree driver, no VIF is attached yet when Nova asks (the
    deploy attaches them), so a ``mac`` connector cannot pick the VIF:
    the instance's first IPv4 address is used, as in-tree without one.
    """
    if values.get('ip'):
        return values['ip'][0]
    fixed_ips = [ip for vif in instance.get_network_info()
                 for ip in vif.fixed_ips()]
    for ip in fixed_ips:
        if ip['version'] == 4:
            return ip['address']
    return fixed_ips[0]['address'] if fixed_ips else None
