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


"""Leaving the coordination group as soon as Nova begins to stop.

Nova calls the driver's ``cleanup_host`` last in its graceful shutdown:
after it stopped its RPC server and waited for the tasks in progress,
1.4 to 9.8 s after SIGTERM with nothing in progress (``sizing.rst``).
Meanwhile the stopping host keeps its shard keys on every member's ring.
Nova's compute manager sets an event the moment its graceful shutdown
begins; a thread waits for it and leaves the group then, and the other
members take the keys at once.  The builds in progress go on: a claim
falls back to every node when its host owns no shard, and Ironic
decides between two claims of one node.
"""

import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def shutdown_event(virtapi):
    """Nova's "graceful shutdown began" event; None where Nova has none.

    The compute manager's (``nova.manager.Manager._shutdown_in_progress``,
    Nova 34), which Nova gives the driver no public way to read.
    """
    manager = getattr(virtapi, '_compute', None)
    event = getattr(manager, '_shutdown_in_progress', None)
    return event if isinstance(event, threading.Event) else None


def leave_when_stopping(virtapi, leave, host):
    """Call ``leave()`` once Nova begins to stop ``host``'s service.

    :returns: the waiting thread, or None when Nova has no such event (the
        group is then left at ``cleanup_host``).
    """
    event = shutdown_event(virtapi)
    if event is None:
        LOG.debug('Nova does not tell when its graceful shutdown begins: '
                  'host %s leaves the coordination group at cleanup_host',
                  host)
        return None

    def wait_and_leave():
        event.wait()
        LOG.info('Nova is stopping host %s: leaving the coordination group '
                 'now, its shard keys move to the other members; the work '
                 'in progress goes on', host)
        try:
            leave()
        except Exception:
            # cleanup_host leaves again, at the latest.
            LOG.warning('Could not leave the coordination group at once',
                        exc_info=True)

    thread = threading.Thread(target=wait_and_leave, daemon=True,
                              name='ironic-multi-leave-%s' % host)
    thread.start()
    return thread
