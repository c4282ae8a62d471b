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

"""``migrate rollback``: a service hands its servers to the in-tree driver.

The reverse of ``migrate apply``, while Nova's in-tree Ironic driver can
still start: for each of its instances, the service of this driver puts
back the in-tree layout (one compute node and one resource provider per
Ironic node, both named by the node's UUID), moves the instance's
allocation onto its node's provider, takes its group's mark off the node
and names the in-tree host on it, and gives Nova's instance that host and
node.  The node is otherwise left as it is: no power action, no tear down.

The in-tree nova-compute of that host then starts and finds its compute
nodes.  It removes this driver's compute node of the host itself (Nova's
orphan clean-up: Ironic has no node of that name) with its provider,
which must hold nothing by then: the runbook starts it only once a run
leaves no instance behind.
"""

import time

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova import utils as nova_utils
from oslo_log import log as logging

from ironic_multi._reservation import requirements
from ironic_multi._virt import host as host_mod
from ironic_multi._virt import migration
from ironic_multi._virt import takeover as takeover_mod
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# The in-tree driver's inventory of a node: one unit of its class.
_ONE = {'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
        'step_size': 1, 'allocation_ratio': 1.0}


def refusals(instance, reservation, allocations, group, providers):
    """Why ``instance`` cannot go back to the in-tree driver; empty if none.

    :param reservation: its node's reservation, or None.
    :param allocations: ``{provider: {resource class: units}}``.
    :param providers: the providers its allocation may be on: this
        service's, and its node's (a run that stopped half way).
    """
    reasons = []
    if instance.task_state:
        reasons.append('a task is under way (%s)' % instance.task_state)
    if instance.vm_state not in migration.MOVABLE:
        reasons.append('the server is %s; only %s servers move'
                       % (instance.vm_state, ' or '.join(migration.MOVABLE)))
    if reservation is None or reservation.node_uuid is None:
        reasons.append('no Ironic node holds the instance')
        return reasons
    if reservation.group not in (None, group):
        reasons.append('node %s carries the mark of group %s'
                       % (reservation.node_uuid, reservation.group))
    wanted = {requirements.normalize_resource_class(
        reservation.resource_class or ''): 1}
    if (len(allocations) != 1 or not set(allocations) <= set(providers)
            or list(allocations.values()) != [wanted]):
        reasons.append('its allocation is %s, not %s against this service '
                       'or node %s' % (allocations or 'nothing', wanted,
                                       reservation.node_uuid))
    return reasons


class Rollback(object):
    """``migrate rollback`` as the service of ``takeover.host`` serves it.

    :param reserver: this service's Reserver (``lookup``, ``disown``,
        ``adopt``, ``group``).
    :param takeover: this service's :class:`~.takeover.Takeover`: its
        lock per host, its allocation moves, its look at Nova's services.
    :param on_change: called after a run that handed servers over (the
        driver recomputes its inventory).
    """

    def __init__(self, reserver, takeover, on_change=None):
        self._reserver = reserver
        self._takeover = takeover
        self._on_change = on_change
        self.host = takeover.host
        # This driver's compute node's provider on the host.
        self._provider = host_mod.compute_node_uuid(self.host)

    def serve(self, request):
        """The operator request ``migrate-rollback``; only its host answers.

        :raises RollbackRefused: the target is not a compute service of
            Nova, or is another of this driver's, or another run holds the
            group's lock of this host (a takeover, an apply, a rollback).
        """
        if request.get('host') != self.host:
            return None
        args = request.get('args') or {}
        target = args.get('to') or self.host
        dry_run = bool(args.get('dry_run'))
        context = nova_context.get_admin_context()
        survey = self._takeover.survey(context)
        if target not in survey.services:
            raise self._refused(target, 'Nova has no %s service on host %s'
                                % (takeover_mod.BINARY, target))
        if (target != self.host
                and self._takeover.drivers_host(context, target)):
            raise self._refused(target, 'it is a host of this driver')
        try:
            return self.roll_back(
                context, target, wait=takeover_mod.REQUEST_LOCK_WAIT,
                dry_run=dry_run)
        except exception.IronicMultiError:
            raise
        except Exception as e:
            # The operator gets an answer, not a timeout.
            LOG.exception('Handing the servers of %s to the in-tree driver '
                          'failed', self.host)
            raise self._refused(target, 'it failed: %s' % e)

    def _refused(self, target, reason):
        return exception.RollbackRefused(host=self.host, target=target,
                                         reason=reason)

    def roll_back(self, context, target, wait=0, dry_run=False):
        """Hand this host's instances to the in-tree driver on ``target``.

        Idempotent, and resumable after a stop at any step.

        :param dry_run: write nothing: say which instances would go and
            which would stay.
        :returns: ``{'host', 'to', 'dry_run', 'rolled_back': [uuid],
            'skipped': {uuid: reason}, 'remaining': instances left here,
            'seconds'}``.
        """
        started = time.monotonic()
        if dry_run:
            result = self._roll_back(context, target, None)
            result['seconds'] = round(time.monotonic() - started, 3)
            return result
        try:
            # The lock a takeover or an apply of this host's servers takes.
            lock = self._takeover.lock(
                self.host, wait, busy='another run moves its servers now (a '
                                      'takeover, an apply or a rollback)')
        except exception.TakeoverRefused as e:
            raise self._refused(target, 'the group\'s lock of the host: %s'
                                % e.kwargs.get('reason', e))
        try:
            result = self._roll_back(context, target, lock)
        finally:
            self._takeover.release(lock)
        result['seconds'] = round(time.monotonic() - started, 3)
        LOG.info('Host %(host)s handed %(count)d server(s) to the in-tree '
                 'driver on %(to)s in %(seconds).1f s; %(remaining)d left '
                 'here', {'host': self.host, 'count': len(
                     result['rolled_back']), 'to': target,
                     'seconds': result['seconds'],
                     'remaining': result['remaining']})
        for uuid, reason in sorted(result['skipped'].items()):
            LOG.warning('Instance %(instance)s stays on %(host)s: %(why)s',
                        {'instance': uuid, 'host': self.host, 'why': reason})
        if result['rolled_back'] and self._on_change is not None:
            self._on_change(result)
        return result

    def _roll_back(self, context, target, lock):
        """The run; a dry run without ``lock``."""
        result = {'host': self.host, 'to': target, 'dry_run': lock is None,
                  'rolled_back': [], 'skipped': {}}
        client = self._takeover.client()
        # On this driver's compute node (named after the host): those
        # handed back in place keep the host.
        instances = objects.InstanceList.get_by_host_and_node(
            context, self.host, self.host, expected_attrs=[])
        for instance in sorted(instances, key=lambda i: i.uuid):
            try:
                reservation = self._reserver.lookup(instance.uuid)
                current = client.get_allocs_for_consumer(context,
                                                         instance.uuid)
                node = getattr(reservation, 'node_uuid', None)
                reasons = refusals(
                    instance, reservation, migration.allocations_of(current),
                    self._reserver.group, (self._provider, node))
                if not reasons and lock is not None:
                    self._takeover.still_locked(self.host, lock)
                    self._roll_back_one(context, client, instance,
                                        reservation, current, target)
            except takeover_mod.INSTANCE_ERRORS as e:
                reasons = [takeover_mod.first_line(e)]
            if reasons:
                result['skipped'][instance.uuid] = '; '.join(reasons)
            else:
                result['rolled_back'].append(instance.uuid)
        result['remaining'] = (
            len(result['skipped']) if lock is None else
            len(objects.InstanceList.get_uuids_by_host_and_node(
                context, self.host, self.host)))
        return result

    def _roll_back_one(self, context, client, instance, reservation, current,
                       target):
        # The node first: it is the one step Ironic may refuse for good (an
        # allocation claims it), before anything else is written.  Nova's
        # instance last: a run finds what is left by it.
        node_uuid = reservation.node_uuid
        self._reserver.disown(reservation, target)
        try:
            compute_node = self._in_tree_compute_node(context, node_uuid,
                                                      target)
            self._in_tree_provider(context, client, node_uuid, instance.uuid,
                                   current)
            self._takeover.move_allocation(context, client, instance.uuid,
                                           current, self._provider, node_uuid)
            instance.host = target
            instance.node = node_uuid
            instance.compute_id = compute_node.id
            # A task started meanwhile makes Nova refuse: the instance
            # stays here, with its node and allocation.
            instance.save(expected_task_state=[None])
        except Exception:
            if self._takeover.in_nova_on(context, instance.uuid) != self.host:
                # The save landed (its answer was lost), or nobody can
                # tell: what moved stays, and a next run sees the rest.
                raise
            self._take_back(context, client, instance.uuid, node_uuid)
            raise
        LOG.info('Host %(host)s handed instance %(instance)s (node '
                 '%(node)s) to the in-tree driver on %(target)s',
                 {'host': self.host, 'instance': instance.uuid,
                  'node': node_uuid, 'target': target})

    def _take_back(self, context, client, consumer, node_uuid):
        """Undo a hand-over that did not reach Nova; logged.

        The node's provider goes again once it holds nothing: left with
        its inventory, the scheduler would pick it.
        """
        try:
            self._reserver.adopt(consumer)
            self._takeover.move_allocation(
                context, client, consumer,
                client.get_allocs_for_consumer(context, consumer),
                node_uuid, self._provider)
            if not client.get_allocations_for_resource_provider(
                    context, node_uuid).allocations:
                client.delete('/resource_providers/%s' % node_uuid,
                              global_request_id=context.global_id)
                client.invalidate_resource_provider(node_uuid)
        except takeover_mod.INSTANCE_ERRORS as e:
            LOG.error('Instance %(instance)s stays on %(host)s in Nova, but '
                      'its node or allocation could not be taken back '
                      '(%(error)s): run "ironic-multi-manage migrate '
                      'rollback" again', {'instance': consumer,
                                          'host': self.host,
                                          'error': takeover_mod.first_line(
                                              e)})

    @staticmethod
    def _in_tree_compute_node(context, node_uuid, target):
        """The in-tree compute node of ``node_uuid`` on ``target``.

        The one ``migrate apply`` removed comes back (as Nova's resource
        tracker brings a deleted one back), else a new one; the in-tree
        service fills in its resources when it starts.
        """
        with nova_utils.temporary_mutation(context, read_deleted='yes'):
            try:
                compute_node = objects.ComputeNode.get_by_uuid(context,
                                                               node_uuid)
            except nova_exception.ComputeHostNotFound:
                compute_node = None
            if compute_node is not None:
                if compute_node.deleted or compute_node.host != target:
                    compute_node.deleted = False
                    compute_node.deleted_at = None
                    compute_node.host = target
                    compute_node.save()
                return compute_node
        compute_node = objects.ComputeNode(
            context, uuid=node_uuid, host=target,
            hypervisor_hostname=node_uuid,
            hypervisor_type=host_mod.HYPERVISOR_TYPE, hypervisor_version=1,
            vcpus=0, vcpus_used=0, memory_mb=0, memory_mb_used=0,
            local_gb=0, local_gb_used=0, free_ram_mb=0, free_disk_gb=0,
            current_workload=0, running_vms=0, disk_available_least=0,
            cpu_info='', supported_hv_specs=[], cpu_allocation_ratio=1.0,
            ram_allocation_ratio=1.0, disk_allocation_ratio=1.0)
        compute_node.create()
        return compute_node

    @staticmethod
    def _in_tree_provider(context, client, node_uuid, consumer, current):
        """The node's provider: one unit of its class, no other consumer.

        :raises NodeCannot: it holds another consumer's allocation.
        """
        client._ensure_resource_provider(context, node_uuid, name=node_uuid)
        others = set(client.get_allocations_for_resource_provider(
            context, node_uuid).allocations) - {consumer}
        if others:
            raise exception.NodeCannot(
                node=node_uuid, action='go to the in-tree driver',
                reason='its resource provider holds the allocation of %s'
                       % ', '.join(sorted(others)))
        resources = set()
        for allocation in (current.get('allocations') or {}).values():
            resources.update(allocation['resources'])
        client.set_inventory_for_provider(
            context, node_uuid, {rc: dict(_ONE) for rc in sorted(resources)})
