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

"""The public surface: what out-of-tree providers may import."""

import inspect

import ironic_multi
from ironic_multi._reservation.providers import base


def test_every_public_name_resolves():
    for name in ironic_multi.__all__:
        assert getattr(ironic_multi, name) is not None, name


def test_public_names_come_from_private_modules():
    for name, module in ironic_multi._PUBLIC.items():
        assert module.startswith('ironic_multi._'), name


def test_provider_interface_types_are_public():
    # A provider subclasses NodeProvider and builds these types; it must
    # not need a private module for any of them.
    for name, obj in vars(base).items():
        if inspect.isclass(obj) and obj.__module__ == base.__name__:
            assert name in ironic_multi.__all__, name
            assert getattr(ironic_multi, name) is obj
