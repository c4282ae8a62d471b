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

"""An NMI through Ironic's management interface: Nova's crash dump.

Ironic sends it at once (``PUT /v1/nodes/X/management/inject_nmi``) and
records nothing; what the node's OS does with it is its own business.  A
node whose management interface cannot send one (Ironic answers 400:
``fake`` has no NMI, nor has ``noop``) gets nothing.
"""

from oslo_log import log as logging

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi import exception

LOG = logging.getLogger(__name__)

ACTION = 'send an NMI'


def inject(api, node_uuid, instance_uuid, group):
    """Send the node of ``instance_uuid`` an NMI.

    :raises NodeCannot: its management interface has none.
    :raises CrashDumpFailed: it may not have been sent.
    """
    node = ownership.held(api, node_uuid, instance_uuid, group,
                          ('management_interface',))
    try:
        api.inject_nmi(node_uuid)
    except exception.IronicAPIError as e:
        if e.status_code != 400:
            raise exception.CrashDumpFailed(action=ACTION, node=node_uuid,
                                            reason=e) from e
        raise exception.NodeCannot(
            action=ACTION, node=node_uuid,
            reason='its management interface (%s) refused: %s' % (
                node.get('management_interface') or 'unknown',
                e.reason)) from e
    except exception.IronicMultiError as e:
        raise exception.CrashDumpFailed(action=ACTION, node=node_uuid,
                                        reason=e) from e
    LOG.info('Sent an NMI to node %(node)s of instance %(instance)s',
             {'node': node_uuid, 'instance': instance_uuid})
