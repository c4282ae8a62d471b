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

"""The Ironic node provider.

``client`` (API access), ``versions`` (microversions), ``states`` (Ironic's
vocabulary), ``pool`` (the ready pool), ``claims`` (the atomic claim),
``deploy``, ``power`` and ``waiters``; :class:`IronicProvider` puts them
together.
"""

from ironic_multi._reservation.providers.ironic.provider import IronicProvider

__all__ = ['IronicProvider']
