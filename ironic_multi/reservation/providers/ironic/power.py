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

"""Power on, power off and reboot of an instance's node."""

from nova.compute import power_state
from nova.compute import task_states
from nova.compute import vm_states
from nova import exception as nova_exception
from nova.objects import external_event
from oslo_log import log as logging

from ironic_multi.conf import CONF
from ironic_multi import exception
from ironic_multi.virt import waiters

LOG = logging.getLogger(__name__)

POWER_ON = 'power on'
POWER_OFF = 'power off'
REBOOT = 'rebooting'
_FIELDS = ('uuid', 'power_state', 'target_power_state', 'last_error')


class PowerControl(object):
    """Power changes of nodes, each waited for with a bound."""

    def __init__(self, api, conf=CONF):
        self._api = api
        self._opts = conf.ironic_multi

    def power_on(self, node):
        self._change(node, POWER_ON, POWER_ON,
                     nova_exception.InstancePowerOnFailure)

    def power_off(self, node, timeout=0):
        """Power off; with ``timeout``, try a soft power off first."""
        if timeout:
            try:
                self._change(node, POWER_OFF, POWER_OFF,
                             nova_exception.InstancePowerOffFailure,
                             soft=True, timeout=timeout)
                return
            except nova_exception.InstancePowerOffFailure as e:
                LOG.info('Soft power off of node %(node)s failed '
                         '(%(error)s); powering it off hard',
                         {'node': node, 'error': e})
        self._change(node, POWER_OFF, POWER_OFF,
                     nova_exception.InstancePowerOffFailure)

    def reboot(self, node, soft=False):
        """Reboot; a soft reboot falls back to hard if Ironic refuses it."""
        if soft:
            try:
                self._change(node, REBOOT, POWER_ON,
                             nova_exception.InstanceRebootFailure, soft=True)
                return
            except nova_exception.InstanceRebootFailure as e:
                LOG.info('Soft reboot of node %(node)s failed (%(error)s); '
                         'rebooting it hard', {'node': node, 'error': e})
        self._change(node, REBOOT, POWER_ON,
                     nova_exception.InstanceRebootFailure)

    def _change(self, node, target, expected, error, soft=False,
                timeout=None):
        try:
            self._api.set_power_state(node, target, soft=soft)
        except exception.IronicMultiError as e:
            raise error(reason='node %s: %s' % (node, e))

        def failed(n):
            if not n.get('target_power_state') and n.get('last_error'):
                return n['last_error']

        waiters.wait_for(
            lambda: self._api.get_node(node, fields=_FIELDS),
            lambda n: (not n.get('target_power_state')
                       and n.get('power_state') == expected),
            timeout=timeout or self._opts.power_timeout,
            interval=self._opts.state_poll_interval,
            error=lambda reason: error(reason=reason),
            what='%s%s of node %s' % ('soft ' if soft else '', target, node),
            failed=failed)
        LOG.info('Node %(node)s: %(target)s done',
                 {'node': node, 'target': target})


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
