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

"""A delete cut short by a killed compute, whose restart cannot finish it.

The chaos run on the multi-process cloud found it: a compute SIGKILLed in
the middle of a delete came back, Nova's ``init_host`` restarted the
deletion, that failed too, and Nova left the server ERROR with its task
``deleting`` for good (the killed request's event never ends, so nothing
told it from a delete in progress).

A second process under the same host name, a live member of the
coordination group, keeps the task: the request may be its own.

As a SIGKILL leaves it: the compute is stopped, and the server's task and
the killed request's action and unfinished event are written through
Nova's objects.  Ironic answers 503 to the tear down (through a fault
proxy) while the compute starts again, so that its restarted deletion
fails, as it did in the chaos run.
"""

import fixtures
from nova.compute import task_states
from nova import context as nova_context
from nova import objects

from ironic_multi._reservation import membership
from ironic_multi.testing import fault_proxy
from ironic_multi.testing import reservers
from tests.functional import nova_base

HOST = 'compute1'


class RestartedDeletionTest(nova_base.IronicMultiTestBase):

    NODES = 1
    # The services' own timers do not fire during the test.
    FLAGS = {'ironic_multi': {'pool_refresh_interval': 3600,
                              'health_poll_interval': 3600,
                              'housekeeping_interval': 3600}}

    def _kill_in_the_middle_of_a_delete(self, server):
        """The compute's state after a SIGKILL during the delete."""
        self.computes[HOST].stop()
        ctx = nova_context.get_admin_context()
        ctx.request_id = 'req-killed-delete'
        instance = objects.Instance.get_by_uuid(ctx, server['id'])
        instance.task_state = task_states.DELETING
        instance.save()
        objects.InstanceAction.action_start(ctx, server['id'], 'delete')
        objects.InstanceActionEvent.event_start(
            ctx, server['id'], 'compute_terminate_instance', host=HOST)

    def test_the_task_ends_and_a_second_delete_finishes(self):
        server = self.boot()
        node = self.node_of(server['id'])['uuid']
        self._kill_in_the_middle_of_a_delete(server)

        proxy = self.useFixture(
            fault_proxy.FaultProxy(self.ironic.server.endpoint))
        refused = proxy.add_fault('status_503', path=r'/states/provision')
        # The restarted compute's driver goes through the proxy: the tear
        # down is refused, the driver's start still reads Ironic.
        self.flags(endpoint_override=proxy.endpoint, group='ironic',
                   **reservers.retry_options(1))
        compute = self.start_compute(HOST)
        proxy.remove_fault(refused)
        # Nova's init_host restarted the deletion, which failed.
        server = self._show_server(server)
        self.assertEqual('ERROR', server['status'])
        self.assertEqual('deleting', server['OS-EXT-STS:task_state'])

        driver = self.driver_of(compute)
        # One pass alone ends nothing: it must see the same for ``GRACE``
        # seconds (Nova's init_host may still be at it).
        driver._end_left_tasks()
        self.assertEqual('deleting',
                         self._show_server(server)['OS-EXT-STS:task_state'])
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_multi._virt.left_tasks.GRACE', 0))
        # A second process under this host name, a live member of the
        # group: the unfinished request may be its own.
        ours = driver._reserver.membership
        namesake = membership.Membership(ours.url, ours.group, 30,
                                         host=ours.host)
        namesake.start()
        try:
            driver._end_left_tasks()
            driver._end_left_tasks()
            self.assertEqual(
                'deleting',
                self._show_server(server)['OS-EXT-STS:task_state'])
        finally:
            namesake.stop()
        # Two passes of this process that see it the same.
        driver._end_left_tasks()
        driver._end_left_tasks()
        server = self._show_server(server)
        self.assertEqual('ERROR', server['status'])
        self.assertIsNone(server['OS-EXT-STS:task_state'])

        # The user's delete again finds Ironic back: the node is freed.
        self.delete_servers([server])
        self.ironic.wait_for_node(node, provision_state='available',
                                  instance_uuid=None)
        self.assertEqual({}, self.server_allocation(server['id']))
        self.assertEqual({}, self.associated_nodes())
