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

"""``migrate plan`` and ``apply`` on a cloud of Nova's in-tree driver.

Four servers boot under the in-tree driver; one node stays free.  The
in-tree compute stops and this driver's starts, as the cut-over runbook
says.  The plan then lists the four in-tree compute nodes that hold a
server and the free one, says which server moves where and why the
others would not (a node in maintenance, a server in ERROR, a node marked
by another group), and writes nothing: not to Ironic, Nova or placement.
``apply`` moves the one server, with no provision or power write to its
node, and skips the others with the plan's reasons; again, it moves
nothing.  The moved server then reboots, stops, starts and is deleted
through Nova's API.
"""

import json

from nova.compute import task_states
from nova import context
from nova import objects
from oslo_utils import uuidutils

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi.testing import nova_services
from tests.functional import nova_base

IN_TREE_HOST = 'intree1'
HOST = 'compute1'
# What the plan must leave as it was.
NODE_FIELDS = ('uuid', 'instance_uuid', 'instance_info', 'extra',
               'provision_state', 'power_state', 'maintenance')
# What no move may change: a provision or power write changes one.
UNTOUCHED = ('provision_state', 'target_provision_state',
             'provision_updated_at', 'power_state', 'target_power_state',
             'instance_uuid', 'maintenance')


class _InTreeCase(nova_base.IronicMultiTestBase):
    """Nodes the in-tree driver can serve; no compute of this driver yet."""

    COMPUTES = 0
    NODE_PROPERTIES = nova_services.IN_TREE_NODE_PROPERTIES

    def boot_in_tree(self, host, count):
        """``count`` servers on an in-tree ``host``, then stop it."""
        self.start_compute(host, driver=nova_services.IN_TREE_DRIVER)
        self.run_periodics()
        servers = [self.boot() for _ in range(count)]
        self.computes[host].stop()
        return servers

    def switched_in_place(self, count):
        """``count`` in-tree servers on HOST, then this driver there.

        :returns: ``(servers, {server id: node}, manage config file)``.
        """
        servers = self.boot_in_tree(HOST, count)
        nodes = {s['id']: s['OS-EXT-SRV-ATTR:hypervisor_hostname']
                 for s in servers}
        self.start_compute(HOST)
        return servers, nodes, self.manage_config_file()


class MigratePlanTest(_InTreeCase):

    NODES = 5

    def _state(self, servers):
        """What Ironic, Nova and placement say of the servers and nodes."""
        return {
            'nodes': sorted(self.ironic.list_nodes(fields=NODE_FIELDS),
                            key=lambda n: n['uuid']),
            'servers': [(s['id'], s['OS-EXT-SRV-ATTR:host'],
                         s['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                         s['status'])
                        for s in map(self._show_server, servers)],
            'allocations': [self.server_allocation(s['id'])
                            for s in servers],
        }

    def test_plan_lists_moves_and_refusals_and_writes_nothing(self):
        self._plan()

    def _plan(self):
        servers = self.boot_in_tree(IN_TREE_HOST, 4)
        moves, maintenance, failed, foreign = servers
        nodes = {s['id']: s['OS-EXT-SRV-ATTR:hypervisor_hostname']
                 for s in servers}
        self.ironic.request(
            'PUT', '/v1/nodes/%s/maintenance' % nodes[maintenance['id']],
            json={'reason': 'fan'}, expect=(202,))
        self.api.post_server_action(failed['id'],
                                    {'os-resetState': {'state': 'error'}})
        self.ironic.request(
            'PATCH', '/v1/nodes/%s' % nodes[foreign['id']], json=[{
                'op': 'add', 'path': ownership.PATH,
                'value': {foreign['id']: ownership.mark('another-group')}}])

        # The cut-over: the in-tree compute stopped, this driver's starts.
        self.start_compute(HOST)
        before = self._state(servers)

        code, out, err = self.manage(
            '--config-file', self.manage_config_file(), 'migrate', 'plan',
            '-f', 'json', '--timeout', '30')
        self.assertEqual(1, code, err)
        rows = {row['Node']: row for row in json.loads(out)}
        self.record('plan', rows)

        free = (set(n['uuid'] for n in before['nodes'])
                - set(nodes.values()))
        self.assertEqual(set(nodes.values()) | free, set(rows))
        (free,) = free
        self.assertEqual('removed', rows[free]['Outcome'])
        self.assertIsNone(rows[free]['Instance'])

        row = rows[nodes[moves['id']]]
        self.assertEqual(('moves', [], moves['id'], IN_TREE_HOST, HOST,
                          {'CUSTOM_BAREMETAL': 1}),
                         (row['Outcome'], row['Reasons'], row['Instance'],
                          row['From'], row['To'], row['Resources']))
        for server, reason in ((maintenance, 'is in maintenance'),
                               (failed, 'the server is error'),
                               (foreign, 'carries the mark of group '
                                         'another-group')):
            row = rows[nodes[server['id']]]
            self.assertEqual(('refused', server['id']),
                             (row['Outcome'], row['Instance']))
            self.assertEqual(1, len(row['Reasons']), row)
            self.assertIn(reason, row['Reasons'][0])

        # Read-only.
        self.assertEqual(before, self._state(servers))
        return servers, nodes

    def _apply(self, conf_file):
        code, out, err = self.manage(
            '--config-file', conf_file, 'migrate', 'apply', '--from',
            IN_TREE_HOST, '-f', 'json', '--timeout', '30')
        return code, (json.loads(out) if out else None), err

    def test_apply_moves_what_the_plan_allows_and_nothing_twice(self):
        servers, nodes = self._plan()
        moves, maintenance, failed, foreign = servers
        conf_file = self.manage_config_file()
        untouched = {uuid: {f: self.ironic.get_node(uuid)[f]
                            for f in UNTOUCHED}
                     for uuid in nodes.values()}

        # The in-tree service is stopped, but Nova does not know yet.
        code, _answer, err = self._apply(conf_file)
        self.assertEqual(1, code, err)
        self.assertIn('Nova reports it up and not forced down', err)

        self.force_down(IN_TREE_HOST)
        code, answer, err = self._apply(conf_file)
        self.assertEqual(0, code, err)
        self.record('apply', answer)
        self.assertEqual((HOST, IN_TREE_HOST, [moves['id']]),
                         (answer['Host'], answer['From'], answer['Adopted']))
        self.assertEqual({maintenance['id'], failed['id'], foreign['id']},
                         set(answer['Skipped']))
        self.assertIn('is in maintenance', answer['Skipped'][
            maintenance['id']])

        moved = self._show_server(moves)
        self.assertEqual(('ACTIVE', HOST, HOST), (
            moved['status'], moved['OS-EXT-SRV-ATTR:host'],
            moved['OS-EXT-SRV-ATTR:hypervisor_hostname']))
        node = self.node_of(moves['id'])
        self.assertEqual(nodes[moves['id']], node['uuid'])
        for uuid, fields in untouched.items():
            now = self.ironic.get_node(uuid)
            self.assertEqual(fields, {f: now[f] for f in UNTOUCHED}, uuid)
        self.assertEqual({self._get_provider_uuid_by_host(HOST):
                          {'CUSTOM_BAREMETAL': 1}},
                         self.server_allocation(moves['id']))
        for server in (maintenance, failed, foreign):
            self.assertEqual(IN_TREE_HOST, self._show_server(server)[
                'OS-EXT-SRV-ATTR:host'])
        # The in-tree compute nodes (and providers) left holding nothing
        # are gone: the moved server's and the free node's.
        providers = {p['uuid'] for p in self.providers()}
        kept = {nodes[s['id']] for s in (maintenance, failed, foreign)}
        self.assertEqual(set(answer['Removed']),
                         set(untouched) - kept | (set(
                             n['uuid'] for n in self.ironic.list_nodes())
                             - set(untouched)))
        self.assertEqual(set(), set(answer['Removed']) & providers)
        self.assertEqual(kept, providers - {
            self._get_provider_uuid_by_host(HOST)})

        # Again: nothing moves twice.
        code, answer, err = self._apply(conf_file)
        self.assertEqual((0, [], []),
                         (code, answer['Adopted'], answer['Removed']), err)

        # Managed here now.
        moves = self._reboot_server(moved, hard=True)
        moves = self._stop_server(moves)
        moves = self._start_server(moves)
        self.assertEqual('ACTIVE', self._show_server(moves)['status'])
        self.delete_and_check(moves)


class SwitchInPlaceTest(_InTreeCase):
    """The in-tree nova-compute restarted with this driver, same host."""

    NODES = 3

    def test_a_host_switched_in_place_moves_its_own_servers(self):
        servers, nodes, conf_file = self.switched_in_place(2)
        # The service's start leaves the in-tree nodes as they are: only
        # apply marks them.
        for node in nodes.values():
            self.assertIsNone(ownership.of(self.ironic.get_node(node)))

        code, out, err = self.manage('--config-file', conf_file, 'migrate',
                                     'plan', '-f', 'json', '--timeout', '30')
        self.assertEqual(0, code, err)
        plan = [row for row in json.loads(out) if row['Instance']]
        self.assertEqual({(HOST, HOST, 'moves')},
                         {(r['From'], r['To'], r['Outcome']) for r in plan})

        # A task under way (as a request the in-tree service never
        # finished leaves it): that server stays, the other moves.
        busy, idle = servers
        instance = objects.Instance.get_by_uuid(
            context.get_admin_context(), busy['id'])
        instance.task_state = task_states.REBOOTING_HARD
        instance.save()
        apply = ('--config-file', conf_file, 'migrate', 'apply', '--from',
                 HOST, '-f', 'json', '--timeout', '30')
        code, out, err = self.manage(*apply)
        self.assertEqual(0, code, err)
        answer = json.loads(out)
        self.assertEqual([idle['id']], answer['Adopted'])
        self.assertEqual(['a task is under way (rebooting_hard)'],
                         list(answer['Skipped'].values()))
        self.assertEqual(nodes[busy['id']], self._show_server(busy)[
            'OS-EXT-SRV-ATTR:hypervisor_hostname'])

        # Its task ended, the next run moves it.
        instance.task_state = None
        instance.save()
        code, out, err = self.manage(*apply)
        self.assertEqual(0, code, err)
        answer = json.loads(out)
        self.assertEqual([busy['id']], answer['Adopted'])
        # Every in-tree compute node and provider is gone; a run after
        # the last one finds nothing to move.
        self.assertEqual({self._get_provider_uuid_by_host(HOST)},
                         {p['uuid'] for p in self.providers()})
        code, out, err = self.manage(*apply)
        self.assertEqual((0, [], []), (code, json.loads(out)['Adopted'],
                                       json.loads(out)['Removed']), err)
        for server in servers:
            shown = self._show_server(server)
            self.assertEqual((HOST, HOST, 'ACTIVE'), (
                shown['OS-EXT-SRV-ATTR:host'],
                shown['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                shown['status']))
            node = self.ironic.get_node(nodes[server['id']])
            self.assertEqual(
                self.driver_of(self.computes[HOST]).reserver.group,
                ownership.of(node)['group'])
        self._reboot_server(self._show_server(servers[0]), hard=True)
        for server in servers:
            self.delete_and_check(server)


class ResumeAndRaceTest(_InTreeCase):
    """A run that stopped half way is finished; two runs take turns."""

    NODES = 2

    def test_a_second_run_waits_and_a_stopped_one_is_finished(self):
        servers = self.boot_in_tree(IN_TREE_HOST, 2)
        self.force_down(IN_TREE_HOST)
        for host in (HOST, 'compute2'):
            self.start_compute(host)
        conf_file = self.manage_config_file()
        apply = ('--config-file', conf_file, 'migrate', 'apply', '--from',
                 IN_TREE_HOST, '--to', HOST, '-f', 'json', '--timeout',
                 '30')
        before = [self.server_allocation(s['id']) for s in servers]

        # Another service moves this host's servers now: the second run
        # waits for the group's lock, then says so, and moves nothing.
        other = self.driver_of(self.computes['compute2']).takeover
        lock = other.lock(IN_TREE_HOST)
        try:
            code, _out, err = self.manage(*apply)
        finally:
            other.release(lock)
        self.assertEqual(1, code, err)
        self.assertIn('another service is adopting them now', err)
        self.assertEqual(before, [self.server_allocation(s['id'])
                                  for s in servers])

        # A run that stopped after its first write: the first server's
        # allocation is on this driver's provider already.
        target = self._get_provider_uuid_by_host(HOST)
        first = servers[0]['id']
        current = self.placement.get('/allocations/%s' % first,
                                     version='1.28').body
        self.placement.put('/allocations/%s' % first, {
            'allocations': {target: {'resources': {'CUSTOM_BAREMETAL': 1}}},
            'consumer_generation': current['consumer_generation'],
            'project_id': current['project_id'],
            'user_id': current['user_id']}, version='1.28')

        code, out, err = self.manage(*apply)
        self.assertEqual(0, code, err)
        self.assertEqual(sorted(s['id'] for s in servers),
                         json.loads(out)['Adopted'])
        for server in servers:
            self.assertEqual({target: {'CUSTOM_BAREMETAL': 1}},
                             self.server_allocation(server['id']))
            self.assertEqual(HOST, self._show_server(server)[
                'OS-EXT-SRV-ATTR:host'])


class RebalancedComputeNodeTest(_InTreeCase):
    """The in-tree ring gave a stopped host's compute node to another.

    Nova's in-tree driver moves the compute node of a host whose service
    is down to a live host (``ComputeNode.host``), and the instance stays
    with the host that spawned it: a switch one host at a time does that
    to every host switched after the first.
    """

    NODES = 2

    def test_the_server_moves_from_the_host_that_spawned_it(self):
        (server,) = self.boot_in_tree(IN_TREE_HOST, 1)
        node = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
        admin = context.get_admin_context()
        (compute_node,) = [
            cn for cn in objects.ComputeNodeList.get_all(admin)
            if cn.hypervisor_hostname == node]
        compute_node.host = 'intree2'
        compute_node.save()
        self.force_down(IN_TREE_HOST)
        self.start_compute(HOST)
        conf_file = self.manage_config_file()

        code, out, err = self.manage('--config-file', conf_file, 'migrate',
                                     'plan', '-f', 'json', '--timeout', '30')
        self.assertEqual(0, code, err)
        row = {r['Node']: r for r in json.loads(out)}[node]
        self.assertEqual(('moves', server['id'], IN_TREE_HOST, HOST),
                         (row['Outcome'], row['Instance'], row['From'],
                          row['To']))

        code, out, err = self.manage(
            '--config-file', conf_file, 'migrate', 'apply', '--from',
            IN_TREE_HOST, '-f', 'json', '--timeout', '30')
        self.assertEqual(0, code, err)
        answer = json.loads(out)
        self.assertEqual([server['id']], answer['Adopted'])
        self.assertIn(compute_node.uuid, answer['Removed'])
        self.assertEqual({self._get_provider_uuid_by_host(HOST)},
                         {p['uuid'] for p in self.providers()})
        self.assertEqual((HOST, 'ACTIVE'), (
            self._show_server(server)['OS-EXT-SRV-ATTR:host'],
            self._show_server(server)['status']))


class RollbackTest(_InTreeCase):
    """``migrate rollback``: the servers go back to the in-tree driver."""

    NODES = 3

    def test_servers_go_back_in_place_and_stay_manageable(self):
        servers, nodes, conf_file = self.switched_in_place(2)
        code, out, err = self.manage(
            '--config-file', conf_file, 'migrate', 'apply', '--from', HOST,
            '-f', 'json', '--timeout', '30')
        self.assertEqual(0, code, err)
        self.assertEqual(sorted(nodes), json.loads(out)['Adopted'])
        untouched = {uuid: {f: self.ironic.get_node(uuid)[f]
                            for f in UNTOUCHED}
                     for uuid in nodes.values()}
        rollback = ('--config-file', conf_file, 'migrate', 'rollback',
                    '--from', HOST, '-f', 'json', '--timeout', '30')

        # Bad input: no such in-tree service.
        code, _out, err = self.manage(*(rollback + ('--to', 'nowhere')))
        self.assertEqual(1, code, err)
        self.assertIn('Nova has no nova-compute service on host nowhere',
                      err)

        # Another run holds the host's lock: this one waits, then says so.
        takeover = self.driver_of(self.computes[HOST]).takeover
        lock = takeover.lock(HOST)
        try:
            code, _out, err = self.manage(*rollback)
        finally:
            takeover.release(lock)
        self.assertEqual(1, code, err)
        self.assertIn('does not hand its servers to the in-tree driver on '
                      '%s: the group\'s lock of the host: another run '
                      'moves its servers now (a takeover, an apply or a '
                      'rollback)' % HOST, err)

        # A task under way: that server stays; the run says one remains.
        busy, idle = servers
        instance = objects.Instance.get_by_uuid(
            context.get_admin_context(), busy['id'])
        instance.task_state = task_states.REBOOTING_HARD
        instance.save()
        # A dry run says so, and writes nothing.
        before = ([self.server_allocation(s['id']) for s in servers],
                  [self.ironic.get_node(n) for n in sorted(nodes.values())])
        code, out, err = self.manage(*(rollback + ('--dry-run',)))
        answer = json.loads(out)
        self.assertEqual((0, True, [idle['id']], [busy['id']], 1), (
            code, answer['Dry Run'], answer['Rolled Back'],
            list(answer['Skipped']), answer['Remaining']), err)
        self.assertEqual(before, (
            [self.server_allocation(s['id']) for s in servers],
            [self.ironic.get_node(n) for n in sorted(nodes.values())]))

        code, out, err = self.manage(*rollback)
        answer = json.loads(out)
        self.record('rollback', answer)
        self.assertEqual((1, [idle['id']], 1), (
            code, answer['Rolled Back'], answer['Remaining']), err)
        self.assertEqual({busy['id']: 'a task is under way (rebooting_hard)'},
                         answer['Skipped'])
        self.assertEqual(HOST, self._show_server(busy)[
            'OS-EXT-SRV-ATTR:hypervisor_hostname'])

        instance.task_state = None
        instance.save()
        code, out, err = self.manage(*rollback)
        self.assertEqual((0, [busy['id']], 0), (
            code, json.loads(out)['Rolled Back'],
            json.loads(out)['Remaining']), err)
        # Again: nothing moves twice.
        code, out, err = self.manage(*rollback)
        self.assertEqual((0, []), (code, json.loads(out)['Rolled Back']),
                         err)

        for server in servers:
            node_uuid = nodes[server['id']]
            shown = self._show_server(server)
            self.assertEqual((HOST, node_uuid, 'ACTIVE'), (
                shown['OS-EXT-SRV-ATTR:host'],
                shown['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                shown['status']))
            self.assertEqual({node_uuid: {'CUSTOM_BAREMETAL': 1}},
                             self.server_allocation(server['id']))
            node = self.ironic.get_node(node_uuid)
            self.assertIsNone(ownership.of(node))
            self.assertEqual(HOST, node['instance_info']['nova_host_id'])
            self.assertEqual(untouched[node_uuid],
                             {f: node[f] for f in UNTOUCHED})

        # The in-tree nova-compute starts in place, and takes them on; it
        # removes this driver's compute node and provider, which hold
        # nothing.
        self.computes[HOST].stop()
        self.start_compute(HOST, driver=nova_services.IN_TREE_DRIVER)
        self.run_periodics()
        self.assertEqual({n['uuid'] for n in self.ironic.list_nodes()},
                         {p['uuid'] for p in self.providers()})
        for server in servers:
            self.assertEqual({nodes[server['id']]: {'CUSTOM_BAREMETAL': 1}},
                             self.server_allocation(server['id']))
        moved = self._reboot_server(self._show_server(idle), hard=True)
        moved = self._stop_server(moved)
        moved = self._start_server(moved)
        self.assertEqual('ACTIVE', self._show_server(moved)['status'])
        self._delete_server(moved)
        self.ironic.wait_for_node(nodes[idle['id']],
                                  provision_state='available',
                                  instance_uuid=None)

    def test_a_hand_over_placement_refuses_is_taken_back(self):
        (server,), nodes, conf_file = self.switched_in_place(1)
        code, _out, err = self.manage(
            '--config-file', conf_file, 'migrate', 'apply', '--from', HOST,
            '-f', 'json', '--timeout', '30')
        self.assertEqual(0, code, err)
        node_uuid = nodes[server['id']]
        mark = ownership.of(self.ironic.get_node(node_uuid))
        service_rp = self._get_provider_uuid_by_host(HOST)
        # The node's provider is back, holding another consumer: the
        # hand-over fails after the node was disowned, and takes it back.
        other = uuidutils.generate_uuid()
        self.placement.post('/resource_providers', {
            'uuid': node_uuid, 'name': node_uuid}, version='1.20')
        self.placement.put('/resource_providers/%s/inventories' % node_uuid,
                           {'resource_provider_generation': 0,
                            'inventories': {'CUSTOM_BAREMETAL': {
                                'total': 1}}}, version='1.20')
        self.placement.put('/allocations/%s' % other, {
            'allocations': {node_uuid: {
                'resources': {'CUSTOM_BAREMETAL': 1}}},
            'consumer_generation': None, 'project_id': server['tenant_id'],
            'user_id': server['user_id']}, version='1.28')
        rollback = ('--config-file', conf_file, 'migrate', 'rollback',
                    '--from', HOST, '-f', 'json', '--timeout', '30')

        code, out, err = self.manage(*rollback)
        answer = json.loads(out)
        self.assertEqual((1, [], 1), (code, answer['Rolled Back'],
                                      answer['Remaining']), err)
        self.assertIn('its resource provider holds the allocation of %s'
                      % other, answer['Skipped'][server['id']])
        # As it was: this group's mark and host, its allocation on the
        # service's provider, Nova's instance here; the provider that
        # holds another consumer is not ours to remove.
        node = self.ironic.get_node(node_uuid)
        self.assertEqual((mark['group'], HOST), (
            ownership.of(node)['group'],
            node['instance_info']['nova_host_id']))
        self.assertEqual({service_rp: {'CUSTOM_BAREMETAL': 1}},
                         self.server_allocation(server['id']))
        shown = self._show_server(server)
        self.assertEqual((HOST, HOST, 'ACTIVE'), (
            shown['OS-EXT-SRV-ATTR:host'],
            shown['OS-EXT-SRV-ATTR:hypervisor_hostname'], shown['status']))
        self.assertEqual({node_uuid: {'CUSTOM_BAREMETAL': 1}}, {
            rp: alloc['resources'] for rp, alloc in self.placement.get(
                '/allocations/%s' % other,
                version='1.28').body['allocations'].items()})
        # Managed by this driver still.
        self._reboot_server(shown, hard=True)

        # Once the other consumer is gone, the next run hands it over.
        self.placement.delete('/allocations/%s' % other, version='1.28')
        code, out, err = self.manage(*rollback)
        self.assertEqual((0, [server['id']], 0), (
            code, json.loads(out)['Rolled Back'],
            json.loads(out)['Remaining']), err)
        self.assertEqual({node_uuid: {'CUSTOM_BAREMETAL': 1}},
                         self.server_allocation(server['id']))
        self.assertIsNone(ownership.of(self.ironic.get_node(node_uuid)))
