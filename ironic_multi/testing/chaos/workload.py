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

"""The workload of a chaos run: users' requests through Nova's API.

Each operation is a request, then a wait for its outcome, bounded; it is
recorded in the history with one of these outcomes:

``ok``
    the server reached the state asked for (ACTIVE, SHUTOFF then
    ACTIVE, deleted);
``error``
    the server went to ERROR (its fault is classified, see
    :mod:`.logscan`);
``failed``
    an action's task ended without its result, or its instance action
    records an error (Nova reverted the task: the server stays as it
    was);
``refused``
    Nova's API answered 4xx (the server was busy, or already gone);
``api-error``
    Nova's API answered 5xx or could not be reached (a fault on its way);
``stranded``
    a build Nova itself left in BUILD with no host, with Nova's own line
    to say so (the run finds them, :meth:`Workload.give_up`): no longer
    waited for;
``timeout``
    no outcome within the bound: a hang, a violation.

Servers are booted with ``networks: none`` as the demo user; the faults'
own boots aimed at one compute are the administrator's (``host``).
"""

import concurrent.futures
import random
import threading
import time

from keystoneauth1 import exceptions as ks_exceptions
from oslo_log import log as logging

from ironic_multi.testing.chaos import invariants
from ironic_multi.testing.chaos import logscan
from ironic_multi.testing.chaos import schedule
from ironic_multi.testing import checks
from ironic_multi.testing.cloud import cloud as cloud_mod

LOG = logging.getLogger(__name__)

OK, ERROR, FAILED, REFUSED, API_ERROR, STRANDED, TIMEOUT = (
    'ok', 'error', 'failed', 'refused', 'api-error', 'stranded', 'timeout')
OUTCOMES = (OK, ERROR, FAILED, REFUSED, API_ERROR, STRANDED, TIMEOUT)
# Microversion 2.74: a boot may name its host (administrators only).
MICROVERSION = '2.95'
# Seconds an operation may take before it counts as a hang: a build whose
# compute was killed is set to ERROR by Nova's instance_build_timeout
# (run.BUILD_TIMEOUT, checked once a minute), or by the compute's
# init_host when it is back.
BOUND = 300
# Seconds an API request may take.
API_TIMEOUT = 60
POLL = 1.0
# Servers per usable node the workload keeps at most; boots beyond turn
# into deletes.
FILL = 0.6
BURST_MAX = 8


class _Answer(Exception):
    """Nova's API answered an error, or could not be reached."""

    def __init__(self, outcome, detail):
        super().__init__(detail)
        self.outcome = outcome


class Workload(object):
    """Runs a plan of operations against the cloud, in a pool of threads.

    :param cloud: the :class:`~ironic_multi.testing.cloud.Cloud`.
    :param history: the run's :class:`~.history.History`.
    :param observer: the run's :class:`~.observer.Observer` (the latest
        look at servers and nodes, to choose what to act on).
    """

    def __init__(self, cloud, history, observer, seed, threads=8):
        self.cloud = cloud
        self.history = history
        self.observer = observer
        self.seed = seed
        self._pool = concurrent.futures.ThreadPoolExecutor(
            threads, thread_name_prefix='chaos-op')
        self._local = threading.local()
        self._lock = threading.Lock()
        self._busy = set()
        self._futures = []
        # {server id: Nova's line}: builds no longer waited for.
        self._stranded = {}
        # Set when the run ends: an interrupted run waits for nothing.
        self._closed = threading.Event()
        self.created = {}
        flavors = cloud.layout.flavors
        usable = sum(1 for node_group in cloud.layout.groups
                     if not node_group.owner for _ in range(node_group.count))
        self.max_live = max(4, int(usable * FILL))
        self.flavors = {f.name: f for f in flavors}

    # -- plumbing -----------------------------------------------------------

    def connection(self, name=cloud_mod.DEMO_CLOUD):
        """An openstacksdk connection of this thread's own."""
        connections = getattr(self._local, 'connections', None)
        if connections is None:
            connections = self._local.connections = {}
        if name not in connections:
            connections[name] = self.cloud.connection(name, shared=False)
        return connections[name]

    def _call(self, method, path, name=cloud_mod.DEMO_CLOUD, **kwargs):
        try:
            # The first call of a connection gets a token: Keystone may
            # answer 500 while its database restarts.
            compute = self.connection(name).compute
            answer = getattr(compute, method)(
                path, microversion=MICROVERSION, timeout=API_TIMEOUT,
                **kwargs)
        except ks_exceptions.ClientException as e:
            raise _Answer(API_ERROR, '%s %s: %s' % (method.upper(), path,
                                                    type(e).__name__))
        if answer.status_code >= 500:
            raise _Answer(API_ERROR, '%s %s: HTTP %d' % (
                method.upper(), path, answer.status_code))
        if answer.status_code >= 400:
            raise _Answer(REFUSED, '%s %s: HTTP %d %s' % (
                method.upper(), path, answer.status_code,
                answer.text[:200]))
        return answer

    def server(self, server_id):
        """The server as the administrator sees it, or None once deleted.

        The administrator sees a fault's details too.
        """
        try:
            answer = self._call('get', '/servers/%s' % server_id,
                                name=cloud_mod.ADMIN_CLOUD)
        except _Answer as e:
            if e.outcome == REFUSED and 'HTTP 404' in str(e):
                return None
            raise
        return answer.json()['server']

    def submit(self, function, *args):
        future = self._pool.submit(self._guarded, function, *args)
        with self._lock:
            self._futures.append(future)
        return future

    @staticmethod
    def _guarded(function, *args):
        try:
            return function(*args)
        except Exception:
            # A bug of the run, not of the cloud: keep going, say it.
            LOG.exception('Chaos operation %s failed', function.__name__)

    def wait(self, timeout=BOUND + API_TIMEOUT):
        """Until every operation submitted so far has ended.

        :returns: whether they all have.
        """
        with self._lock:
            pending = list(self._futures)
        _done, running = concurrent.futures.wait(pending, timeout=timeout)
        return not running

    def give_up(self, stranded):
        """Stop waiting for builds Nova stranded: ``{server id: line}``.

        Nothing will move them but an operator's reset; waiting for the
        bound would only make the run longer.
        """
        with self._lock:
            self._stranded.update(stranded)

    def close(self):
        """No operation starts or waits any more.

        An interrupted run's operations would otherwise poll a cloud that
        is gone for the rest of their bound, and the interpreter waits for
        the pool's threads at exit.
        """
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the plan -----------------------------------------------------------

    def run(self, plan, stopping):
        """Submit each planned operation at its time, until ``stopping``."""
        schedule.play(plan, lambda operation: operation.at, stopping,
                      lambda operation: self.submit(self._planned,
                                                    operation))

    def _planned(self, operation):
        rng = random.Random('%s-%d' % (self.seed, operation.index))
        kind = operation.kind
        if kind in (schedule.BOOT, schedule.BURST) and (
                self.live_count() >= self.max_live):
            kind = schedule.DELETE
        if kind == schedule.BOOT:
            return self.boot(operation.flavor)
        if kind == schedule.BURST:
            return self.burst(operation.flavor)
        server_id = self._choose(rng, allow_error=kind == schedule.DELETE)
        if server_id is None:
            return None
        try:
            if kind == schedule.DELETE:
                return self.delete(server_id)
            if kind == schedule.REBOOT:
                return self._action(server_id, 'reboot',
                                    {'reboot': {'type': 'SOFT'}})
            if kind == schedule.STOP_START:
                if self._action(server_id, 'stop', {'os-stop': None},
                                until='SHUTOFF') == OK:
                    return self._action(server_id, 'start',
                                        {'os-start': None})
                return None
            if kind == schedule.REBUILD:
                return self._action(server_id, 'rebuild', {'rebuild': {
                    'imageRef': self.cloud.image_id}})
        finally:
            with self._lock:
                self._busy.discard(server_id)
        raise ValueError('Unknown operation %r' % kind)

    def live_count(self):
        latest = self.observer.latest
        if latest is None:
            return 0
        return sum(1 for s in latest['servers'] if s['id'] in self.created)

    def _choose(self, rng, allow_error=False):
        """A server of the run's that nothing acts on now, or None."""
        latest = self.observer.latest
        if latest is None:
            return None
        states = ('ACTIVE', 'ERROR') if allow_error else ('ACTIVE',)
        with self._lock:
            choices = sorted(s['id'] for s in latest['servers']
                             if s['id'] in self.created
                             and s['id'] not in self._busy
                             and s['status'] in states
                             and not s.get('task_state'))
            if not choices:
                return None
            chosen = rng.choice(choices)
            self._busy.add(chosen)
            return chosen

    # -- operations ---------------------------------------------------------

    def free_for(self, flavor_name):
        """Nodes free for a flavor now, as the latest look saw them."""
        latest = self.observer.latest
        if latest is None:
            return 0
        flavor = self.flavors[flavor_name]
        return sum(1 for node in latest['nodes']
                   if flavor.matches(node) and not node.get('owner')
                   and not node.get('instance_uuid')
                   and not node.get('maintenance')
                   and node.get('provision_state') == 'available')

    def roomiest_flavor(self, host=None):
        """The flavor with the most free nodes (on ``host``'s provider).

        Each compute offers placement the free nodes of its own shards: a
        boot sent to ``host`` needs a flavor that it offers.
        """
        if host is None:
            return max(sorted(self.flavors), key=self.free_for)
        views = self.observer.placement_views().get(host, {})

        def offered(name):
            view = views.get(self.flavors[name].placement_class)
            return (view['free'] if view else 0), self.free_for(name)

        return max(sorted(self.flavors), key=offered)

    def post_boot(self, flavor_name, origin='workload', host=None):
        """POST one server; returns ``(server id, operation record)``.

        The record is ended here on an API error (server id None).
        """
        name = 'chaos-%s-%d' % (flavor_name, len(self.created))
        record = self.history.operation(schedule.BOOT, flavor=flavor_name,
                                        origin=origin, host=host)
        body = {'name': name, 'flavorRef': self.cloud.flavors[flavor_name],
                'imageRef': self.cloud.image_id, 'networks': 'none'}
        if host:
            body['host'] = host
        try:
            answer = self._call('post', '/servers', json={'server': body},
                                name=cloud_mod.ADMIN_CLOUD if host
                                else cloud_mod.DEMO_CLOUD)
        except _Answer as e:
            self.history.end(record, outcome=e.outcome, detail=str(e))
            return None, record
        server_id = answer.json()['server']['id']
        with self._lock:
            self.created[server_id] = name
        record['server'] = server_id
        # Nova's logs name it where a failure names no instance (a build
        # whose scheduling failed before the instance reached a cell).
        record['create_request'] = _request_id(answer)
        return server_id, record

    def boot(self, flavor_name, origin='workload', host=None):
        """POST a server and wait for it; returns the operation record."""
        server_id, record = self.post_boot(flavor_name, origin, host)
        if server_id is not None:
            self.settle(server_id, record, until='ACTIVE')
        return record

    def burst(self, flavor_name):
        """Boots beyond the nodes free for the flavor, all at once."""
        count = min(BURST_MAX, self.free_for(flavor_name) + 2)
        posted = [self.post_boot(flavor_name, origin='burst')
                  for _ in range(count)]
        futures = [self.submit(self.settle, server_id, record, 'ACTIVE')
                   for server_id, record in posted if server_id]
        concurrent.futures.wait(futures, timeout=BOUND + API_TIMEOUT)

    def delete(self, server_id, origin='workload'):
        record = self.history.operation(schedule.DELETE, server=server_id,
                                        origin=origin)
        try:
            answer = self._call('delete', '/servers/%s' % server_id,
                                name=cloud_mod.ADMIN_CLOUD)
        except _Answer as e:
            self.history.end(record, outcome=e.outcome, detail=str(e))
            return e.outcome
        record['request'] = _request_id(answer)
        return self.settle(server_id, record, until=None)

    def _action(self, server_id, kind, body, until='ACTIVE'):
        record = self.history.operation(kind, server=server_id,
                                        origin='workload')
        try:
            answer = self._call('post', '/servers/%s/action' % server_id,
                                json=body, name=cloud_mod.ADMIN_CLOUD)
        except _Answer as e:
            self.history.end(record, outcome=e.outcome, detail=str(e))
            return e.outcome
        record['request'] = _request_id(answer)
        return self.settle(server_id, record, until=until)

    def settle(self, server_id, record, until, bound=BOUND):
        """Wait for the server to reach ``until`` (None: deleted) or ERROR.

        Ends ``record`` with the outcome; returns it (None, the record not
        ended, once the workload is closed).
        """
        deadline = time.monotonic() + bound
        server = None
        while True:
            try:
                server = self.server(server_id)
            except _Answer:
                server = server or {}  # Nova's API is down: keep waiting.
            else:
                stranded = self._stranded.get(server_id)
                if stranded and _left_by_nova(server):
                    self.history.end(record, outcome=STRANDED,
                                     detail=stranded)
                    return STRANDED
                acting = record.get('request') is not None
                outcome = _outcome(server, until, acting)
                if outcome == OK and acting and server is not None:
                    failed = self._failed_event(server_id,
                                                record['request'])
                    if failed:
                        outcome, record['detail'] = FAILED, failed
                if outcome is not None:
                    details = {}
                    if outcome == ERROR and server is not None:
                        fault = server.get('fault') or {}
                        details = {'detail': fault.get('message'),
                                   'fault_class': logscan.classify_fault(
                                       fault)}
                    self.history.end(record, outcome=outcome, **details)
                    return outcome
            if time.monotonic() >= deadline:
                state = '%s/%s' % (server.get('status'), server.get(
                    'OS-EXT-STS:task_state')) if server else 'unknown'
                self.history.end(record, outcome=TIMEOUT,
                                 detail='still %s after %d s' % (state,
                                                                 bound))
                self.history.violation(invariants.BOUNDED, '%s of %s: still '
                                       '%s after %d s' % (record['kind'],
                                                          server_id, state,
                                                          bound))
                return TIMEOUT
            if self._closed.wait(POLL):
                return None

    def _failed_event(self, server_id, request_id):
        """The failed event of an action's instance action, or None."""
        try:
            answer = self._call(
                'get', '/servers/%s/os-instance-actions/%s' % (
                    server_id, request_id), name=cloud_mod.ADMIN_CLOUD)
        except _Answer:
            return None
        events = answer.json()['instanceAction'].get('events') or []
        for event in events:
            if event.get('result') == 'Error':
                return '%s failed' % event.get('event')
        return None


def _request_id(answer):
    return answer.headers.get('x-openstack-request-id')


def _outcome(server, until, acting=False):
    """OK, ERROR, FAILED or None (not yet) for a server (None: deleted).

    ``acting``: an action (not a boot), whose task Nova set before it
    answered: once it is over, the server is as the action left it.
    """
    if server is None:
        return OK if until is None else ERROR
    status = server['status']
    if until is None and status == 'DELETED':
        # Deleted, and not yet gone from the database.
        return OK
    if server.get('OS-EXT-STS:task_state'):
        return None
    if status == 'ERROR':
        return ERROR
    if until is not None and status == until:
        return OK
    if acting and status != 'BUILD':
        return FAILED
    return None


def _left_by_nova(server):
    """Whether ``server`` is as Nova leaves what it strands.

    A build with no host yet, or a task on a server past its build.
    """
    if not server:
        return False
    if server.get('status') == 'BUILD':
        return not server.get('OS-EXT-SRV-ATTR:host')
    return bool(server.get('OS-EXT-STS:task_state'))


def server_dicts(compute):
    """Every server of every project, as :mod:`.invariants` wants them."""
    answer = compute.get('/servers/detail?all_tenants=1',
                         microversion=MICROVERSION, timeout=API_TIMEOUT)
    answer.raise_for_status()
    return [{'id': s['id'], 'name': s['name'], 'status': s['status'],
             'task_state': s.get('OS-EXT-STS:task_state'),
             'host': s.get('OS-EXT-SRV-ATTR:host'),
             'project_id': s.get('tenant_id')}
            for s in answer.json()['servers']]


def node_truth(nodes):
    """Free nodes per resource class (:func:`checks.ironic_truth`)."""
    return {rc: counts['free']
            for rc, counts in checks.ironic_truth(nodes).items()}
