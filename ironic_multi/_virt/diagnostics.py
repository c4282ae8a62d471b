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

"""Server diagnostics from what the node provider knows of the node.

A bare metal node has no hypervisor to count CPU time, network or disk
I/O.  The diagnostics give the node's power state and its size (its
``properties``: ``cpus``, ``memory_mb``, ``local_gb``), and leave the
counters empty, as the API allows.
"""

from nova.compute import power_state
from nova.objects import diagnostics as diagnostics_obj


def _size(node, key):
    """An integer property of the node, or None."""
    try:
        return int((node.get('properties') or {})[key])
    except (KeyError, TypeError, ValueError):
        return None


def instance_diagnostics(node, state):
    """Nova's Diagnostics (microversion 2.48 on) for ``node``.

    :param node: a node dict (NodeProvider.node).
    :param state: Nova's power state of the instance.
    """
    diagnostics = diagnostics_obj.Diagnostics(
        state=power_state.STATE_MAP[state], driver='ironic',
        hypervisor='ironic', hypervisor_os=None, uptime=None,
        config_drive=False)
    for cpu in range(_size(node, 'cpus') or 0):
        diagnostics.add_cpu(id=cpu)
    local_gb = _size(node, 'local_gb')
    if local_gb:
        diagnostics.add_disk()
    diagnostics.memory_details = diagnostics_obj.MemoryDiagnostics(
        maximum=_size(node, 'memory_mb'), used=None)
    return diagnostics


def diagnostics(node, state):
    """The dict of the older API (before microversion 2.48)."""
    found = {'state': power_state.STATE_MAP[state], 'node': node['uuid'],
             'provision_state': node.get('provision_state')}
    for key in ('cpus', 'memory_mb', 'local_gb'):
        size = _size(node, key)
        if size is not None:
            found[key] = size
    return found
