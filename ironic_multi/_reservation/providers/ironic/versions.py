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

"""Bare Metal API microversions: the minimum and what each feature needs."""

MINIMUM = (1, 46)
"""Node traits in listings, ``fields``, ``conductor_group``."""

FEATURES = {
    'owner': (1, 50),
    'allocations': (1, 52),
    'lessee': (1, 65),
    'shards': (1, 82),
}
"""Microversion each optional feature needs; older servers fall back."""

MAXIMUM = max(FEATURES.values())
"""Never ask for more: newer versions may change semantics we rely on."""


def parse(text):
    """Parse ``'1.82'`` into ``(1, 82)``."""
    major, minor = text.split('.')
    return int(major), int(minor)


def format(version):
    return '%d.%d' % version
