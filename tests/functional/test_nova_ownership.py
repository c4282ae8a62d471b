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

"""An Ironic shared with other deployers, under Nova's own services.

Nodes that another deployer put there (straight through Ironic's API, as
metalsmith and Bifrost do; another ironic-multi group; another client's
allocations; another conductor group) come out of housekeeping passes and
a takeover exactly as they went in, while this group's own leaks are
still repaired.  Nova that cannot be asked makes no orphan.  Nodes claimed
before ownership marks get their mark from the service that owns their
instance, and only then does the housekeeper look after them.
"""

import uuid

import fixtures
from oslo_db import exception as db_exc

from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi._virt import consumers
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from tests.functional import nova_base
from tests.functional.test_operations import _force_state

OTHER_GROUP = 'another-group'
# What a node of someone else must keep.
KEPT = ('instance_uuid', 'provision_state', 'power_state', 'maintenance',
        'allocation_uuid', 'instance_info', 'extra', 'conductor_group')
TIMERS = {'pool_refresh_interval': 3600, 'health_poll_interval': 3600,
          'housekeeping_interval': 3600, 'orphan_grace_period': 0,
          # The Ironic test server's conductor serves the default group.
          'conductor_group': ''}


def _new():
    return str(uuid.uuid4())


class _SharedIronicCase(nova_base.IronicMultiTestBase):

    COMPUTES = 2
    NODES = 2
    FLAGS = {'ironic_multi': dict(TIMERS, takeover_forced_down=True)}

    def _reserver(self, host):
        return self.driver_of(self.computes[host]).reserver

    def _leader(self):
        """The reserver that keeps house (the first that takes the lead)."""
        leaders = [self._reserver(h) for h in sorted(self.computes)
                   if self._reserver(h).leadership.try_lead()]
        self.assertEqual(1, len(leaders))
        return leaders[0]

    def _kept(self, node_uuid):
        node = self.ironic.get_node(node_uuid)
        return {field: node.get(field) for field in KEPT}

    def _enroll_deployed(self, instance_uuid, host_mark):
        """A node deployed straight through Ironic's API, with no mark."""
        (node,) = self.ironic.enroll_nodes(1, name_prefix='foreign')
        self.ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
            {'op': 'add', 'path': '/instance_uuid', 'value': instance_uuid},
            {'op': 'add', 'path': '/instance_info', 'value': {
                deploy.HOST_KEY: host_mark,
                'image_source': 'http://images.example.com/theirs.qcow2'}}])
        self.ironic.request('PUT', '/v1/nodes/%s/states/provision' % node,
                            expect=(202,), json={'target': 'active'})
        self.ironic.wait_for_node(node, provision_state='active')
        self.ironic.request('PUT', '/v1/nodes/%s/states/power' % node,
                            expect=(202,), json={'target': 'power on'})
        self.ironic.wait_for_node(node, power_state='power on')
        return node


class ForeignNodesTest(_SharedIronicCase):
    """Several passes and one takeover by a group whose Nova knows none."""

    def _foreigners(self):
        found = {}
        # Deployed through Ironic's API by another Nova whose compute has
        # the same host name as one of ours.
        found['deployed by another'] = self._enroll_deployed(
            _new(), 'compute2')
        # Reserved and deployed by a second group of ironic-multi.
        (node,) = self.ironic.enroll_nodes(1, name_prefix='other-group')
        theirs = ironic_provider.IronicProvider(reservers.make_conf(
            self.ironic.server.endpoint, coordination_group=OTHER_GROUP,
            state_poll_interval=0.1))
        theirs.start()
        instance = _new()
        claimed = theirs.claim([{'uuid': node, 'resource_class': 'baremetal'}],
                               instance, provider_contract.request(
                                   'baremetal'), 10 ** 12)
        theirs.deploy(claimed, provider_contract.deployment(instance,
                                                            'compute2'))
        found['another group'] = node
        # Allocations of another client: one active, one in error.
        (node,) = self.ironic.enroll_nodes(1, name_prefix='allocated')
        active = _new()
        self.ironic.request('POST', '/v1/allocations', expect=(201,), json={
            'uuid': active, 'resource_class': 'baremetal',
            'candidate_nodes': [node]})
        self.ironic.wait_for_allocation(active, state='active')
        found['allocated by another'] = node
        failed = _new()
        self.ironic.request('POST', '/v1/allocations', expect=(201,), json={
            'uuid': failed, 'resource_class': 'no-such-class'})
        self.ironic.request('GET', '/v1/allocations/%s' % failed)
        # A node of another conductor group: even a mark of this group
        # does not make it this group's to manage.
        marked = _new()
        (node,) = self.ironic.bulk_clone(
            found['deployed by another'], 1, conductor_group='elsewhere',
            instance_uuid=marked, provision_state='active',
            instance_info={deploy.HOST_KEY: 'compute2', ownership.KEY: {
                marked: ownership.mark('ironic-multi')}})
        found['another conductor group'] = node
        return found, (active, failed)

    def test_foreign_nodes_are_never_touched(self):
        victim, adopter = 'compute2', 'compute1'
        self.place_nodes({victim: 1})
        mine = self.boot(host=victim)
        foreigners, allocations = self._foreigners()
        before = {name: self._kept(node) for name, node in foreigners.items()}
        allocations_before = self.ironic.list_allocations()

        self.stop_compute(victim, force_down=True)
        (adopted,) = self.driver_of(self.computes[adopter]).takeover.run()
        leader = self._reserver(adopter)
        reports = [leader.housekeep() for _ in range(3)]

        after = {name: self._kept(node) for name, node in foreigners.items()}
        for name in foreigners:
            self.assertEqual(before[name], after[name], name)
        self.assertEqual(allocations_before, self.ironic.list_allocations())
        # Every pass saw them as others': three nodes and one failed
        # allocation (the conductor group's node is not even listed), and
        # did nothing.
        for report in reports:
            self.assertEqual(4, report.foreign)
            self.assertEqual([], report.actions)
        # The takeover moved our server, and only it.
        self.assertEqual([mine['id']], adopted['adopted'])
        self.assertEqual(adopter, self._show_server(mine)[
            'OS-EXT-SRV-ATTR:host'])


class NovaUnreachableTest(_SharedIronicCase):
    """Nova's database does not answer during a pass: no orphan."""

    NODES = 3

    def test_no_orphan_without_nova_and_the_rest_runs(self):
        self.place_nodes({'compute2': 1})
        orphan = self.boot(host='compute2')
        node = self.node_of(orphan['id'])['uuid']
        self.stop_compute('compute2', force_down=True)
        # Nova's API deletes locally: the driver is never asked.
        self._delete_server(orphan)
        # A node of ours whose cleaning failed, to be recovered.
        failed = [n['uuid'] for n in self.ironic.list_nodes()
                  if n['instance_uuid'] is None][0]
        _force_state(self.ironic, failed, 'clean failed')
        # The failure is pinned to the state the group saw it in.
        leader = self._leader()
        leader.provider.record_failure(failed, 'tear down: clean failed')

        def unreachable(*args, **kwargs):
            raise db_exc.DBConnectionError('the cell database is down')

        with fixtures.MonkeyPatch(
                'nova.db.main.api.instance_get_all_by_filters_sort',
                unreachable):
            report = leader.housekeep()
        self.assertIn('the cell database is down',
                      report.skipped[housekeeper_mod.ORPHANS])
        # The rules that need no Nova ran.
        self.assertEqual([('recover node', failed, True)],
                         [(a.kind, a.node_uuid, a.done)
                          for a in report.actions])
        self.assertEqual('active',
                         self.ironic.get_node(node)['provision_state'])
        self.assertEqual(orphan['id'],
                         self.ironic.get_node(node)['instance_uuid'])
        # Once Nova answers, the orphan goes in the next pass.
        report = leader.housekeep()
        self.assertEqual({}, report.skipped)
        self.assertIn(('release orphan', orphan['id'], True),
                      [(a.kind, a.instance_uuid, a.done)
                       for a in report.actions])
        self.ironic.wait_for_node(node, provision_state='available',
                                  instance_uuid=None)


class UpgradeTest(_SharedIronicCase):
    """Nodes claimed by a version without marks: marked, then kept."""

    def test_unmarked_nodes_are_marked_by_their_owner_and_kept(self):
        self.place_nodes({'compute1': 1})
        server = self.boot(host='compute1')
        node = self.node_of(server['id'])['uuid']
        # What a version without marks left on the node.
        self.ironic.request('PATCH', '/v1/nodes/%s' % node, json=[
            {'op': 'remove', 'path': '/instance_info/%s' % ownership.KEY}])
        leader = self._leader()
        self.assertIsNone(leader.lookup(server['id']).group)
        # Not the group's yet: the housekeeper leaves it alone even with
        # a Nova that says it is gone.
        leader.set_consumers(lambda uuids: {})
        report = leader.housekeep()
        self.assertEqual([], report.actions)
        self.assertEqual(1, report.foreign)
        leader.set_consumers(consumers.instance_states)

        # The owner restarts: it marks the nodes of its instances.
        self.computes['compute1'].stop()
        self.computes['compute1'] = self.start_compute('compute1')
        found = self._reserver('compute1').lookup(server['id'])
        self.assertEqual('ironic-multi', found.group)
        self.assertEqual(node, found.node_uuid)
        # Kept: Nova knows the instance.
        report = self._leader().housekeep()
        self.assertEqual([], report.actions)
        self.assertEqual('active',
                         self.ironic.get_node(node)['provision_state'])
        self.delete_and_check(server)
