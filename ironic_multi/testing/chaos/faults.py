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

"""The faults of a chaos run, each injected at its planned time.

Every fault runs in a thread of its own, so that they overlap as planned;
each is recorded in the history from its injection to its end (the
process back, the link healed, the proxy fault removed).  Kills aim at a
phase of a build or a delete on the victim compute, with an operation of
their own (the administrator's boot on that host):

``kill-claim``
    the claim's PATCH (found by its instance UUID) is held in the
    computes' Ironic proxy, and the compute is killed while it waits for
    the answer; the claim lands after the claimer died.
``kill-deploy``
    killed while the node of its boot is ``deploying``.
``kill-delete``
    killed while the node of an instance it deletes is being torn down.

After a RabbitMQ or Ironic restart a probe boots servers until one goes
ACTIVE: the time from the end of the restart to that ACTIVE is the
recovery time.

The :class:`Supervisor` is the machine's init system: it starts again a
process that exited when no fault holds it down (a nova-compute that
could not start while Keystone's database restarted exits, as Nova does,
and systemd would start it again).
"""

import collections
import contextlib
import signal
import threading
import time

from oslo_log import log as logging

from ironic_multi.testing.chaos import schedule
from ironic_multi.testing.chaos import workload as workload_mod
from ironic_multi.testing import ironic_nodes

LOG = logging.getLogger(__name__)

# Seconds the claim of a kill-claim is held in the proxy: the compute is
# killed in the meantime.
CLAIM_HOLD = 6
# Seconds a kill waits for its phase before it kills all the same.
CATCH_TIMEOUT = 30
DEPLOYING = ('deploying', 'wait call-back', 'deploy wait')
TEARING_DOWN = ('deleting', 'cleaning', 'clean wait', 'tearing down')
# Seconds a probe keeps booting until one server is ACTIVE.
PROBE_TIMEOUT = 240
PROBED = (schedule.RABBITMQ, schedule.IRONIC)


class Supervisor(object):
    """Starts again every process of the cloud that exited unasked.

    ``down(name)`` holds a process down for a fault; the respawns are
    recorded in ``history.respawns``.
    """

    PERIOD = 2.0

    def __init__(self, cloud, history):
        self.cloud = cloud
        self.history = history
        self.respawns = history.respawns
        self._held = collections.Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='chaos-supervisor')

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join(timeout=30)

    @contextlib.contextmanager
    def down(self, name):
        """Leave ``name`` alone while the block runs (a fault's)."""
        with self._lock:
            self._held[name] += 1
        try:
            yield
        finally:
            with self._lock:
                self._held[name] -= 1

    def _run(self):
        while not self._stop.wait(self.PERIOD):
            for name, service in list(self.cloud.services.items()):
                with self._lock:
                    held = self._held[name] > 0
                if held or service.running:
                    continue
                LOG.info('Supervisor: %s exited (%s); starting it again',
                         name, service.returncode)
                self.respawns.append({'t': self.history.clock(),
                                      'service': name,
                                      'code': service.returncode})
                try:
                    self.cloud.start(name, wait=False)
                except Exception as e:
                    LOG.warning('Supervisor: %s did not start: %s', name, e)


class Injector(object):
    """Injects planned faults into a cloud, each in a thread of its own."""

    def __init__(self, cloud, history, workload, observer, supervisor):
        self.cloud = cloud
        self.history = history
        self.workload = workload
        self.observer = observer
        self.supervisor = supervisor
        self.threads = []
        self.hosts = list(cloud.computes)
        self._local = threading.local()

    def run(self, plan, stopping):
        """Inject each fault at its time, until ``stopping``."""
        schedule.play(plan, lambda fault: fault.start, stopping, self._start)

    def _start(self, fault):
        thread = threading.Thread(target=self._inject, args=(fault,),
                                  name='chaos-%s' % fault.kind, daemon=True)
        self.threads.append(thread)
        thread.start()

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in self.threads if t.is_alive()]

    def _inject(self, fault):
        host = None if fault.compute is None else self.hosts[fault.compute]
        record = self.history.fault(fault.kind, target=host)
        LOG.info('Fault %s%s begins', fault.kind,
                 ' on %s' % host if host else '')
        try:
            getattr(self, '_' + fault.kind.replace('-', '_'))(
                fault, host, record)
        except Exception as e:
            record['error'] = '%s: %s' % (type(e).__name__, e)
            LOG.exception('Fault %s could not be injected as planned',
                          fault.kind)
        finally:
            if record['end'] is None:
                self.history.end(record)
            LOG.info('Fault %s%s ends', fault.kind,
                     ' on %s' % host if host else '')
        if fault.kind in PROBED:
            self.probe(fault.kind, record)

    # -- a compute's process ------------------------------------------------

    def _service(self, host):
        return self.cloud.compute_service(host)

    def _kill(self, host, record, caught, back_after):
        """SIGKILL; the compute starts again ``back_after`` seconds later."""
        service = self._service(host)
        with self.supervisor.down(service):
            self.cloud.kill(service, signal.SIGKILL)
            record['caught'] = caught
            record['killed_at'] = self.history.clock()
            time.sleep(back_after)
            self.cloud.start(service, wait=False)
        self.history.end(record)

    def _boot_on(self, host, fault, record):
        """The fault's own boot on ``host``: its server id, or None."""
        server_id, boot = self.workload.post_boot(
            self.workload.roomiest_flavor(host), origin=fault.kind,
            host=host)
        record['server'] = server_id
        if server_id is None:
            record['caught'] = False
        return server_id, boot

    def _kill_claim(self, fault, host, record):
        proxy = self.cloud.ironic_proxy
        server_id, boot = self._boot_on(host, fault, record)
        if server_id is None:
            return
        held = proxy.add_fault('delay', method='PATCH', path=r'^/v1/nodes/',
                               body=server_id, count=1, seconds=CLAIM_HOLD)
        try:
            caught = _wait(lambda: held.applied, CATCH_TIMEOUT)
            self.workload.submit(self.workload.settle, server_id, boot,
                                 'ACTIVE')
            self._kill(host, record, caught, fault.hold)
        finally:
            proxy.remove_fault(held)

    def _kill_deploy(self, fault, host, record):
        server_id, boot = self._boot_on(host, fault, record)
        if server_id is None:
            return
        caught = _wait(lambda: self._node_state(server_id) in DEPLOYING,
                       CATCH_TIMEOUT, poll=0.1)
        self.workload.submit(self.workload.settle, server_id, boot, 'ACTIVE')
        self._kill(host, record, caught, fault.hold)

    def _kill_delete(self, fault, host, record):
        server_id = self._active_on(host)
        if server_id is None:
            server_id, boot = self._boot_on(host, fault, record)
            if server_id is None:
                return
            if self.workload.settle(server_id, boot,
                                    'ACTIVE') != workload_mod.OK:
                record['caught'] = False
                return
        record['server'] = server_id
        deleting = self.workload.submit(self.workload.delete, server_id,
                                        fault.kind)

        def torn_down():
            state = self._node_state(server_id)
            return state is None or state in TEARING_DOWN

        caught = _wait(torn_down, CATCH_TIMEOUT, poll=0.1)
        self._kill(host, record, caught, fault.hold)
        deleting.result(timeout=workload_mod.BOUND * 2)

    def _active_on(self, host):
        latest = self.observer.latest or {'servers': []}
        for server in latest['servers']:
            if (server['host'] == host and server['status'] == 'ACTIVE'
                    and not server.get('task_state')
                    and server['id'] in self.workload.created):
                return server['id']
        return None

    def _node_state(self, server_id):
        # Each fault's thread has a session of its own.
        if not hasattr(self._local, 'ironic'):
            self._local.ironic = ironic_nodes.admin_nodes(
                self.cloud.ironic_server)
        nodes = self._local.ironic.list_nodes(
            fields=('provision_state',), instance_uuid=server_id)
        return nodes[0]['provision_state'] if nodes else None

    def _sigstop_compute(self, fault, host, record):
        service = self._service(host)
        self.cloud.kill(service, signal.SIGSTOP)
        try:
            time.sleep(fault.hold)
        finally:
            self.cloud.kill(service, signal.SIGCONT)

    def _sigterm_compute(self, fault, host, record):
        service = self._service(host)
        with self.supervisor.down(service):
            record['exit_code'] = self.cloud.stop(service)
            time.sleep(fault.hold)
            self.cloud.start(service, wait=False)

    def _etcd_partition(self, fault, host, record):
        self.cloud.partition(host)
        try:
            time.sleep(fault.hold)
        finally:
            self.cloud.heal(host)

    # -- services for everyone ----------------------------------------------

    def _restart(self, name):
        with self.supervisor.down(name):
            self.cloud.restart(name)

    def _rabbitmq_restart(self, fault, host, record):
        self._restart('rabbitmq')

    def _ironic_restart(self, fault, host, record):
        self._restart('ironic')

    def _database_restart(self, fault, host, record):
        self._restart('database')

    def _etcd_down(self, fault, host, record):
        with self.supervisor.down('etcd'):
            self.cloud.stop('etcd')
            try:
                time.sleep(fault.seconds)
            finally:
                self.cloud.start('etcd')

    # -- Ironic as the computes see it ---------------------------------------

    def _proxy_fault(self, kind, seconds):
        proxy = self.cloud.ironic_proxy
        fault = proxy.add_fault(kind)
        try:
            time.sleep(seconds)
        finally:
            proxy.remove_fault(fault)

    def _ironic_503(self, fault, host, record):
        self._proxy_fault('status_503', fault.seconds)

    def _ironic_stall(self, fault, host, record):
        self._proxy_fault('stall', fault.seconds)

    def _ironic_lost_answers(self, fault, host, record):
        self._proxy_fault('drop_answer', fault.seconds)

    # -- recovery -----------------------------------------------------------

    def probe(self, kind, record):
        """Boot until one server is ACTIVE; record how long it took."""
        deadline = time.monotonic() + PROBE_TIMEOUT
        tries = 0
        while time.monotonic() < deadline:
            tries += 1
            boot = self.workload.boot(self.workload.roomiest_flavor(),
                                      origin='probe')
            if boot['outcome'] == workload_mod.OK:
                self.history.recovery(
                    'first ACTIVE boot after %s' % kind,
                    boot['end'] - record['end'], '%d boot(s)' % tries)
                return
        self.history.recovery('first ACTIVE boot after %s' % kind,
                              PROBE_TIMEOUT, 'none within %d s'
                              % PROBE_TIMEOUT)


def _wait(condition, timeout, poll=0.05):
    """Until ``condition()``; True, or False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except Exception as e:  # Ironic restarting: look again.
            LOG.debug('Waiting for a fault\'s moment: %s', e)
        time.sleep(poll)
    return False
