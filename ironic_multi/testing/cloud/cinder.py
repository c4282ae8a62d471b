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

"""Cinder: the volume API under waitress, its scheduler and volume service.

One back end, ``fake``: Cinder's fake volume driver
(:mod:`~ironic_multi.testing.cloud.volume_backend`), whose volumes are
exported over "iSCSI" to whatever connector Nova gives (a node's
initiator, here).  Nova boots bare metal servers from these volumes
through Ironic's volume connectors and targets.
"""

import os

from ironic_multi.testing.cloud import config
from ironic_multi.testing.cloud import process

THREADS = 4
CONFIG_FILE = 'cinder.conf'
BACKEND = 'fake'
DRIVER = 'ironic_multi.testing.cloud.volume_backend.FakeVolumeDriver'
# The catalog's service types of the volume API (Nova's and tempest's
# default is volumev3; the openstack client asks for block-storage).
SERVICE_TYPES = ('block-storage', 'volumev3')


def write_config(cloud):
    directory = os.path.join(cloud.base_dir, 'cinder')
    sections = {
        'DEFAULT': {
            'debug': cloud.debug,
            'transport_url': cloud.transport_url,
            'auth_strategy': 'keystone',
            'state_path': os.path.join(directory, 'state'),
            'api_paste_config': os.path.join(cloud.venv, 'etc', 'cinder',
                                             'api-paste.ini'),
            'enabled_backends': BACKEND,
            'my_ip': '127.0.0.1',
            'rpc_response_timeout': cloud.rpc_response_timeout,
        },
        BACKEND: {'volume_driver': DRIVER,
                  'volume_backend_name': BACKEND},
        'database': {'connection': cloud.databases['cinder']},
        'keystone_authtoken': config.authtoken(cloud.keystone,
                                               cloud.accounts['cinder']),
        'nova': config.password_auth(cloud.keystone, cloud.accounts['nova']),
        'oslo_concurrency': {'lock_path': os.path.join(directory, 'locks')},
        'oslo_messaging_notifications': {'driver': 'noop'},
    }
    return config.write(os.path.join(directory, CONFIG_FILE), sections)


def sync(cloud, conf):
    cloud.run([cloud.bin('cinder-manage'), '--config-file', conf,
               'db', 'sync'])


def api_service(cloud, conf, port):
    # Cinder's WSGI application parses its command line for the
    # configuration file.
    return process.Service(
        'cinder-api', [cloud.python, cloud.WSGI, 'cinder.wsgi.api:'
                       'application', str(port), str(THREADS),
                       '--config-file', conf],
        cloud.log_dir, cloud.env(), ready=cloud.http_ready(port))


def binary_service(cloud, binary, conf):
    """cinder-scheduler or cinder-volume."""
    return process.Service(binary, [cloud.bin(binary), '--config-file', conf],
                           cloud.log_dir, cloud.env())
