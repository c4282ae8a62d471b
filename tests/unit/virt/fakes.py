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

"""Test doubles of the driver's collaborators: a Reserver and Nova objects.

Ironic itself is a ``mock.create_autospec`` of IronicAPI in each test:
what it answers is part of the scenario.
"""

from unittest import mock

from nova import objects

from ironic_multi import exception
from ironic_multi.ironic import client
from ironic_multi.reservation.backends import base
from ironic_multi.reservation import states
from ironic_multi.virt import instances

objects.register_all()

HOST = 'compute-1'
NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'
INSTANCE = 'a7a9a2a6-7ee0-4a4c-bb36-6b6a0cbd2d01'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
BAREMETAL_SPECS = {'resources:CUSTOM_BAREMETAL': '1', 'resources:VCPU': '0',
                   'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}


def make_api():
    return mock.create_autospec(client.IronicAPI, instance=True)


def node(provision_state='available', instance_uuid=INSTANCE,
         power_state='power off', target=None, maintenance=False,
         last_error=None, uuid=NODE, **extra):
    """A node dict as IronicAPI returns it with the driver's fields."""
    return dict({'uuid': uuid, 'instance_uuid': instance_uuid,
                 'provision_state': provision_state,
                 'target_provision_state': target,
                 'power_state': power_state, 'target_power_state': None,
                 'maintenance': maintenance, 'last_error': last_error,
                 'resource_class': 'baremetal'}, **extra)


def local_node(host=HOST, instance_uuid=INSTANCE, uuid=NODE,
               power_state='power on'):
    """A node as the listing of associated nodes returns it."""
    return {'uuid': uuid, 'instance_uuid': instance_uuid,
            'instance_info': {instances.HOST_KEY: host},
            'power_state': power_state, 'provision_state': 'active'}


class FakeReserver(object):
    """The Reserver API the driver uses, over a dict of claims."""

    def __init__(self, api, node_uuid=NODE, cluster=None, traits=()):
        self.api = api
        self.node_uuid = node_uuid
        self.cluster = cluster or {}
        self.traits = set(traits)
        self.claims = {}
        self.claim_error = None
        self.release_error = None
        self.released = []
        self.started = self.stopped = False

    def start(self):
        self.started = True

    def stop(self):
        self.stopped = True

    def claim(self, instance_uuid, requirements):
        if self.claim_error is not None:
            raise self.claim_error
        self.claims[instance_uuid] = requirements
        return base.Reservation(instance_uuid=instance_uuid,
                                node_uuid=self.node_uuid,
                                state=states.State.CLAIMED,
                                resource_class='baremetal')

    def release(self, instance_uuid):
        if self.release_error is not None:
            raise self.release_error
        self.released.append(instance_uuid)
        if self.claims.pop(instance_uuid, None) is None:
            return None
        return base.Reservation(instance_uuid=instance_uuid,
                                node_uuid=self.node_uuid,
                                state=states.State.RELEASED)

    def lookup(self, instance_uuid):
        if instance_uuid not in self.claims:
            return None
        return base.Reservation(instance_uuid=instance_uuid,
                                node_uuid=self.node_uuid,
                                state=states.State.CLAIMED)

    def cluster_capacity(self):
        if isinstance(self.cluster, Exception):
            raise self.cluster
        return self.cluster

    def local_capacity(self):
        return self.cluster

    def cluster_traits(self):
        return set(self.traits)


def flavor(extra_specs=None, **fields):
    values = dict(flavorid='bm', name='baremetal', memory_mb=4096, vcpus=2,
                  root_gb=40, ephemeral_gb=0, swap=0,
                  extra_specs=dict(BAREMETAL_SPECS if extra_specs is None
                                   else extra_specs))
    values.update(fields)
    return objects.Flavor(**values)


def instance(uuid=INSTANCE, **fields):
    """An Instance object whose refresh() changes nothing."""
    values = dict(uuid=uuid, project_id='project', user_id='user',
                  display_name='server-1', host=HOST, node=HOST,
                  task_state='spawning', vm_state='building',
                  config_drive='', system_metadata={}, image_ref=IMAGE,
                  flavor=flavor())
    values.update(fields)
    inst = objects.Instance(**values)
    inst.refresh = mock.Mock()
    inst.save = mock.Mock()
    return inst


def image_meta(**properties):
    return objects.ImageMeta.from_dict({'id': IMAGE, 'name': 'image',
                                        'properties': properties})


def conflict(reason='locked'):
    return exception.NodeConflict(node=NODE, reason=reason)


def api_error(status_code, reason='refused'):
    return exception.IronicAPIError(status_code=status_code, reason=reason)
