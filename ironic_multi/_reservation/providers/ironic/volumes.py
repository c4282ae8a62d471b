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

"""Boot from volume: a node's volume connectors and volume targets.

A node's volume connectors say how it reaches storage (its iSCSI
initiator, its addresses); Nova hands them to Cinder, which exports the
volumes to it.  The volume targets say which volumes the node boots from
and sees, as Cinder's connection info gives them; Ironic's storage
interface reads them at deploy.

Ironic changes a node's volume targets only while the node is powered
off, or is not deployed.  They are written by the deploy, before the
provision request, on a node that holds the instance (claimed nodes are
off), and removed by the tear down while the node still holds it: a
target left on a node that is no longer ours would give the next
instance on it our volume.
"""

from oslo_log import log as logging

from ironic_multi._reservation.providers import base
from ironic_multi import exception

LOG = logging.getLogger(__name__)


def connectors(api, node):
    """The node's :class:`~.base.VolumeConnector` s."""
    return tuple(base.VolumeConnector(type=c['type'],
                                      connector_id=c['connector_id'])
                 for c in api.list_volume_connectors(node))


def replace_targets(api, node, targets):
    """Make ``targets`` the node's volume targets, and only them.

    Targets the node has already are deleted first: what a tear down that
    did not end left behind (a node whose tear down goes on in Ironic is
    not waited for).

    :raises IronicMultiError: Ironic refused a change.
    """
    remove_targets(api, node)
    for target in targets:
        try:
            api.create_volume_target(node, target.volume_id,
                                     target.volume_type, target.properties,
                                     target.boot_index)
        except exception.RequestOutcomeUnknown:
            # The answer was lost: the target may be there.
            if not any(t['volume_id'] == target.volume_id
                       for t in api.list_volume_targets(node)):
                raise
        LOG.debug('Node %(node)s boots from volume %(volume)s (boot index '
                  '%(index)s)', {'node': node, 'volume': target.volume_id,
                                 'index': target.boot_index})


def remove_targets(api, node):
    """Delete every volume target of the node; returns how many."""
    found = api.list_volume_targets(node)
    for target in found:
        api.delete_volume_target(node, target['uuid'])
    if found:
        LOG.info('Removed %(count)d volume target(s) of node %(node)s',
                 {'count': len(found), 'node': node})
    return len(found)
