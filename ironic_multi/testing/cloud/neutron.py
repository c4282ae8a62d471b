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

"""Neutron: the API server (ML2) under waitress.

ML2 with flat networks on ``physnet1`` and networking-baremetal's
``baremetal`` mechanism driver, which binds ``vnic_type = baremetal``
ports without an agent on the host.  No L3, no DHCP, no agents: bare
metal boots without ports (``--nic none``) need only the API, which Nova
calls all the same (port listings on delete, periodic cache heals).
Projects may create networks of their own (VLANs on ``physnet1``), whose
ports stay unbound as those of the flat network do.
"""

import os

from ironic_multi.testing.cloud import config
from ironic_multi.testing.cloud import process

THREADS = 4
PHYSNET = 'physnet1'
# The VLAN IDs of project networks.
VLANS = (100, 199)
CONFIG_FILES = ('neutron.conf', 'ml2_conf.ini')


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
        # multi-NIC tests).  No agent binds their ports either.
        'ml2': {'type_drivers': 'flat,vlan', 'tenant_network_types': 'vlan',
                'mechanism_drivers': 'baremetal',
                'extension_drivers': 'port_security'},
        'ml2_type_flat': {'flat_networks': PHYSNET},
        'ml2_type_vlan': {'network_vlan_ranges': '%s:%d:%d' % (
            PHYSNET, VLANS[0], VLANS[1])},
    }
    return [config.write(os.path.join(directory, name), sections)
            for name, sections in zip(CONFIG_FILES, (neutron, ml2))]


def sync(cloud, confs):
    command = [cloud.bin('neutron-db-manage')]
    for conf in confs:
        command += ['--config-file', conf]
    cloud.run(command + ['upgrade', 'heads'])


def service(cloud, confs, port):
    env = dict(cloud.env(), OS_NEUTRON_CONFIG_DIR=os.path.dirname(confs[0]),
               OS_NEUTRON_CONFIG_FILES=';'.join(
                   os.path.basename(c) for c in confs))
    return process.Service(
        'neutron-api', [cloud.python, cloud.WSGI, 'neutron.wsgi.api:'
                        'application', str(port), str(THREADS)],
        cloud.log_dir, env, ready=cloud.http_ready(port))
