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

"""The ownership mark on an Ironic node, and writes guarded by it.

A claim writes, in the same PATCH that sets ``instance_uuid``::

    instance_info["ironic_multi"] = {
        "<instance uuid>": {"group": "<group>", "claimer": "<member>"}}

(in allocation mode the allocation's ``extra`` carries the same mark, and
the node gets it with the first write of its deploy).  A node is a
group's when the mark under its *current* ``instance_uuid`` names the
group: a stale mark left by an earlier instance names another UUID and
counts for nothing.

The mark's path holds the instance UUID, and JSON Patch refuses to
``replace`` a path that does not exist: a write that starts with
:func:`guard` is applied only while the node, as Ironic reads it to apply
the patch, still carries that instance's mark.  Ironic's PATCH has no
``test`` operation; this is the conditional write it does have.  The
window left is inside Ironic, between its read of the node and its save
(see ``doc/source/failures.rst``).

Ironic clears ``instance_info`` when it tears a node down, so the mark
goes with the deployment.  Failures, quarantine and tear downs are marked
in ``extra`` instead (:mod:`.provider`), where they outlive it.
"""

from ironic_multi import exception

KEY = 'ironic_multi'
PATH = '/instance_info/%s' % KEY


def mark(group, claimer=None, consumer=None):
    """The mark a claim by member ``claimer`` of ``group`` writes.

    :param consumer: the consumer (Nova cell) it claims for, if told.
    """
    found = {'group': group}
    if claimer:
        found['claimer'] = claimer
    if consumer:
        found['consumer'] = consumer
    return found


def claim_patch(instance_uuid, value):
    """The one atomic write of a claim: the instance and its mark."""
    return [{'op': 'add', 'path': '/instance_uuid', 'value': instance_uuid},
            {'op': 'add', 'path': PATH, 'value': {instance_uuid: value}}]


def mark_patch(node, value):
    """Write the mark of ``node``'s instance, which has none, alone.

    For allocation claims and upgrades.  Never another instance's mark:
    where the node carries marks already, only the instance's own key is
    added (refused, 400, once they are gone); else the whole
    ``ironic_multi`` dict is written, behind :func:`holder_guard`, which
    Ironic refuses (409) once the node holds another instance, whose
    claim wrote marks of its own.

    :param node: the node as read, with ``instance_uuid`` and
        ``instance_info``.
    """
    instance_uuid = node['instance_uuid']
    if isinstance((node.get('instance_info') or {}).get(KEY), dict):
        return [{'op': 'add', 'path': '%s/%s' % (PATH, instance_uuid),
                 'value': value}]
    return [holder_guard(instance_uuid),
            {'op': 'add', 'path': PATH, 'value': {instance_uuid: value}}]


def holder_guard(instance_uuid):
    """A no-op while the node holds ``instance_uuid``.

    Ironic applies a PATCH to the node as it reads it and writes only what
    changed: while the node holds the instance, nothing.  Once it holds
    another, this is a change of ``instance_uuid``, which Ironic refuses
    with 409.  (A node that holds none meanwhile would be claimed for the
    instance again: a claim of this group's, which its housekeeper
    releases if the instance is gone.)
    """
    return {'op': 'replace', 'path': '/instance_uuid',
            'value': instance_uuid}


def guard(instance_uuid, group):
    """A no-op that makes a PATCH fail unless the mark is still there.

    ``group`` must be the group the mark names now.
    """
    return {'op': 'replace',
            'path': '%s/%s/group' % (PATH, instance_uuid), 'value': group}


def release_patch(instance_uuid, group):
    """Clear the instance and its mark, if the node still carries both.

    With them goes the rest of ``instance_info``: a claim may have written
    the deploy's fields, which must not outlive it (the next claim adds
    its own keys, and would keep any it does not write).
    """
    return [guard(instance_uuid, group),
            {'op': 'replace', 'path': '/instance_info', 'value': {}},
            {'op': 'remove', 'path': '/instance_uuid'}]


def of(node):
    """The mark of the node's current instance, or None.

    Needs the node's ``instance_uuid`` and ``instance_info``.
    """
    instance_uuid = node.get('instance_uuid')
    if not instance_uuid:
        return None
    marks = (node.get('instance_info') or {}).get(KEY)
    found = marks.get(instance_uuid) if isinstance(marks, dict) else None
    return found if isinstance(found, dict) and found.get('group') else None


def of_allocation(allocation):
    """The mark in an allocation's ``extra``, or None."""
    found = (allocation.get('extra') or {}).get(KEY)
    return found if isinstance(found, dict) and found.get('group') else None


def held(api, node_uuid, instance_uuid, group, fields=()):
    """The node as it is now, read right before an action on it.

    For the actions Nova asks for on its instance (rescue, console, NMI),
    which Ironic's provision and management calls cannot guard with the
    mark: the node must still hold the instance, under no other group's
    mark (none: claimed before marks).

    :param fields: more fields to read.
    :raises ReservationNotFound: the node no longer holds the instance.
    :raises ForeignReservation: it holds it under another group's mark.
    """
    wanted = tuple(sorted(set(fields) | {'uuid', 'instance_uuid',
                                         'instance_info'}))
    try:
        node = api.get_node(node_uuid, fields=wanted)
    except exception.NodeNotFound:
        raise exception.ReservationNotFound(instance=instance_uuid)
    if node.get('instance_uuid') != instance_uuid:
        raise exception.ReservationNotFound(instance=instance_uuid)
    found = of(node)
    if found is not None and found['group'] != group:
        raise exception.ForeignReservation(
            instance=instance_uuid, node=node_uuid, group=found['group'],
            ours=group)
    return node
