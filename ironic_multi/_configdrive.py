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

"""An instance's config drive, as Ironic takes it.

Nova's metadata service code (``nova.api.metadata``) writes the drive's
content; only the virt driver uses this module.  It stands apart from
``ironic_multi._virt`` so that the driver's package keeps to one rule that a
grep can check: nothing there names an API but the reservation layer's.
"""

import base64
import gzip
import io
import shutil
import tempfile

from nova.api.metadata import base as instance_metadata
from nova.virt import configdrive
from nova.virt import netutils


def build(instance, network_info, admin_password=None, injected_files=None,
          node_network=None):
    """The config drive, gzipped and base64-encoded as Ironic takes it.

    :param node_network: the node's ports and port groups
        (:class:`~.providers.base.NodeNetwork`), or None.
    """
    extra_md = {'admin_pass': admin_password} if admin_password else {}
    i_meta = instance_metadata.InstanceMetadata(
        instance, content=injected_files, extra_md=extra_md,
        network_info=network_info,
        network_metadata=network_metadata(network_info, node_network))
    compressed = io.BytesIO()
    with tempfile.NamedTemporaryFile() as image:
        with configdrive.ConfigDriveBuilder(instance_md=i_meta) as builder:
            builder.make_drive(image.name)
        image.seek(0)
        with gzip.GzipFile(fileobj=compressed, mode='wb') as gzipped:
            shutil.copyfileobj(image, gzipped)
    return base64.b64encode(compressed.getvalue()).decode()


def network_metadata(network_info, node_network):
    """``network_data.json`` with the node's MACs and bonds, as in-tree.

    Nova's metadata says what Neutron knows; the node's ports say which
    NIC each VIF is on (its MAC, so that cloud-init matches the NIC), and
    a VIF on a port group becomes a bond of the group's ports, with the
    group's mode and bonding options.  Without ports (a provider that
    knows none), None: Nova builds it from Neutron's data alone.
    """
    if node_network is None:
        return None
    metadata = netutils.get_network_metadata(network_info)
    if metadata is None:
        return None
    ports = {p.vif: p for p in node_network.ports if p.vif}
    groups = {g.vif: g for g in node_network.port_groups if g.vif}
    members = []
    for link in metadata['links']:
        group = groups.get(link['vif_id'])
        if group is not None:
            bonded = [p for p in node_network.ports
                      if p.port_group == group.id]
            link.update(type='bond', bond_mode=group.mode, bond_links=[])
            if group.address:
                link['ethernet_mac_address'] = group.address
            for key, value in sorted(group.properties.items()):
                # cloud-init reads bonding options named bond_*.
                link[key if key.startswith('bond') else 'bond_' + key] = value
            for port in bonded:
                # The bond's MTU (in-tree gives none): Ironic replaces
                # the network data of a drive with a link without one.
                members.append({'id': port.id, 'type': 'phy',
                                'ethernet_mac_address': port.address,
                                'mtu': link.get('mtu')})
                link['bond_links'].append(port.id)
        elif link['vif_id'] in ports:
            link.update(type='phy', ethernet_mac_address=ports[
                link['vif_id']].address)
    metadata['links'].extend(members)
    return metadata
