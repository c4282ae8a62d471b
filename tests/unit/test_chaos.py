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

"""The chaos run's plans, checks, log reading and timeline, on their own.

The run itself needs the multi-process cloud: tests/cloud/test_chaos.py.
"""

import collections
import contextlib
import itertools
import pathlib
import threading
import time
from unittest import mock

import pytest

from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi.testing.chaos import history as history_mod
from ironic_multi.testing.chaos import invariants
from ironic_multi.testing.chaos import logscan
from ironic_multi.testing.chaos import report
from ironic_multi.testing.chaos import schedule
from ironic_multi.testing.chaos import timeline
from ironic_multi.testing import checks

SEEDS = range(60)
MEMBERSHIP_TIMEOUT = 20


# -- plans -------------------------------------------------------------------

@pytest.mark.parametrize('seed', SEEDS)
def test_a_reduced_plan_has_each_kind_once(seed):
    plan = schedule.plan_faults(seed, 240, 3, MEMBERSHIP_TIMEOUT,
                                reduced=True)
    assert sorted(f.kind for f in plan) == sorted(schedule.KINDS)
    assert all(0 <= f.start and f.end <= 240 for f in plan)


@pytest.mark.parametrize('seed', SEEDS)
def test_no_compute_or_resource_takes_two_faults_at_once(seed):
    plan = schedule.plan_faults(seed, 600, 3, MEMBERSHIP_TIMEOUT)
    for a, b in itertools.combinations(plan, 2):
        if not a.overlaps(b):
            continue
        if a.compute is not None and b.compute is not None:
            assert a.compute != b.compute, (a, b)
        resource = schedule.RESOURCES.get(a.kind)
        assert resource is None or resource != schedule.RESOURCES.get(
            b.kind), (a, b)
    # One compute is spared at every moment.
    for fault in plan:
        busy = {f.compute for f in plan
                if f.compute is not None and f.start <= fault.start < f.end}
        assert len(busy) <= 2


def test_faults_overlap():
    for seed in SEEDS:
        plan = schedule.plan_faults(seed, 240, 3, MEMBERSHIP_TIMEOUT,
                                    reduced=True)
        overlapping = sum(1 for a, b in itertools.combinations(plan, 2)
                          if a.overlaps(b))
        assert overlapping >= 3, (seed, plan)


def test_a_full_plan_repeats_kinds_and_a_seed_repeats_its_plan():
    plan = schedule.plan_faults(3, 480, 3, MEMBERSHIP_TIMEOUT)
    assert set(f.kind for f in plan) == set(schedule.KINDS)
    assert len(plan) > len(schedule.KINDS)
    assert plan == schedule.plan_faults(3, 480, 3, MEMBERSHIP_TIMEOUT)
    assert plan != schedule.plan_faults(4, 480, 3, MEMBERSHIP_TIMEOUT)


def test_a_stopped_compute_outlives_the_membership_timeout():
    plan = schedule.plan_faults(1, 240, 3, MEMBERSHIP_TIMEOUT, reduced=True)
    (stop,) = [f for f in plan if f.kind == schedule.STOP_COMPUTE]
    assert stop.hold > MEMBERSHIP_TIMEOUT


def test_a_window_too_short_is_refused():
    with pytest.raises(schedule.PlanError, match='too short'):
        schedule.plan_faults(1, 60, 3, MEMBERSHIP_TIMEOUT, reduced=True)


def test_the_workload_plan():
    plan = schedule.plan_operations(5, 600, ['gold', 'silver'])
    assert plan == schedule.plan_operations(5, 600, ['gold', 'silver'])
    assert [o.index for o in plan] == list(range(len(plan)))
    assert all(0 < o.at < 600 for o in plan)
    assert plan == sorted(plan, key=lambda o: o.at)
    kinds = collections.Counter(o.kind for o in plan)
    assert set(kinds) == set(schedule.OPERATIONS)
    assert all((o.flavor is not None) == (o.kind in (schedule.BOOT,
                                                     schedule.BURST))
               for o in plan)
    # About one every MEAN_GAP seconds.
    expected = 600 / schedule.MEAN_GAP
    assert expected / 2 < len(plan) < expected * 2


# -- checks ------------------------------------------------------------------

def _server(server_id, status='ACTIVE', task=None, project='demo',
            host='compute-1'):
    return {'id': server_id, 'name': 'n-%s' % server_id, 'status': status,
            'task_state': task, 'project_id': project, 'host': host}


def _node(uuid, instance=None, owner=None, **fields):
    return dict({'uuid': uuid, 'name': uuid, 'instance_uuid': instance,
                 'owner': owner, 'lessee': None,
                 'provision_state': 'active' if instance else 'available'},
                **fields)


def test_a_healthy_sample_holds():
    servers = [_server('a'), _server('b', 'BUILD', 'spawning')]
    nodes = [_node('n1', 'a'), _node('n2', 'b'), _node('n3')]
    last = {}
    assert invariants.check_sample(servers, nodes, servers, last) == []
    assert last == {'a': 'n1'}


def test_an_instance_on_two_nodes():
    servers = [_server('a')]
    found = invariants.check_sample(
        servers, [_node('n1', 'a'), _node('n2', 'a')], servers, {})
    assert [f[0] for f in found] == [invariants.ONE_NODE_PER_INSTANCE]


def test_a_node_that_went_to_another_instance_is_given_twice():
    servers = [_server('a'), _server('b', 'BUILD', 'spawning')]
    last = {}
    invariants.check_sample(servers, [_node('n1', 'a')], servers, last)
    found = invariants.check_sample(servers, [_node('n1', 'b')], servers,
                                    last)
    assert [f[0] for f in found] == [invariants.GIVEN_TWICE]
    assert 'n1' in found[0][1] and 'now serves instance b' in found[0][1]


def test_an_active_server_without_a_node():
    servers = [_server('a')]
    found = invariants.check_sample(servers, [_node('n1')], servers, {})
    assert [f[0] for f in found] == [invariants.ACTIVE_HOLDS_A_NODE]


@pytest.mark.parametrize('before,after', [
    # Became ACTIVE after the nodes were read: not steady.
    (_server('a', 'BUILD', 'spawning'), _server('a')),
    # Being deleted, or gone, by the second listing.
    (_server('a'), _server('a', 'ACTIVE', 'deleting')),
    (_server('a'), None),
    (_server('a'), _server('a', 'ERROR')),
])
def test_servers_in_transition_are_not_judged(before, after):
    found = invariants.check_sample([before], [_node('n1')],
                                    [after] if after else [], {})
    assert found == []


def test_a_node_of_another_project():
    servers = [_server('a', project='demo')]
    found = invariants.check_sample(
        servers, [_node('n1', 'a', owner='other')], servers, {})
    assert [f[0] for f in found] == [invariants.PROJECT]
    assert invariants.check_sample(
        servers, [_node('n1', 'a', owner='demo')], servers, {}) == []
    # Another deployer's node is not ours to judge.
    assert invariants.check_sample(
        servers, [_node('n1', 'a', owner='other')], servers, {},
        foreign={'n1'}) == []


def test_foreign_nodes_and_allocations_kept():
    node = _node('f1', 'x', maintenance=False, power_state='power on',
                 instance_info={'a': 1}, extra={}, conductor_group='')
    baseline = {'f1': invariants.kept(node)}
    allocations = {'al': {'uuid': 'al', 'state': 'active'}}
    assert invariants.check_foreign(baseline, [node],
                                    list(allocations.values()),
                                    allocations) == []
    torn_down = dict(node, instance_uuid=None, provision_state='deleting')
    (found,) = invariants.check_foreign(baseline, [torn_down])
    assert found[0] == invariants.FOREIGN_UNTOUCHED
    assert 'instance_uuid' in found[1] and 'provision_state' in found[1]
    (found,) = invariants.check_foreign(baseline, [node], [], allocations)
    assert 'allocation al' in found[1]


FOREIGN = '0d3a25b8-472c-4d79-b148-a111fbaf7c2d'
OURS = '5de257c6-0a8e-4a51-9d4f-6a1b2c3d4e5f'
# Ironic's access log, as a chaos run wrote it.
IRONIC_LOG = '''\
2026-11-26 09:02:40.100 20547 INFO ironic.api [None req-1 c46a - - all \
default -] 127.0.0.1 - PATCH /v1/nodes/%(foreign)s - 200 (30.1ms)
2026-11-26 09:02:48.763 20547 INFO ironic.api [None req-2 26fe - - all \
default -] 127.0.0.1 - GET /v1/nodes/%(foreign)s?fields=uuid - 200 (4.9ms)
2026-11-26 09:03:58.801 20547 INFO ironic.api [None req-3 26fe - - all \
default -] 127.0.0.1 - PUT /v1/nodes/%(foreign)s/states/provision - 400 \
(12.0ms)
2026-11-26 09:03:59.001 20547 INFO ironic.api [None req-4 26fe - - all \
default -] 127.0.0.1 - PATCH /v1/nodes/%(ours)s - 200 (20.0ms)
''' % {'foreign': FOREIGN, 'ours': OURS}


def test_a_write_sent_to_a_foreign_node_is_a_violation_refused_or_not(
        tmp_path):
    (tmp_path / logscan.IRONIC_LOG).write_text(IRONIC_LOG)
    seeded = logscan._wall('2026-11-26 09:02:45.000')

    writes = logscan.node_writes(str(tmp_path), {FOREIGN}, since=seeded)

    # The seeding's own PATCH came before; reads and our nodes' writes
    # are not counted.
    assert [(m, p, s) for _w, m, p, s in writes] == [
        ('PUT', '/v1/nodes/%s/states/provision' % FOREIGN, 400)]
    (found,) = invariants.check_foreign_writes(writes)
    assert found == (invariants.FOREIGN_UNTOUCHED,
                     'PUT /v1/nodes/%s/states/provision sent (HTTP 400)'
                     % FOREIGN)
    assert logscan.node_writes(str(tmp_path / 'none'), {FOREIGN},
                               since=seeded) == []


def test_settled_leaks_and_host_marks():
    servers = [_server('a'), _server('b', 'BUILD', 'spawning'),
               _server('c', 'ACTIVE', host='compute-2')]
    assert invariants.check_settled(servers) == [
        (invariants.SETTLED, 'server n-b (b) is BUILD/spawning')]
    nodes = [_node('n1', 'a'), _node('n2', 'gone'), _node('f', 'theirs')]
    assert [f[0] for f in invariants.check_leaks(servers, nodes, {'f'})] == [
        invariants.NO_LEAK]

    def marked(uuid, instance, host, group='g'):
        return _node(uuid, instance, instance_info={
            deploy.HOST_KEY: host,
            ownership.KEY: {instance: ownership.mark(group)}})

    servers.append(_server('d', 'ERROR', host=None))
    nodes = [marked('n1', 'a', 'compute-1'), marked('n3', 'c', 'compute-1'),
             marked('n4', 'c', 'compute-1', group='other'),
             marked('n5', 'd', 'compute-1')]
    (found,) = invariants.check_host_marks(servers, nodes, 'g')
    assert found[0] == invariants.ONE_MANAGER and 'n3' in found[1]


# -- logs --------------------------------------------------------------------

HEAD = '2026-11-25 12:00:%02d.123 4242 %s %s [req-1 - - - - -] '
# A traceback line: the same head, no request context (oslo.log's
# logging_exception_prefix).
TB = '2026-11-25 12:00:%02d.123 4242 %s %s '
LOG_TEXT = '\n'.join([
    HEAD % (1, 'INFO', 'nova.compute.manager') + 'fine',
    # A typed error of ours, with its traceback.
    HEAD % (2, 'ERROR', 'nova.compute.manager') + 'Build failed',
    TB % (2, 'ERROR', 'nova.compute.manager') +
    'Traceback (most recent call last):',
    TB % (2, 'ERROR', 'nova.compute.manager') +
    '  File "/x/ironic_multi/_virt/driver.py", line 3, in spawn',
    TB % (2, 'ERROR', 'nova.compute.manager') +
    'ironic_multi.exception.NoNodeAvailable: no node',
    # A bug: a KeyError through our code.
    HEAD % (3, 'ERROR', 'ironic_multi._reservation.worker') +
    'Periodic refresh failed unexpectedly',
    TB % (3, 'ERROR', 'ironic_multi._reservation.worker') +
    'Traceback (most recent call last):',
    TB % (3, 'ERROR', 'ironic_multi._reservation.worker') +
    '  File "/x/ironic_multi/_reservation/ring.py", line 9, in f',
    TB % (3, 'ERROR', 'ironic_multi._reservation.worker') +
    'KeyError: \'rack-1\'',
    # The broker restarting: Nova's library, not our code.
    HEAD % (4, 'ERROR', 'oslo.messaging._drivers.impl_rabbit') +
    'Connection failed: [Errno 111] ECONNREFUSED',
    HEAD % (5, 'ERROR', 'nova.servicegroup.drivers.db') +
    'Unexpected error while reporting service status',
    TB % (5, 'ERROR', 'nova.servicegroup.drivers.db') +
    'Traceback (most recent call last):',
    TB % (5, 'ERROR', 'nova.servicegroup.drivers.db') +
    'oslo_messaging.exceptions.MessagingTimeout: Timed out',
    '2026-11-25 12:00:06.000 4242 INFO ironic_multi._reservation.leader '
    '[-] Member compute-1:4242:ab now leads housekeeper',
    '2026-11-25 12:00:07.000 4242 WARNING ironic_multi._reservation.leader '
    '[-] Member compute-1:4242:ab stands down from leading housekeeper',
]) + '\n'


@pytest.fixture
def log_dir(tmp_path):
    (tmp_path / 'nova-compute-compute-1.log').write_text(LOG_TEXT)
    (tmp_path / 'keystone.log').write_text(
        HEAD % (1, 'ERROR', 'keystone') + 'not a Nova log\n')
    return tmp_path


def test_error_records_and_their_classes(log_dir):
    records = logscan.errors(str(log_dir))
    assert [(r.logger, r.exception, logscan.classify(r)) for r in records] == [
        ('nova.compute.manager', 'ironic_multi.exception.NoNodeAvailable',
         logscan.TYPED),
        ('ironic_multi._reservation.worker', 'KeyError', logscan.UNTYPED),
        ('oslo.messaging._drivers.impl_rabbit', None, logscan.TYPED),
        ('nova.servicegroup.drivers.db',
         'oslo_messaging.exceptions.MessagingTimeout',
         logscan.INFRASTRUCTURE),
    ]
    assert records[0].service == 'nova-compute-compute-1'
    assert records[0].message == 'Build failed'
    summary = logscan.summary(records)
    assert summary[logscan.UNTYPED] == {'KeyError': 1}


def test_two_records_in_one_millisecond_stay_two(tmp_path):
    # Planted: an untyped traceback, then at once a plain ERROR line of
    # the same logger.  Merged, the KeyError would pass as typed.
    logger = 'ironic_multi._reservation.worker'
    (tmp_path / 'nova-compute-compute-1.log').write_text('\n'.join([
        HEAD % (3, 'ERROR', logger) + 'Refresh failed',
        TB % (3, 'ERROR', logger) + 'Traceback (most recent call last):',
        TB % (3, 'ERROR', logger) + '  File "/x/ironic_multi/a.py", line 9',
        TB % (3, 'ERROR', logger) + "KeyError: 'rack-1'",
        HEAD % (3, 'ERROR', logger) + 'Pool refill failed: Ironic is away',
        (TB % (3, 'ERROR', logger)).replace('4242', '4243') +
        'other process',
    ]) + '\n')
    records = logscan.errors(str(tmp_path))
    assert [(r.message, r.exception, logscan.classify(r))
            for r in records] == [
        ('Refresh failed', 'KeyError', logscan.UNTYPED),
        ('Pool refill failed: Ironic is away', None, logscan.TYPED),
        ('other process', None, logscan.TYPED)]


def test_errors_since(log_dir):
    since = logscan._wall('2026-11-25 12:00:03.000')
    records = logscan.errors(str(log_dir), since=since)
    assert [r.exception for r in records] == [
        'KeyError', None, 'oslo_messaging.exceptions.MessagingTimeout']


@pytest.mark.parametrize('name,typed', [
    ('ironic_multi.exception.DeployFailed', True),
    ('ironic_multi.exception.NoSuchThing', False),
    ('ironic_multi._reservation.housekeeper._Changed', False),
    ('nova.exception.RescheduledException', True),
    ('nova.exception_Remote.InstanceNotFound_Remote', True),
    ('KeyError', False),
    ('tooz.coordination.ToozError', False),
])
def test_typed_exceptions(name, typed):
    assert logscan.is_typed_exception(name) is typed


def test_instance_faults():
    rescheduled = {'message': 'Exceeded maximum number of retries.',
                   'details': 'Traceback (most recent call last):\n'
                              '  File "/x/nova/conductor/manager.py"\n'
                              'nova.exception.MaxRetriesExceeded: x'}
    assert logscan.classify_fault(rescheduled) == logscan.TYPED
    assert logscan.classify_fault({'message': 'KeyError'}) == logscan.UNTYPED
    ours = {'message': 'x', 'details': 'Traceback:\n  File "/x/ironic_multi'
                                       '/a.py"\nAttributeError: y'}
    assert logscan.classify_fault(ours) == logscan.UNTYPED


def test_leadership_events(log_dir):
    events = logscan.leadership(str(log_dir))
    assert [(member, kind) for _, member, kind in events] == [
        ('compute-1:4242:ab', 'leads'), ('compute-1:4242:ab', 'stands down')]


def _handovers(monkeypatch, tmp_path, faults, events):
    """The handovers a run tells.

    ``faults`` are ``(kind, start, killed)`` on compute-2, ``events``
    ``(seconds, member, kind)``.
    """
    from ironic_multi.testing.chaos import run

    chaos = run.ChaosRun(run.Options(minutes=1, seed=3,
                                     output=str(tmp_path)))
    history = chaos.history
    for kind, start, killed in faults:
        record = history.fault(kind, target='compute-2')
        record['start'], record['killed_at'] = start, killed
    monkeypatch.setattr(logscan, 'leadership', lambda log_dir: [
        (history.wall + at, member, kind) for at, member, kind in events])
    chaos._leadership(str(tmp_path))
    return [(r['what'], round(r['seconds'], 1)) for r in history.recoveries]


LEADS = [(1, 'compute-2:1:a', 'leads'), (120, 'compute-3:1:b', 'leads')]


def test_a_kill_that_killed_nothing_hands_nothing_over(monkeypatch,
                                                       tmp_path):
    # Seed 21 told a handover 670.8 s after a kill that had found no
    # boot to catch: the kill for the takeover, much later, made it.
    assert _handovers(monkeypatch, tmp_path, [
        (schedule.KILL_CLAIM, 10, None), ('kill-takeover', 100, None),
    ], LEADS) == [('leadership handover after kill-takeover', 20.0)]


def test_a_handover_is_the_last_fault_before_it(monkeypatch, tmp_path):
    assert _handovers(monkeypatch, tmp_path, [
        (schedule.STOP_COMPUTE, 10, None), (schedule.KILL_DEPLOY, 100, 105),
    ], LEADS) == [('leadership handover after kill-deploy', 15.0)]


# -- the timeline and the report -----------------------------------------

def _history():
    history = history_mod.History(seed=9)
    history.phase('faults')
    fault = history.fault(schedule.KILL_DEPLOY, target='compute-2')
    history.end(fault, caught=True)
    history.end(history.operation(schedule.BOOT, server='a'), outcome='ok')
    history.end(history.operation(schedule.DELETE, server='a'),
                outcome='error')
    history.sample({'free': {'gold': 3}, 'placement': {'gold': 2}})
    history.recovery('takeover after a kill', 12.34, '1 instance')
    return history


@pytest.mark.parametrize('passed', [True, False])
def test_the_timeline_says_whether_the_run_passed(passed):
    history = _history()
    if not passed:
        history.violation(invariants.NO_LEAK, 'node n1 holds x')
    chart = timeline.figure(history.as_dict(), passed=passed)
    try:
        title = chart._suptitle.get_text()
        labels = [t.get_text() for t in chart.axes[0].get_yticklabels()]
    finally:
        timeline.pyplot.close(chart)
    assert title.startswith('Chaos run, seed 9')
    assert ('FAILED: 1 violation(s)' in title) is not passed
    assert labels == [schedule.KILL_DEPLOY]


def test_the_report_counts():
    run = _history().as_dict()
    counts = report.fault_counts(run)
    assert counts[schedule.KILL_DEPLOY]['count'] == 1
    assert counts[schedule.KILL_DEPLOY]['caught'] == 1
    assert counts[schedule.KILL_DEPLOY]['targets'] == {'compute-2'}
    assert report.operation_counts(run) == {
        schedule.BOOT: {'ok': 1}, schedule.DELETE: {'error': 1}}


def test_lines_about(log_dir):
    (log_dir / 'nova-compute-compute-2.log').write_text(
        HEAD % (8, 'INFO', 'nova.compute.manager') + '[instance: i-1] '
        'Successfully reverted task state from scheduling on failure\n'
        + HEAD % (9, 'INFO', 'nova.compute.manager') + '[instance: i-2] '
        'Took 5 seconds\n')
    found = logscan.lines_about(str(log_dir), {'i-1', 'i-2', 'i-3'},
                                'Successfully reverted task state')
    assert list(found) == ['i-1']
    assert found['i-1'].startswith('nova-compute-compute-2.log: ')


def test_last_lines_about_in_time_order_across_logs(log_dir):
    (log_dir / 'nova-compute-compute-1.log').write_text(''.join(
        HEAD % (second, 'INFO', 'nova.compute.manager')
        + '[instance: i-1] line %d\n' % second for second in (1, 4, 6)))
    (log_dir / 'nova-conductor.log').write_text(
        HEAD % (5, 'ERROR', 'nova.conductor') + 'about i-1\n'
        + HEAD % (7, 'ERROR', 'nova.conductor') + 'about i-2\n')
    lines = logscan.last_lines_about(str(log_dir), 'i-1', count=3)
    assert [line.split(': ', 1)[0] for line in lines] == [
        'nova-compute-compute-1.log', 'nova-conductor.log',
        'nova-compute-compute-1.log']
    assert lines[0].endswith('line 4') and lines[2].endswith('line 6')
    assert logscan.last_lines_about(str(log_dir), 'i-9') == []


def test_an_unsettled_server_carries_novas_last_lines(log_dir, tmp_path):
    from ironic_multi.testing.chaos import run

    (log_dir / 'nova-compute-compute-1.log').write_text(
        HEAD % (3, 'WARNING', 'nova.compute.manager')
        + '[instance: s-1] Instance build timed out. Set to error state.\n')
    chaos = run.ChaosRun(run.Options(minutes=1, seed=3,
                                     output=str(tmp_path)))
    chaos.cloud = mock.Mock(log_dir=str(log_dir))
    servers = [{'id': 's-1', 'name': 'one', 'status': 'ERROR',
                'task_state': 'spawning'},
               {'id': 's-2', 'name': 'two', 'status': 'ACTIVE',
                'task_state': None}]
    found = chaos._with_nova_lines(invariants.check_settled(servers),
                                   servers)
    assert len(found) == 1
    invariant, detail = found[0]
    assert invariant == invariants.SETTLED
    assert detail.startswith('server one (s-1) is ERROR/spawning\n    ')
    assert detail.endswith('Instance build timed out. Set to error state.')


def test_count(log_dir):
    (log_dir / 'ironic.log').write_text(
        'x DBConnectionError\ny\nz DBConnectionError again\n')
    assert logscan.count(str(log_dir), 'DBConnectionError',
                         pattern='ironic.log') == 2
    assert logscan.count(str(log_dir), 'DBConnectionError') == 0


class _Service(object):
    def __init__(self, running):
        self.running = running
        self.returncode = None if running else -9


class _Cloud(object):
    def __init__(self, **services):
        self.services = {name: _Service(running)
                         for name, running in services.items()}
        self.started = []

    def start(self, name, wait=True):
        self.started.append(name)
        self.services[name].running = True


def test_the_supervisor_starts_what_exited_unless_held_down():
    from ironic_multi.testing.chaos import faults

    cloud = _Cloud(a=True, b=False, c=False)
    history = history_mod.History(seed=1)
    supervisor = faults.Supervisor(cloud, history)
    supervisor.PERIOD = 0.01
    with supervisor:
        with supervisor.down('c'):
            deadline = time.monotonic() + 5
            while not cloud.started and time.monotonic() < deadline:
                time.sleep(0.01)
            assert cloud.started == ['b']
        deadline = time.monotonic() + 5
        while len(cloud.started) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert cloud.started == ['b', 'c']
    assert [(r['service'], r['code']) for r in history.respawns] == [
        ('b', -9), ('c', -9)]


def test_the_leader_at_a_moment():
    from ironic_multi.testing.chaos import run

    events = [(10.0, 'a:1:x', 'leads'), (20.0, 'a:1:x', 'stands down'),
              (25.0, 'b:2:y', 'leads'), (40.0, 'c:3:z', 'leads')]
    assert run._leader_at(events, 5.0) is None
    assert run._leader_at(events, 15.0) == 'a:1:x'
    assert run._leader_at(events, 22.0) is None
    assert run._leader_at(events, 30.0) == 'b:2:y'
    assert run._leader_at(events, 50.0) == 'c:3:z'


@pytest.mark.parametrize('server,until,acting,outcome', [
    (None, None, True, 'ok'),
    (None, 'ACTIVE', False, 'error'),
    ({'status': 'ACTIVE', 'OS-EXT-STS:task_state': 'powering-off'},
     'SHUTOFF', True, None),
    ({'status': 'SHUTOFF'}, 'SHUTOFF', True, 'ok'),
    ({'status': 'ERROR'}, 'ACTIVE', True, 'error'),
    # Nova reverted the stop's task: the server is as it was.
    ({'status': 'ACTIVE'}, 'SHUTOFF', True, 'failed'),
    ({'status': 'ACTIVE'}, None, True, 'failed'),
    # Deleted by its compute, a moment before it is gone.
    ({'status': 'DELETED'}, None, True, 'ok'),
    # A boot still waiting (or stranded): not an action's end.
    ({'status': 'BUILD'}, 'ACTIVE', False, None),
])
def test_operation_outcomes(server, until, acting, outcome):
    from ironic_multi.testing.chaos import workload

    assert workload._outcome(server, until, acting) == outcome


def test_play_acts_in_order_and_stops():
    import threading

    done = []
    stopping = threading.Event()
    schedule.play([0.0, 0.05, 0.1], lambda at: at, stopping, done.append)
    assert done == [0.0, 0.05, 0.1]

    def act(item):
        done.append(item)
        stopping.set()

    done.clear()
    schedule.play([0.0, 0.05], lambda at: at, stopping, act)
    assert done == [0.0]


class _LockedIronic(object):
    """Nodes whose locks come and go as ``answers`` say, one per listing."""

    def __init__(self, answers):
        self._answers = list(answers)

    def list_nodes(self, fields):
        assert set(fields) == {'uuid', 'reservation'}
        answer = self._answers.pop(0) if len(self._answers) > 1 else \
            self._answers[0]
        return [{'uuid': node, 'reservation': holder}
                for node, holder in answer.items()]


class _Supervisor(object):
    def __init__(self):
        self.held = []

    def down(self, name):
        self.held.append(name)
        return contextlib.nullcontext()


def _run_with_ironic(monkeypatch, tmp_path, answers):
    from ironic_multi.testing.chaos import run

    monkeypatch.setattr(run, 'STALE_LOCK_SECONDS', 0.2)
    monkeypatch.setattr(run.time, 'sleep', lambda seconds: None)
    (tmp_path / 'ironic.log').write_text('ERROR DBConnectionError\n')
    chaos = run.ChaosRun(run.Options(minutes=1, seed=3,
                                     output=str(tmp_path)))
    chaos.cloud = mock.Mock(ironic=_LockedIronic(answers),
                            log_dir=str(tmp_path))
    chaos.supervisor = _Supervisor()
    chaos._free_stale_ironic_locks()
    return chaos


def test_a_lock_ironic_keeps_after_the_faults_restarts_it(
        monkeypatch, tmp_path):
    chaos = _run_with_ironic(monkeypatch, tmp_path, [
        {'n1': 'localhost', 'n2': 'localhost'},
        # n2's task ends; n1's lock stays for good.
        {'n1': 'localhost'}])
    chaos.cloud.restart.assert_called_once_with('ironic')
    assert chaos.supervisor.held == ['ironic']
    (excused,) = chaos.history.excused
    assert excused['subject'] == 'node n1'
    assert 'conductor localhost' in excused['why']
    assert excused['evidence'] == ('ironic.log: 1 DBConnectionError '
                                   'line(s) in the run')


@pytest.mark.parametrize('answers', [
    [{}],
    # Locks that move on are tasks at work.
    [{'n1': 'localhost'}, {}],
    [{'n1': 'localhost'}, {'n1': 'other'}],
])
def test_locks_that_end_leave_ironic_alone(monkeypatch, tmp_path, answers):
    chaos = _run_with_ironic(monkeypatch, tmp_path, answers)
    chaos.cloud.restart.assert_not_called()
    assert chaos.history.excused == []


def _stranding_run(tmp_path, requests):
    from ironic_multi.testing.chaos import run

    chaos = run.ChaosRun(run.Options(minutes=1, seed=3,
                                     output=str(tmp_path)))
    chaos.cloud = mock.Mock(log_dir=str(tmp_path))
    # An observer that watched all along.
    chaos.observer = mock.Mock(looks=10, failed_looks=0, longest_blind=2.0,
                               **{'watched.return_value': []})
    for server_id, request in sorted(requests.items()):
        chaos.history.operation(schedule.BOOT, server=server_id,
                                create_request=request)
    return chaos


def test_builds_nova_stranded_are_told_by_its_logs(tmp_path):
    (tmp_path / 'nova-compute-compute-1.log').write_text(
        HEAD % (1, 'INFO', 'nova.compute.manager') + '[instance: s1] '
        'Successfully reverted task state from None on failure for '
        'instance.\n')
    (tmp_path / 'nova-conductor.log').write_text(
        '2026-11-25 12:00:02.000 4242 ERROR nova.conductor.manager [None '
        'req-r2 u p - - default default] Failed to schedule instances: '
        'oslo_db.exception.DBConnectionError: (2003, "Can\'t connect")\n')
    with open(tmp_path / 'nova-conductor.log', 'a') as f:
        f.write('2026-11-25 12:00:03.000 4242 ERROR oslo_messaging.rpc.'
                'server [None req-r6 u p - - default default] Exception '
                'during message handling: oslo_db.exception.'
                'DBConnectionError: (2013, \'Lost connection\')\n'
                '2026-11-25 12:00:04.000 4242 INFO nova.conductor.manager '
                '[None req-r4 u p - - default default] fine\n')
    chaos = _stranding_run(tmp_path, {'s2': 'req-r2', 's4': 'req-r4',
                                      's6': 'req-r6'})
    servers = [
        {'id': 's1', 'status': 'BUILD', 'host': None, 'task_state': None},
        {'id': 's2', 'status': 'BUILD', 'host': None,
         'task_state': 'scheduling'},
        # On a host: the driver's, judged.
        {'id': 's3', 'status': 'BUILD', 'host': 'compute-1',
         'task_state': None},
        # Nova said nothing about it.
        {'id': 's4', 'status': 'BUILD', 'host': None,
         'task_state': 'scheduling'},
        {'id': 's5', 'status': 'BUILD', 'host': None,
         'task_state': 'networking'},
        {'id': 's6', 'status': 'BUILD', 'host': None,
         'task_state': 'scheduling'},
    ]
    found = chaos._stranded_by_nova(servers)
    assert sorted(found) == ['s1', 's2', 's6']
    assert found['s1'].startswith('nova-compute-compute-1.log: ')
    assert 'Failed to schedule instances' in found['s2']


def test_tasks_nova_could_not_revert_are_told_by_its_logs(tmp_path):
    # The chaos run saw a reboot and a stop whose driver call failed
    # (Ironic away) while the database restarted: Nova's revert of the
    # task failed, and the servers kept REBOOT and powering-off.
    (tmp_path / 'nova-compute-compute-2.log').write_text(
        HEAD % (1, 'WARNING', 'nova.compute.manager') + '[instance: t1] '
        'Failed to revert task state for instance. Error: Remote error: '
        'DBConnectionError (2003)\n')
    chaos = _stranding_run(tmp_path, {})
    servers = [
        {'id': 't1', 'status': 'REBOOT', 'host': 'compute-2',
         'task_state': 'reboot_started'},
        # Its task ended since: nothing to excuse.
        {'id': 't2', 'status': 'ACTIVE', 'host': 'compute-2',
         'task_state': None},
        # Nova said nothing about it: the driver's, judged.
        {'id': 't3', 'status': 'ACTIVE', 'host': 'compute-1',
         'task_state': 'powering-off'},
    ]
    found = chaos._stranded_by_nova(servers)
    assert sorted(found) == ['t1']
    assert 'Failed to revert task state' in found['t1']


def test_violations_about_stranded_builds_are_forgiven(tmp_path):
    chaos = _stranding_run(tmp_path, {})
    history = chaos.history
    history.violation(invariants.BOUNDED, 'boot of s1: still BUILD after '
                      '300 s')
    chaos._excuse({'s1': 'nova-conductor.log: Failed to schedule'})
    # Later checks find it again; the verdict drops them all.
    history.violation(invariants.SETTLED, 'server x (s1) is BUILD')
    history.violation(invariants.SETTLED, 'server y (s2) is BUILD')
    chaos._forgive()
    assert [v['detail'] for v in history.violations] == [
        'server y (s2) is BUILD']
    assert [e['subject'] for e in history.excused] == ['server s1']


def test_no_safety_violation_is_forgiven(tmp_path):
    # Planted: a double booking, found by the real check, about a server
    # Nova stranded.  It must survive the verdict.
    chaos = _stranding_run(tmp_path, {})
    history = chaos.history
    chaos._excuse({'s1': 'nova-conductor.log: Failed to schedule',
                   's2': 'nova-conductor.log: Failed to schedule'})
    active = [{'id': 's1', 'name': 'one', 'status': 'ACTIVE'}]
    nodes = [{'uuid': 'n1', 'instance_uuid': 's2'},
             {'uuid': 'n2', 'instance_uuid': 's2'}]
    found = invariants.check_sample(active, nodes, active, {'s1': 'n1'})
    assert {invariant for invariant, _ in found} == {
        invariants.ONE_NODE_PER_INSTANCE, invariants.GIVEN_TWICE}
    for invariant, detail in found:
        history.violation(invariant, detail)
    for invariant in invariants.SAFETY:
        history.violation(invariant, 'planted about s1')
    history.violation(invariants.SETTLED, 'server x (s1) is BUILD')
    chaos._forgive()
    assert sorted(v['invariant'] for v in history.violations) == sorted(
        [i for i, _ in found] + list(invariants.SAFETY))


def _workload(answers):
    """A Workload whose server reads are ``answers``, one per poll."""
    from ironic_multi.testing.chaos import workload

    cloud = mock.Mock()
    cloud.layout.flavors, cloud.layout.groups = [], []
    ops = workload.Workload(cloud, history_mod.History(seed=1), mock.Mock(),
                            seed=1, threads=1)
    ops.server = mock.Mock(side_effect=answers)
    return ops


def test_a_boot_on_a_host_takes_the_flavor_that_host_offers_most():
    from ironic_multi.testing import fleet

    ops = _workload([])
    gold = fleet.Flavor('gold', 'gold', 'gold')
    silver = fleet.Flavor('silver', 'silver', 'silver')
    ops.flavors = {'gold': gold, 'silver': silver}
    node = {'provision_state': 'available', 'resource_class': 'gold'}
    ops.observer.latest = {'nodes': [node, node, dict(
        node, resource_class='silver')]}
    # The cluster has more gold; compute-1's own shards offer silver only.
    ops.observer.placement_views.return_value = {
        'compute-1': {'CUSTOM_GOLD': {'free': 0},
                      'CUSTOM_SILVER': {'free': 1}},
        'compute-2': {'CUSTOM_GOLD': {'free': 2},
                      'CUSTOM_SILVER': {'free': 0}}}
    assert ops.roomiest_flavor() == 'gold'
    assert ops.roomiest_flavor('compute-1') == 'silver'
    assert ops.roomiest_flavor('compute-2') == 'gold'


BUILDING = {'status': 'BUILD', 'OS-EXT-STS:task_state': 'scheduling',
            'OS-EXT-SRV-ATTR:host': None}


def test_a_build_given_up_as_stranded_is_waited_for_no_more(monkeypatch):
    from ironic_multi.testing.chaos import workload

    monkeypatch.setattr(workload, 'POLL', 0)
    ops = _workload(itertools.repeat(BUILDING))
    record = ops.history.operation(schedule.BOOT, server='s1')
    ops.give_up({'s1': 'nova-conductor.log: Failed to schedule'})
    assert ops.settle('s1', record, until='ACTIVE', bound=60) == (
        workload.STRANDED)
    assert record['detail'] == 'nova-conductor.log: Failed to schedule'
    assert ops.history.violations == []


def test_a_given_up_build_that_found_a_host_is_still_waited_for(
        monkeypatch):
    from ironic_multi.testing.chaos import workload

    monkeypatch.setattr(workload, 'POLL', 0)
    placed = dict(BUILDING, **{'OS-EXT-SRV-ATTR:host': 'compute-1',
                               'OS-EXT-STS:task_state': 'spawning'})
    ops = _workload([placed, placed, dict(placed, status='ACTIVE',
                                          **{'OS-EXT-STS:task_state': None})])
    record = ops.history.operation(schedule.BOOT, server='s1')
    ops.give_up({'s1': 'an old line'})
    assert ops.settle('s1', record, until='ACTIVE', bound=60) == workload.OK


def test_an_action_given_up_as_stranded_is_waited_for_no_more(
        monkeypatch):
    from ironic_multi.testing.chaos import workload

    monkeypatch.setattr(workload, 'POLL', 0)
    stuck = {'status': 'ACTIVE', 'OS-EXT-STS:task_state': 'powering-off',
             'OS-EXT-SRV-ATTR:host': 'compute-1'}
    ops = _workload(itertools.repeat(stuck))
    record = ops.history.operation(schedule.STOP_START, server='t1',
                                   request='req-1')
    ops.give_up({'t1': 'nova-compute-compute-1.log: Failed to revert'})
    assert ops.settle('t1', record, until='SHUTOFF', bound=60) == (
        workload.STRANDED)


def test_keystone_failing_a_token_is_an_api_error(monkeypatch):
    # The reduced run's Ironic-restart probe died on it in .ci/run
    # (Keystone answered 500 while a new connection got its token): its
    # boot never ended, and the recovery figure was lost.
    from keystoneauth1 import exceptions as ks_exceptions

    from ironic_multi.testing.chaos import workload

    ops = _workload([])
    ops.cloud.flavors, ops.cloud.image_id = {'gold': 'f1'}, 'i1'
    monkeypatch.setattr(ops, 'connection', mock.Mock(
        side_effect=ks_exceptions.InternalServerError()))
    server_id, record = ops.post_boot('gold', origin='probe')
    assert server_id is None
    assert record['outcome'] == workload.API_ERROR
    assert 'InternalServerError' in record['detail']


def test_an_operation_that_never_ended_is_a_violation(tmp_path):
    chaos = _stranding_run(tmp_path, {})
    history = chaos.history
    history.end(history.operation(schedule.BOOT, server='s1'), outcome='ok')
    history.operation(schedule.BOOT, origin='probe')
    result = chaos._verdict([])
    assert not result.passed
    assert [(v['invariant'], v['detail']) for v in history.violations] == [
        (invariants.BOUNDED, 'boot of None (probe): never ended')]


def test_a_closed_workload_waits_no_more(monkeypatch):
    # Ctrl-C on a run: its cloud is gone, and each operation's thread
    # polled it for the rest of its bound (300 s) before the process
    # could exit.
    from ironic_multi.testing.chaos import workload

    monkeypatch.setattr(workload, 'POLL', 0.05)
    ops = _workload(itertools.repeat(BUILDING))
    record = ops.history.operation(schedule.BOOT, server='s1')
    threading.Timer(0.2, ops.close).start()
    started = time.monotonic()
    assert ops.settle('s1', record, until='ACTIVE', bound=60) is None
    assert time.monotonic() - started < 5
    assert ops.history.violations == []


def test_a_build_not_given_up_times_out_as_a_violation(monkeypatch):
    from ironic_multi.testing.chaos import workload

    monkeypatch.setattr(workload, 'POLL', 0)
    ops = _workload(itertools.repeat(BUILDING))
    record = ops.history.operation(schedule.BOOT, server='s1')
    assert ops.settle('s1', record, until='ACTIVE', bound=0.05) == (
        workload.TIMEOUT)
    assert [v['invariant'] for v in ops.history.violations] == [
        invariants.BOUNDED]


def test_the_settle_stops_waiting_for_stranded_builds(monkeypatch,
                                                      tmp_path):
    from ironic_multi.testing.chaos import run

    (tmp_path / 'nova-conductor.log').write_text(
        '2026-11-25 12:00:02.000 4242 ERROR nova.conductor.manager [None '
        'req-r2 u p - - default default] Failed to schedule instances: '
        'oslo_db.exception.DBConnectionError: (2003, "Can\'t connect")\n')
    chaos = _stranding_run(tmp_path, {'s2': 'req-r2'})
    monkeypatch.setattr(run, 'STRANDED_AFTER', 0)
    monkeypatch.setattr(run, 'STRANDED_POLL', 0)
    chaos.workload = mock.Mock()
    # Not done until the stranded build is given up.
    chaos.workload.wait.side_effect = lambda timeout: bool(
        chaos.workload.give_up.called)
    chaos._servers = mock.Mock(return_value=[
        {'id': 's2', 'status': 'BUILD', 'host': None,
         'task_state': 'scheduling'},
        {'id': 's3', 'status': 'BUILD', 'host': None,
         'task_state': 'scheduling'}])
    chaos._wait_for_operations()
    (stranded,), _kwargs = chaos.workload.give_up.call_args
    assert sorted(stranded) == ['s2']
    assert 'Failed to schedule instances' in stranded['s2']


# -- the observer ----------------------------------------------------------

def _observer(monkeypatch, servers, *nodes):
    """An observer whose looks read ``nodes``, one listing a look."""
    from ironic_multi.testing.chaos import observer as observer_mod

    monkeypatch.setattr(observer_mod.ironic_nodes, 'admin_nodes',
                        lambda server: mock.Mock(**{
                            'list_nodes.side_effect': nodes}))
    monkeypatch.setattr(observer_mod.workload_mod, 'server_dicts',
                        lambda compute: servers)
    cloud = mock.Mock(computes=['compute-1'])
    cloud.layout.resource_classes.return_value = ['gold']
    history = history_mod.History(seed=1)
    return observer_mod.Observer(cloud, history), history


def _watch_until(observer, done, timeout=5):
    """Run the observer's thread, looking every 10 ms, until ``done()``."""
    observer.period = 0.01
    with observer:
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            time.sleep(0.01)


def test_a_look_keeps_its_findings_when_a_later_read_fails(monkeypatch):
    # Planted: an instance on two nodes at the second look, and placement
    # (read at every other look) away at that look.
    observer, history = _observer(monkeypatch, [], [], [
        {'uuid': 'n1', 'instance_uuid': 's1', 'resource_class': 'gold'},
        {'uuid': 'n2', 'instance_uuid': 's1', 'resource_class': 'gold'}])
    monkeypatch.setattr(observer, 'placement_free', mock.Mock(
        side_effect=RuntimeError('placement restarts')))
    observer.look()
    assert history.violations == []
    with pytest.raises(RuntimeError):
        observer.look()
    assert [v['invariant'] for v in history.violations] == [
        invariants.ONE_NODE_PER_INSTANCE]


def test_failed_looks_fail_the_run(monkeypatch):
    observer, history = _observer(monkeypatch, [])
    monkeypatch.setattr(observer, 'look', mock.Mock(
        side_effect=RuntimeError('Ironic restarts')))
    _watch_until(observer, lambda: observer.failed_looks >= 3)
    assert observer.failed_looks >= 3 and observer.looks == 0
    assert [v[0] for v in observer.watched()] == [invariants.WATCHED]


def test_a_look_that_recorded_its_sample_is_a_good_one(monkeypatch):
    observer, history = _observer(monkeypatch, [])

    def partial():
        observer.looks += 1  # As look() does once its findings are in.
        raise RuntimeError('placement restarts')

    monkeypatch.setattr(observer, 'look', partial)
    _watch_until(observer, lambda: observer.looks >= 3)
    assert observer.looks >= 3 and observer.failed_looks == 0
    assert observer.watched() == []


def test_placement_views_need_not_wait_for_the_observers_connection(
        monkeypatch):
    # Planted: the observer's thread dropped its connection after a failed
    # look, as a fault's thread asks for placement's views (CI, 2026-12-04:
    # AttributeError, and the fault was never injected).
    observer, _history = _observer(monkeypatch, [])
    provider = mock.Mock(id='p1')
    provider.name = 'compute-1'
    placement = observer.cloud.connection.return_value.placement
    placement.resource_providers.return_value = [provider]
    placement.resource_provider_inventories.return_value = []
    placement.get.return_value.json.return_value = {'usages': {}}
    observer._connection = None
    found = []
    thread = threading.Thread(
        target=lambda: found.append(observer.placement_views()))
    thread.start()
    thread.join(5)
    assert list(found[0]) == ['compute-1']


def test_a_failed_placement_read_gets_a_new_connection_next_time(
        monkeypatch):
    observer, _history = _observer(monkeypatch, [])
    placement = observer.cloud.connection.return_value.placement
    placement.resource_providers.side_effect = [
        RuntimeError('placement restarts'), []]
    with pytest.raises(RuntimeError):
        observer.placement_views()
    assert observer.placement_views() == {}
    assert observer.cloud.connection.call_count == 2


@pytest.mark.parametrize('looks,failed,blind,bad', [
    (100, 0, 2.0, []),
    (85, 15, 2.0, []),
    (84, 16, 2.0, ['16 of 100 looks failed (bound 15 %)']),
    (0, 0, 0.0, ['0 of 0 looks failed (bound 15 %)']),
    (100, 1, 45.0, []),
    (100, 1, 45.1, ['no good look for 45.1 s (bound 45 s)']),
])
def test_the_watch_is_judged(looks, failed, blind, bad):
    found = invariants.check_watched(looks, failed, blind)
    assert found == [(invariants.WATCHED, detail) for detail in bad]


def test_placement_held_apart_from_ironic():
    # Planted: one compute's provider says 2 gold nodes are free, the
    # other's 1; Ironic has 2.
    truth = checks.ironic_truth([
        {'uuid': 'n%d' % i, 'resource_class': 'gold',
         'provision_state': 'available', 'power_state': 'power off'}
        for i in range(2)])
    view = {'total': 2, 'reserved': 1, 'used': 0, 'free': 1}
    assert invariants.check_capacity(checks.compare_capacity(
        truth, {'compute-1': {'CUSTOM_GOLD': view},
                'compute-2': {'CUSTOM_GOLD': view}})) == []
    found = invariants.check_capacity(checks.compare_capacity(
        truth, {'compute-1': {'CUSTOM_GOLD': dict(view, free=2)},
                'compute-2': {'CUSTOM_GOLD': view}}))
    assert found == [(invariants.CAPACITY, 'compute-1, compute-2 '
                      'CUSTOM_GOLD: placement 3 free, Ironic 2')]


def test_an_untyped_error_in_a_log_fails_the_run(tmp_path, log_dir):
    chaos = _stranding_run(tmp_path, {})
    result = chaos._verdict(logscan.errors(str(log_dir)))
    assert not result.passed
    assert [(v['invariant'], v['detail'].split(':')[0])
            for v in result.violations] == [
        (invariants.TYPED_ERRORS, 'nova-compute-compute-1')]
    assert [r.exception for r in result.untyped] == ['KeyError']


def test_every_invariant_names_the_tests_that_prove_it_can_fail():
    # Each named test must exist and plant that invariant's violation.
    root = pathlib.Path(__file__).parents[2]
    assert sorted(invariants.PROVEN_BY) == sorted(invariants.INVARIANTS)
    for invariant, tests in invariants.PROVEN_BY.items():
        assert tests, invariant
        for test in tests:
            path, name = test.split('::')
            source = (root / path).read_text()
            assert 'def %s(' % name in source, test
            body = source.split('def %s(' % name)[1].split('\ndef ')[0]
            constant = [k for k, v in vars(invariants).items()
                        if v == invariant and k.isupper()][0]
            assert ('invariants.%s' % constant in body
                    or invariant in body), (test, invariant)


def test_nova_ends_a_lost_build_within_the_operations_bound():
    from ironic_multi.testing.chaos import run
    from ironic_multi.testing.chaos import workload

    # Nova checks the build timeout in a periodic task, once a minute.
    assert run.BUILD_TIMEOUT + 60 < workload.BOUND
