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

from oslo_config import cfg
import oslo_messaging

from ironic_multi._reservation import housekeeper
from ironic_multi._virt import consumers
from tests.unit.virt import fakes


def test_deleted_instances_are_gone_and_unknown_ones_left_out():
    alive = fakes.instance(uuid='a', vm_state='active', deleted=False)
    deleted = fakes.instance(uuid='d', vm_state='deleted', deleted=True)
    with mock.patch('nova.objects.InstanceList.get_by_filters',
                    return_value=[alive, deleted]) as query:
        states = consumers.instance_states(['d', 'a', 'unknown', 'a'])
    assert states == {'a': 'active', 'd': housekeeper.GONE}
    (context, filters), kwargs = query.call_args
    assert filters == {'uuid': ['a', 'd', 'unknown']}
    # Deleted instances must be found to be told apart from unknown ones.
    assert context.read_deleted == 'yes'


def test_many_instances_are_asked_in_chunks():
    uuids = ['u%04d' % i for i in range(1200)]
    with mock.patch('nova.objects.InstanceList.get_by_filters',
                    return_value=[]) as query:
        consumers.instance_states(uuids)
    asked = [call.args[1]['uuid'] for call in query.call_args_list]
    assert [len(chunk) for chunk in asked] == [500, 500, 200]
    assert sum(asked, []) == uuids


def _identity(url):
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    # What nova-compute's transport does: oslo.messaging's options.
    oslo_messaging.TransportURL(conf)
    conf.set_override('transport_url', url)
    return consumers.identity(conf)


def test_a_cells_identity_is_its_broker_not_its_credentials():
    cell1 = _identity('rabbit://nova:secret@mq1:5672,nova:secret@mq2:5672/'
                      'cell1')
    # Another compute of the cell, its hosts in another order and other
    # credentials: the same cell.
    assert cell1 == _identity('rabbit://c2:other@mq2:5672,c2:other@mq1:5672/'
                              'cell1')
    assert 'secret' not in cell1
    # Another virtual host, or another broker: another cell.
    assert cell1 != _identity('rabbit://nova:secret@mq1:5672,'
                              'nova:secret@mq2:5672/cell2')
    assert cell1 != _identity('rabbit://nova:secret@mq3:5672/cell1')


def test_no_transport_no_identity():
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    assert consumers.identity(conf) is None
