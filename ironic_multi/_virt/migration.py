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

"""The move from Nova's in-tree Ironic driver, in place: the plan.

Nova's in-tree driver keeps one compute node, and one resource provider,
per Ironic node: both carry the node's UUID (``hypervisor_hostname`` too),
an instance's ``node`` names it, and the instance's allocation is against
that provider.  This driver keeps one per service.  The plan says, and
writes nothing, what the move would take: each in-tree compute node, the
instance on it and its allocation, the service that would take the
instance over (the owner of the node's shard on the ring), and every
reason an instance would be refused.  A compute node that holds no
instance would only be removed.  A host switched in place (its
nova-compute restarted with this driver, under the same name) moves its
own instances.

The move itself (``migrate apply``) is a takeover
(:mod:`~ironic_multi._virt.takeover`) of the in-tree host: the same
service, the same lock and fences, the same order of writes, with each
instance's allocation taken from its node's provider, and every instance
that the plan refuses left where it is.
"""

import collections

from nova.compute import vm_states
from nova import context as nova_context
from nova import objects
from oslo_log import log as logging

from ironic_multi._reservation import lifecycle
from ironic_multi._virt import host as host_mod

LOG = logging.getLogger(__name__)

# What a server may be in to move: nothing is under way on it, and its
# node is deployed.
MOVABLE = (vm_states.ACTIVE, vm_states.STOPPED)


def in_tree(compute_node):
    """Whether a Nova compute node is one of the in-tree driver's."""
    return (compute_node.hypervisor_type == host_mod.HYPERVISOR_TYPE
            and compute_node.hypervisor_hostname != compute_node.host
            and compute_node.uuid != host_mod.compute_node_uuid(
                compute_node.host))


def refusals(instance, reservation, node, allocations, group,
             conductor_group=None, moved_to=None):
    """Why ``instance`` cannot move; empty when it can.

    :param instance: on an in-tree compute node: its ``node`` is the
        Ironic node's UUID, and that of its compute node and provider.
    :param reservation: its node's reservation as the node provider sees
        it (:class:`~.lifecycle.Reservation`), or None.
    :param node: the node provider's node dict of the reservation, or None.
    :param allocations: ``{provider uuid: {resource class: units}}`` of
        the instance in placement.
    :param group: this coordination group's name.
    :param conductor_group: the one conductor group this group serves, if
        it is limited to one.
    :param moved_to: the provider a move that stopped half way left the
        allocation on, which is where it would go.
    """
    reasons = []
    if instance.task_state:
        reasons.append('a task is under way (%s)' % instance.task_state)
    if instance.vm_state not in MOVABLE:
        reasons.append('the server is %s; only %s servers move'
                       % (instance.vm_state, ' or '.join(MOVABLE)))
    if reservation is None or reservation.node_uuid is None:
        reasons.append('no Ironic node holds the instance (Nova says node '
                       '%s)' % instance.node)
    else:
        if reservation.node_uuid != instance.node:
            reasons.append('node %s holds the instance, Nova says %s'
                           % (reservation.node_uuid, instance.node))
        if reservation.group not in (None, group):
            reasons.append('node %s carries the mark of group %s'
                           % (reservation.node_uuid, reservation.group))
        node = node or {}
        if node.get('maintenance'):
            reasons.append('node %s is in maintenance'
                           % reservation.node_uuid)
        if conductor_group is not None and (
                node.get('conductor_group') or '') != conductor_group.lower():
            reasons.append('node %s is in conductor group "%s", this group '
                           'serves "%s"' % (reservation.node_uuid,
                                            node.get('conductor_group') or '',
                                            conductor_group))
        if reservation.state != lifecycle.State.ACTIVE:
            reasons.append('node %s is %s, not active' % (
                reservation.node_uuid, reservation.node_state
                or reservation.state))
    if len(allocations) != 1 or not set(allocations) <= {instance.node,
                                                         moved_to}:
        reasons.append('its allocation is against %s, not only against '
                       'the provider of node %s' % (
                           ', '.join(sorted(allocations)) or 'nothing',
                           instance.node))
    return reasons


def in_tree_nodes(context):
    """Nova's compute nodes of the in-tree driver, sorted."""
    return sorted((cn for cn in objects.ComputeNodeList.get_all(context)
                   if in_tree(cn)),
                  key=lambda cn: (cn.host, cn.uuid))


def in_tree_instances(context, hosts, compute_nodes):
    """Nova's instances of ``hosts`` on the in-tree ``compute_nodes``.

    By the instance's own host, not its compute node's: the in-tree
    driver's hash ring moves a compute node to another live host when its
    service goes down (a host stopped for the switch), and the instance
    stays with the host that spawned it.
    """
    names = {cn.hypervisor_hostname for cn in compute_nodes}
    found = []
    for host in sorted(set(hosts)):
        found.extend(
            instance for instance in objects.InstanceList.get_by_host(
                context, host, expected_attrs=[])
            if instance.node in names)
    return found


def allocations_of(current):
    """``{provider: {resource class: units}}`` of GET /allocations/{c}."""
    return {provider: dict(allocation['resources'])
            for provider, allocation in
            (current.get('allocations') or {}).items()}


def examine(context, reserver, client, instance, source, host,
            conductor_group=None):
    """What a move of ``instance`` from ``source`` to ``host`` would meet.

    The plan and the move ask this alike, so that the plan says what the
    move will do.  The in-tree driver writes the host mark too
    (``nova_host_id``): ``source``'s is expected, and ``host``'s is that
    of a move that stopped half way, as an allocation already on
    ``host``'s provider is.

    :param host: the service that would move it, or None.
    :returns: ``(reservation, the consumer's allocations as placement
        answered, [reasons it would be refused])``.
    """
    reservation = reserver.lookup(instance.uuid)
    node = None
    if reservation is not None and reservation.node_uuid is not None:
        node = reserver.provider.node(reservation)
    current = client.get_allocs_for_consumer(context, instance.uuid)
    reasons = refusals(
        instance, reservation, node, allocations_of(current), reserver.group,
        conductor_group,
        moved_to=host_mod.compute_node_uuid(host) if host else None)
    marked = reservation.host if reservation is not None else None
    if marked not in (None, source, host):
        reasons.append('its node %s is marked for host %s'
                       % (reservation.node_uuid, marked))
    return reservation, current, reasons


class Migration(object):
    """The plan of the move, as the service of ``host`` sees it.

    :param reserver: this service's Reserver (``lookup``, ``group``,
        ``provider``).
    :param takeover: this service's :class:`~.takeover.Takeover`, which
        makes the move (``migrate apply``) and says who adopts.
    :param report_client: a callable returning Nova's placement client.
    """

    def __init__(self, reserver, takeover, report_client, conf):
        self._reserver = reserver
        self._takeover = takeover
        self._report_client = report_client
        self._conf = conf

    def serve(self, request):
        """The operator request ``migrate-plan`` (``migrate plan``)."""
        return self.plan(nova_context.get_admin_context())

    def plan(self, context):
        """``{'compute_nodes': [...], 'instances': [...]}``; writes nothing.

        ``compute_nodes``: the in-tree compute nodes (``uuid``, ``host``,
        ``instances``).  ``instances``: one entry per instance on them
        (``uuid``, ``name``, ``from``, ``node``, ``to``: the service that
        would move it, ``resources``, ``refused``: the reasons, empty
        when it would move).
        """
        client = self._report_client()
        survey = self._takeover.survey(context)
        nodes = in_tree_nodes(context)
        found = in_tree_instances(context, survey.services, nodes)
        on_node = collections.defaultdict(list)
        for instance in found:
            on_node[instance.node].append(instance)
        # Once per host: each asks the group for its members.
        adopters = {host: self._takeover.in_tree_adopter(host, survey.down)
                    for host in {instance.host for instance in found}}
        compute_nodes, entries = [], []
        for compute_node in nodes:
            instances = on_node[compute_node.hypervisor_hostname]
            compute_nodes.append({'uuid': compute_node.uuid,
                                  'host': compute_node.host,
                                  'instances': len(instances)})
            for instance in instances:
                entries.append(self._entry(context, client, compute_node,
                                           instance, adopters[instance.host]))
        LOG.info('Migration plan: %(nodes)d in-tree compute node(s), '
                 '%(instances)d instance(s), %(refused)d refused',
                 {'nodes': len(compute_nodes), 'instances': len(entries),
                  'refused': sum(1 for e in entries if e['refused'])})
        return {'compute_nodes': compute_nodes, 'instances': entries}

    def _entry(self, context, client, compute_node, instance, adopter):
        _reservation, current, reasons = examine(
            context, self._reserver, client, instance, instance.host,
            adopter, self._conf.ironic_multi.conductor_group)
        return {
            'uuid': instance.uuid,
            'name': instance.display_name,
            'from': instance.host,
            'node': compute_node.hypervisor_hostname,
            'to': adopter,
            'resources': allocations_of(current).get(compute_node.uuid, {}),
            'refused': reasons,
        }
