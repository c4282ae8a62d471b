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

import fcntl
import json
import multiprocessing
import os
import queue
import random
import threading
import time

from oslo_config import cfg
from oslo_utils import uuidutils
import pytest
import yaml

from ironic_multi import conf as im_conf
from ironic_multi import exception
from ironic_multi.reservation.backends import static
from ironic_multi.reservation import ring
from ironic_multi.reservation import states
from tests import backend_suite


def make_conf(**overrides):
    conf = cfg.ConfigOpts()
    # A group of its own: register_group() copies the module's OptGroup
    # shallowly, so overrides would leak into every other ConfigOpts.
    conf.register_group(cfg.OptGroup('ironic_multi'))
    im_conf.register_opts(conf)
    for name, value in overrides.items():
        conf.set_override(name, value, group='ironic_multi')
    return conf


class StaticHarness(object):
    """Nodes as entries of a YAML file in a temporary directory."""

    def __init__(self, directory, conf=None):
        self.path = os.path.join(str(directory), 'nodes.yaml')
        self.conf = conf or make_conf()
        self.entries = []
        self._write()

    def _write(self):
        tmp = self.path + '.tmp'
        with open(tmp, 'w') as f:
            yaml.safe_dump(self.entries, f)
        os.replace(tmp, self.path)

    def add_nodes(self, count, resource_class, traits=(), properties=None,
                  shard=None, owner=None):
        added = []
        for _ in range(count):
            entry = {'uuid': uuidutils.generate_uuid(),
                     'name': 'node-%d' % len(self.entries),
                     'resource_class': resource_class,
                     'properties': dict(properties or {}),
                     'traits': list(traits)}
            entry.update({key: value for key, value
                          in (('shard', shard), ('owner', owner))
                          if value is not None})
            self.entries.append(entry)
            added.append(entry['uuid'])
        self._write()
        return added

    def backend(self):
        backend = static.StaticBackend(self.conf, inventory=self.path)
        backend.start()
        return backend

    def snapshot(self):
        with open(self.path, 'rb') as f:
            inventory = f.read()
        try:
            with open(self.path + static.STATE_SUFFIX) as f:
                held = json.load(f)['reservations']
        except FileNotFoundError:
            held = {}
        return inventory, held


@pytest.fixture
def harness(tmp_path):
    return StaticHarness(tmp_path)


class TestStaticBackendSuite(backend_suite.BackendSuite):
    """The shared backend suite, against YAML and JSON files."""


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
    backend = static.StaticBackend(make_conf(), inventory=path)
    with pytest.raises(exception.StaticInventoryInvalid) as caught:
        backend.start()
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


def test_valid_inventory_is_presented_as_ironic_nodes(tmp_path):
    declared = [
        entry(name='n0', shard='rack1', owner='p1', traits=['CUSTOM_B'],
              properties={'memory_mb': 1, 'capabilities': 'boot_mode:uefi'}),
        entry(uuid=uuidutils.generate_uuid().upper()),
        entry(maintenance=True),
        entry(conductor_group='lab'),
    ]
    path = write_inventory(tmp_path, declared)
    backend = static.StaticBackend(make_conf(), inventory=path)
    backend.start()

    nodes = {n['uuid']: n for n in backend.nodes()}
    assert list(nodes) == [e['uuid'].lower() for e in declared]
    first = nodes[declared[0]['uuid']]
    assert first['shard'] == 'rack1'
    assert first['owner'] == 'p1'
    assert first['traits'] == ['CUSTOM_B']
    assert first['properties']['capabilities'] == 'boot_mode:uefi'
    assert first['provision_state'] == 'available'
    assert first['power_state'] == 'power off'
    assert first['instance_uuid'] is None
    unsharded = declared[1]['uuid'].lower()
    assert nodes[unsharded]['shard'] == ring.fallback_shard(unsharded, 64)

    ready = {n['uuid'] for n in backend.ready_nodes(
        backend_suite.request('gold', project_id='p1'), None)}
    # Not the node in maintenance.
    assert ready == set(nodes) - {declared[2]['uuid']}
    assert backend.capacity()['gold'] == {'total': 3, 'free': 3}
    assert not backend.ready_nodes(backend_suite.request('gold'),
                                   ['rack1'])


def test_conductor_group_option_limits_nodes(tmp_path):
    lab = entry(conductor_group='Lab')
    path = write_inventory(tmp_path, [entry(), lab])
    backend = static.StaticBackend(make_conf(conductor_group='lab'),
                                   inventory=path)
    ready = backend.ready_nodes(backend_suite.request('gold'), None)
    assert [n['uuid'] for n in ready] == [lab['uuid']]


def test_inventory_changes_are_picked_up(tmp_path):
    harness = StaticHarness(tmp_path)
    backend = harness.backend()
    assert backend.nodes() == []
    (node,) = harness.add_nodes(1, 'gold', shard='s')
    assert [n['uuid'] for n in backend.nodes()] == [node]
    assert backend.shard_keys() == {'s': 1}


def test_broken_inventory_edit_is_reported_not_ignored(tmp_path):
    harness = StaticHarness(tmp_path)
    backend = harness.backend()
    harness.add_nodes(1, 'gold')
    with open(harness.path, 'a') as f:
        f.write('- {uuid: oops}\n')
    with pytest.raises(exception.StaticInventoryInvalid):
        backend.ready_nodes(backend_suite.request('gold'), None)


def test_claim_rechecks_stale_candidates(tmp_path):
    harness = StaticHarness(tmp_path)
    (node,) = harness.add_nodes(1, 'gold')
    backend = harness.backend()
    requirements = backend_suite.request('gold')
    candidates = backend.ready_nodes(requirements, None)
    harness.entries[0]['maintenance'] = True
    harness._write()
    with pytest.raises(exception.NodeAlreadyClaimed):
        backend.claim(candidates, 'i-1', requirements,
                      time.monotonic() + 10)
    with pytest.raises(exception.NodeAlreadyClaimed):
        backend.claim([], 'i-1', requirements, time.monotonic() + 10)
    assert backend.reservations() == []


def test_claim_past_deadline_times_out(tmp_path):
    harness = StaticHarness(tmp_path)
    harness.add_nodes(1, 'gold')
    backend = harness.backend()
    requirements = backend_suite.request('gold')
    candidates = backend.ready_nodes(requirements, None)
    # Another process (another open file) holds the lock past the deadline.
    with open(backend.lock_path, 'a') as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(exception.ClaimTimeout):
            backend.claim(candidates, 'i-1', requirements, started + 0.2)
        assert time.monotonic() - started < 5
    assert backend.lookup('i-1') is None
    # Once the lock is free again, the claim goes through.
    assert backend.claim(candidates, 'i-1', requirements,
                         time.monotonic() + 10).instance_uuid == 'i-1'


def test_state_file_is_plain_json_next_to_inventory(tmp_path):
    harness = StaticHarness(tmp_path)
    (node,) = harness.add_nodes(1, 'gold', shard='s1')
    backend = harness.backend()
    backend.claim(backend.ready_nodes(backend_suite.request('gold'), None),
                  'i-1', None, time.monotonic() + 10)

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
    with open(harness.path + static.STATE_SUFFIX, 'w') as f:
        f.write('{"reservations": {"i-1": {"state": "nonsense"}}}')
    with pytest.raises(exception.StaticInventoryInvalid) as caught:
        harness.backend()
    assert caught.value.path.endswith(static.STATE_SUFFIX)


def test_set_state(tmp_path):
    harness = StaticHarness(tmp_path)
    (node,) = harness.add_nodes(1, 'gold')
    backend = harness.backend()
    backend.claim(backend.nodes(), 'i-1', None, time.monotonic() + 10)

    deploying = backend.set_state('i-1', 'deploying')
    assert deploying.state == states.State.DEPLOYING
    (shown,) = backend.nodes()
    assert shown['instance_uuid'] == 'i-1'
    assert states.from_ironic_node(shown) == states.State.DEPLOYING
    backend.set_state('i-1', states.State.ERROR)
    with pytest.raises(exception.InvalidStateTransition):
        backend.set_state('i-1', states.State.ACTIVE)
    with pytest.raises(exception.ReservationError):
        backend.set_state('i-2', states.State.ACTIVE)
    backend.set_state('i-1', states.State.RELEASING)
    released = backend.set_state('i-1', states.State.RELEASED)

    assert released.state == states.State.RELEASED
    assert backend.lookup('i-1') is None
    assert [n['uuid'] for n in backend.ready_nodes(
        backend_suite.request('gold'), None)] == [node]


# -- cross-process atomicity ------------------------------------------------

PROCESSES = 4
THREADS_PER_PROCESS = 8
NODES = 10
RACE_TIMEOUT = 60


def _race_in_process(path, barrier, results):
    """One process of the race: its own backend, its own threads."""
    backend = static.StaticBackend(make_conf(), inventory=path)
    requirements = backend_suite.request('gold')
    # Read once, before anyone claims: every thread races on a stale list.
    candidates = backend.ready_nodes(requirements, None)

    def claim():
        instance = uuidutils.generate_uuid()
        mine = random.sample(candidates, len(candidates))
        barrier.wait()
        try:
            won = backend.claim(mine, instance, requirements,
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
            for r in harness.backend().reservations()}
    assert held == won
