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

"""Neutron: the API server (ML2) under waitress, its RPC server, and the
ironic-neutron-agent.

ML2 with a flat network on ``physnet1`` and project networks (VLANs on
``physnet1``), bound by networking-baremetal's ``baremetal`` mechanism
driver as in a bare metal cloud:

- Ironic's ``flat`` network interface tells Neutron which node a port
  is on (``binding:host_id``) and, on an active node, its switch port
  (the Ironic port's ``local_link_connection``);
- the ``ironic-neutron-agent`` reports, for each node, the physical
  networks of its Ironic ports (the ``neutron-rpc-server`` takes these
  reports);
- the mechanism driver binds the port on the node's switch, here the
  fake switch of :mod:`~ironic_multi.testing.cloud.switch`, and Neutron
  makes it ACTIVE.

No L3, no DHCP: the fake hardware boots nothing that would ask.
"""

import os

from ironic_multi.testing.cloud import config
from ironic_multi.testing.cloud import process

THREADS = 4
PHYSNET = 'physnet1'
# The shared flat network every project's servers may use.
NETWORK = 'baremetal'
# The VLAN IDs of project networks.
VLANS = (100, 199)
CONFIG_FILES = ('neutron.conf', 'ml2_conf.ini')
AGENT_CONFIG_FILE = 'ironic_neutron_agent.ini'
# The fake switch (switch.py): its entry point, its device section in
# ml2_conf.ini (also every link's switch_info) and its MAC address (every
# link's switch_id).
SWITCH_DRIVER = 'ironic-multi-fake-switch'
SWITCH = 'fake-switch'
SWITCH_ID = '52:54:00:00:00:01'
# Seconds between the agent's reports; Neutron takes an agent for dead
# after agent_down_time (at least twice this).  Short, so that a node
# enrolled as the cloud starts can have its ports bound soon after.
REPORT_INTERVAL = 5


def local_link(mac):
    """The ``local_link_connection`` of NIC ``mac``: its fake switch port."""
    return {'switch_id': SWITCH_ID, 'switch_info': SWITCH,
            'port_id': 'swp-%s' % mac.replace(':', '')}


def write_config(cloud):
    directory = os.path.join(cloud.base_dir, 'neutron')
    keystone = cloud.keystone
    neutron = {
        'DEFAULT': {
            'debug': cloud.debug,
            'core_plugin': 'ml2',
            'service_plugins': '',
            'auth_strategy': 'keystone',
            'transport_url': cloud.transport_url,
            'api_paste_config': os.path.join(cloud.venv, 'etc', 'neutron',
                                             'api-paste.ini'),
            'state_path': os.path.join(directory, 'state'),
            'notify_nova_on_port_status_changes': True,
            'notify_nova_on_port_data_changes': True,
            'rpc_response_timeout': cloud.rpc_response_timeout,
            'agent_down_time': REPORT_INTERVAL * 4,
        },
        'database': {'connection': cloud.databases['neutron']},
        'keystone_authtoken': config.authtoken(keystone,
                                               cloud.accounts['neutron']),
        'nova': config.password_auth(keystone, cloud.accounts['nova']),
        'oslo_concurrency': {'lock_path': os.path.join(directory, 'locks')},
    }
    ml2 = {
        # Projects get networks of their own (VLANs on the physical
        # network): a server with a port on each of two (tempest's
        # multi-NIC tests).
        'ml2': {'type_drivers': 'flat,vlan', 'tenant_network_types': 'vlan',
                'mechanism_drivers': 'baremetal',
                'extension_drivers': 'port_security'},
        'ml2_type_flat': {'flat_networks': PHYSNET},
        'ml2_type_vlan': {'network_vlan_ranges': '%s:%d:%d' % (
            PHYSNET, VLANS[0], VLANS[1])},
        'networking_baremetal': {'enabled_devices': SWITCH},
        # A switch without VLAN management: the fake switch logs what a
        # real one would be told, at bind and unbind.
        SWITCH: {'driver': SWITCH_DRIVER, 'switch_id': SWITCH_ID,
                 'switch_info': SWITCH, 'physical_networks': PHYSNET,
                 'manage_vlans': False},
    }
    return [config.write(os.path.join(directory, name), sections)
            for name, sections in zip(CONFIG_FILES, (neutron, ml2))]


def write_agent_config(cloud):
    """The ironic-neutron-agent's configuration (with neutron.conf)."""
    agent = {
        'AGENT': {'report_interval': REPORT_INTERVAL},
        # Its OVN features (on by default): this Neutron runs no OVN.
        'l2vni': {'enable_l2vni_trunk_reconciliation': False,
                  'enable_l2vni_trunk_reconciliation_events': False},
        'baremetal_agent': {'enable_ha_chassis_group_alignment': False,
                            'enable_router_ha_binding': False},
        # Every node's ports, whoever owns the node: system scope.
        'ironic': dict(cloud.keystone.ironic_options('system'),
                       valid_interfaces='public'),
    }
    return config.write(os.path.join(cloud.base_dir, 'neutron',
                                     AGENT_CONFIG_FILE), agent)


def sync(cloud, confs):
    cloud.run([cloud.bin('neutron-db-manage')] + _config_args(confs)
              + ['upgrade', 'heads'])


def service(cloud, confs, port):
    env = dict(cloud.env(), OS_NEUTRON_CONFIG_DIR=os.path.dirname(confs[0]),
               OS_NEUTRON_CONFIG_FILES=';'.join(
                   os.path.basename(c) for c in confs))
    return process.Service(
        'neutron-api', [cloud.python, cloud.WSGI, 'neutron.wsgi.api:'
                        'application', str(port), str(THREADS)],
        cloud.log_dir, env, ready=cloud.http_ready(port))


def rpc_service(cloud, confs):
    """neutron-rpc-server: it takes the agent's state reports."""
    return process.Service('neutron-rpc-server',
                           [cloud.bin('neutron-rpc-server')]
                           + _config_args(confs), cloud.log_dir, cloud.env())


def agent_service(cloud, confs, agent_conf):
    """ironic-neutron-agent: each node's physical networks, for binding."""
    return process.Service('ironic-neutron-agent',
                           [cloud.bin('ironic-neutron-agent')]
                           + _config_args([confs[0], agent_conf]),
                           cloud.log_dir, cloud.env())


def _config_args(confs):
    args = []
    for conf in confs:
        args += ['--config-file', conf]
    return args
