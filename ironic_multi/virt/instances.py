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

"""Which Ironic node serves which instance, and in which power state.

The compute node's name says nothing about the Ironic node (every
instance of a service has the same ``instance.node``): the node is found
by its ``instance_uuid``.  An instance belongs to this service when its
node's ``instance_info.nova_host_id`` names this host.  The driver writes
it at spawn, as Nova's own Ironic driver does, so the answer lives in
Ironic: it survives restarts and still lists nodes of instances Nova has
deleted (which ``running_deleted_instance_action`` reaps), and a new host
never sees another host's instances (Nova refuses to start a new service
whose driver lists instances).
"""

import time

from nova.compute import power_state
from nova import exception as nova_exception
from oslo_log import log as logging

from ironic_multi import exception

LOG = logging.getLogger(__name__)

HOST_KEY = 'nova_host_id'

NODE_FIELDS = ('uuid', 'instance_uuid', 'power_state', 'target_power_state',
               'provision_state', 'target_provision_state', 'maintenance',
               'last_error', 'resource_class')
_LOCAL_FIELDS = ('uuid', 'instance_uuid', 'instance_info', 'power_state',
                 'provision_state')
_KEPT_FIELDS = ('uuid', 'instance_uuid', 'power_state', 'provision_state')
# How long the power states of the last listing answer get_info().
SNAPSHOT_MAX_AGE = 60.0

_POWER_STATES = {
    'power on': power_state.RUNNING,
    'power off': power_state.SHUTDOWN,
    None: power_state.NOSTATE,
}


def map_power_state(ironic_state):
    """Nova's power state for Ironic's ``power_state``."""
    try:
        return _POWER_STATES[ironic_state]
    except KeyError:
        LOG.warning('Unknown Ironic power state %s', ironic_state)
        return power_state.NOSTATE


class InstanceNodes(object):
    """Finds the nodes of instances, and the instances of this host."""

    def __init__(self, api, host, max_age=SNAPSHOT_MAX_AGE):
        self._api = api
        self._host = host
        self._max_age = max_age
        self._snapshot = {}
        self._snapshot_at = None

    def find(self, instance_uuid):
        """The node dict of ``instance_uuid``, or None."""
        return self._api.node_by_instance(instance_uuid, fields=NODE_FIELDS)

    def get(self, instance_uuid):
        """The node dict of ``instance_uuid``.

        :raises: nova.exception.InstanceNotFound
        """
        node = self.find(instance_uuid)
        if node is None:
            raise nova_exception.InstanceNotFound(instance_id=instance_uuid)
        return node

    def local(self):
        """``{instance_uuid: node}`` of the instances of this host.

        :raises: nova.exception.VirtDriverNotReady when Ironic cannot be
            reached: the compute manager knows to try again later.
        """
        try:
            nodes = self._api.iter_nodes(fields=_LOCAL_FIELDS,
                                         associated=True)
            found = {
                node['instance_uuid']: {k: node.get(k) for k in _KEPT_FIELDS}
                for node in nodes
                if (node.get('instance_info') or {}).get(HOST_KEY)
                == self._host}
        except exception.IronicError as e:
            LOG.warning('Cannot list the instances of host %(host)s: '
                        '%(error)s', {'host': self._host, 'error': e})
            raise nova_exception.VirtDriverNotReady()
        self._snapshot, self._snapshot_at = found, time.monotonic()
        return dict(found)

    def power_state(self, instance_uuid, use_cache=True):
        """Nova's power state of the instance; NOSTATE without a node."""
        if use_cache and self._snapshot_at is not None and (
                time.monotonic() - self._snapshot_at < self._max_age):
            node = self._snapshot.get(instance_uuid)
            if node is not None:
                return map_power_state(node['power_state'])
        node = self.find(instance_uuid)
        if node is None:
            return power_state.NOSTATE
        return map_power_state(node.get('power_state'))
