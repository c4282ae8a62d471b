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

"""What bare metal through ironic-multi cannot do.

Each method raises NotImplementedError with a message, which the compute
manager turns into a clean "not supported" answer (or a failed operation)
instead of a half-done one.  Live migration, resize and evacuation are
also refused up front by the driver's capabilities.
"""


def _unsupported(what):
    raise NotImplementedError(
        '%s is not supported for bare metal instances (ironic-multi)' % what)


class UnsupportedMixin(object):
    """ComputeDriver methods that bare metal cannot implement."""

    def attach_volume(self, context, connection_info, instance, mountpoint,
                      disk_bus=None, device_type=None, encryption=None):
        _unsupported('Attaching a volume')

    def detach_volume(self, context, connection_info, instance, mountpoint,
                      encryption=None):
        _unsupported('Detaching a volume')

    def swap_volume(self, context, old_connection_info, new_connection_info,
                    instance, mountpoint, resize_to):
        _unsupported('Swapping a volume')

    def extend_volume(self, context, connection_info, instance,
                      requested_size):
        _unsupported('Extending a volume')

    def snapshot(self, context, instance, image_id, update_task_state):
        _unsupported('Snapshot')

    def migrate_disk_and_power_off(self, context, instance, dest, flavor,
                                   network_info, block_device_info=None,
                                   timeout=0, retry_interval=0):
        _unsupported('Resize and cold migration')

    def live_migration(self, context, instance, dest, post_method,
                       recover_method, block_migration=False,
                       migrate_data=None):
        _unsupported('Live migration')

    def check_can_live_migrate_destination(self, context, instance,
                                           src_compute_info,
                                           dst_compute_info,
                                           block_migration=False,
                                           disk_over_commit=False):
        _unsupported('Live migration')

    def pause(self, instance):
        _unsupported('Pause')

    def suspend(self, context, instance):
        _unsupported('Suspend')

    def set_admin_password(self, instance, new_pass):
        _unsupported('Setting the admin password')
