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

"""Requests from the operator CLI to the running services, and answers.

The coordination group is the one channel every service already listens
to.  The CLI joins it as an operator member (its host starts with ``@``,
so it owns no shard), publishes its requests in its payload, and waits
for the answers that the services publish in theirs.  Each request names
the host that must act, or none: then every service acts (``flush``) or
the one the request is about decides (the housekeeping leader, the ring
owner of a lost host).

A request: ``{'id': str, 'op': str, 'args': {...}, 'host': str|None}``.
An answer: ``{'id': str, 'host': str, 'result': {...}}`` or with
``'error': str`` instead of a result.

Each request runs in a daemon thread of its own: a long one (a
housekeeping pass, an adoption) must not hold back the others, nor the
next look for new requests.  At most :data:`MAX_RUNNING` run at once on
a service; more wait for a look after one ended.
"""

import threading
import time
import uuid

from oslo_log import log as logging

from ironic_multi._reservation import membership as membership_mod
from ironic_multi._reservation import worker
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# Answers a service keeps publishing, newest last.
_KEPT_ANSWERS = 20
# Requests running at once on one service.
MAX_RUNNING = 4


class Desk(object):
    """A service's side: runs requests addressed to it, once each.

    :param host: this service's host.
    :param handlers: ``{op: f(request) -> result dict or None}``; None
        means "not mine", and no answer is published.
    :param on_answer: ``f(answers)``, called with :attr:`answers` from the
        request's thread each time one is added, to publish them.
    """

    def __init__(self, host, handlers, on_answer=None):
        self._host = host
        self.handlers = dict(handlers)
        self._on_answer = on_answer
        self._done = set()
        self._running = 0
        self._lock = threading.Lock()
        self.answers = []

    def serve(self, payloads):
        """Start the new requests among ``payloads``; how many started.

        It does not wait for them: each runs in a thread of its own.
        """
        started = 0
        for member_id, payload in payloads.items():
            if not membership_mod.is_operator(member_id):
                continue
            for request in payload.get('requests') or ():
                if request['id'] in self._done or request.get('host') not in (
                        None, self._host):
                    continue
                with self._lock:
                    if self._running >= MAX_RUNNING:
                        LOG.info('%d operator requests running: the next '
                                 'one waits for one of them to end',
                                 self._running)
                        return started
                    self._running += 1
                    self._done.add(request['id'])
                worker.in_daemon_thread('ironic-multi-request-%s'
                                        % request['op'], self._run, request)
                started += 1
        return started

    def _run(self, request):
        try:
            answer = self._handle(request)
        finally:
            with self._lock:
                self._running -= 1
        if answer is None:
            return
        with self._lock:
            self.answers = answers = (
                self.answers + [answer])[-_KEPT_ANSWERS:]
        if self._on_answer is not None:
            self._on_answer(answers)

    def _handle(self, request):
        handler = self.handlers.get(request['op'])
        if handler is None:
            return {'id': request['id'], 'host': self._host,
                    'error': 'unknown request %s' % request['op']}
        LOG.info('Operator request %(op)s %(args)s (%(id)s)', request)
        try:
            result = handler(request)
        except exception.IronicMultiError as e:
            LOG.warning('Operator request %(op)s failed: %(error)s',
                        {'op': request['op'], 'error': e})
            return {'id': request['id'], 'host': self._host,
                    'error': str(e)}
        except Exception as e:
            # A bug: the request is marked done, so it must be answered
            # (the operator waits for it), and its traceback kept here.
            LOG.exception('Operator request %(op)s %(args)s (%(id)s) failed '
                          'unexpectedly', request)
            return {'id': request['id'], 'host': self._host,
                    'error': 'unexpected error on host %s (%s: %s); see '
                             'its log' % (self._host, type(e).__name__, e)}
        if result is None:
            return None
        return {'id': request['id'], 'host': self._host, 'result': result}


class Requester(object):
    """The CLI's side: publish requests, wait for answers.

    :param membership: an operator :class:`~.membership.Membership`
        (host starting with ``@``), started.
    """

    def __init__(self, membership):
        self._membership = membership
        self._requests = []

    def ask(self, op, args=None, host=None):
        """Publish a request; return its id."""
        request = {'id': uuid.uuid4().hex, 'op': op, 'args': args or {},
                   'host': host}
        self._requests.append(request)
        self._membership.publish({'requests': self._requests})
        return request['id']

    def answers(self, request_id, expected=None, timeout=60, poll=0.5):
        """Answers to ``request_id``, once ``expected`` hosts answered.

        :param expected: hosts to wait for; None: the first answer.
        :returns: ``{host: answer}``; fewer than expected at the timeout.
        """
        deadline = time.monotonic() + timeout
        while True:
            found = {}
            for payload in self._membership.published().values():
                for answer in payload.get('answers') or ():
                    if answer['id'] == request_id:
                        found[answer['host']] = answer
            done = (set(expected) <= set(found) if expected is not None
                    else bool(found))
            if done or time.monotonic() >= deadline:
                return found
            time.sleep(poll)
