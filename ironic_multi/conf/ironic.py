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

"""The ``[ironic]`` group: how to reach the Bare Metal API.

Authentication, session and endpoint options come from keystoneauth1, as in
Nova's ``[ironic]`` group, so an existing nova.conf keeps working; so do
the options of Nova's in-tree driver (:mod:`.compat` says what each means
here).
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from ironic_multi.conf import _utils

SERVICE_TYPE = 'baremetal'


def group():
    """A new ``[ironic]`` group object (see ``groups.ironic_multi``)."""
    return cfg.OptGroup(
        'ironic',
        title='Ironic (Bare Metal) API access',
        help='How ironic-multi reaches the Ironic API. The authentication, '
             'session and endpoint options are those of keystoneauth1; with '
             '``auth_type = none`` and ``endpoint_override`` an Ironic in '
             '``noauth`` mode is used directly.')


GROUP = group()

OPTS = [
    cfg.IntOpt(
        'api_max_retries',
        default=60,
        min=0,
        help='As in Nova\'s in-tree Ironic driver: how many times destroy '
             'reads the state of a node it tears down before it gives up, '
             '``api_retry_interval`` apart. When set, '
             '``[ironic_multi] unprovision_timeout`` defaults to '
             '(api_max_retries + 1) * api_retry_interval seconds; setting '
             'both to other bounds is refused at start. Retries of an '
             'unavailable Ironic are ``connect_retries`` and '
             '``status_code_retries``.'),
    cfg.IntOpt(
        'api_retry_interval',
        default=2,
        min=0,
        help='As in Nova\'s in-tree Ironic driver: seconds between two '
             'reads of a node\'s state while waiting for a deploy, tear '
             'down or power change. When set, it is the default of '
             '``[ironic_multi] state_poll_interval`` (which must be at '
             'least 0.01 s); setting both to different values is refused '
             'at start.'),
]

# The options of Nova's in-tree driver that only it declares.  Inside
# nova-compute, Nova's definitions come first and are kept; the operator
# CLI reads the same nova.conf with these.
IN_TREE_OPTS = [
    cfg.StrOpt(
        'conductor_group',
        deprecated_name='partition_key',
        default=None,
        max_length=255,
        regex=r'^[a-zA-Z0-9_.-]*$',
        help='As in Nova\'s in-tree Ironic driver: only nodes of this Ironic '
             'conductor group (case-insensitive; ``""`` is the default '
             'group) are reserved. The same as ``[ironic_multi] '
             'conductor_group``; setting both to different groups is '
             'refused at start.'),
    cfg.StrOpt(
        'shard',
        default=None,
        max_length=255,
        regex=r'^[a-zA-Z0-9_.-]+$',
        help='As in Nova\'s in-tree Ironic driver: only nodes with this '
             'shard key are reserved. The shard ring of the coordination '
             'group holds this key alone; every service of the group must '
             'set the same key (a service that finds a member serving '
             'other nodes refuses to start), and ``ironic-multi-manage '
             'shards assign`` is refused.'),
    cfg.ListOpt(
        'peer_list',
        default=[],
        help='As in Nova\'s in-tree Ironic driver, read only with '
             '``conductor_group`` set and ``shard`` unset: the hosts of '
             'the compute services that share the conductor group\'s '
             'nodes. Here the live services of ``[ironic_multi] '
             'coordination_group`` share them; a service refuses to start '
             'when the list does not name its host or a live service of '
             'its coordination group.'),
    cfg.IntOpt(
        'serial_console_state_timeout',
        default=10,
        min=0,
        help='Seconds to wait for a node\'s serial console to be enabled '
             'or disabled. 0: as long as [ironic_multi] power_timeout.'),
    cfg.IntOpt(
        'vnc_console_state_timeout',
        default=60,
        min=0,
        help='Seconds to wait for a node\'s graphical (VNC) console to be '
             'enabled. 0: as long as [ironic_multi] power_timeout.'),
]


def _adapter_opts():
    return ks_loading.get_adapter_conf_options(include_deprecated=False)


def register_opts(conf):
    conf.register_group(group())
    _utils.register_tolerant(conf, OPTS + IN_TREE_OPTS, GROUP.name)
    _utils.register_tolerant(
        conf, ks_loading.get_session_conf_options(), GROUP.name)
    _utils.register_tolerant(
        conf, ks_loading.get_auth_common_conf_options(), GROUP.name)
    _utils.register_tolerant(conf, _adapter_opts(), GROUP.name)
    conf.set_default('service_type', SERVICE_TYPE, group=GROUP.name)
    conf.set_default('valid_interfaces', ['internal', 'public'],
                     group=GROUP.name)


def list_opts():
    return [(GROUP, (OPTS + IN_TREE_OPTS
                     + ks_loading.get_session_conf_options()
                     + ks_loading.get_auth_common_conf_options()
                     + ks_loading.get_auth_plugin_conf_options('v3password')
                     + _adapter_opts()))]
