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

"""A watch on the coordination group's members, where the backend has one.

etcd3 streams every change under a key prefix: a member that joins or
leaves the group (its key written, or deleted by a clean leave or by the
expiry of its lease) is seen at once, where the member poll
(``ring_poll_interval``) sees it up to a poll later.  One stream per
service.  A join or a leave moves the ring; an update of another
member's payload (a claim it published, its refreshed counts) changes
the cluster's capacity.  Other backends have no watch: the poll alone
serves them, and it stays on with the watch too, in case the stream dies
without a word.
"""

import base64
import json
import socket
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Seconds between attempts to watch again after the stream ended.
RETRY = 1.0
# Seconds to connect to etcd's gateway; the stream itself has no bound.
CONNECT_TIMEOUT = 5


def _b64(raw):
    return base64.b64encode(raw).decode()


def _range_end(prefix):
    """The key right after every key that starts with ``prefix``."""
    return prefix[:-1] + bytes([prefix[-1] + 1])


def membership_changed(event):
    """Whether an etcd watch event is a member joining or leaving.

    A leave deletes the member's key; a join creates it (version 1); an
    update of its payload writes it again (a higher version).
    """
    if event.get('type') == 'DELETE':
        return True
    return str((event.get('kv') or {}).get('version')) == '1'


class MemberWatch(object):
    """Calls ``on_change()`` when a member joins or leaves the group.

    :param membership: the service's
        :class:`~ironic_multi._reservation.membership.Membership`; its
        :meth:`watch_target` says where to watch, if anywhere.
    :param on_change: called in the watch's thread.
    :param on_payload: called in the watch's thread when a member
        published a new payload (this one's own included).
    """

    def __init__(self, membership, on_change, on_payload=None):
        self._membership = membership
        self._on_change = on_change
        self._on_payload = on_payload
        self._stopped = threading.Event()
        self._response = None
        self._thread = None

    @property
    def streaming(self):
        """Whether the stream is up: changes are seen as they happen."""
        response = self._response
        return response is not None and response.ok

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='ironic-multi-member-watch')
        self._thread.start()

    def stop(self):
        self._stopped.set()
        response = self._response
        if response is None:
            return
        # Closing the response from here would wait for the reading
        # thread; shutting its socket down ends the read instead.
        try:
            with socket.fromfd(response.raw.fileno(), socket.AF_INET,
                               socket.SOCK_STREAM) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError) as e:
            LOG.debug('The watch on the coordination group ends at its '
                      'next event: %s', e)

    def _run(self):
        failures = 0
        while not self._stopped.is_set():
            target = self._membership.watch_target()
            if target is False:
                LOG.debug('The coordination backend has no watch: the '
                          'member poll alone follows the group')
                return
            if target is not None:
                try:
                    self._stream(*target)
                    failures = 0
                except Exception as e:
                    failures += 1
                    # Once, not at every retry while etcd is away.
                    log = LOG.warning if failures == 1 else LOG.debug
                    log('The watch on the coordination group ended (%s); '
                        'watching again every %s s, the member poll goes '
                        'on meanwhile', e, RETRY)
            self._stopped.wait(RETRY)

    def _changed(self, events):
        # The stream is fine: only the refresh failed (Ironic away...).
        if any(membership_changed(event) for event in events):
            follow, what = self._on_change, 'a join or a leave'
        elif events and self._on_payload is not None:
            follow, what = self._on_payload, 'a published payload'
        else:
            return
        try:
            follow()
        except Exception as e:
            LOG.warning('Following %(what)s in the coordination group '
                        'failed (%(error)s); the member poll tries again',
                        {'what': what, 'error': e})

    def _stream(self, session, url, prefix):
        request = {'create_request': {'key': _b64(prefix),
                                      'range_end': _b64(_range_end(prefix))}}
        response = session.post(url, json=request, stream=True,
                                timeout=(CONNECT_TIMEOUT, None))
        self._response = response
        try:
            response.raise_for_status()
            for line in response.iter_lines():
                if self._stopped.is_set():
                    return
                if not line.strip():
                    continue
                self._changed(
                    json.loads(line).get('result', {}).get('events', ()))
        finally:
            self._response = None
            response.close()
