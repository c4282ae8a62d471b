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

from unittest import mock
import uuid

from nova import objects
import oslo_messaging
import pytest

from ironic_multi._virt import driver
from ironic_multi._virt import host
from ironic_multi import exception
from tests.unit.virt import fakes

# What the resource tracker refuses to start without.
_REQUIRED = ('vcpus', 'memory_mb', 'local_gb', 'cpu_info', 'vcpus_used',
             'memory_mb_used', 'local_gb_used', 'numa_topology')


def test_compute_node_uuid_is_stable_and_per_host():
    first = host.compute_node_uuid('compute-1')
    assert first == host.compute_node_uuid('compute-1')
    assert first != host.compute_node_uuid('compute-2')
    assert uuid.UUID(first).version == 5
    # Changing the namespace would orphan every compute node: pin it.
    assert first == str(uuid.uuid5(
        uuid.UUID('5f0c9a52-3b1e-4d59-9a43-0e6a1c9d7b21'), 'compute-1'))


def test_one_compute_node_named_after_the_host(reserver):
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    drv.init_host(fakes.HOST)
    assert reserver.started
    assert drv.get_available_nodes() == [fakes.HOST]
    assert drv.get_available_nodes(refresh=True) == [fakes.HOST]
    expected = host.compute_node_uuid(fakes.HOST)
    assert drv.get_nodenames_by_uuid() == {expected: fakes.HOST}
    assert drv.node_is_available(fakes.HOST)
    assert not drv.node_is_available('compute-2')
    assert not drv.rebalances_nodes
    assert not drv.is_node_deleted(fakes.HOST)

    resources = drv.get_available_resource(fakes.HOST)
    assert resources['uuid'] == expected
    assert resources['hypervisor_hostname'] == fakes.HOST
    assert all(key in resources for key in _REQUIRED)
    assert resources['vcpus'] == resources['memory_mb'] == 0

    # A restarted service reports the same node.
    again = driver.IronicMultiDriver(None, reserver=fakes.FakeReserver())
    again.init_host(fakes.HOST)
    assert again.get_nodenames_by_uuid() == {expected: fakes.HOST}
    drv.cleanup_host(fakes.HOST)
    assert reserver.stopped


def test_capabilities_refuse_what_bare_metal_cannot_do():
    caps = driver.IronicMultiDriver.capabilities
    assert not caps['supports_evacuate']
    assert not caps['supports_migrate_to_same_host']
    assert not caps['supports_multiattach']
    assert caps['supports_attach_interface']
    assert caps['supports_image_type_raw']
    assert caps['supports_image_type_qcow2']


def test_init_host_builds_the_reserver_of_the_host():
    made = fakes.FakeReserver(host='compute-7')
    with mock.patch.object(driver.reserver_mod, 'Reserver',
                           return_value=made) as build:
        drv = driver.IronicMultiDriver(None)
        drv.init_host('compute-7')
    build.assert_called_once_with(driver.CONF, host='compute-7')
    assert drv.reserver is made
    assert made.started
    assert drv.get_available_nodes() == ['compute-7']


def test_cleanup_before_init_host_is_harmless():
    driver.IronicMultiDriver(None).cleanup_host(fakes.HOST)


@pytest.mark.parametrize('name, nova_call', [
    ('left tasks', (objects.InstanceList, 'get_by_filters')),
    ('takeover', (objects.ServiceList, 'get_by_binary')),
])
def test_nova_not_answering_a_periodic_is_a_typed_error(
        conf, reserver, monkeypatch, name, nova_call):
    # Nova's objects ask its conductor over the message bus: a broker
    # restart times the call out.  The periodic retries; no bug to log.
    conf.config(takeover_forced_down=True, group='ironic_multi')
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    drv.init_host(fakes.HOST)
    periodic = {n: f for n, f, _interval in reserver.periodics}[name]

    def times_out(*args, **kwargs):
        raise oslo_messaging.MessagingTimeout('Timed out waiting for a '
                                              'reply to message ID 1c9e')

    monkeypatch.setattr(*nova_call, times_out)
    with pytest.raises(exception.NovaUnavailable) as raised:
        periodic()
    assert 'Timed out waiting for a reply to message ID 1c9e' in str(
        raised.value)
    assert isinstance(raised.value.__cause__,
                      oslo_messaging.MessagingTimeout)
