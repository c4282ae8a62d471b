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

"""The one compute node of a service: its name, UUID and resource dict.

Nova's compute manager skips its local node-identity file for every driver
whose name contains "ironic", so the UUID is derived from the host name:
the same after every restart, different for every host, and no file to
lose.
"""

import uuid

from nova.objects import fields as obj_fields

# Never change: every compute node UUID derives from it.
NODE_NAMESPACE = uuid.UUID('5f0c9a52-3b1e-4d59-9a43-0e6a1c9d7b21')

HYPERVISOR_TYPE = 'ironic'
HYPERVISOR_VERSION = 1

# Which architectures the nodes have is the claim's business (node
# properties), so the scheduler's ImagePropertiesFilter is told "any".
_SUPPORTED_INSTANCES = tuple(
    (arch, obj_fields.HVType.BAREMETAL, obj_fields.VMMode.HVM)
    for arch in obj_fields.Architecture.ALL)


def compute_node_uuid(host):
    """The stable UUID of the compute node of ``host``."""
    return str(uuid.uuid5(NODE_NAMESPACE, host))


def available_resource(host):
    """What ``get_available_resource`` returns to the resource tracker.

    The standard resources are zero: bare metal flavors request only the
    nodes' custom resource class, reported by ``update_provider_tree``.
    """
    return {
        'uuid': compute_node_uuid(host),
        'hypervisor_hostname': host,
        'hypervisor_type': HYPERVISOR_TYPE,
        'hypervisor_version': HYPERVISOR_VERSION,
        'cpu_info': '',
        'vcpus': 0,
        'vcpus_used': 0,
        'memory_mb': 0,
        'memory_mb_used': 0,
        'local_gb': 0,
        'local_gb_used': 0,
        'disk_available_least': 0,
        'supported_instances': [list(s) for s in _SUPPORTED_INSTANCES],
        'numa_topology': None,
        'stats': {},
    }
