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

"""ironic-multi: Nova on large Ironic clouds, nodes reserved at spawn time.

The public surface is what this module exports; every other module is an
implementation detail, except :mod:`ironic_multi.exception`,
:mod:`ironic_multi.conf` (the options), :mod:`ironic_multi.testing` (test
support) and the virt driver, which Nova loads as
``compute_driver = ironic_multi.IronicMultiDriver``.
"""

import pbr.version

from ironic_multi.reservation.lifecycle import PowerState
from ironic_multi.reservation.lifecycle import Reservation
from ironic_multi.reservation.lifecycle import State
from ironic_multi.reservation.providers.base import Deployment
from ironic_multi.reservation.providers.base import Feature
from ironic_multi.reservation.providers.base import NodeHealth
from ironic_multi.reservation.providers.base import NodeProvider
from ironic_multi.reservation.providers.base import PowerAction
from ironic_multi.reservation.providers import load_provider
from ironic_multi.reservation.requirements import Requirements
from ironic_multi.reservation.reserver import Reserver

__version__ = pbr.version.VersionInfo('ironic-multi').version_string()

__all__ = ['Deployment', 'Feature', 'NodeHealth', 'NodeProvider',
           'PowerAction', 'PowerState', 'Requirements', 'Reservation',
           'Reserver', 'State', 'load_provider', '__version__']
