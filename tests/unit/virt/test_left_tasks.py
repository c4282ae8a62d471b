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

"""Tasks Nova left on an instance after their request failed.

Nova's objects are doubles: the instances of the host, their actions and
their events, as lists the tests build.
"""

import datetime

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from oslo_utils import timeutils
import pytest

from ironic_multi._virt import left_tasks
from tests.unit.virt import fakes

HOST = 'compute-1'
UUID = fakes.INSTANCE


def _ago(seconds):
    return timeutils.utcnow() - datetime.timedelta(seconds=seconds)


class Nova(object):
    def __init__(self, monkeypatch):
        self.instances = []
        self.actions = {}
        self.events = {}
        self.saved = []
        monkeypatch.setattr(objects.InstanceList, 'get_by_filters',
                            self._instances)
        monkeypatch.setattr(objects.InstanceActionList,
                            'get_by_instance_uuid', self._actions)
        monkeypatch.setattr(objects.InstanceActionEventList,
                            'get_by_action', self._events)

    def _instances(self, context, filters, expected_attrs=None):
        assert filters == {'host': HOST, 'vm_state': 'error',
                           'deleted': False}
        return [i for i in self.instances if i.host == filters['host']
                and i.vm_state == 'error']

    def _actions(self, context, uuid):
        return self.actions.get(uuid, [])

    def _events(self, context, action_id):
        return self.events.get(action_id, [])

    def instance(self, task='rebuilding', vm_state='error', host=HOST,
                 save_error=None, updated=90):
        instance = fakes.instance(UUID, host=host, vm_state=vm_state,
                                  task_state=task, updated_at=_ago(updated))

        def save(expected_task_state=None):
            if save_error is not None:
                raise save_error
            self.saved.append((instance.uuid, instance.task_state,
                               expected_task_state))

        instance.save.side_effect = save
        self.instances.append(instance)
        return instance

    def action(self, action_id, started, *events, request='req-1',
               name='rebuild', host=HOST):
        """An action and its events: ``(name, result, finished ago)``.

        An event began when its action did, on ``host``.
        """
        self.actions.setdefault(UUID, []).append(objects.InstanceAction(
            id=action_id, action=name, request_id=request,
            start_time=_ago(started)))
        self.events[action_id] = [objects.InstanceActionEvent(
            event=event, result=result, start_time=_ago(started),
            finish_time=None if ago is None else _ago(ago), host=host)
            for event, result, ago in events]


@pytest.fixture
def nova(monkeypatch):
    return Nova(monkeypatch)


@pytest.fixture
def context():
    return nova_context.get_admin_context()


def test_a_task_left_after_its_request_failed_is_ended(nova, context):
    # Queued for a compute that restarted: its init_host set the instance
    # to ERROR, the request failed on the task check, and Nova's error
    # handling saved the task back.
    instance = nova.instance()
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert left_tasks.end(context, HOST) == [UUID]
    assert instance.task_state is None and instance.vm_state == 'error'
    assert nova.saved == [(UUID, None, ['rebuilding'])]


@pytest.mark.parametrize('events', [
    # Still in progress.
    [('compute_rebuild_instance', None, None)],
    # Ended well.
    [('compute_rebuild_instance', 'Success', 60)],
    # Ended in error a moment ago: Nova may still be saving.
    [('compute_rebuild_instance', 'Error', 5)],
    # No event yet: the request waits in the compute's queue.
    [],
])
def test_live_or_fresh_requests_are_left_alone(nova, context, events):
    instance = nova.instance()
    nova.action(1, 120, *events)
    assert left_tasks.end(context, HOST) == []
    assert instance.task_state == 'rebuilding' and nova.saved == []


def test_a_newer_request_is_what_counts(nova, context):
    # A rebuild of the ERROR server, asked for after the failed one.
    instance = nova.instance()
    nova.action(1, 300, ('compute_rebuild_instance', 'Error', 240))
    nova.action(2, 10, request='req-2')
    assert left_tasks.end(context, HOST) == []
    assert instance.task_state == 'rebuilding'


@pytest.mark.parametrize('fields', [
    {'task': None},
    {'vm_state': 'active'},
    {'host': 'compute-2'},
])
def test_only_error_instances_with_a_task_on_this_host(nova, context,
                                                       fields):
    nova.instance(**fields)
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert left_tasks.end(context, HOST) == [] and nova.saved == []


def test_a_task_changed_meanwhile_wins(nova, context):
    nova.instance(save_error=nova_exception.UnexpectedTaskStateError(
        instance_uuid=UUID, expected=['rebuilding'], actual='rebuilding'))
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert left_tasks.end(context, HOST) == []


def test_an_instance_without_actions_is_left_alone(nova, context):
    instance = nova.instance()
    assert left_tasks.end(context, HOST) == []
    assert instance.task_state == 'rebuilding'


# A delete whose compute was killed in the middle of it: the event of the
# killed request never ends.  The restarted compute's init_host restarts
# the deletion; when that fails too, Nova sets the instance to ERROR and
# leaves the task (the chaos run found it: ERROR/deleting for good).
KILLED_DELETE = ('compute_terminate_instance', None, None)


def test_a_task_whose_request_died_with_the_service_is_ended(nova,
                                                             context):
    instance = nova.instance(task='deleting')
    nova.action(1, 120, KILLED_DELETE, name='delete')
    assert left_tasks.end(context, HOST, started=_ago(60)) == [UUID]
    assert instance.task_state is None and instance.vm_state == 'error'
    assert nova.saved == [(UUID, None, ['deleting'])]


@pytest.mark.parametrize('started', [
    # The request began after this service started: it is in progress.
    150,
    # The service started a moment ago: its init_host may still be
    # restarting the deletion.
    5,
    # Nobody said when the service started.
    None,
])
def test_an_unfinished_request_is_left_alone_unless_it_died(nova, context,
                                                            started):
    instance = nova.instance(task='deleting')
    nova.action(1, 120, KILLED_DELETE, name='delete')
    assert left_tasks.end(context, HOST, started=(
        None if started is None else _ago(started))) == []
    assert instance.task_state == 'deleting' and nova.saved == []


def test_an_unfinished_request_of_another_host_is_left_alone(nova, context):
    # Its host (lost, stuck) may still be at it: a takeover's business.
    instance = nova.instance(task='rebooting')
    nova.action(1, 120, ('compute_reboot_instance', None, None),
                name='reboot', host='compute-2')
    assert left_tasks.end(context, HOST, started=_ago(60)) == []
    assert instance.task_state == 'rebooting' and nova.saved == []


@pytest.mark.parametrize('events', [
    [('compute_rebuild_instance', 'Error', 60)],
    [KILLED_DELETE],
])
def test_a_task_saved_a_moment_ago_is_left_alone(nova, context, events):
    # Nova's API saves the task of a new request (a delete of the ERROR
    # server) before it records the request's action: for that moment
    # the failed request is still the latest.  The chaos run saw a
    # delete's task ended so.
    instance = nova.instance(task='deleting', updated=1)
    nova.action(1, 120, *events)
    assert left_tasks.end(context, HOST, started=_ago(60)) == []
    assert instance.task_state == 'deleting' and nova.saved == []
