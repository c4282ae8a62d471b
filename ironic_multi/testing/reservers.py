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

"""Reservers against a test Ironic, each with options of its own."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from ironic_multi._reservation import reserver as reserver_mod
from ironic_multi import conf as im_conf


def make_conf(endpoint=None, ironic=None, **overrides):
    """A new ConfigOpts with every ironic-multi option registered.

    :param endpoint: a ``noauth`` Ironic to reach without Keystone.
    :param ironic: ``[ironic]`` options (keystoneauth ones included).
    :param overrides: ``[ironic_multi]`` options.
    """
    conf = cfg.ConfigOpts()
    conf([], project='ironic-multi', default_config_files=[])
    im_conf.register_opts(conf)
    ironic = dict(ironic or {})
    if endpoint is not None:
        ironic.setdefault('auth_type', 'none')
        ironic.setdefault('endpoint_override', endpoint)
    if ironic.get('auth_type'):
        # keystoneauth registers a plugin's options only when it loads
        # it: they must exist before they can be set.
        conf.register_opts(ks_loading.get_auth_plugin_conf_options(
            ironic['auth_type']), group='ironic')
    for name, value in ironic.items():
        conf.set_override(name, value, group='ironic')
    for name, value in overrides.items():
        conf.set_override(name, value, group='ironic_multi')
    return conf


def retry_options(retries=None, delay=None):
    """``[ironic]`` options: how an unavailable Ironic is retried.

    :param retries: retries of a connection failure and of a 503 alike.
    :param delay: seconds between them.
    """
    options = {}
    if retries is not None:
        options.update(connect_retries=retries, status_code_retries=retries)
    if delay is not None:
        options.update(connect_retry_delay=delay,
                       status_code_retry_delay=delay)
    return options


def build_reserver(endpoint, host, conf=None, **overrides):
    """An unstarted Reserver of ``host`` on the Ironic at ``endpoint``.

    :param conf: options to use as they are (see :func:`make_conf`);
        by default a new set, so that the reservers of one process share
        nothing.
    :param overrides: ``[ironic_multi]`` options of the new set, e.g.
        ``coordination_url`` or ``claim_timeout``.
    """
    if conf is None:
        conf = make_conf(endpoint, **overrides)
    return reserver_mod.Reserver(conf, host=host)
