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

"""This service's instances and their power states, as Nova sees them.

An instance belongs to this service when its node carries this host's
mark (the provider writes it at deploy, as Nova's own Ironic driver does),
so the answer survives restarts and still lists nodes of instances Nova
has deleted (which ``running_deleted_instance_action`` reaps), and a new
host never sees another host's instances (Nova refuses to start a new
service whose driver lists instances).
"""

import time

from nova.compute import power_state
from nova.compute import task_states
from nova.compute import vm_states
from nova import exception as nova_exception
from nova.objects import external_event
from oslo_log import log as logging

from ironic_multi._reservation import lifecycle
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# How long the power states of the last listing answer get_info().
SNAPSHOT_MAX_AGE = 60.0

_POWER_STATES = {
    lifecycle.PowerState.ON: power_state.RUNNING,
    lifecycle.PowerState.OFF: power_state.SHUTDOWN,
    lifecycle.PowerState.UNKNOWN: power_state.NOSTATE,
}


class LocalInstances(object):
    """The instances of this host, with a short-lived power snapshot.

    Nova's power state sync lists the instances and then asks for each
    one's state: the listing's answer saves one request per instance.
    """

    def __init__(self, reserver, max_age=SNAPSHOT_MAX_AGE):
        self._reserver = reserver
        self._max_age = max_age
        self._snapshot = {}
        self._snapshot_at = None

    def list(self):
        """``{instance_uuid: reservation}`` of this host's instances.

        :raises: nova.exception.VirtDriverNotReady when the provider
            cannot be reached: the compute manager knows to try later.
        """
        try:
            found = self._reserver.instances()
        except exception.IronicMultiError as e:
            LOG.warning('Cannot list the instances of host %(host)s: '
                        '%(error)s', {'host': self._reserver.host,
                                      'error': e})
            raise nova_exception.VirtDriverNotReady()
        self._snapshot, self._snapshot_at = found, time.monotonic()
        return dict(found)

    def power_state(self, instance_uuid, use_cache=True):
        """Nova's power state of the instance; NOSTATE without a node.

        With ``use_cache``, the health poll's last finding answers, or else
        the last listing; without, the provider does.
        """
        if use_cache:
            found = self._reserver.health.latest(instance_uuid)
            if found is not None:
                return _POWER_STATES[found.power_state]
            if self._snapshot_at is not None and (
                    time.monotonic() - self._snapshot_at < self._max_age):
                reservation = self._snapshot.get(instance_uuid)
                if reservation is not None:
                    return _POWER_STATES[reservation.power_state]
        reservation = self._reserver.lookup(instance_uuid)
        if reservation is None:
            return power_state.NOSTATE
        return _POWER_STATES[reservation.power_state]


def apply_power_event(instance, target_power_state):
    """Record a power change Ironic reported (``power-update`` event).

    Ironic tells Nova when a node was powered on or off outside of Nova,
    so that the instance does not wait for the next power state sync.
    """
    if target_power_state == external_event.POWER_ON:
        instance.power_state = power_state.RUNNING
        instance.vm_state = vm_states.ACTIVE
        expected = task_states.POWERING_ON
    else:
        instance.power_state = power_state.SHUTDOWN
        instance.vm_state = vm_states.STOPPED
        expected = task_states.POWERING_OFF
    instance.task_state = None
    instance.save(expected_task_state=expected)
