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

import json
import logging
import multiprocessing
import os
import queue
import random
import shlex
import signal
import sys
import threading
import time

from oslo_concurrency import lockutils
from oslo_utils import uuidutils
import pytest
import yaml

from ironic_multi._reservation import capacity
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.static import provider as static
from ironic_multi._reservation.providers.static import records
from ironic_multi._reservation import shards
from ironic_multi import exception
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from ironic_multi.testing import static_nodes

request = provider_contract.request


def make_conf(**overrides):
    # A power command, so that the contract's power actions work.
    overrides.setdefault('static_power_command', 'true')
    return reservers.make_conf(**overrides)


class StaticHarness(static_nodes.StaticInventory):
    def __init__(self, directory, conf=None):
        super().__init__(directory, conf or make_conf())

    def provider(self, conf=None, group=None):
        if group is not None:
            conf = make_conf(coordination_group=group)
        return super().provider(conf)


@pytest.fixture
def harness(tmp_path):
    return StaticHarness(tmp_path)


class TestStaticProviderContract(provider_contract.ProviderContract):
    """The shared provider contract, against YAML and JSON files."""


# -- static specific --------------------------------------------------------

def write_inventory(tmp_path, document, raw=None):
    path = tmp_path / 'nodes.yaml'
    path.write_text(raw if raw is not None else yaml.safe_dump(document))
    return str(path)


def entry(**overrides):
    result = {'uuid': uuidutils.generate_uuid(), 'resource_class': 'gold'}
    result.update(overrides)
    return result


def load_error(path):
    provider = static.StaticProvider(make_conf(), inventory_path=path)
    with pytest.raises(exception.StaticInventoryInvalid) as caught:
        provider.start()
    assert caught.value.path == path
    assert path in str(caught.value)
    return caught.value


@pytest.mark.parametrize('raw, reason', [
    ('- uuid: [unclosed\n', 'not valid YAML'),
    ('nodes: {}\n', 'must be a YAML list of nodes, not dict'),
    ('', 'must be a YAML list of nodes, not NoneType'),
    ('- just-a-string\n', 'entry 0 is not a mapping'),
])
def test_invalid_document(tmp_path, raw, reason):
    error = load_error(write_inventory(tmp_path, None, raw=raw))
    assert reason in error.reason


def test_missing_file(tmp_path):
    error = load_error(str(tmp_path / 'absent.yaml'))
    assert 'cannot be read' in error.reason


@pytest.mark.parametrize('bad, reason', [
    ({'uuid': None}, 'missing required key uuid'),
    ({'resource_class': ''}, 'missing required key resource_class'),
    ({'uuid': 'not-a-uuid'}, "uuid 'not-a-uuid' is not a UUID"),
    ({'resource_clas': 'gold'}, 'unknown key(s) resource_clas'),
    ({'shard': 7}, 'shard must be a string'),
    ({'properties': ['memory_mb']}, 'properties must be a mapping'),
    ({'properties': {'memory_mb': '4G'}}, 'properties.memory_mb must be'),
    ({'properties': {'cpus': -1}}, 'properties.cpus must be'),
    ({'properties': {'capabilities': 3}}, 'properties.capabilities'),
    ({'traits': 'CUSTOM_RAID'}, 'traits must be a list'),
    ({'traits': ['custom-raid']}, "trait 'custom-raid' is not a valid"),
    ({'maintenance': 'yes'}, 'maintenance must be true or false'),
])
def test_invalid_entry_names_entry(tmp_path, bad, reason):
    broken = entry(name='broken', **bad)
    error = load_error(write_inventory(tmp_path, [entry(), broken]))
    assert error.entry == 1
    assert error.reason.startswith('entry 1 (')
    assert reason in error.reason


@pytest.mark.parametrize('key', ['uuid', 'name'])
def test_duplicates_are_invalid(tmp_path, key):
    first = entry(name='n1')
    second = entry(name='n2')
    # UUIDs compare case-insensitively, as in Ironic.
    second[key] = first[key].upper() if key == 'uuid' else first[key]
    error = load_error(write_inventory(tmp_path, [first, entry(), second]))
    assert error.entry == 2
    assert 'already' in error.reason
    assert first[key] in error.reason


def test_valid_inventory_nodes(tmp_path):
    declared = [
        entry(name='n0', shard='rack1', owner='p1', traits=['CUSTOM_B'],
              properties={'memory_mb': 1, 'capabilities': 'boot_mode:uefi'}),
        entry(uuid=uuidutils.generate_uuid().upper()),
        entry(maintenance=True),
        entry(conductor_group='lab'),
    ]
    path = write_inventory(tmp_path, declared)
    provider = static.StaticProvider(make_conf(), inventory_path=path)
    provider.start()

    nodes = {n['uuid']: n for n in provider.nodes()}
    assert list(nodes) == [e['uuid'].lower() for e in declared]
    first = nodes[declared[0]['uuid']]
    assert first['shard'] == 'rack1'
    assert first['owner'] == 'p1'
    assert first['traits'] == ['CUSTOM_B']
    assert first['properties']['capabilities'] == 'boot_mode:uefi'
    assert first['instance_uuid'] is None
    unsharded = declared[1]['uuid'].lower()
    assert nodes[unsharded]['shard'] == shards.ShardKeys(64).fallback_of(
        unsharded)

    ready = {n['uuid'] for n in provider.ready_nodes(
        request('gold', project_id='p1'), None)}
    # Not the node in maintenance.
    assert ready == set(nodes) - {declared[2]['uuid']}
    assert capacity.total(provider.capacity())['gold'] == {'total': 3,
                                                           'free': 3}
    assert not provider.ready_nodes(request('gold'), ['rack1'])


def test_conductor_group_option_limits_nodes(tmp_path):
    lab = entry(conductor_group='Lab')
    path = write_inventory(tmp_path, [entry(), lab])
    provider = static.StaticProvider(make_conf(conductor_group='lab'),
                                     inventory_path=path)
    ready = provider.ready_nodes(request('gold'), None)
    assert [n['uuid'] for n in ready] == [lab['uuid']]


def test_inventory_changes_are_picked_up(tmp_path):
    harness = StaticHarness(tmp_path)
    provider = harness.provider()
    assert provider.nodes() == []
    (node,) = harness.add_nodes(1, 'gold', shard='s')
    assert [n['uuid'] for n in provider.nodes()] == [node]
    assert provider.shard_keys() == {'s': 1}


def test_broken_inventory_edit_is_reported_not_ignored(tmp_path):
    harness = StaticHarness(tmp_path)
    provider = harness.provider()
    harness.add_nodes(1, 'gold')
    with open(harness.path, 'a') as f:
        f.write('- {uuid: oops}\n')
    with pytest.raises(exception.StaticInventoryInvalid):
        provider.ready_nodes(request('gold'), None)


def test_claim_rechecks_stale_candidates(tmp_path):
    harness = StaticHarness(tmp_path)
    (node,) = harness.add_nodes(1, 'gold')
    provider = harness.provider()
    requirements = request('gold')
    candidates = provider.ready_nodes(requirements, None)
    harness.entries[0]['maintenance'] = True
    harness.write()
    with pytest.raises(exception.NodeAlreadyClaimed):
        provider.claim(candidates, 'i-1', requirements,
                       time.monotonic() + 10)
    with pytest.raises(exception.NodeAlreadyClaimed):
        provider.claim([], 'i-1', requirements, time.monotonic() + 10)
    assert provider.reservations() == []


def test_claim_past_deadline_times_out(tmp_path):
    harness = StaticHarness(tmp_path)
    harness.add_nodes(1, 'gold')
    provider = harness.provider()
    requirements = request('gold')
    candidates = provider.ready_nodes(requirements, None)
    # Another process holds the lock past the deadline.
    holder = _LockHolder(harness.path)
    with holder:
        started = time.monotonic()
        with pytest.raises(exception.ClaimTimeout):
            provider.claim(candidates, 'i-1', requirements, started + 0.2)
        assert time.monotonic() - started < 5
    assert provider.lookup('i-1') is None
    # Once the lock is free again, the claim goes through.
    assert provider.claim(candidates, 'i-1', requirements,
                          time.monotonic() + 10).instance_uuid == 'i-1'


def _outcome_within(seconds, function):
    """What ``function()`` raised or returned, or "waiting" past the bound.

    In a daemon thread: a call that never returns cannot hang the tests.
    """
    outcome = ['waiting']

    def run():
        try:
            outcome[0] = function()
        except Exception as e:
            outcome[0] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return outcome[0]


def test_every_change_waits_for_the_lock_within_a_bound(tmp_path):
    harness = StaticHarness(tmp_path, make_conf(claim_timeout=1))
    (node,) = harness.add_nodes(1, 'gold')
    provider = harness.provider()
    requirements = request('gold')
    provider.claim(provider.ready_nodes(requirements, None), 'i-1',
                   requirements, time.monotonic() + 10)
    changes = {
        'release': lambda: provider.release('i-1'),
        'set_state': lambda: provider.set_state('i-1', 'deploying'),
        'record_failure': lambda: provider.record_failure(node, 'broken'),
        'unquarantine': lambda: provider.unquarantine(node),
    }
    with _LockHolder(harness.path):
        outcomes = {name: _outcome_within(5, change)
                    for name, change in changes.items()}
    for name, outcome in outcomes.items():
        assert isinstance(outcome, exception.RecordsLocked), (name, outcome)
        assert harness.path in str(outcome)
    # Nothing was lost or half done.
    reservation = provider.lookup('i-1')
    assert (reservation.node_uuid, reservation.state) == (
        node, lifecycle.State.CLAIMED)
    assert provider.troubled_nodes() == []


def test_state_file_is_plain_json_next_to_inventory(tmp_path):
    harness = StaticHarness(tmp_path)
    (node,) = harness.add_nodes(1, 'gold', shard='s1')
    provider = harness.provider()
    provider.claim(provider.ready_nodes(request('gold'), None),
                   'i-1', request('gold'), time.monotonic() + 10)

    with open(harness.path + '.reservations.json') as f:
        document = json.load(f)
    assert document['version'] == 1
    record = document['reservations']['i-1']
    assert record['node_uuid'] == node
    assert record['state'] == 'claimed'
    assert record['shard'] == 's1'
    # Only the inventory, its state file and lock file: no temp files left.
    assert sorted(os.listdir(tmp_path)) == [
        'nodes.yaml', 'nodes.yaml.reservations.json',
        'nodes.yaml.reservations.lock']


def test_corrupt_state_file_is_invalid(tmp_path):
    harness = StaticHarness(tmp_path)
    with open(harness.path + records.STATE_SUFFIX, 'w') as f:
        f.write('{"reservations": {"i-1": {"state": "nonsense"}}}')
    with pytest.raises(exception.StaticInventoryInvalid) as caught:
        harness.provider()
    assert caught.value.path.endswith(records.STATE_SUFFIX)


def test_set_state(tmp_path):
    harness = StaticHarness(tmp_path)
    (node,) = harness.add_nodes(1, 'gold')
    provider = harness.provider()
    provider.claim(provider.nodes(), 'i-1', request('gold'),
                   time.monotonic() + 10)

    deploying = provider.set_state('i-1', 'deploying')
    assert deploying.state == lifecycle.State.DEPLOYING
    (shown,) = provider.nodes()
    assert shown['instance_uuid'] == 'i-1'
    provider.set_state('i-1', lifecycle.State.ERROR)
    with pytest.raises(exception.InvalidStateTransition):
        provider.set_state('i-1', lifecycle.State.ACTIVE)
    with pytest.raises(exception.ReservationError):
        provider.set_state('i-2', lifecycle.State.ACTIVE)
    provider.set_state('i-1', lifecycle.State.RELEASING)
    released = provider.set_state('i-1', lifecycle.State.RELEASED)

    assert released.state == lifecycle.State.RELEASED
    assert provider.lookup('i-1') is None
    assert [n['uuid'] for n in provider.ready_nodes(
        request('gold'), None)] == [node]


# -- cross-process atomicity ------------------------------------------------

PROCESSES = 4
THREADS_PER_PROCESS = 8
NODES = 10
RACE_TIMEOUT = 60


def _race_in_process(path, barrier, results):
    """One process of the race: its own provider, its own threads."""
    provider = static.StaticProvider(make_conf(), inventory_path=path)
    requirements = request('gold')
    # Read once, before anyone claims: every thread races on a stale list.
    candidates = provider.ready_nodes(requirements, None)

    def claim():
        instance = uuidutils.generate_uuid()
        mine = random.sample(candidates, len(candidates))
        barrier.wait()
        try:
            won = provider.claim(mine, instance, requirements,
                                 time.monotonic() + RACE_TIMEOUT)
            results.put((instance, won.node_uuid))
        except exception.NodeAlreadyClaimed:
            results.put((instance, None))
        except Exception as e:
            results.put((instance, 'error: %r' % e))

    threads = [threading.Thread(target=claim)
               for _ in range(THREADS_PER_PROCESS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_processes_never_double_book(tmp_path):
    harness = StaticHarness(tmp_path)
    nodes = set(harness.add_nodes(NODES, 'gold'))
    # fork: the children need nothing imported again, and start at once.
    context = multiprocessing.get_context('fork')
    claims = PROCESSES * THREADS_PER_PROCESS
    barrier = context.Barrier(claims, timeout=RACE_TIMEOUT)
    results = context.Queue()
    processes = [context.Process(target=_race_in_process,
                                 args=(harness.path, barrier, results))
                 for _ in range(PROCESSES)]
    for process in processes:
        process.start()

    outcomes = {}
    try:
        for _ in range(claims):
            instance, node = results.get(timeout=RACE_TIMEOUT)
            outcomes[instance] = node
    except queue.Empty:
        pass
    finally:
        for process in processes:
            process.join(RACE_TIMEOUT)
            if process.is_alive():
                process.kill()
    assert len(outcomes) == claims, 'a claimer hung or died'
    assert [p.exitcode for p in processes] == [0] * PROCESSES

    won = {i: n for i, n in outcomes.items() if n is not None}
    assert not [n for n in won.values() if n.startswith('error')], won
    assert len(won) == NODES
    assert set(won.values()) == nodes
    held = {r.instance_uuid: r.node_uuid
            for r in harness.provider().reservations()}
    assert held == won


class _LockHolder(object):
    """Holds the provider's inter-process lock from another process."""

    def __init__(self, inventory_path):
        self._path = inventory_path
        context = multiprocessing.get_context('fork')
        self._held = context.Event()
        self._release = context.Event()
        self._process = context.Process(target=self._hold)

    def _hold(self):
        lock = lockutils.external_lock(
            os.path.basename(self._path) + records.LOCK_SUFFIX,
            lock_path=os.path.dirname(self._path))
        with lock:
            self._held.set()
            self._release.wait(RACE_TIMEOUT)

    def __enter__(self):
        self._process.start()
        assert self._held.wait(RACE_TIMEOUT)
        return self

    def __exit__(self, *exc_info):
        self._release.set()
        self._process.join(RACE_TIMEOUT)


# -- durability --------------------------------------------------------------

def _claim_and_die(path, connection):
    provider = static.StaticProvider(make_conf(), inventory_path=path)
    requirements = request('gold')
    reservation = provider.claim(provider.ready_nodes(requirements, None),
                                 'i-killed', requirements,
                                 time.monotonic() + 10)
    connection.send(reservation.node_uuid)
    # No cleanup of any kind: what the claim wrote must already be there.
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_claim_that_returned_survives_the_process(tmp_path):
    harness = StaticHarness(tmp_path)
    harness.add_nodes(2, 'gold')
    context = multiprocessing.get_context('fork')
    ours, theirs = context.Pipe()
    child = context.Process(target=_claim_and_die,
                            args=(harness.path, theirs))
    child.start()
    assert ours.poll(RACE_TIMEOUT)
    node = ours.recv()
    child.join(RACE_TIMEOUT)
    assert child.exitcode == -signal.SIGKILL

    provider = harness.provider()
    assert provider.lookup('i-killed').node_uuid == node
    # The dead process's lock is gone with it: others claim at once.
    other = provider.claim(provider.ready_nodes(request('gold'), None),
                           'i-other', request('gold'), time.monotonic() + 5)
    assert other.node_uuid != node


def test_writes_sync_the_file_and_its_directory(tmp_path, monkeypatch):
    harness = StaticHarness(tmp_path)
    harness.add_nodes(1, 'gold')
    provider = harness.provider()
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.path.realpath('/proc/self/fd/%d' % fd))
        real_fsync(fd)

    monkeypatch.setattr(os, 'fsync', fsync)
    provider.claim(provider.nodes(), 'i-1', request('gold'),
                   time.monotonic() + 10)

    assert str(tmp_path) in synced
    assert any(path.startswith(harness.path + records.STATE_SUFFIX)
               for path in synced)


# -- hand-over, return and power through operator hooks ----------------------

HOOK = """#!/bin/sh
echo "$@ node=$IRONIC_MULTI_NODE_UUID instance=$IRONIC_MULTI_INSTANCE_UUID \
host=$IRONIC_MULTI_HOST image=$IRONIC_MULTI_IMAGE_SOURCE" >> {log}
echo "said $1"
{extra}
"""


def hook(tmp_path, name, extra=''):
    """A hook script that logs its arguments and environment."""
    log = tmp_path / (name + '.log')
    script = tmp_path / (name + '.sh')
    script.write_text(HOOK.format(log=log, extra=extra))
    script.chmod(0o755)
    return str(script), log


def deployment(instance, vifs=(), configdrive=None):
    return base.Deployment(instance_uuid=instance, host='host-1',
                           image_source='img-1', vifs=vifs,
                           configdrive=configdrive)


def claimed(tmp_path, **options):
    harness = StaticHarness(tmp_path, make_conf(**options))
    (node,) = harness.add_nodes(1, 'gold')
    provider = harness.provider()
    reservation = provider.claim(provider.nodes(), 'i-1', request('gold'),
                                 time.monotonic() + 10)
    return provider, reservation, node


def test_hooks_run_for_handover_power_and_return(tmp_path):
    handover, handover_log = hook(tmp_path, 'handover')
    power, power_log = hook(tmp_path, 'power')
    back, back_log = hook(tmp_path, 'return')
    provider, reservation, node = claimed(
        tmp_path, static_handover_command=handover + ' --flag',
        static_power_command=power, static_return_command=back)

    active = provider.deploy(reservation, deployment('i-1'))
    assert active.state == lifecycle.State.ACTIVE
    assert active.host == 'host-1'
    assert active.power_state == lifecycle.PowerState.ON
    assert handover_log.read_text() == (
        '--flag handover %s node=%s instance=i-1 host=host-1 image=img-1\n'
        % (node, node))

    provider.power(active, base.PowerAction.SOFT_REBOOT)
    provider.power(active, base.PowerAction.OFF)
    assert provider.lookup('i-1').power_state == lifecycle.PowerState.OFF
    assert [line.split(' node=')[0] for line in
            power_log.read_text().splitlines()] == [
        'reboot %s' % node, 'power off %s' % node]

    provider.teardown(active)
    assert back_log.read_text().startswith('return %s' % node)
    assert provider.instances('host-1') == {}
    assert provider.release('i-1').state == lifecycle.State.RELEASED


def test_hooks_see_a_minimal_environment(tmp_path, monkeypatch):
    monkeypatch.setenv('OS_PASSWORD', 'service-secret')
    monkeypatch.setenv('LANG', 'C.UTF-8')
    seen = tmp_path / 'environment.json'
    dump = '%s -c %s %s' % (
        sys.executable,
        shlex.quote('import json, os, sys; '
                    'json.dump(dict(os.environ), open(sys.argv[1], "w"))'),
        seen)
    provider, reservation, node = claimed(
        tmp_path, static_handover_command=dump)

    provider.deploy(reservation, deployment('i-1'))

    assert json.loads(seen.read_text()) == {
        'PATH': os.environ['PATH'], 'LANG': 'C.UTF-8',
        'IRONIC_MULTI_ACTION': 'handover', 'IRONIC_MULTI_NODE_UUID': node,
        'IRONIC_MULTI_NODE_NAME': 'node-0',
        'IRONIC_MULTI_INSTANCE_UUID': 'i-1', 'IRONIC_MULTI_HOST': 'host-1',
        'IRONIC_MULTI_IMAGE_SOURCE': 'img-1'}


def test_hook_output_is_logged_at_debug_only(tmp_path, caplog):
    handover, _ = hook(tmp_path, 'handover',
                       extra='echo "token=hunter2" >&2')
    provider, reservation, node = claimed(
        tmp_path, static_handover_command=handover)
    caplog.set_level(logging.DEBUG)

    provider.deploy(reservation, deployment('i-1'))

    told = [r for r in caplog.records if 'hunter2' in r.getMessage()]
    assert told and {r.levelno for r in told} == {logging.DEBUG}
    assert any('said handover' in r.getMessage() for r in told)
    assert any(r.levelno == logging.INFO and 'handover of node %s done'
               % node in r.getMessage() for r in caplog.records)


def test_a_failed_hooks_error_masks_passwords(tmp_path):
    handover, _ = hook(tmp_path, 'handover',
                       extra='echo "password=hunter2" >&2; exit 1')
    provider, reservation, node = claimed(
        tmp_path, static_handover_command=handover)
    with pytest.raises(exception.DeployFailed) as caught:
        provider.deploy(reservation, deployment('i-1'))
    assert 'password=***' in str(caught.value)
    assert 'hunter2' not in str(caught.value)


def test_failed_handover_is_a_deploy_failure_that_returns_the_node(tmp_path):
    handover, _ = hook(tmp_path, 'handover', extra='echo broken >&2; exit 4')
    back, back_log = hook(tmp_path, 'return')
    provider, reservation, node = claimed(
        tmp_path, static_handover_command=handover,
        static_return_command=back)

    with pytest.raises(exception.DeployFailed) as caught:
        provider.deploy(reservation, deployment('i-1'))
    assert 'exit code 4' in str(caught.value)
    assert 'broken' in str(caught.value)
    assert node in str(caught.value)
    assert back_log.read_text().startswith('return %s' % node)
    # The claim stays for the caller to release.
    assert provider.lookup('i-1').state == lifecycle.State.RELEASING


def test_failed_return_keeps_the_node_out_of_service(tmp_path):
    back, _ = hook(tmp_path, 'return', extra='exit 1')
    provider, reservation, node = claimed(tmp_path,
                                          static_return_command=back)
    active = provider.deploy(reservation, deployment('i-1'))

    with pytest.raises(exception.TeardownFailed):
        provider.teardown(active)
    assert provider.lookup('i-1').state == lifecycle.State.ERROR
    assert provider.ready_nodes(request('gold'), None) == []


def test_a_hook_that_hangs_is_killed_at_its_timeout(tmp_path):
    power, _ = hook(tmp_path, 'power',
                    extra='sleep 60 & echo $! > %s/child; wait' % tmp_path)
    provider, reservation, node = claimed(
        tmp_path, static_power_command=power, static_command_timeout=1)
    active = provider.deploy(reservation, deployment('i-1'))

    started = time.monotonic()
    with pytest.raises(exception.PowerActionFailed) as caught:
        provider.power(active, base.PowerAction.OFF)
    assert time.monotonic() - started < 10
    assert 'timed out after 1 s' in str(caught.value)
    # Its children are gone too.
    child = int((tmp_path / 'child').read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(child, 0)
            time.sleep(0.1)
    assert provider.lookup('i-1').power_state == lifecycle.PowerState.ON


def test_what_static_nodes_cannot_do(tmp_path):
    provider, reservation, node = claimed(tmp_path,
                                          static_power_command=None)
    with pytest.raises(exception.NotSupported):
        provider.deploy(reservation, deployment('i-1', vifs=('port-1',)))
    with pytest.raises(exception.NotSupported):
        provider.deploy(reservation, deployment(
            'i-1', configdrive=lambda: 'drive'))
    active = provider.deploy(reservation, deployment('i-1'))
    for call in (lambda: provider.power(active, base.PowerAction.ON),
                 lambda: provider.attach_vif(active, 'port-1'),
                 lambda: provider.rebuild(active, deployment('i-1')),
                 lambda: provider.rescue(active, 'secret'),
                 lambda: provider.unrescue(active),
                 lambda: provider.console(active, base.ConsoleKind.SERIAL),
                 lambda: provider.crash_dump(active)):
        with pytest.raises(exception.NotSupported):
            call()
    assert provider.lookup('i-1').state == lifecycle.State.ACTIVE


def test_a_crash_dump_hook_sends_the_nmi(tmp_path):
    dump, dump_log = hook(tmp_path, 'dump')
    provider, reservation, node = claimed(
        tmp_path, static_crash_dump_command=dump)
    assert base.Feature.CRASH_DUMP in provider.features
    # The class, and providers without the hook, keep their features.
    assert base.Feature.CRASH_DUMP not in type(provider).features
    active = provider.deploy(reservation, deployment('i-1'))

    provider.check(active, base.Feature.CRASH_DUMP)
    provider.crash_dump(active)

    assert dump_log.read_text() == (
        'crash dump %s node=%s instance=i-1 host= image=\n' % (node, node))
    found = provider.lookup('i-1')
    assert (found.state, found.power_state) == (lifecycle.State.ACTIVE,
                                                lifecycle.PowerState.ON)


def test_a_failed_crash_dump_hook(tmp_path):
    dump, _ = hook(tmp_path, 'dump', extra='echo no BMC >&2; exit 3')
    provider, reservation, node = claimed(
        tmp_path, static_crash_dump_command=dump)
    active = provider.deploy(reservation, deployment('i-1'))
    with pytest.raises(exception.CrashDumpFailed) as caught:
        provider.crash_dump(active)
    assert 'exit code 3' in str(caught.value)
    assert 'no BMC' in str(caught.value)
    assert caught.value.node == node
