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
their events, as lists the tests build.  The times in them are planted as
the hosts that write them would: an action's start by the API host's
clock, an event's by the conductor's; the check compares none of them.
Its own clock is a fake monotonic one that the tests move.
"""

import datetime

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from oslo_utils import timeutils
import pytest

from ironic_multi._reservation import membership
from ironic_multi._virt import left_tasks
from tests.unit.virt import fakes

HOST = 'compute-1'
UUID = fakes.INSTANCE
GRACE = left_tasks.GRACE
# The driver's tests stub it out (conftest.py): here it is the subject.
UNFINISHED_EVENTS = left_tasks.unfinished_events


def _ago(seconds):
    """``seconds`` before now on this host's clock (negative: after)."""
    return timeutils.utcnow() - datetime.timedelta(seconds=seconds)


class Clock(object):
    """This process's monotonic clock."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Nova(object):
    def __init__(self, monkeypatch):
        self.instances = []
        self.actions = {}
        self.events = {}
        self.saved = []
        # Other live members of the group under HOST; an exception: the
        # group cannot be read.
        self.namesakes = []
        monkeypatch.setattr(objects.InstanceList, 'get_by_filters',
                            self._instances)
        monkeypatch.setattr(objects.InstanceActionList,
                            'get_by_instance_uuid', self._actions)
        monkeypatch.setattr(objects.InstanceActionEventList,
                            'get_by_action', self._events)

    def _instances(self, context, filters, expected_attrs=None):
        assert filters in ({'host': HOST, 'vm_state': 'error',
                            'deleted': False},
                           {'host': HOST, 'deleted': False})
        return [i for i in self.instances if i.host == filters['host']
                and filters.get('vm_state', i.vm_state) == i.vm_state]

    def _actions(self, context, uuid):
        return self.actions.get(uuid, [])

    def _events(self, context, action_id):
        return self.events.get(action_id, [])

    def group(self):
        if isinstance(self.namesakes, Exception):
            raise self.namesakes
        return list(self.namesakes)

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
               name='rebuild', host=HOST, events_started=None):
        """An action and its events: ``(name, result, finished ago)``.

        :param started: when the API host recorded it, in seconds ago.
        :param events_started: when its events began, as their conductor
            wrote it (``started`` by default).
        """
        events_started = started if events_started is None else (
            events_started)
        self.actions.setdefault(UUID, []).append(objects.InstanceAction(
            id=action_id, action=name, request_id=request,
            start_time=_ago(started)))
        self.events[action_id] = [objects.InstanceActionEvent(
            id=action_id * 100 + number, event=event, result=result,
            start_time=_ago(events_started),
            finish_time=None if ago is None else _ago(ago), host=host)
            for number, (event, result, ago) in enumerate(events)]


@pytest.fixture
def nova(monkeypatch):
    monkeypatch.setattr(left_tasks, 'unfinished_events', UNFINISHED_EVENTS)
    return Nova(monkeypatch)


@pytest.fixture
def context():
    return nova_context.get_admin_context()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def start(nova, context, clock):
    """This process starting: what it finds unfinished is not its own."""
    def start():
        tasks = left_tasks.LeftTasks(HOST, nova.group, clock=clock)
        tasks.remember(context)
        return tasks
    return start


def passes(tasks, context, clock, count=2, apart=GRACE):
    """What ``count`` passes ``apart`` seconds apart ended, in order."""
    ended = []
    for number in range(count):
        if number:
            clock.now += apart
        ended.append(tasks.end(context))
    return ended


def test_a_task_left_after_its_request_failed_is_ended(nova, context, clock,
                                                       start):
    # Queued for a compute that restarted: its init_host set the instance
    # to ERROR, the request failed on the task check, and Nova's error
    # handling saved the task back.
    tasks = start()
    instance = nova.instance()
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert passes(tasks, context, clock) == [[], [UUID]]
    assert instance.task_state is None and instance.vm_state == 'error'
    assert nova.saved == [(UUID, None, ['rebuilding'])]


def test_it_takes_two_passes_grace_apart(nova, context, clock, start):
    tasks = start()
    nova.instance()
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert passes(tasks, context, clock, count=3, apart=GRACE / 2) == [
        [], [], [UUID]]


@pytest.mark.parametrize('events', [
    # Still in progress (begun after this process started).
    [('compute_rebuild_instance', None, None)],
    # Ended well.
    [('compute_rebuild_instance', 'Success', 60)],
    # No event yet: the request waits in the compute's queue.
    [],
])
def test_live_or_fresh_requests_are_left_alone(nova, context, clock, start,
                                               events):
    tasks = start()
    instance = nova.instance()
    nova.action(1, 120, *events)
    assert passes(tasks, context, clock, count=4) == [[]] * 4
    assert instance.task_state == 'rebuilding' and nova.saved == []


def test_a_newer_request_is_what_counts(nova, context, clock, start):
    # A rebuild of the ERROR server, asked for after the failed one.
    tasks = start()
    instance = nova.instance()
    nova.action(1, 300, ('compute_rebuild_instance', 'Error', 240))
    nova.action(2, 10, request='req-2')
    assert passes(tasks, context, clock) == [[], []]
    assert instance.task_state == 'rebuilding'


# -- clocks of other hosts -------------------------------------------------

def test_an_api_host_ahead_does_not_make_an_old_request_the_latest(
        nova, context, clock, start):
    """The latest action is the last recorded, whatever its start says.

    The failed rebuild was taken by an API host 120 s ahead, the live
    one (asked for once the failed one's task had been ended) by another:
    the failed one's start looks later.
    """
    tasks = start()
    instance = nova.instance(updated=40)
    nova.action(1, -20, ('compute_rebuild_instance', 'Error', 90),
                events_started=100)
    nova.action(2, 30, ('compute_rebuild_instance', None, None),
                request='req-2', events_started=29)
    assert passes(tasks, context, clock, count=4) == [[]] * 4
    assert instance.task_state == 'rebuilding' and nova.saved == []


def test_a_conductor_behind_does_not_date_a_live_request_before_the_start(
        nova, context, clock, start):
    """A rebuild begun 10 s after this process started, 20 s by its clock.

    Its conductor, 20 s behind, wrote a start 10 s before the process's.
    """
    tasks = start()
    instance = nova.instance(updated=50)
    nova.action(1, 52, ('compute_rebuild_instance', None, None),
                events_started=70)
    clock.now += 60
    assert passes(tasks, context, clock, count=4) == [[]] * 4
    assert instance.task_state == 'rebuilding' and nova.saved == []


# A delete whose compute was killed in the middle of it: the event of the
# killed request never ends.  The restarted compute's init_host restarts
# the deletion; when that fails too, Nova sets the instance to ERROR and
# leaves the task (the chaos run found it: ERROR/deleting for good).
KILLED_DELETE = ('compute_terminate_instance', None, None)


@pytest.mark.parametrize('conductor', [0, 300, -300],
                         ids=['same-clock', 'conductor-ahead',
                              'conductor-behind'])
def test_a_task_whose_request_died_with_the_service_is_ended(
        nova, context, clock, start, conductor):
    instance = nova.instance(task='deleting', vm_state='active')
    nova.action(1, 120, KILLED_DELETE, name='delete',
                events_started=120 - conductor)
    tasks = start()
    # init_host's deletion failed too.
    instance.vm_state = 'error'
    assert passes(tasks, context, clock) == [[], [UUID]]
    assert instance.task_state is None and instance.vm_state == 'error'
    assert nova.saved == [(UUID, None, ['deleting'])]


def test_a_second_process_under_the_host_name_keeps_its_requests(
        nova, context, clock, start):
    """A live rebuild of another process with this host's name.

    It began before this process started: no clock tells it from a
    request cut short by a restart.  The group does: the other process is
    a live member under the same host name.
    """
    other = membership.make_member_id(HOST)
    nova.namesakes = [other]
    instance = nova.instance()
    nova.action(1, 120, ('compute_rebuild_instance', None, None))
    tasks = start()
    assert passes(tasks, context, clock, count=4) == [[]] * 4
    assert instance.task_state == 'rebuilding' and nova.saved == []
    # It ended (or its membership expired): nobody runs the request.
    nova.namesakes = []
    assert passes(tasks, context, clock) == [[], [UUID]]


def test_an_unreadable_group_leaves_unfinished_requests_alone(
        nova, context, clock, start):
    nova.namesakes = RuntimeError('etcd is away')
    instance = nova.instance(task='deleting')
    nova.action(1, 120, KILLED_DELETE, name='delete')
    tasks = start()
    assert passes(tasks, context, clock, count=3) == [[]] * 3
    assert instance.task_state == 'deleting'


def test_without_the_start_only_requests_in_error_count(nova, context,
                                                        clock, monkeypatch):
    """Nova could not say at the start what was unfinished."""
    def nova_away(context, host):
        raise nova_exception.NovaException('the conductor is away')

    monkeypatch.setattr(left_tasks, 'unfinished_events', nova_away)
    tasks = left_tasks.LeftTasks(HOST, nova.group, clock=clock)
    tasks.remember(context)
    nova.instance(task='deleting')
    nova.action(1, 120, KILLED_DELETE, name='delete')
    assert passes(tasks, context, clock, count=3) == [[]] * 3
    nova.action(2, 60, ('compute_delete_instance', 'Error', 50),
                name='delete', request='req-2')
    assert passes(tasks, context, clock) == [[], [UUID]]


def test_an_unfinished_request_of_another_host_is_left_alone(
        nova, context, clock, start):
    # Its host (lost, stuck) may still be at it: a takeover's business.
    instance = nova.instance(task='rebooting')
    nova.action(1, 120, ('compute_reboot_instance', None, None),
                name='reboot', host='compute-2')
    tasks = start()
    assert passes(tasks, context, clock, count=3) == [[]] * 3
    assert instance.task_state == 'rebooting' and nova.saved == []


@pytest.mark.parametrize('events', [
    [('compute_rebuild_instance', 'Error', 60)],
    [KILLED_DELETE],
])
def test_a_new_request_seen_before_its_action_is_left_alone(
        nova, context, clock, start, events):
    # Nova's API saves the task of a new request (a delete of the ERROR
    # server) before it records the request's action: for that moment
    # the failed request is still the latest.  The chaos run saw a
    # delete's task ended so.
    nova.instance(task='rebuilding')
    nova.action(1, 120, *events)
    tasks = start()
    assert tasks.end(context) == []
    (instance,) = nova.instances
    instance.task_state = 'deleting'
    instance.updated_at = _ago(0)
    clock.now += GRACE
    assert tasks.end(context) == []
    nova.action(2, 0, name='delete', request='req-2')
    clock.now += GRACE
    assert tasks.end(context) == []
    assert instance.task_state == 'deleting' and nova.saved == []


def test_a_change_between_passes_starts_the_wait_again(nova, context,
                                                       clock, start):
    tasks = start()
    instance = nova.instance()
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert tasks.end(context) == []
    clock.now += GRACE
    instance.updated_at = _ago(0)
    assert tasks.end(context) == []
    clock.now += GRACE
    assert tasks.end(context) == [UUID]


@pytest.mark.parametrize('fields', [
    {'task': None},
    {'vm_state': 'active'},
    {'host': 'compute-2'},
])
def test_only_error_instances_with_a_task_on_this_host(nova, context, clock,
                                                       start, fields):
    tasks = start()
    nova.instance(**fields)
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert passes(tasks, context, clock) == [[], []] and nova.saved == []


def test_a_task_changed_meanwhile_wins(nova, context, clock, start):
    tasks = start()
    nova.instance(save_error=nova_exception.UnexpectedTaskStateError(
        instance_uuid=UUID, expected=['rebuilding'], actual='rebuilding'))
    nova.action(1, 120, ('compute_rebuild_instance', 'Error', 60))
    assert passes(tasks, context, clock) == [[], []]


def test_an_instance_without_actions_is_left_alone(nova, context, clock,
                                                   start):
    tasks = start()
    instance = nova.instance()
    assert passes(tasks, context, clock) == [[], []]
    assert instance.task_state == 'rebuilding'


def test_the_start_notes_this_host_s_unfinished_events_of_busy_instances(
        nova, context):
    nova.instance(task='deleting')
    nova.action(1, 120, KILLED_DELETE, ('compute_x', 'Error', 100),
                name='delete')
    assert left_tasks.unfinished_events(context, HOST) == {100}
    nova.instances[0].task_state = None
    assert left_tasks.unfinished_events(context, HOST) == set()
