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

"""A compute service is lost: a live one adopts its servers.

Three compute services on a real Ironic.  The victim's service stops and
an operator forces it down through the os-services API, as Nova's
documentation asks before any recovery.  A survivor then adopts the
victim's servers (automatically, or through ``ironic-multi-manage
instances adopt``), and the servers are managed through Nova's API again:
rebooted, stopped, started and deleted, with both sides checked.

The periodics are called directly, as the other scenarios call refresh
and Nova's periodics: the services' own timers are set long, so that they
do not race the test.
"""

import datetime
import json
import time

from nova.compute import power_state
from nova import context
from nova import objects
from oslo_utils import timeutils

from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._virt import host as host_mod
from ironic_multi import conf as im_conf
from ironic_multi import exception
from tests.functional import nova_base

CONF = im_conf.CONF
RC = 'CUSTOM_BAREMETAL'


class _TakeoverCase(nova_base.IronicMultiTestBase):

    COMPUTES = 3
    MEMBERSHIP_TIMEOUT = 3
    # The services' own timers do not fire during the test.
    TIMERS = {'pool_refresh_interval': 3600, 'health_poll_interval': 3600,
              'housekeeping_interval': 3600}

    def _driver(self, host):
        return self.driver_of(self.computes[host])

    def _adopter(self, victim):
        """The survivor that adopts the victim's servers (the ring's)."""
        survivors = sorted(set(self.computes) - {victim})
        chosen = {self._driver(h).takeover.adopter(victim, {victim})
                  for h in survivors}
        self.assertEqual(1, len(chosen), chosen)
        (adopter,) = chosen
        self.assertIn(adopter, survivors)
        return adopter

    def _refresh(self, hosts):
        """Two rounds of refreshes, then Nova's resource periodics."""
        for host in hosts + hosts:
            self._driver(host).reserver.refresh()
        self.run_periodics(hosts)

    def _mark(self, node_uuid):
        info = self.ironic.get_node(node_uuid,
                                    fields=['instance_info'])['instance_info']
        return info.get(deploy.HOST_KEY)

    def assert_adopted(self, servers, adopter, victim):
        """Nova, placement and Ironic all say: the adopter's now."""
        adopter_rp = host_mod.compute_node_uuid(adopter)
        for server in servers:
            server = self._show_server(server)
            self.assertEqual('ACTIVE', server['status'])
            self.assertEqual(adopter, server['OS-EXT-SRV-ATTR:host'])
            self.assertEqual(adopter,
                             server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
            self.assertEqual({adopter_rp: {RC: 1}},
                             self.server_allocation(server['id']))
            node = self.node_of(server['id'])
            self.assertEqual('active', node['provision_state'])
            self.assertEqual(adopter, self._mark(node['uuid']))
        self.assertEqual(0, self.provider_usage(victim))
        self.assertLessEqual(
            {s['id'] for s in servers},
            set(self._driver(adopter).list_instance_uuids()))

    def assert_deleted(self, servers):
        nodes = [self.node_of(s['id'])['uuid'] for s in servers]
        self.delete_servers(servers)
        for node_uuid in nodes:
            node = self.ironic.wait_for_node(node_uuid,
                                             provision_state='available',
                                             instance_uuid=None)
            self.assertIsNone(node['instance_uuid'])
        for server in servers:
            self.assertEqual({}, self.server_allocation(server['id']))
        self.assertEqual({}, self.associated_nodes())
        self.assertEqual([], self.ironic.list_allocations())


class AutomaticTakeoverTest(_TakeoverCase):
    """``takeover_forced_down``: the survivors' periodic adopts."""

    NODES = 3
    FLAGS = {'ironic_multi': dict(_TakeoverCase.TIMERS,
                                  takeover_forced_down=True)}

    def test_forced_down_compute_is_taken_over(self):
        victim = 'compute2'
        adopter = self._adopter(victim)
        survivors = sorted(set(self.computes) - {victim})
        # A full cluster: two servers on the victim, one on the adopter.
        # The adopter's provider then has no free unit, and placement
        # takes the victim's two only because the takeover makes room
        # (its "reserved" counted them).  Each offers its own shards'
        # nodes: the victim's shards get two, the adopter's one.
        self.place_nodes({victim: 2, adopter: 1})
        servers = [self.boot(host=victim) for _ in range(2)]
        mine = self.boot(host=adopter)
        self._refresh(list(self.computes))
        self.assertEqual(0, self.free_in_placement(adopter))
        self.assertEqual(2, self.provider_usage(victim))

        self.computes[victim].stop()
        forced_at = time.monotonic()
        self.force_down(victim)
        reports = {host: self._driver(host).takeover.run()
                   for host in survivors}
        seconds = time.monotonic() - forced_at
        self.record('takeover_seconds', round(seconds, 3))
        self.record('takeover_reports', reports)

        # Exactly the ring owner adopted, everything.
        self.assertEqual({adopter}, {h for h, r in reports.items() if r})
        (report,) = reports[adopter]
        self.assertEqual(sorted(s['id'] for s in servers), report['adopted'])
        self.assertEqual({}, report['skipped'])
        self.assertEqual((adopter, victim), (report['host'], report['from']))
        self.assert_adopted(servers, adopter, victim)
        # Again: nothing left to adopt, nothing moves.
        again = [r for h in survivors
                 for r in self._driver(h).takeover.run()]
        self.assertEqual([], [r for r in again if r['adopted']])

        # Placement agrees after the adopter's own periodics: its three
        # servers, no free unit and not less than none.
        self._refresh(survivors)
        self.assertEqual(3, self.provider_usage(adopter))
        self.assertEqual(0, self.free_in_placement(adopter))
        self.assert_adopted(servers, adopter, victim)

        # The servers are managed through Nova again, by the adopter.
        for server in servers:
            node = self.node_of(server['id'])
            server = self._reboot_server(server, hard=True)
            self.assertEqual('power on', self.node_of(server['id'])[
                'power_state'])
            server = self._reboot_server(server, hard=False)
            self.assertEqual(power_state.RUNNING,
                             server['OS-EXT-STS:power_state'])
            server = self._stop_server(server)
            self.assertEqual('power off', self.ironic.get_node(
                node['uuid'], fields=['power_state'])['power_state'])
            server = self._start_server(server)
            self.assertEqual('power on', self.ironic.get_node(
                node['uuid'], fields=['power_state'])['power_state'])
            self.assertEqual(adopter, server['OS-EXT-SRV-ATTR:host'])

        self.assert_deleted(servers + [mine])
        self.assertEqual(0, self.provider_usage(adopter))


class GraceTakeoverTest(_TakeoverCase):
    """``takeover_down_after``: down by heartbeat long enough, adopted.

    Nothing forces the victim down: its service stops, and its last
    heartbeat is set back in Nova's database, as time passing would; Nova's
    own servicegroup then reports it down.
    """

    NODES = 2
    GRACE = 30
    FLAGS = {'ironic_multi': dict(_TakeoverCase.TIMERS,
                                  takeover_down_after=GRACE)}

    def _last_heartbeat(self, host, seconds_ago):
        service = objects.Service.get_by_compute_host(
            context.get_admin_context(), host)
        service.last_seen_up = timeutils.utcnow(with_timezone=True) - (
            datetime.timedelta(seconds=seconds_ago))
        service.save()

    def _run(self, hosts):
        return {host: self._driver(host).takeover.run() for host in hosts}

    def test_down_longer_than_the_grace_is_taken_over(self):
        victim = 'compute1'
        adopter = self._adopter(victim)
        survivors = sorted(set(self.computes) - {victim})
        self.place_nodes({victim: 1})
        servers = [self.boot(host=victim)]
        self.computes[victim].stop()
        down_time = CONF.service_down_time

        # Down by heartbeat, but not for the grace yet: nothing moves.
        self._last_heartbeat(victim, down_time + self.GRACE - 10)
        self.assertEqual({h: [] for h in survivors}, self._run(survivors))
        self.assertEqual(victim, self._show_server(servers[0])[
            'OS-EXT-SRV-ATTR:host'])

        self._last_heartbeat(victim, down_time + self.GRACE + 10)
        reports = self._run(survivors)
        self.assertEqual({adopter}, {h for h, r in reports.items() if r})
        (report,) = reports[adopter]
        self.assertEqual([servers[0]['id']], report['adopted'])
        self.assert_adopted(servers, adopter, victim)
        self.assert_deleted(servers)


class ManualTakeoverTest(_TakeoverCase):
    """``instances adopt`` from the CLI; the victim comes back."""

    NODES = 2
    FLAGS = {'ironic_multi': dict(_TakeoverCase.TIMERS,
                                  request_poll_interval=1)}

    def test_cli_takeover_and_the_victim_returns(self):
        victim = 'compute3'
        adopter = self._adopter(victim)
        other = (set(self.computes) - {victim, adopter}).pop()
        conf_file = self.manage_config_file()
        self.place_nodes({victim: 2})
        servers = [self.boot(host=victim) for _ in range(2)]
        self.assertFalse(CONF.ironic_multi.takeover_forced_down)

        # A service that is up is not taken over.
        code, _out, err = self.manage(
            '--config-file', conf_file, 'instances', 'adopt', '--from',
            other, '--to', adopter, '--timeout', '20')
        self.assertEqual(1, code, err)
        self.assertIn('Nova reports it up and not forced down', err)

        self.computes[victim].stop()
        forced_at = time.monotonic()
        self.force_down(victim)
        # Without the option, nothing happens by itself.
        for host in (adopter, other):
            self.assertEqual([], self._driver(host).takeover.run())
        self.assertEqual(victim, self._show_server(servers[0])[
            'OS-EXT-SRV-ATTR:host'])

        code, out, err = self.manage(
            '--config-file', conf_file, 'instances', 'adopt', '--from',
            victim, '--timeout', '30', '-f', 'json')
        seconds = time.monotonic() - forced_at
        self.assertEqual(0, code, err)
        answer = json.loads(out)
        self.record('cli_takeover_seconds', round(seconds, 3))
        self.record('cli_answer', answer)
        self.assertEqual(adopter, answer['Host'])
        self.assertEqual(victim, answer['From'])
        self.assertEqual(sorted(s['id'] for s in servers), answer['Adopted'])
        self.assert_adopted(servers, adopter, victim)

        # The victim comes back: restarted, no longer forced down.
        self.start_compute(victim)
        self.force_down(victim, down=False)
        returned = self._driver(victim)
        self._refresh([victim, adopter])
        returned.reserver.health.poll()
        returned.reserver.housekeep()
        self.assertEqual([], returned.takeover.run())
        ctx = context.get_admin_context()
        self.computes[victim].manager._sync_power_states(ctx)
        # It lists none of them, and refuses to act on their nodes.
        self.assertEqual([], returned.list_instance_uuids())
        for server in servers:
            self.assertIsNone(returned.reserver.teardown(server['id']))
            self.assertIsNone(returned.reserver.release(server['id']))
            self.assertRaises(exception.ReservationNotFound,
                              returned.reserver.power, server['id'],
                              base.PowerAction.OFF)
        self.assert_adopted(servers, adopter, victim)

        # Nova routes the servers' actions to the adopter, which acts.
        server = self._reboot_server(servers[0], hard=True)
        self.assertEqual(adopter, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('power on',
                         self.node_of(server['id'])['power_state'])
        self.assert_deleted(servers)


class InterruptedTaskTakeoverTest(_TakeoverCase):
    """The victim dies in the middle of its servers' tasks.

    As a SIGKILL leaves them: the servers' states are written through
    Nova's objects while the victim is stopped (a build that never
    finished, a hard reboot, a delete that had released its node).
    Nothing on the victim can end them; the adopter does.
    """

    NODES = 3
    FLAGS = {'ironic_multi': dict(_TakeoverCase.TIMERS,
                                  takeover_forced_down=True)}

    def _interrupt(self, server, vm_state, task_state):
        instance = objects.Instance.get_by_uuid(context.get_admin_context(),
                                                server['id'])
        instance.vm_state = vm_state
        instance.task_state = task_state
        instance.save()

    def assert_fault(self, server, host, message):
        server = self._show_server(server)
        self.assertEqual('ERROR', server['status'])
        self.assertIsNone(server['OS-EXT-STS:task_state'])
        self.assertEqual(host, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(message, server['fault']['message'])
        return server

    def test_unfinished_tasks_end_in_error_and_move(self):
        victim = 'compute2'
        adopter = self._adopter(victim)
        survivors = sorted(set(self.computes) - {victim})
        self.place_nodes({victim: 3})
        building, rebooting, deleting = [self.boot(host=victim)
                                         for _ in range(3)]
        # The delete had torn down and released the node when it died.
        released = self.node_of(deleting['id'])['uuid']
        reserver = self._driver(victim).reserver
        reserver.teardown(deleting['id'])
        reserver.release(deleting['id'])
        self.assertIsNone(self.node_of(deleting['id']))

        self.computes[victim].stop()
        self._interrupt(building, 'building', 'spawning')
        self._interrupt(rebooting, 'active', 'rebooting_hard')
        self._interrupt(deleting, 'active', 'deleting')
        self.force_down(victim)
        reports = {host: self._driver(host).takeover.run()
                   for host in survivors}

        (report,) = reports[adopter]
        self.record('interrupted_takeover_report', report)
        lost = 'compute host %s was lost (forced down) during ' % victim
        expected = {
            building['id']: 'Build of instance %s aborted: %sspawning' % (
                building['id'], lost),
            rebooting['id']: 'Failed to reboot instance: %srebooting_hard'
                             % lost,
            deleting['id']: 'Failed to terminate instance: %sdeleting'
                            % lost}
        # ERROR, no task, the fault; on the adopter when it holds a node.
        for server in (building, rebooting):
            self.assert_fault(server, adopter, expected[server['id']])
        # No node: it stays on the victim, in ERROR.
        self.assert_fault(deleting, victim, expected[deleting['id']])
        self.assertEqual(expected, report['ended'])
        self.assertEqual(sorted([building['id'], rebooting['id']]),
                         report['adopted'])
        self.assertEqual(
            {deleting['id']: 'it holds no node that %s can see' % adopter},
            report['skipped'])
        # Nothing more to do: a second run ends and adopts nothing.
        again = [r for h in survivors
                 for r in self._driver(h).takeover.run()]
        self.assertEqual([], [r for r in again
                              if r['adopted'] or r['ended']])

        # Nova deletes the node-less one by itself (its host is down).
        self.delete_servers([deleting])
        self.assertEqual({}, self.server_allocation(deleting['id']))
        self.assertEqual('available', self.ironic.get_node(
            released, fields=['provision_state'])['provision_state'])
        # The users' next requests go to the adopter, which acts on the
        # nodes: a hard reboot brings the server back, the deletes tear
        # the nodes down.
        server = self._reboot_server(rebooting, hard=True)
        self.assertEqual(adopter, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('power on',
                         self.node_of(server['id'])['power_state'])
        self.assert_adopted([rebooting], adopter, victim)
        self.assert_deleted([building, rebooting])
