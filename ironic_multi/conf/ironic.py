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
Nova's ``[ironic]`` group, so an existing nova.conf keeps working.
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
        help='How many times a request is retried when Ironic is '
             'unavailable (connection error, timeout, HTTP 503). Conflicts '
             '(HTTP 409) are never retried blindly: a claim that conflicts '
             'moves on to the next candidate node.'),
    cfg.IntOpt(
        'api_retry_interval',
        default=2,
        min=0,
        help='Seconds to wait between two attempts when Ironic is '
             'unavailable.'),
    # Nova's own options, read as Nova's in-tree driver reads them.
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
    _utils.register_tolerant(conf, OPTS, GROUP.name)
    _utils.register_tolerant(
        conf, ks_loading.get_session_conf_options(), GROUP.name)
    _utils.register_tolerant(
        conf, ks_loading.get_auth_common_conf_options(), GROUP.name)
    _utils.register_tolerant(conf, _adapter_opts(), GROUP.name)
    conf.set_default('service_type', SERVICE_TYPE, group=GROUP.name)
    conf.set_default('valid_interfaces', ['internal', 'public'],
                     group=GROUP.name)


def list_opts():
    return [(GROUP, (OPTS
                     + ks_loading.get_session_conf_options()
                     + ks_loading.get_auth_common_conf_options()
                     + ks_loading.get_auth_plugin_conf_options('v3password')
                     + _adapter_opts()))]
