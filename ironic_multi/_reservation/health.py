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

"""The health poll (the Akanda RUG's POLL): the truth about our nodes.

Every ``health_poll_interval`` each service asks its provider about the
nodes of its own instances: gone, in maintenance, powered off or on behind
its back, in a provision error.  What it finds is kept, logged when it
changes, and answers the virt driver's ``get_info``, so that Nova's power
state sync acts on the truth.
"""

import dataclasses
import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class HealthPoll(object):
    """The last health of each instance of one host.

    :param provider: the node provider.
    :param host: the host whose instances are polled.
    :param max_age: seconds after which a finding is too old to answer.
    """

    def __init__(self, provider, host, max_age):
        self._provider = provider
        self._host = host
        self._max_age = max_age
        self._lock = threading.Lock()
        self._found = {}
        self._known = {}
        self._at = None

    def poll(self):
        """Check every instance of the host; ``{instance: NodeHealth}``.

        An instance that left the listing without this service releasing
        it is checked all the same: its node may have been deleted.
        """
        current = self._provider.instances(self._host)
        with self._lock:
            vanished = {instance: reservation for instance, reservation
                        in self._known.items() if instance not in current}
        reservations = list(current.values()) + list(vanished.values())
        found = self._provider.health(reservations) if reservations else {}
        with self._lock:
            before, self._found = self._found, dict(found)
            self._known = dict(current)
            self._known.update((i, r) for i, r in vanished.items()
                               if found[i].problem)
            self._at = time.monotonic()
        for instance, health in sorted(found.items()):
            self._report(instance, before.get(instance), health)
        return dict(found)

    def forget(self, instance_uuid):
        """This service released the instance: not a loss to report."""
        with self._lock:
            self._found.pop(instance_uuid, None)
            self._known.pop(instance_uuid, None)

    def expect(self, instance_uuid, power_state):
        """This service changed the power: not a change behind its back."""
        with self._lock:
            found = self._found.get(instance_uuid)
            if found is not None:
                self._found[instance_uuid] = dataclasses.replace(
                    found, power_state=power_state)

    def latest(self, instance_uuid):
        """The last finding for the instance, unless it is too old."""
        with self._lock:
            if self._at is None or time.monotonic() - self._at > self._max_age:
                return None
            return self._found.get(instance_uuid)

    @staticmethod
    def _report(instance, before, now):
        if now.problem and (before is None or before.problem != now.problem):
            LOG.warning('Node %(node)s of instance %(instance)s: %(problem)s',
                        {'node': now.node_uuid, 'instance': instance,
                         'problem': now.problem})
        elif before is not None and before.problem and not now.problem:
            LOG.info('Node %(node)s of instance %(instance)s is healthy '
                     'again', {'node': now.node_uuid, 'instance': instance})
        if before is not None and before.power_state != now.power_state:
            LOG.warning('Node %(node)s of instance %(instance)s: power '
                        'changed behind our back, %(before)s -> %(now)s',
                        {'node': now.node_uuid, 'instance': instance,
                         'before': before.power_state,
                         'now': now.power_state})
