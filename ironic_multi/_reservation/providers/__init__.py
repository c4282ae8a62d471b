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

"""Node providers, chosen by name through stevedore.

``ironic`` reserves and deploys real Ironic nodes; ``static`` hands over
pre-installed machines declared in a YAML file.  Out-of-tree providers
register a :class:`~.base.NodeProvider` subclass under the entry point
namespace :data:`NAMESPACE` and run the shipped contract suite,
:mod:`ironic_multi.testing.provider_contract`.
"""

from stevedore import driver as stevedore_driver

from ironic_multi import exception

NAMESPACE = 'ironic_multi.node_providers'


def load_provider(conf, name=None):
    """The node provider named ``name`` (by default from ``conf``)."""
    name = name or conf.ironic_multi.node_provider
    try:
        manager = stevedore_driver.DriverManager(
            NAMESPACE, name, invoke_on_load=True, invoke_args=(conf,))
    except stevedore_driver.NoMatches:
        known = stevedore_driver.ExtensionManager(NAMESPACE).names()
        raise exception.ProviderNotFound(name=name,
                                         known=', '.join(sorted(known)))
    return manager.driver
