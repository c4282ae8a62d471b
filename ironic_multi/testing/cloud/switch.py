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

"""The cloud's top-of-rack switch: a networking-baremetal device driver.

The fake nodes are cabled to no switch, so nothing would configure their
switch ports when Neutron binds a port to a node.  This driver stands in
for the switch as Ironic's fake hardware stands in for the machines: it
is loaded by networking-baremetal's ``baremetal`` mechanism driver in
Neutron (``[networking_baremetal] enabled_devices``), accepts every link
and logs what a real switch would be told.  Everything around it is
real: Ironic's ``flat`` network interface binds the ports, the
``ironic-neutron-agent`` reports each node's physical networks, and
networking-baremetal binds the port and makes it ACTIVE.

Only Neutron's processes import this module (through its entry point,
which the cloud's overlay carries, see
:mod:`~ironic_multi.testing.cloud.overlay`); the cloud's other code uses
:mod:`~ironic_multi.testing.cloud.neutron`'s names for the switch.
"""

from networking_baremetal import constants
from networking_baremetal.drivers import base
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class FakeSwitch(base.BaseDeviceDriver):
    """A switch that configures each port it is told to."""

    # As a switch with LACP and pre-configured bonds.
    SUPPORTED_BOND_MODES = frozenset().union(
        constants.NON_SWITCH_BOND_MODES, constants.LACP_BOND_MODES,
        constants.PRE_CONF_ONLY_BOND_MODES)

    def create_port(self, context, segment, links):
        LOG.info('Switch %s: %s join %s network %s (port %s)',
                 self.device, _port_ids(links), segment.get('network_type'),
                 segment.get('segmentation_id'), context.current['id'])

    def update_port(self, context, links):
        LOG.info('Switch %s: %s updated (port %s)', self.device,
                 _port_ids(links), context.current['id'])

    def delete_port(self, context, links, current=True):
        port = context.current if current else context.original
        LOG.info('Switch %s: %s leave their network (port %s)',
                 self.device, _port_ids(links), port['id'])


def _port_ids(links):
    return ', '.join(link.get('port_id', '?') for link in links)
