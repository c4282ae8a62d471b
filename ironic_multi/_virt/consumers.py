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

"""What Nova says of instances, for the housekeeper and the inventory.

Asked through Nova's objects, as any compute service can (the conductor
reads the cell database): an instance that is deleted, or that Nova never
had, is gone.
"""

import functools
import hashlib
import urllib.parse

from nova.compute import vm_states
from nova import conf as nova_conf
from nova import context as nova_context
from nova import objects
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from ironic_multi._reservation import housekeeper
from ironic_multi import exception

CONF = nova_conf.CONF
LOG = logging.getLogger(__name__)

# UUIDs per database query.
_CHUNK = 500
# What a call through the conductor raises when no answer comes: the
# broker restarts, or the conductor is down or busy.
_NO_ANSWER = (oslo_messaging.MessagingTimeout,
              oslo_messaging.MessageDeliveryFailure)


def asking_nova(function):
    """``function``, with Nova not answering raised as NovaUnavailable.

    For the periodics that ask Nova: a broker restart is the weather, not
    a bug, and the next pass asks again.
    """
    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except _NO_ANSWER as e:
            raise exception.NovaUnavailable(reason=e) from e
    return call


def instance_states(instance_uuids):
    """``{uuid: vm_state, or housekeeper.GONE}`` of ``instance_uuids``.

    UUIDs Nova does not know are left out: the housekeeper takes them as
    gone too.
    """
    context = nova_context.get_admin_context(read_deleted='yes')
    uuids = sorted(set(instance_uuids))
    states = {}
    for start in range(0, len(uuids), _CHUNK):
        found = objects.InstanceList.get_by_filters(
            context, {'uuid': uuids[start:start + _CHUNK]},
            expected_attrs=[])
        states.update((instance.uuid, housekeeper.GONE if instance.deleted
                       else instance.vm_state) for instance in found)
    return states


def given_up(instance_uuids):
    """The UUIDs of ``instance_uuids`` that Nova gave up on.

    ERROR with no task under way: a failed build keeps its allocation in
    placement until the server is deleted, and nothing is about to give
    it a node (a rebuild sets a task state first).
    """
    context = nova_context.get_admin_context()
    uuids = sorted(set(instance_uuids))
    found = set()
    for start in range(0, len(uuids), _CHUNK):
        found.update(
            instance.uuid for instance in objects.InstanceList.get_by_filters(
                context, {'uuid': uuids[start:start + _CHUNK],
                          'vm_state': vm_states.ERROR},
                expected_attrs=[])
            if not instance.task_state)
    return found


def identity(conf=CONF):
    """What tells this service's Nova cell from another, for the group.

    A cell's compute services share its message queue: the broker hosts
    and virtual host of ``[DEFAULT] transport_url``, without credentials,
    hashed.  Two cells behind one group would each take the other's
    instances for orphans.
    """
    try:
        url = oslo_messaging.TransportURL.parse(conf, conf.transport_url)
    except (cfg.NoSuchOptError, oslo_messaging.InvalidTransportURL) as e:
        # No transport set up: nothing to compare with.
        LOG.debug('No identity for this service\'s Nova cell: %s', e)
        return None
    hosts = sorted('%s:%s' % (h.hostname, h.port) for h in url.hosts)
    text = '%s://%s/%s' % (url.transport, ','.join(hosts),
                           urllib.parse.quote(url.virtual_host or ''))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def host_instances(host):
    """UUIDs of the instances on ``host``'s compute node of this driver.

    Not those Nova has on ``host`` on compute nodes of its in-tree driver
    (a host switched in place, or handed back by ``migrate rollback``):
    their nodes are ``migrate apply``'s to mark, or no longer this
    group's.
    """
    context = nova_context.get_admin_context()
    return [instance.uuid for instance in
            objects.InstanceList.get_by_host_and_node(
                context, host, host, expected_attrs=[])]
