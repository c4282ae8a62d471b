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

"""Boot from volume on the multi-process cloud, with the openstack client.

Cinder is real (API, scheduler, volume service) with Cinder's fake volume
driver; Ironic is real, its nodes each with an iSCSI initiator.
"""

import time

from ironic_multi.testing.cloud import cloud as cloud_mod
from tests.cloud import test_openstack_client as client_tests

ADMIN = cloud_mod.ADMIN_CLOUD


def _wait_for_volume(cloud, volume_id, status, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        volume = cloud.openstack('volume', 'show', volume_id)
        if volume['status'] == status:
            return volume
        assert volume['status'] != 'error' and time.monotonic() < deadline, (
            volume)
        time.sleep(1)


def test_a_server_boots_from_a_volume_made_from_the_image(cloud, servers):
    volume = cloud.openstack('volume', 'create', '--image', 'cirros',
                             '--size', '1', '--bootable', 'boot')
    _wait_for_volume(cloud, volume['id'], 'available')
    server = cloud.openstack('server', 'create', '--flavor', 'silver',
                             '--volume', volume['id'], '--nic', 'none',
                             '--wait', 'from-volume')
    servers.append(server['id'])
    assert server['status'] == 'ACTIVE'
    node = client_tests.node_of(cloud, server['id'])['uuid']

    # Cinder exported the volume to the node's initiator ...
    attached = _wait_for_volume(cloud, volume['id'], 'in-use')
    assert [a['server_id'] for a in attached['attachments']] == [
        server['id']]
    # ... and the node boots from it, as Ironic's volume target.
    (target,) = cloud.ironic.request('GET', '/v1/volume/targets', params={
        'node': node, 'detail': True}).json()['targets']
    assert (target['volume_id'], target['volume_type'],
            target['boot_index']) == (volume['id'], 'iscsi', 0)
    info = cloud.ironic.request('GET', '/v1/nodes/%s' % node).json()[
        'instance_info']
    assert 'image_source' not in info
    assert info['boot_from_volume'] == 'true'

    cloud.openstack('server', 'delete', '--wait', server['id'], parse=False)
    assert cloud.ironic.request('GET', '/v1/volume/targets', params={
        'node': node}).json()['targets'] == []
    _wait_for_volume(cloud, volume['id'], 'available')
    cloud.openstack('volume', 'delete', volume['id'], parse=False)
