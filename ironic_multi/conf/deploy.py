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

"""Bounds of what is done to a reserved node: deploy, tear down, power."""

from oslo_config import cfg

OPTS = [
    cfg.IntOpt(
        'deploy_timeout',
        default=3600,
        min=1,
        help='Seconds a deploy may take before the spawn fails, the node '
             'is released and Nova reschedules the instance.'),
    cfg.IntOpt(
        'unprovision_timeout',
        default=3600,
        min=1,
        help='Seconds the teardown of a node may take on destroy.'),
    cfg.IntOpt(
        'power_timeout',
        default=300,
        min=1,
        help='Seconds a power change (power on, power off, reboot) may '
             'take before the operation fails.'),
    cfg.FloatOpt(
        'state_poll_interval',
        default=2.0,
        min=0.01,
        help='Seconds between reads of a node\'s state while waiting for '
             'a deploy, teardown or power change.'),
]
