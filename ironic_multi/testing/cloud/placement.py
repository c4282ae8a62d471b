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

"""Placement (openstack-placement) under waitress, behind Keystone."""

import os

from ironic_multi.testing.cloud import config
from ironic_multi.testing.cloud import process

THREADS = 8


def write_config(cloud):
    sections = {
        'DEFAULT': {'debug': cloud.debug},
        'api': {'auth_strategy': 'keystone'},
        'placement_database': {'connection': cloud.databases['placement']},
        'keystone_authtoken': config.authtoken(
            cloud.keystone, cloud.accounts['placement']),
    }
    return config.write(os.path.join(cloud.base_dir, 'placement',
                                     'placement.conf'), sections)


def sync(cloud, conf):
    cloud.run([cloud.bin('placement-manage'), '--config-file', conf, 'db',
               'sync'])


def service(cloud, conf, port):
    env = dict(cloud.env(), OS_PLACEMENT_CONFIG_DIR=os.path.dirname(conf))
    return process.Service(
        'placement', [cloud.python, cloud.WSGI,
                      'placement.wsgi.api:application', str(port),
                      str(THREADS)],
        cloud.log_dir, env, ready=cloud.http_ready(port))
