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

"""IronicMultiDriver: one compute node per service, nodes reserved at spawn.

Nova sees one compute node per service (named after the host) whose
inventory is the capacity of the whole cluster.  The scheduler picks a
service; at spawn the service reserves a matching node through the
reservation layer, deploys it, and releases it on destroy.  This class only
maps Nova's calls onto the reservation layer and the modules that speak
Nova:

- ``host``: the compute node's name, stable UUID and resource dict;
- ``capacity``: inventory and traits reported to placement;
- ``inventory``: when they are computed and told to placement;
- ``metadata``: requirements and the deployment of an instance;
- ``instances``: this service's instances and their power states;
- ``errors``: our errors as the Nova exceptions the manager expects;
- ``takeover``: adopting the instances of a lost compute service;
- ``left_tasks``: tasks Nova left on an instance after their request
  failed;
- ``actions``: rescue, consoles and crash dumps, Nova's way;
- ``volumes``: boot from volume (the node held before Nova exports the
  volumes to it, its volume connector);
- ``unsupported``: what bare metal cannot do;
- ``startup``: refusing to start on a bad configuration.
"""

from nova import block_device
from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.scheduler.client import report
from nova.virt import driver as virt_driver
from nova.virt import hardware
from oslo_log import log as logging

from ironic_multi._reservation.providers import base
from ironic_multi._reservation import reserver as reserver_mod
from ironic_multi._virt import actions
from ironic_multi._virt import consumers
from ironic_multi._virt import diagnostics
from ironic_multi._virt import errors
from ironic_multi._virt import host as host_mod
from ironic_multi._virt import instances
from ironic_multi._virt import inventory
from ironic_multi._virt import left_tasks
from ironic_multi._virt import metadata
from ironic_multi._virt import migration
from ironic_multi._virt import rollback
from ironic_multi._virt import shutdown
from ironic_multi._virt import startup
from ironic_multi._virt import takeover
from ironic_multi._virt import unsupported
from ironic_multi._virt import volumes
from ironic_multi import conf
from ironic_multi import exception

LOG = logging.getLogger(__name__)
CONF = conf.CONF
# nova-compute imports this module after Nova registered its own options.
conf.register_opts(CONF)


class IronicMultiDriver(unsupported.UnsupportedMixin,
                        virt_driver.ComputeDriver):
    """Nova virt driver for large Ironic clouds."""

    capabilities = dict(
        virt_driver.ComputeDriver.capabilities,
        supports_image_type_ami=True,
        supports_image_type_qcow2=True,
        supports_image_type_raw=True,
        # What the default (Ironic) node provider serves; init_host keeps
        # only what the configured one does.
        **{name: True for name in actions.CAPABILITIES},
    )

    # One compute node per service, never moved to another service.
    rebalances_nodes = False

    def __init__(self, virtapi, read_only=False, reserver=None):
        super().__init__(virtapi)
        # Nova's test services share one CONF: remember our host now.
        self._host = CONF.host
        # nova-compute makes the driver as soon as nova-conductor answers,
        # before it registers or serves: the place to refuse a bad
        # configuration.
        self._refuse_bad(conf.check, CONF, host=self._host)
        self._reserver = reserver
        self._instances = None
        self._inventory_reporter = None
        self._takeover = None
        self._left_tasks = None
        # Whether the upgrade's ownership marks are done.
        self._owned = False

    # -- life cycle ---------------------------------------------------------

    def init_host(self, host):
        # What only shows once the reservation layer starts (the node
        # provider, the coordination backend, the other members).
        self._refuse_bad(self._init_host, host)

    @staticmethod
    def _refuse_bad(function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except startup.CONFIG_ERRORS as e:
            startup.refuse(e)

    def _init_host(self, host):
        self._host = host
        if self._reserver is None:
            # The member id of the coordination group is per host: Nova's
            # test services share one process.
            self._reserver = reserver_mod.Reserver(CONF, host=host)
        self._left_tasks = left_tasks.LeftTasks(
            host, lambda: self._reserver.membership.namesakes())
        # Nova serves no request here before init_host ends: the requests
        # unfinished now are not this process's.
        self._left_tasks.remember(nova_context.get_admin_context())
        self._reserver.set_consumers(consumers.instance_states,
                                     identity=consumers.identity())
        self._inventory_reporter = inventory.InventoryReporter(
            host, self._reserver,
            lambda: getattr(self.virtapi, 'reportclient', None))
        self._inventory_reporter.start()
        self._takeover = takeover.Takeover(
            self._reserver, host, CONF,
            # The compute manager's placement client, whose provider cache
            # the takeover keeps right.
            report_client=self._report_client,
            on_adopted=self._adopted,
            on_arriving=self._inventory_reporter.hold)
        self._reserver.add_request_handler('adopt', self._takeover.serve)
        self._reserver.add_request_handler('migrate-plan', migration.Migration(
            self._reserver, self._takeover, self._report_client, CONF).serve)
        self._reserver.add_request_handler('migrate-apply',
                                           self._takeover.serve_migration)
        self._reserver.add_request_handler(
            'migrate-rollback', rollback.Rollback(
                self._reserver, self._takeover,
                on_change=lambda result: (
                    self._inventory_reporter.refresh())).serve)
        if takeover.enabled(CONF):
            # As often as the pool refresh: a look at Nova's services
            # table per interval, well inside Nova's own service_down_time;
            # the operator's "instances adopt" is served sooner.
            self._reserver.add_periodic(
                'takeover', consumers.asking_nova(self._takeover.run),
                CONF.ironic_multi.pool_refresh_interval)
        # Nova leaves some tasks on an instance after their request
        # failed (a request queued for a restarted compute).
        self._reserver.add_periodic(
            'left tasks', consumers.asking_nova(self._end_left_tasks),
            CONF.ironic_multi.pool_refresh_interval)
        # Nodes claimed by a version without ownership marks get this
        # group's mark from the service that owns their instance: at
        # start, and at each refresh until Nova could be asked once.
        self._reserver.add_periodic('ownership marks', self._own_instances,
                                    CONF.ironic_multi.pool_refresh_interval)
        here = self._instances_here()
        self._reserver.start()
        shutdown.leave_when_stopping(self.virtapi, self._reserver.leave, host)
        self._own_instances(here)
        self._instances = instances.LocalInstances(self._reserver)
        # What the node provider cannot do, Nova must not offer.
        self.capabilities = dict(
            self.capabilities,
            **actions.capabilities(self._reserver.features))
        LOG.info('ironic-multi driver started on host %(host)s (compute '
                 'node %(uuid)s, %(provider)s node provider)',
                 {'host': host, 'uuid': host_mod.compute_node_uuid(host),
                  'provider': self._reserver.provider.name})

    def _report_client(self):
        """The compute manager's placement client, or Nova's singleton."""
        return (getattr(self.virtapi, 'reportclient', None)
                or report.report_client_singleton())

    def _end_left_tasks(self):
        self._left_tasks.end(nova_context.get_admin_context())

    def _adopted(self, result):
        """Adopted instances hold their nodes: none of them is a build."""
        self._inventory_reporter.hold(result['adopted'])
        self._inventory_reporter.refresh()

    def _instances_here(self):
        """The instances of this host in Nova, or None when Nova can't say.

        They hold nodes: an allocation that comes later is a build (told
        before the first placement read, which a build may beat).
        """
        try:
            here = consumers.host_instances(self._host)
        except Exception as e:
            LOG.warning('Cannot list the instances of this host (%s): the '
                        'allocations placement has at the first read are '
                        'taken to hold their nodes', e)
            return None
        self._inventory_reporter.hold(here)
        return here

    def _own_instances(self, here=None):
        if self._owned:
            return
        try:
            self._reserver.own(here if here is not None
                               else consumers.host_instances(self._host))
        except Exception as e:
            LOG.warning('Cannot mark the nodes of this host\'s instances as '
                        'this group\'s yet (%s); trying again at the next '
                        'refresh', e)
            return
        self._owned = True

    def cleanup_host(self, host):
        if self._reserver is not None:
            # Left the group when Nova's shutdown began, where Nova says
            # so (see shutdown.py); stopping leaves it otherwise.
            LOG.info('Host %s is stopping: out of the coordination group, '
                     'its shard keys move to the other members', host)
            self._reserver.stop()

    @property
    def reserver(self):
        """The Reserver of this service (None before init_host)."""
        return self._reserver

    @property
    def takeover(self):
        """The Takeover of this service (None before init_host)."""
        return self._takeover

    def _local(self):
        if self._instances is None:
            raise nova_exception.VirtDriverNotReady()
        return self._instances

    # -- the compute node -------------------------------------------------

    def get_available_nodes(self, refresh=False):
        return [self._host]

    def get_nodenames_by_uuid(self, refresh=False):
        return {host_mod.compute_node_uuid(self._host): self._host}

    def node_is_available(self, nodename):
        return nodename == self._host

    def get_available_resource(self, nodename):
        return host_mod.available_resource(self._host)

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        if self._inventory_reporter is None:
            raise nova_exception.VirtDriverNotReady()
        self._inventory_reporter.update_provider_tree(provider_tree, nodename)

    def set_host_enabled(self, enabled):
        # Nova calls it when an operator enables or disables the service
        # (after it set the COMPUTE_STATUS_DISABLED trait).
        if self._inventory_reporter is None:
            raise nova_exception.VirtDriverNotReady()
        self._inventory_reporter.offering(enabled)
        return 'enabled' if enabled else 'disabled'

    # -- instances ----------------------------------------------------------

    def list_instance_uuids(self):
        return sorted(self._local().list())

    def list_instances(self):
        uuids = self.list_instance_uuids()
        if not uuids:
            return []
        context = nova_context.get_admin_context(read_deleted='yes')
        found = objects.InstanceList.get_by_filters(
            context, {'uuid': uuids}, expected_attrs=[])
        return [inst.name for inst in found]

    def get_num_instances(self):
        return len(self.list_instance_uuids())

    def instance_exists(self, instance):
        return self._reserver.lookup(instance.uuid) is not None

    def get_info(self, instance, use_cache=True):
        return hardware.InstanceInfo(state=self._local().power_state(
            instance.uuid, use_cache=use_cache))

    def get_instance_diagnostics(self, instance):
        return diagnostics.instance_diagnostics(*self._node_and_state(
            instance))

    def get_diagnostics(self, instance):
        return diagnostics.diagnostics(*self._node_and_state(instance))

    def _node_and_state(self, instance):
        try:
            node = self._reserver.node(instance.uuid)
        except exception.ReservationNotFound:
            raise nova_exception.InstanceNotFound(instance_id=instance.uuid)
        return node, self._local().power_state(instance.uuid)

    # -- spawn and destroy ----------------------------------------------------

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        reqs = self._requirements(instance, image_meta)
        from_volume = block_device.get_root_bdm(
            virt_driver.block_device_info_get_mapping(
                block_device_info)) is not None
        deployment = metadata.deployment_for(
            instance, image_meta, reqs, self._host, network_info,
            admin_password, injected_files,
            volume_targets=(metadata.volume_targets(block_device_info)
                            if from_volume else ()))
        if from_volume:
            # Held since prepare_networks_before_block_device_mapping: the
            # node the volumes were exported to.
            reservation = self._reserver.lookup(instance.uuid)
            if reservation is None or reservation.node_uuid is None:
                raise errors.reschedule(instance.uuid)(
                    'the node the volumes were exported to is no longer '
                    'reserved')
        else:
            reservation = self._claim(instance, reqs, deployment)
        if instance.flavor.ephemeral_gb:
            # The metadata service names it (ephemeral0), so that
            # cloud-init mounts the ephemeral partition; as in-tree.
            instance.default_ephemeral_device = '/dev/sda1'
            instance.save()
        try:
            self._reserver.deploy(reservation, deployment,
                                  should_stop=lambda: _check_alive(instance))
        except exception.TeardownFailed as e:
            # The node may still hold the instance: keep it associated
            # (deleting the instance tears it down) and do not reschedule.
            raise errors.build_abort(instance.uuid)(str(e))
        except (exception.NotSupported, exception.InvalidImage) as e:
            # Every host has the same provider, and Ironic would refuse the
            # image anywhere: rescheduling cannot help.
            self._release(instance)
            raise errors.build_abort(instance.uuid)(str(e))
        except (nova_exception.InstanceNotFound,
                nova_exception.UnexpectedDeletingTaskStateError):
            # Deleted during the build: nothing to reschedule.
            self._release(instance)
            raise
        except Exception as e:
            self._release(instance)
            raise errors.reschedule(instance.uuid)(
                'deploy of node %s failed: %s' % (reservation.node_uuid, e))
        if not power_on:
            # A failure here reaches Nova, which destroys and reschedules.
            self.power_off(instance)

    def _requirements(self, instance, image_meta):
        # A bad spec is the same on every host: fail now, naming the key.
        with errors.translated(errors.build_abort(instance.uuid),
                               instance.uuid):
            return metadata.requirements_for(instance, image_meta)

    def _claim(self, instance, reqs, deployment=None):
        try:
            reservation = self._reserver.claim(instance.uuid, reqs,
                                               deployment)
        except exception.NoNodeAvailable as e:
            self._allocation_leaves(instance)
            # The manager reschedules on this, with "Insufficient compute
            # resources" as the reason.
            raise nova_exception.ComputeResourcesUnavailable(reason=str(e))
        except exception.IronicMultiError as e:
            self._release(instance)
            raise errors.reschedule(instance.uuid)(
                'no node could be claimed: %s' % e)
        LOG.debug('Reserved node %(node)s (%(reqs)s)',
                  {'node': reservation.node_uuid, 'reqs': reqs},
                  instance=instance)
        return reservation

    def _release(self, instance):
        """Release the reservation; failing that, abort the build.

        A reschedule with a reservation left behind could deploy the
        instance on two hosts' nodes.
        """
        with errors.translated(errors.build_abort(instance.uuid),
                               instance.uuid):
            self._reserver.release(instance.uuid)
        self._allocation_leaves(instance)

    def _allocation_leaves(self, instance):
        self._inventory_reporter.allocation_leaves(instance)

    def destroy(self, context, instance, network_info, block_device_info=None,
                destroy_disks=True, destroy_secrets=True):
        with errors.translated(errors.termination_failure, instance.uuid):
            if self._reserver.teardown(
                    instance.uuid, metadata.vif_ids(network_info)) is None:
                LOG.info('No node holds the instance', instance=instance)
            self._reserver.release(instance.uuid)
        self._allocation_leaves(instance)

    # -- boot from volume ---------------------------------------------------

    def prepare_networks_before_block_device_mapping(self, instance,
                                                     network_info):
        # Nova asks for the node's volume connector next, to export the
        # volumes to it: an instance that boots from a volume holds its
        # node from here (see volumes.py).
        if not volumes.boots_from_volume(instance):
            return
        if base.Feature.VOLUME_BOOT not in self._reserver.features:
            # Nova puts this reason in the instance's fault.
            raise nova_exception.InstanceUnacceptable(
                instance_id=instance.uuid,
                reason='node provider %s cannot boot a node from a volume'
                       % self._reserver.provider.name)
        self._claim(instance, self._requirements(
            instance, objects.ImageMeta.from_instance(instance)))

    def get_volume_connector(self, instance):
        with errors.translated(nova_exception.NovaException, instance.uuid):
            try:
                node, connectors = self._reserver.volume_connectors(
                    instance.uuid)
            except exception.ReservationNotFound:
                # Only Nova's old-style detach asks after the node went;
                # the volume service needs no more than the host then.
                LOG.info('No node holds the instance: a volume connector '
                         'without the node\'s', instance=instance)
                return volumes.connector(instance, None, ())
        return volumes.connector(instance, node, connectors)

    def failed_spawn_cleanup(self, instance):
        # Block device preparation failed before spawn: normally nothing
        # is reserved yet, but make sure.
        try:
            self.destroy(None, instance, None)
        except nova_exception.NovaException as e:
            LOG.warning('Cleaning up after the failed spawn failed: %s', e,
                        instance=instance)

    def rebuild(self, context, instance, image_meta, injected_files,
                admin_password, allocations, bdms, detach_block_devices,
                attach_block_devices, network_info=None, evacuate=False,
                block_device_info=None, preserve_ephemeral=False,
                accel_uuids=None, reimage_boot_volume=False):
        # From microversion 2.93 Nova's API asks for reimage_boot_volume on
        # every rebuild, and the compute manager acts on it only for a
        # volume-backed server: only such a server is refused here.
        if reimage_boot_volume and volumes.root_is_volume(bdms):
            raise nova_exception.NovaException(
                'Re-imaging a boot volume is not supported for bare metal')
        instance.task_state = task_states.REBUILD_SPAWNING
        instance.save(expected_task_state=[task_states.REBUILDING])
        # A node that boots from its volumes keeps them (and its volume
        # targets): no image is written, as in-tree.
        targets = (metadata.volume_targets(block_device_info)
                   if volumes.root_is_volume(bdms) else ())
        with errors.translated(errors.deploy_failure, instance.uuid):
            reqs = metadata.requirements_for(instance, image_meta)
            self._reserver.rebuild(instance.uuid, metadata.deployment_for(
                instance, image_meta, reqs, self._host, network_info,
                admin_password, injected_files,
                preserve_ephemeral=preserve_ephemeral,
                volume_targets=targets))

    # -- power --------------------------------------------------------------

    def _power(self, instance, action, timeout=None):
        with errors.translated(errors.power_failure(action), instance.uuid):
            self._reserver.power(instance.uuid, action, timeout)

    def reboot(self, context, instance, network_info, reboot_type,
               block_device_info=None, bad_volumes_callback=None,
               accel_info=None, share_info=None):
        self._power(instance, base.PowerAction.SOFT_REBOOT
                    if reboot_type == 'SOFT' else base.PowerAction.REBOOT)

    def power_off(self, instance, timeout=0, retry_interval=0):
        if instance.task_state == task_states.RESCUING:
            # Nova powers the instance off before it rescues it: a rescue
            # that cannot happen is refused before anything changes.
            actions.check_rescue(self._reserver, instance)
        # With a timeout, Nova asks for a clean shutdown first.
        if timeout:
            self._power(instance, base.PowerAction.SOFT_OFF, timeout)
        else:
            self._power(instance, base.PowerAction.OFF)

    def power_on(self, context, instance, network_info,
                 block_device_info=None, accel_info=None, share_info=None):
        self._power(instance, base.PowerAction.ON)

    def power_update_event(self, instance, target_power_state):
        instances.apply_power_event(instance, target_power_state)

    # -- rescue, consoles, crash dump -----------------------------------------

    def rescue(self, context, instance, network_info, image_meta,
               rescue_password, block_device_info, share_info):
        # The rescue image is the node's rescue ramdisk, Ironic's own.
        actions.rescue(self._reserver, instance, rescue_password)

    def unrescue(self, context, instance):
        actions.unrescue(self._reserver, instance)

    def get_serial_console(self, context, instance):
        return actions.serial_console(self._reserver, instance)

    def get_vnc_console(self, context, instance):
        return actions.vnc_console(self._reserver, instance)

    def trigger_crash_dump(self, instance):
        actions.crash_dump(self._reserver, instance)

    # -- networking ---------------------------------------------------------

    def plug_vifs(self, instance, network_info):
        # VIFs are attached as part of the node's life cycle (spawn,
        # attach_interface); re-attaching every VIF of every instance at
        # each service start would only load the provider.
        LOG.debug('plug_vifs: VIFs are attached at spawn',
                  instance=instance)

    def unplug_vifs(self, instance, network_info):
        with errors.translated(errors.vif_failure, instance.uuid):
            for vif_id in metadata.vif_ids(network_info):
                self._reserver.detach_vif(instance.uuid, vif_id)

    def attach_interface(self, context, instance, image_meta, vif):
        with errors.translated(errors.vif_failure, instance.uuid):
            self._reserver.attach_vif(instance.uuid, vif['id'])

    def detach_interface(self, context, instance, vif):
        self.unplug_vifs(instance, [vif])

    def network_binding_host_id(self, context, instance):
        # Ironic binds the ports itself once it knows the switch ports.
        return None

    def manages_network_binding_host_id(self):
        return True


def _check_alive(instance):
    """Stop waiting for a deploy whose instance is being deleted."""
    instance.refresh()
    if (instance.task_state == task_states.DELETING
            or instance.vm_state == vm_states.DELETED):
        raise nova_exception.UnexpectedDeletingTaskStateError(
            instance_uuid=instance.uuid, expected='not deleting',
            actual=instance.task_state or instance.vm_state)
