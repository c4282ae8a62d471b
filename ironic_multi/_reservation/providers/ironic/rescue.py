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

"""Rescue and unrescue of a deployed Ironic node, waited for.

Ironic's rescue interface boots the node into a rescue ramdisk whose root
password is the one given, the instance's disk left as it is; unrescue
boots the instance again.  As Nova's in-tree driver, each waits for the
provision state that ends it (``rescue``, ``active``) and fails on the one
that says it failed; unlike it, never past ``[ironic_multi]
deploy_timeout`` (a rescue boots a ramdisk, as a deploy does).

A node whose rescue interface is ``no-rescue`` is refused before anything
is asked of Ironic (which would write the password on the node first).
"""

import time

from oslo_log import log as logging

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import states
from ironic_multi._reservation.providers.ironic import waiters
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# An interface of that name has nothing to offer.
NO_RESCUE = 'no-rescue'
_FIELDS = ('provision_state', 'target_provision_state', 'rescue_interface',
           'maintenance', 'last_error')
# (what to ask Ironic, the state that ends it, the states that say it
# failed, the states it may start from)
_RESCUE = (states.TARGET_RESCUE, states.RESCUE, (states.RESCUEFAIL,),
           (states.ACTIVE,))
_UNRESCUE = (states.TARGET_UNRESCUE, states.ACTIVE, (states.UNRESCUEFAIL,),
             (states.RESCUE, states.RESCUEFAIL, states.UNRESCUEFAIL))


class Rescuer(object):
    """Rescue and unrescue of the nodes of this group's instances."""

    def __init__(self, api, conf):
        self._api = api
        self._opts = conf.ironic_multi
        self._group = conf.ironic_multi.coordination_group

    def check(self, node_uuid, instance_uuid):
        """:raises NodeCannot: the node has no rescue interface."""
        _check(ownership.held(self._api, node_uuid, instance_uuid,
                              self._group, _FIELDS), 'rescue')

    def rescue(self, node_uuid, instance_uuid, password):
        """Boot the node into its rescue ramdisk; wait for it.

        :raises NodeCannot: no rescue interface; nothing was done.
        :raises RescueFailed:
        """
        self._change('rescue', node_uuid, instance_uuid, _RESCUE,
                     {'rescue_password': password})

    def unrescue(self, node_uuid, instance_uuid):
        """Boot the node back into the instance; wait for it.

        :raises RescueFailed:
        """
        self._change('unrescue', node_uuid, instance_uuid, _UNRESCUE)

    def _change(self, action, node_uuid, instance_uuid, how, body=None):
        target, done, failed_states, sources = how

        def error(reason):
            return exception.RescueFailed(action=action, node=node_uuid,
                                          reason=reason)

        with self._api.bounded(time.monotonic()
                               + self._opts.deploy_timeout):
            node = ownership.held(self._api, node_uuid, instance_uuid,
                                  self._group, _FIELDS)
            state = node.get('provision_state')
            if state == done and not node.get('target_provision_state'):
                LOG.info('Node %(node)s is in %(state)s already: no '
                         '%(action)s to do', {'node': node_uuid,
                                              'state': state,
                                              'action': action})
                return
            _check(node, action)
            if state not in sources:
                raise error('provision state is %s, not %s' % (
                    state, ' or '.join(sources)))
            try:
                self._api.set_provision_state(node_uuid, target, body=body)
            except exception.IronicMultiError as e:
                raise error(e) from e
            self._wait(action, node_uuid, instance_uuid, done, failed_states,
                       error)
        LOG.info('Node %(node)s of instance %(instance)s: %(action)s done',
                 {'node': node_uuid, 'instance': instance_uuid,
                  'action': action})

    def _wait(self, action, node_uuid, instance_uuid, done, failed_states,
              error):
        def failed(node):
            if node.get('instance_uuid') != instance_uuid:
                return 'the node no longer holds the instance'
            if (node.get('provision_state') in failed_states
                    and not node.get('target_provision_state')):
                return node.get('last_error') or node['provision_state']

        waiters.wait_for(
            lambda: self._api.get_node(
                node_uuid, fields=('uuid', 'instance_uuid') + _FIELDS),
            lambda n: (n.get('provision_state') == done
                       and not n.get('target_provision_state')
                       and n.get('instance_uuid') == instance_uuid),
            timeout=self._opts.deploy_timeout,
            interval=self._opts.state_poll_interval,
            error=error,
            what='%s of node %s' % (action, node_uuid),
            failed=failed)


def _check(node, action):
    interface = node.get('rescue_interface')
    if interface in (None, NO_RESCUE):
        raise exception.NodeCannot(
            action=action, node=node['uuid'],
            reason='its rescue interface is %s' % (interface or 'unknown'))
