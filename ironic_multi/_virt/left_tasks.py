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

"""Tasks left on an instance after their request failed, ended.

A nova-compute that restarts (or comes back after a takeover) first ends
the tasks its instances were in (Nova's ``init_host`` sets a rebuilding
instance to ERROR, a takeover ends a lost host's tasks), then runs the
requests queued for it meanwhile.  The request for such a task fails on
Nova's check of the task state (``UnexpectedTaskStateError``), and Nova's
error handling then saves the instance with the task again: the change of
the failed save is still pending in the object, and the error handling
saves without expecting a state.  Nobody works on it any more, and the
server shows ``REBUILD`` (or its other task) for good; only an operator's
``reset-state`` would end it.  The chaos run on the multi-process cloud
found it (a rebuild queued for a compute stopped with SIGTERM).

A delete whose compute was killed in the middle of it ends the same way
by another path: the restarted compute's ``init_host`` restarts the
deletion, and when that fails too (Ironic still away), Nova sets the
instance to ERROR and leaves the task ``deleting``.  The killed request's
event never ends.

**No clock of another host.**  The times in Nova's records come from
several hosts: an action's start from the host of the API that took the
request, an event's start and end from the nova-conductor that wrote it,
an instance's ``updated_at`` from whichever service saved it.  None of
them is compared with this host's clock, nor with each other: a
conductor 20 s behind, or an API host 120 s ahead, made a live rebuild
look cut short or superseded.  What is judged instead:

- which action is the latest: the highest id (the database's order of
  insertion);
- whether its request is over: it ended with an event in error; or an
  event of it on this host is unfinished, was unfinished already when
  this process started (:meth:`LeftTasks.remember`, called before Nova
  serves any request here), and no other process under this host name is
  a live member of the coordination group.  Such an event is not this
  process's, so its request died with a previous one; another live
  process under the same name (which Nova does not support, or the
  previous process until its membership expires) may still be running
  it;
- how long it has been so: on this process's own monotonic clock, from
  the first pass that saw the instance in that state (task, the
  ``updated_at`` it read, the latest action and its events, compared as
  they are) to a pass at least ``grace`` seconds later that sees it
  unchanged.  Nova's API saves the task of a new request (a delete of the
  ERROR server) before it records the request's action: for that moment
  the failed request still looks like the latest, and the next pass sees
  the new action.

Then it ends the task (the state stays ERROR, as Nova's error handling
left it), expecting the task it read; the user's next request (a delete
again) goes ahead.
"""

import time

from nova.compute import vm_states
from nova import exception as nova_exception
from nova import objects
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Seconds on this process's clock that an instance must stay unchanged,
# its request over, before its task counts as left: longer than Nova's
# API takes from saving a new request's task to recording its action.
GRACE = 30


def _latest_action(context, instance_uuid):
    """The instance's latest action and its events, or ``(None, [])``."""
    actions = objects.InstanceActionList.get_by_instance_uuid(
        context, instance_uuid)
    if not actions:
        return None, []
    latest = max(actions, key=lambda action: action.id)
    return latest, list(objects.InstanceActionEventList.get_by_action(
        context, latest.id))


def unfinished_events(context, host):
    """Ids of the unfinished events of ``host`` in its instances' requests.

    The latest action of each instance of the host that is building or
    has a task.
    """
    found = set()
    for instance in objects.InstanceList.get_by_filters(
            context, {'host': host, 'deleted': False}, expected_attrs=[]):
        if (instance.task_state is None
                and instance.vm_state != vm_states.BUILDING):
            continue
        _action, events = _latest_action(context, instance.uuid)
        found.update(event.id for event in events
                     if event.finish_time is None and event.host == host)
    return frozenset(found)


class LeftTasks(object):
    """Ends the tasks left on the instances of ``host``, pass after pass.

    :param host: this nova-compute's host.
    :param namesakes: returns the ids of the other live members of the
        coordination group under this host name; raises when it cannot
        tell.
    :param clock: monotonic seconds of this process.
    """

    def __init__(self, host, namesakes, clock=time.monotonic):
        self.host = host
        self._namesakes = namesakes
        self._clock = clock
        # Events unfinished at this process's start; None: unknown.
        self._before_start = None
        # {instance uuid: (what a pass saw, when it first saw it)}.
        self._seen = {}
        # The other members under this host name, last seen; this pass's
        # answer (None: not asked yet).
        self._others = ()
        self._others_now = None

    def remember(self, context):
        """Note the requests of this host that are unfinished now.

        Before this process runs any request (the driver's ``init_host``:
        Nova starts serving requests after it).  When Nova cannot say,
        only requests that ended in error count, for this process's life.
        """
        try:
            self._before_start = unfinished_events(context, self.host)
        except Exception as e:
            LOG.warning('Cannot read the requests of host %(host)s '
                        'unfinished at its start (%(error)s): tasks left '
                        'by requests that died with its previous process '
                        'are not ended', {'host': self.host, 'error': e})

    def end(self, context, grace=None):
        """One pass: end the tasks left on the host's instances.

        :param grace: seconds, ``GRACE`` by default.
        :returns: the UUIDs of the instances whose task it ended.
        """
        grace = GRACE if grace is None else grace
        now = self._clock()
        seen, self._seen = self._seen, {}
        self._others_now = None
        ended = []
        instances = objects.InstanceList.get_by_filters(
            context, {'host': self.host, 'vm_state': vm_states.ERROR,
                      'deleted': False}, expected_attrs=[])
        for instance in instances:
            task = instance.task_state
            if not task:
                continue
            latest, events = _latest_action(context, instance.uuid)
            why = self._failure(events) if events else None
            if why is None:
                continue
            state = (task, instance.updated_at, latest.id,
                     tuple(sorted((e.id, e.result, e.finish_time)
                                  for e in events)))
            first = seen.get(instance.uuid)
            if first is None or first[0] != state:
                # The first pass that sees it so starts the wait.
                self._seen[instance.uuid] = (state, now)
                continue
            self._seen[instance.uuid] = first
            if now - first[1] >= grace and self._end(
                    instance, task, {'action': latest.action,
                                     'request': latest.request_id,
                                     'event': why}):
                ended.append(instance.uuid)
        return ended

    def _failure(self, events):
        """What ended the request of ``events``; None if it may run."""
        unfinished = [e for e in events if e.finish_time is None]
        if not unfinished:
            return _in_error(events)
        if self._before_start is None or any(
                e.id not in self._before_start for e in unfinished):
            # This process may be running it.
            return None
        if self._other_processes():
            return None
        return '%s cut short by a restart' % _last(unfinished).event

    def _other_processes(self):
        """Whether another process may run under this host name.

        Asked once a pass; True when the group cannot tell.
        """
        if self._others_now is None:
            self._others_now = self._ask_the_group()
        return self._others_now

    def _ask_the_group(self):
        try:
            others = tuple(sorted(self._namesakes()))
        except Exception as e:
            LOG.warning('Cannot list the coordination group (%s): tasks of '
                        'unfinished requests are not ended until it can '
                        'be', e)
            return True
        if others and others != self._others:
            LOG.warning('Other live members of the coordination group '
                        'under host name %(host)s: %(others)s.  The '
                        'previous process of this host, until its '
                        'membership expires; else a second nova-compute '
                        'with this host name, which Nova does not '
                        'support.  Tasks of requests begun before this '
                        'process started are not ended meanwhile',
                        {'host': self.host, 'others': ', '.join(others)})
        self._others = others
        return bool(others)

    @staticmethod
    def _end(instance, task, failed):
        instance.task_state = None
        try:
            instance.save(expected_task_state=[task])
        except (nova_exception.UnexpectedTaskStateError,
                nova_exception.InstanceNotFound) as e:
            LOG.debug('Task %(task)s of instance %(instance)s changed '
                      'meanwhile: %(error)s',
                      {'task': task, 'instance': instance.uuid, 'error': e})
            return False
        LOG.warning('Instance %(instance)s: ended its task %(task)s, left '
                    'after its request failed (%(action)s, request '
                    '%(request)s: %(event)s)',
                    dict(failed, instance=instance.uuid, task=task))
        return True


def _in_error(events):
    """What failed, if the finished request ended with an event in error."""
    errors = [e for e in events if e.result == 'Error']
    return '%s in error' % _last(errors).event if errors else None


def _last(events):
    return max(events, key=lambda event: event.id)
