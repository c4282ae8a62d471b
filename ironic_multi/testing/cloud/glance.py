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

"""Glance: the image API under waitress, a file store, one tiny image."""

import os
import shutil

from ironic_multi.testing.cloud import config
from ironic_multi.testing.cloud import process

THREADS = 4
PASTE = 'glance-api-paste.ini'
# Glance reads glance-api.conf from OS_GLANCE_CONFIG_DIR.
CONFIG_FILE = 'glance-api.conf'
IMAGE_NAME = 'cirros'
# Bare metal deploys nothing here (fake hardware): any bytes will do.
IMAGE_DATA = b'ironic-multi test image\n' * 16


def write_config(cloud, port):
    directory = os.path.join(cloud.base_dir, 'glance')
    os.makedirs(directory, exist_ok=True)
    shutil.copy(os.path.join(cloud.venv, 'etc', 'glance', PASTE), directory)
    data = os.path.join(directory, 'data')
    sections = {
        'DEFAULT': {
            'debug': cloud.debug,
            'enabled_backends': 'fs:file',
            'worker_self_reference_url': 'http://127.0.0.1:%d' % port,
            'transport_url': cloud.transport_url,
        },
        'glance_store': {'default_backend': 'fs'},
        'fs': {'filesystem_store_datadir': os.path.join(data, 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': os.path.join(data, 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': os.path.join(data, 'tasks')},
        'database': {'connection': cloud.databases['glance']},
        'keystone_authtoken': config.authtoken(
            cloud.keystone, cloud.accounts['glance']),
        'paste_deploy': {'flavor': 'keystone',
                         'config_file': os.path.join(directory, PASTE)},
        'oslo_concurrency': {'lock_path': os.path.join(directory, 'locks')},
        'oslo_messaging_notifications': {'driver': 'noop'},
    }
    return config.write(os.path.join(directory, CONFIG_FILE), sections)


def sync(cloud, conf):
    cloud.run([cloud.bin('glance-manage'), '--config-file', conf,
               'db_sync'])


def service(cloud, conf, port):
    env = dict(cloud.env(), OS_GLANCE_CONFIG_DIR=os.path.dirname(conf))
    return process.Service(
        'glance-api', [cloud.python, cloud.WSGI, 'glance.wsgi.api:'
                       'application', str(port), str(THREADS)],
        cloud.log_dir, env, ready=cloud.http_ready(port, '/versions'))
