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

"""Nova: the API (under waitress), conductor, scheduler and computes.

Cells v2 are set up with ``nova-manage`` as devstack's single-conductor
deployment does it: ``api_db sync``, ``cell_v2 map_cell0``, ``cell_v2
create_cell --name cell1``, ``db sync``, and ``cell_v2 discover_hosts``
once the computes run (again for every compute added later).
nova-novncproxy serves noVNC's web client (when the cloud venv has it)
and the consoles of the computes' console URLs.

The API, conductor and scheduler read one ``nova.conf``; every
nova-compute has a directory and a ``nova.conf`` of its own
(``compute_driver = ironic_multi.IronicMultiDriver``, its ``host``,
``[ironic]`` system-scoped credentials and ``[ironic_multi]``
coordination on the cloud's etcd), as separate hosts would.  With the
cloud's fault proxies, ``[ironic] endpoint_override`` is the Ironic
proxy's and ``coordination_url`` the compute's own etcd proxy's.
"""

import os
import shutil

from tooz import hashring

from ironic_multi.testing.cloud import config
from ironic_multi.testing.cloud import mkisofs
from ironic_multi.testing.cloud import process

COMPUTE_DRIVER = 'ironic_multi.IronicMultiDriver'
# The drivers a cloud can compare ours with (the real-cloud benchmark).
IN_TREE_DRIVER = 'ironic.IronicDriver'
FAKE_DRIVER = 'fake.FakeDriver'
# The in-tree driver's hash ring (nova.virt.ironic.driver, Nova 34).
IN_TREE_RING_PARTITIONS = 2 ** 5
API_THREADS = 8
CELL = 'cell1'
# The filters that make sense for one compute node standing for many
# Ironic nodes (see ironic_multi.testing.nova_services).
SCHEDULER_FILTERS = ('ComputeFilter', 'ImagePropertiesFilter',
                     'ServerGroupAntiAffinityFilter',
                     'ServerGroupAffinityFilter')


def common_sections(cloud):
    """What every Nova process of the cloud reads."""
    keystone = cloud.keystone
    nova = cloud.accounts['nova']
    return {
        'DEFAULT': {
            'debug': cloud.debug,
            'transport_url': cloud.transport_url,
            'my_ip': '127.0.0.1',
            # Quick up/down: the chaos tests wait for Nova to see a
            # compute down (devstack keeps Nova's 10 s and 60 s).
            'report_interval': cloud.report_interval,
            'service_down_time': cloud.service_down_time,
            'rpc_response_timeout': cloud.rpc_response_timeout,
        },
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': config.authtoken(keystone, nova),
        'placement': config.password_auth(keystone, nova),
        'neutron': config.password_auth(keystone, nova),
        'cinder': dict(config.password_auth(keystone, nova),
                       os_region_name=keystone.region),
        'service_user': dict(config.password_auth(keystone, nova),
                             send_service_user_token=True),
        'glance': {'region_name': keystone.region},
        'oslo_concurrency': {
            'lock_path': os.path.join(cloud.base_dir, 'nova', 'locks')},
        'oslo_messaging_rabbit': {
            # Durable queues whose messages survive a broker restart (what
            # kolla-ansible deploys by default since 2024): with classic
            # transient queues a build cast to the conductor just before
            # a restart is lost, and the server stays in BUILD/scheduling
            # for good.
            'rabbit_quorum_queue': True,
            # Reconnect quickly after the chaos tests restart the broker.
            'rabbit_retry_interval': 1,
            'rabbit_retry_backoff': 1,
            'rabbit_interval_max': 2,
            'kombu_reconnect_delay': 0.5,
        },
        'quota': {'instances': -1, 'cores': -1, 'ram': -1},
        'wsgi': {'api_paste_config': os.path.join(
            cloud.venv, 'etc', 'nova', 'api-paste.ini')},
    }


def control_config(cloud):
    """``nova.conf`` of the API, conductor, scheduler and nova-manage."""
    sections = config.merge(common_sections(cloud), {
        'DEFAULT': {'state_path': os.path.join(cloud.base_dir, 'nova',
                                               'state')},
        'api_database': {'connection': cloud.databases['nova_api']},
        'database': {'connection': cloud.databases['nova_cell1']},
        'conductor': {'workers': 1},
        'scheduler': {'workers': 1,
                      # Hosts are mapped by nova-manage, as deployed.
                      'discover_hosts_in_cells_interval': -1},
        # What doc/source/nova-settings.rst asks of a cloud of this
        # driver: every service weighs the same (shuffle among them), and
        # a failed claim says nothing about its service.
        'filter_scheduler': {'enabled_filters': SCHEDULER_FILTERS,
                             'shuffle_best_same_weighed_hosts': True,
                             'build_failure_weight_multiplier': 0},
    })
    if cloud.novnc_web is not None:
        sections = config.merge(sections, {
            'DEFAULT': {'web': cloud.novnc_web},
            'vnc': {'novncproxy_host': '127.0.0.1',
                    'novncproxy_port': cloud.novncproxy_port}})
    sections = config.merge(sections, cloud.nova_options)
    return config.write(os.path.join(cloud.base_dir, 'nova', 'nova.conf'),
                        sections)


def compute_config_path(cloud, host):
    return os.path.join(cloud.base_dir, 'nova', host, 'nova.conf')


def compute_config(cloud, host):
    """A nova-compute's own ``nova.conf``; returns its path."""
    directory = os.path.dirname(compute_config_path(cloud, host))
    sections = config.merge(common_sections(cloud), {
        'DEFAULT': {
            'host': host,
            'compute_driver': cloud.compute_driver,
            'state_path': os.path.join(directory, 'state'),
            # How often the resource tracker reports to placement.
            'update_resources_interval': cloud.update_resources_interval,
            # Nova starts its periodic tasks up to 60 s late by default, at
            # random.  An in-tree compute whose pass at start lost the race
            # for the nodes to a compute started beside it takes its share
            # only at its first periodic (seen here 45 s after its start;
            # in CI one held no node for over two minutes).
            'periodic_fuzzy_delay': 0,
            # A build whose RPC messages were lost (a broker restart) stays
            # in BUILD for good without it (Nova's default is 0, never).
            'instance_build_timeout': cloud.instance_build_timeout,
            # Config drives named as a compute host's genisoimage names
            # them (no system package needed).
            'mkisofs_cmd': mkisofs.install(cloud.base_dir, cloud.python),
        },
        # A claim that finds no node does not disable the service.
        'compute': {'consecutive_build_service_disable_threshold': 0},
        'ironic': cloud.keystone.ironic_options('system'),
        # The console URLs it gives point at the cloud's noVNC proxy.
        'vnc': {'novncproxy_base_url': 'http://127.0.0.1:%d/vnc_lite.html'
                % cloud.novncproxy_port},
        'ironic_multi': {
            'coordination_url': cloud.coordination_url_of(host),
            'coordination_group': cloud.coordination_group,
            'membership_timeout': cloud.membership_timeout,
            'pool_refresh_interval': cloud.pool_refresh_interval,
            'takeover_down_after': cloud.takeover_down_after,
            'takeover_forced_down': True,
            'state_poll_interval': 0.5,
        },
    })
    sections['ironic']['valid_interfaces'] = ['internal', 'public']
    if cloud.ironic_proxy is not None:
        # Keystone still authenticates; requests go to the proxy instead
        # of the catalog's Ironic.
        sections['ironic']['endpoint_override'] = cloud.ironic_proxy.endpoint
    sections = config.merge(sections, cloud.nova_options)
    sections = config.merge(sections, cloud.compute_options)
    return config.write(compute_config_path(cloud, host), sections)


def setup_cells(cloud, conf):
    """The cells v2 set-up of a deployment, through ``nova-manage``."""
    manage = [cloud.bin('nova-manage'), '--config-file', conf]
    cloud.run(manage + ['api_db', 'sync'])
    cloud.run(manage + ['cell_v2', 'map_cell0', '--database_connection',
                        cloud.databases['nova_cell0']])
    cloud.run(manage + ['cell_v2', 'create_cell', '--name', CELL,
                        '--verbose'])
    # The cell database, and cell0's (db sync fans out to it).
    cloud.run(manage + ['db', 'sync'])


def discover_hosts(cloud, conf):
    """Map the computes that registered since the last call to the cell."""
    return cloud.run([cloud.bin('nova-manage'), '--config-file', conf,
                      'cell_v2', 'discover_hosts', '--verbose'])


def in_tree_layout(node_uuids, hosts):
    """``{node uuid: host}`` once every in-tree compute of ``hosts`` runs.

    Each in-tree compute hashes the nodes over itself and the up computes
    that have compute nodes already: one that started first takes them
    all, and gives its share to another only when that one's first
    resource update has registered a node of its own.
    """
    ring = hashring.HashRing({h.lower() for h in hosts},
                             partitions=IN_TREE_RING_PARTITIONS)
    return {uuid: next(iter(ring.get_nodes(uuid.encode('utf-8'))))
            for uuid in node_uuids}


def api_service(cloud, conf, port):
    # Nova's WSGI application reads api-paste.ini and nova.conf from
    # OS_NOVA_CONFIG_DIR, the paste file first.
    shutil.copy(os.path.join(cloud.venv, 'etc', 'nova', 'api-paste.ini'),
                os.path.dirname(conf))
    env = dict(cloud.env(), OS_NOVA_CONFIG_DIR=os.path.dirname(conf))
    return process.Service(
        'nova-api', [cloud.python, cloud.WSGI, 'nova.wsgi.osapi_compute:'
                     'application', str(port), str(API_THREADS)],
        cloud.log_dir, env, ready=cloud.http_ready(port), kind='nova-api')


def binary_service(cloud, binary, conf, name=None, ready=None):
    """nova-conductor, nova-scheduler or nova-compute."""
    return process.Service(name or binary,
                           [cloud.bin(binary), '--config-file', conf],
                           cloud.log_dir, cloud.env(), kind=binary,
                           ready=ready)
