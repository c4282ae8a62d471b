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

"""Make Ironic's fake deploy, rescue and unrescue end as real ones do.

A real deploy ends with the instance running: the agent reboots the node
into it; a real rescue boots the rescue ramdisk, and unrescue the
instance again.  Ironic's ``fake`` deploy and rescue interfaces leave the
power as it was (off, and Nova powers a server off before it rescues
it), so Nova records the server as shut down and its power state sync
stops it a moment later.  A real deploy also moves the node onto the
tenant's networks before it reboots it; the fake one skips that step,
and the server's ports stay DOWN.  Here the fake deploy plugs every port
and port group with a VIF into its tenant network as the ``neutron``
network interface's deploy does (with each NIC's switch port, so that
networking-baremetal binds it and Neutron makes it ACTIVE).  Only
:class:`~ironic_multi.testing.ironic_server.IronicServer` with
``deploy_powers_on`` puts this directory on the PYTHONPATH of the Ironic
it starts (the multi-process cloud does, for servers that stay ACTIVE).

The patch is applied when Ironic imports its fake driver module, not
here: importing Ironic this early would come before its own start-up.
"""

import functools
import importlib.abc
import importlib.machinery
import sys

MODULE = 'ironic.drivers.modules.fake'


def _powering_on(original):
    """``original(self, task)``, then the node powered on."""
    # Its name too: Ironic names a deploy step after its method
    # ("deploy.deploy"), and keeps the step's priority and arguments in
    # the method's __dict__.
    @functools.wraps(original)
    def method(self, task):
        result = original(self, task)
        from ironic.common import states
        from ironic.conductor import utils as manager_utils
        manager_utils.node_power_action(task, states.POWER_ON)
        return result

    return method


def _on_tenant_networks(original):
    """``original(self, task)`` after the VIFs are plugged in."""
    @functools.wraps(original)
    def method(self, task):
        from ironic.common import exception
        from ironic.drivers.modules.network import common
        ports = [p for p in task.ports if not p.portgroup_id]
        for port_like in ports + task.portgroups:
            try:
                common.plug_port_to_tenant_network(task, port_like)
            except exception.VifNotAttached:
                continue
        return original(self, task)

    return method


def _patch(module):
    module.FakeDeploy.deploy = _powering_on(_on_tenant_networks(
        module.FakeDeploy.deploy))
    module.FakeRescue.rescue = _powering_on(module.FakeRescue.rescue)
    module.FakeRescue.unrescue = _powering_on(module.FakeRescue.unrescue)


class _Loader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Loader(spec.loader)
        return spec


sys.meta_path.insert(0, _Finder())
