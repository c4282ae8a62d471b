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

"""Options of the ``static`` node provider."""

from oslo_config import cfg

_HOOK_HELP = (' It is a command line, run without a shell; the action and '
              'the node UUID are appended as its last two arguments, and '
              'IRONIC_MULTI_NODE_UUID, IRONIC_MULTI_NODE_NAME, '
              'IRONIC_MULTI_INSTANCE_UUID and IRONIC_MULTI_ACTION are in '
              'its environment. With the service\'s PATH and LANG, that is '
              'its whole environment: nothing else of the service\'s, whose '
              'credentials it must not see, is passed on. Its output is '
              'logged at DEBUG only. A non-zero exit or a timeout fails the '
              'operation.')

OPTS = [
    cfg.StrOpt(
        'static_inventory',
        default='/etc/ironic-multi/static-nodes.yaml',
        help='YAML file declaring the nodes of the ``static`` node '
             'provider. Its reservations are stored next to it, in a file '
             'locked for every change.'),
    cfg.StrOpt(
        'static_handover_command',
        help='Command run when a static node is handed over to an '
             'instance (spawn); the action is ``handover``, and '
             'IRONIC_MULTI_HOST and IRONIC_MULTI_IMAGE_SOURCE are set too. '
             'Unset: hand-over only records the instance.' + _HOOK_HELP),
    cfg.StrOpt(
        'static_return_command',
        help='Command run when a static node is returned (destroy); the '
             'action is ``return``. Unset: return only drops the '
             'record.' + _HOOK_HELP),
    cfg.StrOpt(
        'static_power_command',
        help='Command run for power actions on a static node; the action '
             'is ``power on``, ``power off`` or ``reboot``. Unset: power '
             'actions are not supported.' + _HOOK_HELP),
    cfg.StrOpt(
        'static_crash_dump_command',
        help='Command run to send a static node an NMI, on which its OS '
             'writes a crash dump (``openstack server dump create``; '
             '``ipmitool chassis power diag`` does it over IPMI); the '
             'action is ``crash dump``. Unset: crash dumps are not '
             'supported.' + _HOOK_HELP),
    cfg.IntOpt(
        'static_command_timeout',
        default=300,
        min=1,
        help='Seconds a static provider command may run before it is '
             'killed, with everything it started, and the operation '
             'fails.'),
]
