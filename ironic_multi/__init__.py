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

The public surface is what this module exports, with
:mod:`ironic_multi.exception`, :mod:`ironic_multi.conf` (the options),
:mod:`ironic_multi.testing` (test support), :mod:`ironic_multi.cmd` (the
console scripts) and the virt driver, which Nova loads as
``compute_driver = ironic_multi.IronicMultiDriver``.  Every other module
is private, its name led by an underscore: the reservation layer
(``ironic_multi._reservation``), the driver's modules
(``ironic_multi._virt``).  Out-of-tree node providers import
:class:`NodeProvider` and its types from here.
"""

import importlib

import pbr.version

__version__ = pbr.version.VersionInfo('ironic-multi').version_string()

# name: module.  Imported on first use (PEP 562): Nova chooses eventlet or
# native threads once, before anything imports eventlet, and the
# reservation layer pulls it in (through tooz and futurist).  Importing
# ironic_multi.conf or ironic_multi.cmd must not decide that for Nova.
_PUBLIC = {
    'Console': 'ironic_multi._reservation.providers.base',
    'ConsoleKind': 'ironic_multi._reservation.providers.base',
    'Deployment': 'ironic_multi._reservation.providers.base',
    'Feature': 'ironic_multi._reservation.providers.base',
    'NodeHealth': 'ironic_multi._reservation.providers.base',
    'NodeNetwork': 'ironic_multi._reservation.providers.base',
    'NodePort': 'ironic_multi._reservation.providers.base',
    'NodePortGroup': 'ironic_multi._reservation.providers.base',
    'NodeProvider': 'ironic_multi._reservation.providers.base',
    'PowerAction': 'ironic_multi._reservation.providers.base',
    'PowerState': 'ironic_multi._reservation.lifecycle',
    'Requirements': 'ironic_multi._reservation.requirements',
    'Reservation': 'ironic_multi._reservation.lifecycle',
    'Reserver': 'ironic_multi._reservation.reserver',
    'State': 'ironic_multi._reservation.lifecycle',
    'TroubledNode': 'ironic_multi._reservation.providers.base',
    'VolumeConnector': 'ironic_multi._reservation.providers.base',
    'VolumeTarget': 'ironic_multi._reservation.providers.base',
    'load_provider': 'ironic_multi._reservation.providers',
}

__all__ = sorted(_PUBLIC) + ['__version__']


def __getattr__(name):
    try:
        module = _PUBLIC[name]
    except KeyError:
        raise AttributeError('module %r has no attribute %r'
                             % (__name__, name)) from None
    return getattr(importlib.import_module(module), name)


def __dir__():
    return __all__
