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

from oslo_config import cfg


def ironic_multi():
    """A new ``[ironic_multi]`` group object.

    Each ConfigOpts needs a group object of its own: register_group()
    copies it shallowly, so overrides set on one ConfigOpts would show in
    every other one that shares the object.
    """
    return cfg.OptGroup(
        'ironic_multi',
        title='ironic-multi',
        help='Options of the ironic-multi reservation layer, node providers '
             'and virt driver.')


IRONIC_MULTI = ironic_multi()
