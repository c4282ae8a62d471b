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

:func:`end` finds such instances on this host: ERROR, a task set, and the
latest instance action of the instance over at least ``grace`` seconds
ago, with an event in error, or with an event of this host that began
before this service started (its request died with the service's
previous process) while this service has run for ``grace`` seconds (its
``init_host`` is done with it).  A request in progress has an event not
finished yet; a new request has a newer action, or for a moment only its
task (the instance was saved less than ``grace`` seconds ago).  It ends
the task (the state stays ERROR, as Nova's error handling left it),
expecting the task it read; the user's next request (a delete again)
goes ahead.
"""

from nova.compute import vm_states
from nova import exception as nova_exception
from nova import objects
from oslo_log import log as logging
from oslo_utils import timeutils

LOG = logging.getLogger(__name__)

# Seconds after the failed request's end before its task counts as left:
# Nova saved the task back before the event ended.
GRACE = 30


def end(context, host, grace=None, started=None):
    """End the tasks left on ``host``'s instances; returns their UUIDs.

    :param grace: seconds, ``GRACE`` by default.
    :param started: when this service started (UTC): requests begun
        before it died with the previous process.  None: unknown, and
        only requests that ended in error count.
    """
    ended = []
    grace = GRACE if grace is None else grace
    now = timeutils.utcnow().replace(tzinfo=None)
    if started is not None:
        started = _naive(started)
    instances = objects.InstanceList.get_by_filters(
        context, {'host': host, 'vm_state': vm_states.ERROR,
                  'deleted': False}, expected_attrs=[])
    for instance in instances:
        task = instance.task_state
        if not task or _saved_lately(instance, now, grace):
            continue
        failed = _failed_request(context, instance.uuid, host, now, grace,
                                 started)
        if failed is None:
            continue
        instance.task_state = None
        try:
            instance.save(expected_task_state=[task])
        except (nova_exception.UnexpectedTaskStateError,
                nova_exception.InstanceNotFound) as e:
            LOG.debug('Task %(task)s of instance %(instance)s changed '
                      'meanwhile: %(error)s',
                      {'task': task, 'instance': instance.uuid, 'error': e})
            continue
        LOG.warning('Instance %(instance)s: ended its task %(task)s, left '
                    'after its request failed (%(action)s, request '
                    '%(request)s: %(event)s)',
                    dict(failed, instance=instance.uuid, task=task))
        ended.append(instance.uuid)
    return ended


def _saved_lately(instance, now, grace):
    """Whether the instance was saved less than ``grace`` seconds ago.

    Nova's API saves the task of a new request before it records the
    request's action: for that moment the failed request is still the
    latest.
    """
    if not instance.obj_attr_is_set('updated_at') or not instance.updated_at:
        return False
    return (now - _naive(instance.updated_at)).total_seconds() < grace


def _failed_request(context, instance_uuid, host, now, grace, started):
    """The latest action if it failed ``grace`` s ago, or None.

    Failed: ended with an event in error, or cut short by the end of the
    previous process of this service (``host``).  A request unfinished on
    another host may still run there (a lost host that is only stuck).
    """
    actions = objects.InstanceActionList.get_by_instance_uuid(
        context, instance_uuid)
    if not actions:
        return None
    latest = max(actions, key=lambda a: _naive(a.start_time))
    events = objects.InstanceActionEventList.get_by_action(context,
                                                           latest.id)
    if not events:
        return None
    unfinished = [e for e in events if e.finish_time is None]
    if unfinished:
        if (started is None or (now - started).total_seconds() < grace
                or any(e.host != host or _naive(e.start_time) >= started
                       for e in unfinished)):
            return None
        return {'action': latest.action, 'request': latest.request_id,
                'event': '%s cut short by a restart' % unfinished[-1].event}
    errors = [e for e in events if e.result == 'Error']
    ended = max(_naive(e.finish_time) for e in events)
    if not errors or (now - ended).total_seconds() < grace:
        return None
    return {'action': latest.action, 'request': latest.request_id,
            'event': '%s in error' % errors[-1].event}


def _naive(moment):
    return moment.replace(tzinfo=None)
