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

from oslo_config import fixture as config_fixture
import pytest

from ironic_multi._virt import capacity
from ironic_multi._virt import consumers
from ironic_multi._virt import driver
from ironic_multi._virt import left_tasks
from ironic_multi.conf import CONF
from tests.unit.virt import fakes


@pytest.fixture
def conf():
    """The global CONF (Nova's options and ours), restored afterwards."""
    fixture = config_fixture.Config(CONF)
    fixture.setUp()
    yield fixture
    fixture.cleanUp()


@pytest.fixture
def reserver():
    return fakes.FakeReserver()


@pytest.fixture(autouse=True)
def no_nova_database(monkeypatch):
    """Nova's database is not there: this host has no instances in it."""
    monkeypatch.setattr(capacity, 'flavors_on_host', lambda host: [])
    monkeypatch.setattr(consumers, 'host_instances', lambda host: [])
    monkeypatch.setattr(left_tasks, 'unfinished_events',
                        lambda context, host: frozenset())


@pytest.fixture
def drv(reserver):
    """A driver started on fakes.HOST; the calls recorded start after."""
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    drv.init_host(fakes.HOST)
    assert reserver.started
    del reserver.calls[:]
    return drv
