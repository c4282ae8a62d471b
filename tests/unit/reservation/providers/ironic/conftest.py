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

"""The Ironic provider over a mocked IronicAPI.

Each module gives its own ``conf`` (the timeouts it tests); a module may
give its own ``api`` too, with the answers its tests share.
"""

from unittest import mock

import pytest

from ironic_multi._reservation.providers.ironic import client
from ironic_multi._reservation.providers.ironic import provider as provider_mod


@pytest.fixture
def api():
    return mock.create_autospec(client.IronicAPI, instance=True)


@pytest.fixture
def provider(conf, api):
    return provider_mod.IronicProvider(conf, api=api)
