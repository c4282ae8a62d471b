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

"""The cloud's Ironic fleet: the sandbox's node groups, enrolled in parallel.

Ironic itself is :class:`~ironic_multi.testing.ironic_server.IronicServer`
behind the cloud's Keystone; the fleet is a
:class:`~ironic_multi.testing.fleet.Layout` (resource classes ``gold``,
``silver`` and ``bronze``, a trait on some nodes, a ``boot_mode``
capability on all, some owned by another project, shard keys dealt round
robin).  Each node has a port group of two ports (a bond, ``802.3ad``),
as a bare metal machine with a bonded NIC pair: Nova's in-tree driver and
this one make a bond of it in the config drive's ``network_data.json``.
It also has :data:`SINGLE_NICS` ports of their own: one VIF each, for
servers with several networks and interfaces attached later.  Every port
is on the physical network of Neutron's networks and cabled to the fake
switch (see :mod:`~ironic_multi.testing.cloud.neutron`).  And it has an
iSCSI initiator (an Ironic volume connector), so that servers may boot
from Cinder's volumes.
"""

import concurrent.futures

from ironic_multi.testing.cloud import neutron
from ironic_multi.testing import fleet

# Ironic is CPU-bound: on 2 cores, 2 threads enrolled fastest.
ENROLL_THREADS = 2
# NICs outside the bond (numbered after its two): a VIF takes a port
# group or a port of its own, so a node holds 1 + SINGLE_NICS VIFs.
SINGLE_NICS = 3
# Where every NIC is: Neutron's physical network, a fake switch port.
NICS = dict(physical_network=neutron.PHYSNET, local_link=neutron.local_link)


def default_layout(nodes, computes):
    """The sandbox's fleet for ``nodes`` nodes (its workload unused)."""
    return fleet.make_layout(nodes, max(computes, fleet.MIN_COMPUTES),
                             servers=max(fleet.MIN_SERVERS, nodes // 2))


def enroll(nodes, layout, on_enrolled=None):
    """Enroll ``layout``'s nodes through ``nodes`` (IronicNodes).

    Each node is enrolled, managed, provided and powered off through the
    API, and gets its NICs, two at a time.  ``on_enrolled()`` is called
    after each.  Returns ``{node uuid: group name}``.
    """
    def enroll(group, shard):
        (uuid,) = nodes.enroll_nodes(
            1, resource_class=group.resource_class,
            properties=group.properties, traits=group.traits, shard=shard,
            owner=group.owner, name_prefix=group.name)
        nodes.add_bond(uuid, **NICS)
        for index in range(3, 3 + SINGLE_NICS):
            nodes.add_port(uuid, index, **NICS)
        # Its iSCSI initiator: Cinder exports boot volumes to it.
        nodes.add_volume_connector(uuid)
        return uuid

    enrolled = {}
    pool = concurrent.futures.ThreadPoolExecutor(ENROLL_THREADS)
    try:
        futures = {pool.submit(enroll, group, shard): group
                   for group, shard in layout.node_specs()}
        for future in concurrent.futures.as_completed(futures):
            uuid = future.result()
            enrolled[uuid] = futures[future].name
            if on_enrolled is not None:
                on_enrolled()
    finally:
        # On Ctrl-C, do not wait for the enrollments not yet begun.
        pool.shutdown(wait=True, cancel_futures=True)
    return enrolled
