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

"""Other deployers on the cloud's Ironic, which the run must never touch.

As a shared Ironic has them: a node deployed straight through Ironic's
API (metalsmith, Bifrost, another Nova), a node reserved by a second
group of ironic-multi, allocations of another client (one active, one
in error), and a node of another conductor group that even carries this
group's mark (the group serves the default conductor group only: see
``run.COMPUTE_OPTIONS``).  And the nodes the failed-node rules must
leave alone (:data:`FAILED_KINDS`): in a failed state, in an operator's
maintenance, deployed without ``instance_uuid``, owned and leased, most
of them carrying this group's old failure marks (pinned to a provision
state they have left).  They sit in the fleet's resource classes and
shards, where this group's pools and housekeeper look.
"""

import time
import uuid

from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi.testing.chaos import invariants
from ironic_multi.testing.chaos import logscan

OTHER_GROUP = 'another-ironic-multi'
OTHER_CONDUCTOR_GROUP = 'elsewhere'
# A provision_updated_at the nodes below have left long ago.
_OLD_PIN = '2026-01-01T00:00:00+00:00'


def _old_failures(group, count):
    """This group's failure marks, pinned to a state the node has left."""
    return {'ironic_multi': {'group': group, 'failures': count,
                             'last_failure': 1767225600.0,
                             'reason': 'deploy failed: long ago',
                             'pin': _OLD_PIN}}


def _failed_kinds(group):
    """``{label: database columns}`` of the nodes no rule may touch."""
    return {
        'deploy failed under another deployer, our old failures': dict(
            provision_state='deploy failed', instance_uuid=str(uuid.uuid4()),
            extra=_old_failures(group, 1)),
        'clean failed in an operator\'s maintenance, our old failures':
            dict(provision_state='clean failed', maintenance=True,
                 maintenance_reason='operator: fan replaced',
                 extra=_old_failures(group, 2)),
        'error (a tear down of theirs failed), our old failures': dict(
            provision_state='error', extra=_old_failures(group, 2)),
        'deployed without instance_uuid, our old failures at quarantine':
            dict(provision_state='active', extra=_old_failures(group, 3)),
        'available in an operator\'s maintenance': dict(
            provision_state='available', maintenance=True,
            maintenance_reason='operator: firmware update'),
        'owned and leased, deployed by its lessee': dict(
            provision_state='active', instance_uuid=str(uuid.uuid4()),
            owner=uuid.uuid4().hex, lessee=uuid.uuid4().hex),
    }


#: The labels of the nodes :func:`seed` adds for the failed-node rules.
FAILED_KINDS = tuple(_failed_kinds('g'))


class Foreigners(object):
    """The seeded nodes and allocations, and what they looked like."""

    def __init__(self, nodes, allocations):
        #: ``{label: node uuid}``
        self.nodes = nodes
        #: allocation uuids
        self.allocations = allocations
        self.baseline = {}
        self.allocations_baseline = {}
        #: wall-clock time of :meth:`remember`
        self.remembered_at = None

    @property
    def node_uuids(self):
        return frozenset(self.nodes.values())

    def snapshot(self, ironic):
        """``({node uuid: kept fields}, {allocation uuid: allocation})``."""
        nodes = {n: invariants.kept(ironic.get_node(n))
                 for n in self.node_uuids}
        allocations = {a['uuid']: a for a in ironic.list_allocations()
                       if a['uuid'] in self.allocations}
        return nodes, allocations

    def remember(self, ironic):
        self.remembered_at = time.time()
        self.baseline, self.allocations_baseline = self.snapshot(ironic)

    def check(self, ironic, log_dir=None):
        """Violations: a node or allocation changed, or a write was sent.

        :param log_dir: where Ironic's log is; without it only changes
            are found, not the writes Ironic refused.
        """
        nodes, allocations = self.snapshot(ironic)
        found = invariants.check_foreign(
            self.baseline, [dict(v, uuid=k) for k, v in nodes.items()],
            list(allocations.values()), self.allocations_baseline)
        if log_dir is not None:
            found += invariants.check_foreign_writes(logscan.node_writes(
                log_dir, self.node_uuids, self.remembered_at))
        return found


def _deploy_straight(ironic, node, instance_info):
    """Claim and deploy ``node`` through Ironic's API, as metalsmith does."""
    instance = str(uuid.uuid4())
    ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
        {'op': 'add', 'path': '/instance_uuid', 'value': instance},
        {'op': 'add', 'path': '/instance_info', 'value': dict(
            instance_info,
            image_source='http://images.example.com/theirs.qcow2')}])
    ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                   expect=(202,), json={'target': 'active'})
    ironic.wait_for_node(node, timeout=60, provision_state='active')
    return instance


def seed(ironic, resource_class, shard, group, host):
    """Seed the other deployers; returns :class:`Foreigners`.

    :param ironic: IronicNodes as Ironic's administrator.
    :param resource_class, shard: where this group looks for nodes.
    :param group: this group's name (the conductor group's node carries
        its mark).
    :param host: one of this group's compute hosts (another Nova's host
        mark names it too).
    """
    enrolled = ironic.enroll_nodes(3, resource_class=resource_class,
                                   shard=shard, name_prefix='foreign')
    deployed, other_group, allocated = enrolled
    nodes = {}
    # Another Nova, or metalsmith: no mark, a host mark like ours.
    _deploy_straight(ironic, deployed, {deploy.HOST_KEY: host})
    nodes['deployed through the API'] = deployed
    # A second group of ironic-multi: its own mark.
    instance = str(uuid.uuid4())
    ironic.request('PATCH', '/v1/nodes/%s' % other_group,
                   json=ownership.claim_patch(
                       instance, ownership.mark(OTHER_GROUP)))
    ironic.request('PATCH', '/v1/nodes/%s' % other_group, json=[
        {'op': 'add', 'path': '/instance_info/%s' % deploy.HOST_KEY,
         'value': host},
        {'op': 'add', 'path': '/instance_info/image_source',
         'value': 'http://images.example.com/theirs.qcow2'}])
    ironic.request('PUT', '/v1/nodes/%s/states/provision' % other_group,
                   expect=(202,), json={'target': 'active'})
    ironic.wait_for_node(other_group, timeout=60, provision_state='active')
    nodes['another group'] = other_group
    # Allocations of another client.
    active, failed = str(uuid.uuid4()), str(uuid.uuid4())
    ironic.request('POST', '/v1/allocations', expect=(201,), json={
        'uuid': active, 'resource_class': resource_class,
        'candidate_nodes': [allocated]})
    ironic.wait_for_allocation(active, timeout=60, state='active')
    nodes['allocated by another client'] = allocated
    ironic.request('POST', '/v1/allocations', expect=(201,), json={
        'uuid': failed, 'resource_class': 'no-such-class'})
    ironic.wait_for_allocation(failed, timeout=60, state='error')
    # Another conductor group, deployed, with this group's own mark.
    marked = str(uuid.uuid4())
    (elsewhere,) = ironic.bulk_clone(
        deployed, 1, conductor_group=OTHER_CONDUCTOR_GROUP,
        instance_uuid=marked, provision_state='active',
        instance_info={deploy.HOST_KEY: host, ownership.KEY: {
            marked: ownership.mark(group)}})
    nodes['another conductor group'] = elsewhere
    # Copies of the deployed node (its class, shard and conductor group),
    # each in the state the label says.
    for label, columns in sorted(_failed_kinds(group).items()):
        (nodes[label],) = ironic.bulk_clone(deployed, 1, **columns)
    return Foreigners(nodes, (active, failed))
