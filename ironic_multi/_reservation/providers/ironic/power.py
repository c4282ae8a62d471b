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

"""Power on, power off and reboot of an Ironic node, waited for."""

import time

from oslo_log import log as logging

from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import states
from ironic_multi._reservation.providers.ironic import waiters
from ironic_multi import exception

LOG = logging.getLogger(__name__)

_FIELDS = ('uuid', 'power_state', 'target_power_state', 'last_error')
# action: (what to ask Ironic, the power state that ends it, the hard
# action a soft one falls back to)
_ACTIONS = {
    base.PowerAction.ON: (states.POWER_ON, states.POWER_ON, None),
    base.PowerAction.OFF: (states.POWER_OFF, states.POWER_OFF, None),
    base.PowerAction.REBOOT: (states.REBOOT, states.POWER_ON, None),
    base.PowerAction.SOFT_OFF: (states.SOFT_POWER_OFF, states.POWER_OFF,
                                base.PowerAction.OFF),
    base.PowerAction.SOFT_REBOOT: (states.SOFT_REBOOT, states.POWER_ON,
                                   base.PowerAction.REBOOT),
}


class PowerControl(object):
    """Power changes of nodes, each waited for with a bound."""

    def __init__(self, api, conf):
        self._api = api
        self._opts = conf.ironic_multi

    def apply(self, node, action, timeout=None):
        """Apply ``action``; a soft one that fails falls back to hard.

        :param timeout: seconds for the change; ``power_timeout`` by
            default.
        :raises PowerActionFailed:
        """
        target, expected, fallback = _ACTIONS[action]
        timeout = timeout or self._opts.power_timeout
        try:
            with self._api.bounded(time.monotonic() + timeout):
                self._change(node, action, target, expected, timeout)
        except exception.PowerActionFailed as e:
            if fallback is None:
                raise
            LOG.info('%(action)s of node %(node)s failed (%(error)s); '
                     'doing %(fallback)s instead',
                     {'action': action, 'node': node, 'error': e,
                      'fallback': fallback})
            self.apply(node, fallback)

    def _change(self, node, action, target, expected, timeout):
        def error(reason):
            return exception.PowerActionFailed(action=action, node=node,
                                               reason=reason)

        try:
            self._api.set_power_state(node, target)
        except exception.IronicMultiError as e:
            raise error(e)

        def failed(n):
            if not n.get('target_power_state') and n.get('last_error'):
                return n['last_error']

        waiters.wait_for(
            lambda: self._api.get_node(node, fields=_FIELDS),
            lambda n: (not n.get('target_power_state')
                       and n.get('power_state') == expected),
            timeout=timeout,
            interval=self._opts.state_poll_interval,
            error=error,
            what='%s of node %s' % (action, node),
            failed=failed)
        LOG.info('Node %(node)s: %(action)s done',
                 {'node': node, 'action': action})
