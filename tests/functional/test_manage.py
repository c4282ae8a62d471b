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

"""ironic-multi-manage end to end: real services, real Ironic, JSON out.

The static-provider tests start two Reservers (with their background
work) on ``file://`` coordination; the CLI runs in-process through
``ironic_multi.cmd.manage.main`` (and once as the installed console
script), reading a real configuration file, and its ``-f json`` output is
parsed and checked against the services and the provider.
"""

import json
import os
import pathlib
import subprocess
import sys
import time
import uuid

import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.requirements import Requirements
from ironic_multi._reservation import shards
from ironic_multi.cmd import manage
from ironic_multi.testing import coordination as coordination_servers
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from ironic_multi.testing import static_nodes

HOSTS = ('svc-a', 'svc-b')
GOLD = Requirements(resource_class='CUSTOM_GOLD')
# Every command, with the options it must document (and their help).
COMMAND_OPTIONS = {
    'pool show': {},
    'pool flush': {'--timeout': 'How long to wait for the services',
                   '--yes': 'Flush without asking'},
    'ring show': {},
    'shards assign': {'--count': 'How many shard keys',
                      '--dry-run': 'Only list the nodes',
                      '--yes': 'Assign without asking'},
    'reservations list': {'--host': 'Only the reservations of this',
                          '--state': 'Only the reservations in this'},
    'reservations show': {'INSTANCE': 'UUID of the (Nova) instance'},
    'reservations release': {'INSTANCE': 'UUID of the (Nova) instance',
                             '--yes': 'Release without asking'},
    'capacity': {},
    'housekeeping run': {'--dry-run': 'Only report what the pass would',
                         '--timeout': 'How long to wait for the services'},
    'instances adopt': {'--from': 'whose instances to adopt',
                        '--to': 'The live compute service host that adopts',
                        '--timeout': 'How long to wait for the services'},
    'stats': {},
}


def write_conf(path, ironic=None, **options):
    """A real ini file with ``[ironic_multi]`` (and ``[ironic]``) options."""
    def value(v):
        if isinstance(v, dict):
            return ','.join('%s:%s' % item for item in v.items())
        return str(v)

    lines = ['[ironic_multi]']
    lines += ['%s = %s' % (k, value(v)) for k, v in options.items()]
    if ironic:
        lines += ['[ironic]']
        lines += ['%s = %s' % (k, value(v)) for k, v in ironic.items()]
    path.write_text('\n'.join(lines) + '\n')
    return str(path)


def run(capsys, *argv):
    """``(exit code, stdout, stderr)`` of the CLI run in this process."""
    capsys.readouterr()
    code = manage.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, conf, *argv):
    code, out, err = run(capsys, '--config-file', conf, *argv, '-f', 'json')
    assert code == 0, err
    return json.loads(out)


def fails(capsys, *argv, code=1):
    """The one-line error of a failing run (no traceback)."""
    got, out, err = run(capsys, *argv)
    assert got == code, (out, err)
    assert 'Traceback' not in err
    return err


class Cluster(object):
    def __init__(self, conf, services, inventory, nodes):
        self.conf = conf
        self.services = services
        self.inventory = inventory
        self.nodes = nodes

    @property
    def provider(self):
        return self.services['svc-a'].provider

    def claim(self, host='svc-a', requirements=GOLD):
        instance = str(uuid.uuid4())
        return self.services[host].claim(instance, requirements)


@pytest.fixture
def cluster(tmp_path):
    """Two live services on a static inventory, and their config file."""
    inventory = static_nodes.StaticInventory(tmp_path / 'nodes')
    nodes = {'rack-a': inventory.add_nodes(3, 'gold', shard='rack-a'),
             'rack-b': inventory.add_nodes(2, 'silver', shard='rack-b'),
             None: inventory.add_nodes(2, 'gold')}
    options = dict(
        node_provider='static', static_inventory=inventory.path,
        coordination_url=coordination_servers.file_url(
            str(tmp_path / 'coordination')),
        coordination_group='manage-test', membership_timeout=5,
        request_poll_interval=1, pool_refresh_interval=1,
        housekeeping_interval=3600, spare_targets={'gold': 10})
    conf = write_conf(tmp_path / 'ironic-multi.conf', **options)
    services = {}
    try:
        for host in HOSTS:
            services[host] = reservers.build_reserver(None, host, **options)
            services[host].start(background=True)
        # Both see both before the tests look.
        for service in services.values():
            service.refresh()
        yield Cluster(conf, services, inventory, nodes)
    finally:
        for service in services.values():
            service.stop()


# -- reading ---------------------------------------------------------------

def test_pool_show_counts_every_shard_and_resource_class(cluster, capsys):
    claimed = cluster.claim()
    deploying = cluster.claim()
    cluster.provider.set_state(deploying.instance_uuid,
                               lifecycle.State.DEPLOYING, host='svc-a')
    silver = cluster.nodes['rack-b'][0]
    # As the housekeeper does: a failure noted first, then the quarantine.
    cluster.provider.record_failure(silver, 'broken fan')
    cluster.provider.quarantine(silver, 'broken fan')

    rows = run_json(capsys, cluster.conf, 'pool show')

    by_key = {(r['Shard'], r['Resource Class']): r for r in rows}
    keys = cluster.provider.shard_keys()
    assert set(by_key) == ({(k, 'gold') for k in keys if k != 'rack-b'}
                           | {('rack-b', 'silver')})
    assert sum(r['Nodes'] for r in rows) == 7
    assert sum(r['Claimed'] for r in rows) == 1
    assert sum(r['Deploying'] for r in rows) == 1
    assert by_key['rack-b', 'silver'] == dict(
        by_key['rack-b', 'silver'], Nodes=2, Ready=1, Quarantined=1,
        Claimed=0, Deploying=0, Active=0)
    gold_ready = sum(r['Ready'] for k, r in by_key.items()
                     if k[1] == 'gold')
    assert gold_ready == 5 - 2
    for (shard, _rc), row in by_key.items():
        owner = cluster.services['svc-a'].ring.owner(shard)
        assert row['Owner'] == owner
        # The static provider keeps no pool to age.
        assert row['Pool Age'] is None
    assert {claimed.shard, deploying.shard} <= set(keys)


def test_ring_show_lists_live_services_and_their_keys(cluster, capsys):
    rows = run_json(capsys, cluster.conf, 'ring show')

    assert [r['Host'] for r in rows] == sorted(HOSTS)
    keys = cluster.provider.shard_keys()
    for row in rows:
        service = cluster.services[row['Host']]
        assert row['Member'] == service.membership.member_id
        assert row['Shard Keys'] == sorted(service.owned_shards())
        assert row['Shard Count'] == len(row['Shard Keys'])
        assert row['Nodes'] == sum(keys[k] for k in row['Shard Keys'])
        assert 0 <= row['Heartbeat Age'] < 30
    owned = [k for row in rows for k in row['Shard Keys']]
    assert sorted(owned) == sorted(keys)

    code, out, _err = run(capsys, '--config-file', cluster.conf,
                          'ring show')
    assert code == 0
    assert 'svc-a' in out and 'Heartbeat Age' in out


def test_reservations_list_show_and_release(cluster, capsys, monkeypatch):
    first = cluster.claim()
    second = cluster.claim(host='svc-b')
    cluster.provider.set_state(second.instance_uuid,
                               lifecycle.State.DEPLOYING, host='svc-b')

    # Someone else's reservation, on the same inventory: listed and
    # counted as foreign, never released.
    free = cluster.nodes['rack-b'][1]
    foreign = str(uuid.uuid4())
    cluster.inventory.claim_unmarked(free, foreign)

    code, out, err = run(capsys, '--config-file', cluster.conf,
                         'reservations list', '-f', 'json')
    assert code == 0, err
    assert ('1 of 3 reservation(s) listed are not group manage-test\'s'
            in err)
    rows = json.loads(out)
    by_instance = {r['Instance']: r for r in rows}
    assert set(by_instance) == {first.instance_uuid, second.instance_uuid,
                                foreign}
    assert by_instance[first.instance_uuid] == {
        'Instance': first.instance_uuid, 'Node': first.node_uuid,
        'State': 'claimed', 'Host': None, 'Shard': first.shard,
        'Resource Class': 'gold', 'Power State': 'unknown',
        'Foreign': None}
    assert by_instance[foreign]['Foreign'] == 'unmarked'
    err = fails(capsys, '--config-file', cluster.conf,
                'reservations release', '--yes', foreign)
    assert 'not of manage-test: left alone' in err
    assert cluster.provider.lookup(foreign).node_uuid == free
    assert by_instance[second.instance_uuid]['Host'] == 'svc-b'
    only_b = run_json(capsys, cluster.conf, 'reservations list', '--host',
                      'svc-b')
    assert [r['Instance'] for r in only_b] == [second.instance_uuid]
    claimed = run_json(capsys, cluster.conf, 'reservations list', '--state',
                       'claimed')
    assert {r['Instance'] for r in claimed} == {first.instance_uuid, foreign}

    shown = run_json(capsys, cluster.conf, 'reservations show',
                     second.instance_uuid)
    assert shown['Node'] == second.node_uuid
    assert shown['State'] == 'deploying'

    # No terminal, no --yes: refused.
    monkeypatch.setattr(sys, 'stdin', _Terminal('y\n', tty=False))
    err = fails(capsys, '--config-file', cluster.conf,
                'reservations release', first.instance_uuid)
    assert 'no terminal to confirm on; pass --yes' in err
    # A terminal, answered "no".
    monkeypatch.setattr(sys, 'stdin', _Terminal('n\n'))
    err = fails(capsys, '--config-file', cluster.conf,
                'reservations release', first.instance_uuid)
    assert 'Release node %s of instance %s' % (
        first.node_uuid, first.instance_uuid) in err
    assert 'not confirmed' in err
    assert cluster.provider.lookup(first.instance_uuid) is not None
    # Answered "yes".
    monkeypatch.setattr(sys, 'stdin', _Terminal('yes\n'))
    released = run_json(capsys, cluster.conf, 'reservations release',
                        first.instance_uuid)
    assert released['Node'] == first.node_uuid
    assert cluster.provider.lookup(first.instance_uuid) is None

    err = fails(capsys, '--config-file', cluster.conf, 'reservations show',
                first.instance_uuid)
    assert err.strip() == 'Instance %s holds no node' % first.instance_uuid


class _Terminal(object):
    """stdin with typed answers, a terminal or not.

    :param meanwhile: called while the operator reads the first question.
    """

    def __init__(self, text, tty=True, meanwhile=None):
        self._lines = text.splitlines(True)
        self._tty = tty
        self._meanwhile = meanwhile

    def isatty(self):
        return self._tty

    def readline(self):
        if self._meanwhile is not None:
            self._meanwhile, meanwhile = None, self._meanwhile
            meanwhile()
        return self._lines.pop(0) if self._lines else ''


def test_capacity_beside_what_placement_is_told(cluster, capsys):
    held = cluster.claim()
    cluster.provider.set_state(held.instance_uuid,
                               lifecycle.State.DEPLOYING, host='svc-a')
    cluster.services['svc-a'].publish_extra(inventory={
        'CUSTOM_GOLD': {'total': 5, 'reserved': 3, 'max_unit': 1}})
    cluster.services['svc-a'].refresh()
    cluster.services['svc-a'].builds_waiting(
        {'i-new': {'CUSTOM_GOLD': 1}})

    rows = run_json(capsys, cluster.conf, 'capacity')

    by_class = {r['Resource Class']: r for r in rows}
    assert by_class['gold'] == {
        'Resource Class': 'gold', 'Placement Class': 'CUSTOM_GOLD',
        'Total': 5, 'Used': 1, 'Free': 4,
        'Placement': {
            'svc-a': {'total': 5, 'reserved': 3, 'used': 1, 'free': 1,
                      'waiting': 1},
            'svc-b': None}}
    assert by_class['silver']['Total'] == 2
    assert by_class['silver']['Free'] == 2
    assert by_class['silver']['Placement'] == {'svc-a': None, 'svc-b': None}


def test_stats_per_service(cluster, capsys):
    for _ in range(2):
        cluster.claim()
    with pytest.raises(Exception):
        cluster.claim(requirements=Requirements(
            resource_class='CUSTOM_PLATINUM'))
    cluster.services['svc-a'].refresh()

    rows = run_json(capsys, cluster.conf, 'stats')

    by_host = {r['Host']: r for r in rows}
    assert set(by_host) == set(HOSTS)
    a = by_host['svc-a']
    assert a['Claims'] == 2
    assert a['No Node'] == 1
    assert a['Races Lost'] == 0
    assert 0 < a['Claim p50'] <= a['Claim p99'] <= a['Claim Max']
    assert a['Deploys Running'] == 0
    assert a['Deploys Waiting'] == 0
    assert a['Pool Age'] is None
    assert by_host['svc-b']['Claims'] == 0
    assert by_host['svc-b']['Claim p50'] is None
    assert [r['Leader'] for r in rows].count(True) <= 1

    code, out, _err = run(capsys, '--config-file', cluster.conf, 'stats')
    assert code == 0
    assert 'Races Lost' in out and 'Housekeeping' in out


# -- operator requests -----------------------------------------------------

def test_pool_flush_is_answered_by_every_service(cluster, capsys):
    rows = run_json(capsys, cluster.conf, 'pool flush', '--timeout', '20',
                    '--yes')

    assert [r['Host'] for r in rows] == sorted(HOSTS)
    assert {r['Status'] for r in rows} == {'flushed'}
    assert sum(r['Nodes Read'] for r in rows) == 7
    assert all(r['Error'] is None for r in rows)


def test_pool_flush_asks_first(cluster, capsys, monkeypatch):
    answered = {host: len(reserver.desk.answers)
                for host, reserver in cluster.services.items()}
    monkeypatch.setattr(sys, 'stdin', _Terminal('', tty=False))
    err = fails(capsys, '--config-file', cluster.conf, 'pool flush',
                '--timeout', '5')
    assert err.strip() == ('Not flushing the ready pools: no terminal to '
                           'confirm on; pass --yes')
    monkeypatch.setattr(sys, 'stdin', _Terminal('n\n'))
    err = fails(capsys, '--config-file', cluster.conf, 'pool flush',
                '--timeout', '5')
    assert 'Flush the ready pools of 2 live service(s) (%s)?' % (
        ', '.join(HOSTS)) in err
    assert 'Not flushing the ready pools: not confirmed' in err
    # Nothing was asked of the services.
    assert {host: len(reserver.desk.answers)
            for host, reserver in cluster.services.items()} == answered

    monkeypatch.setattr(sys, 'stdin', _Terminal('y\n'))
    rows = run_json(capsys, cluster.conf, 'pool flush', '--timeout', '20')
    assert {r['Status'] for r in rows} == {'flushed'}


@pytest.mark.parametrize('state', [lifecycle.State.DEPLOYING,
                                   lifecycle.State.ACTIVE])
def test_release_refuses_a_deployed_reservation(cluster, capsys, state):
    held = cluster.claim()
    cluster.provider.set_state(held.instance_uuid, lifecycle.State.DEPLOYING,
                               host='svc-a')
    if state is lifecycle.State.ACTIVE:
        cluster.provider.set_state(held.instance_uuid, state)

    err = fails(capsys, '--config-file', cluster.conf,
                'reservations release', held.instance_uuid, '--yes')

    assert err.strip().startswith(
        'Not releasing the reservation of %s: node %s is %s, and may hold '
        'its image' % (held.instance_uuid, held.node_uuid, state))
    assert 'openstack server delete %s' % held.instance_uuid in err
    assert cluster.provider.lookup(held.instance_uuid).state is state


def test_housekeeping_run_dry_then_for_real(cluster, capsys):
    broken = cluster.nodes['rack-b'][1]
    for _ in range(3):
        cluster.provider.record_failure(broken, 'deploy failed')

    dry = run_json(capsys, cluster.conf, 'housekeeping run', '--dry-run',
                   '--timeout', '20')
    assert dry['Leader'] in HOSTS
    assert dry['Dry Run'] is True
    assert [(a['kind'], a['node_uuid'], a['done'])
            for a in dry['Actions']] == [('quarantine', broken, False)]
    assert dry['Short Of Spares'] == {'gold': {'free': 5, 'target': 10}}
    assert not any(t.quarantined_at
                   for t in cluster.provider.troubled_nodes())

    done = run_json(capsys, cluster.conf, 'housekeeping run',
                    '--timeout', '20')
    assert done['Leader'] == dry['Leader']
    assert [(a['kind'], a['node_uuid'], a['done'])
            for a in done['Actions']] == [('quarantine', broken, True)]
    assert [t.node_uuid for t in cluster.provider.troubled_nodes()
            if t.quarantined_at] == [broken]

    leader = cluster.services[done['Leader']]
    leader.refresh()
    rows = run_json(capsys, cluster.conf, 'stats')
    by_host = {r['Host']: r for r in rows}
    assert by_host[leader.host]['Housekeeping'] == {'quarantine': 1}
    assert by_host[leader.host]['Leader'] is True
    pool = run_json(capsys, cluster.conf, 'pool show')
    assert [r['Quarantined'] for r in pool if r['Shard'] == 'rack-b'] == [1]


def test_housekeeping_run_names_the_nodes_kept_out_of_service(cluster,
                                                              capsys):
    """A node the full quarantine has no room for is named.

    It stays out of claims by its failure count only.
    """
    gold = cluster.nodes['rack-a'] + cluster.nodes[None]
    for node in gold[:4] + cluster.nodes['rack-b'][:1]:  # max_preserved
        cluster.provider.record_failure(node, 'broken fan')
        cluster.provider.quarantine(node, 'broken fan')
    broken = gold[4]
    for _ in range(3):
        cluster.provider.record_failure(broken, 'deploy failed')

    report = run_json(capsys, cluster.conf, 'housekeeping run',
                      '--timeout', '20')

    assert report['Actions'] == []
    assert report['Out Of Service'] == [broken]
    code, out, err = run(capsys, '--config-file', cluster.conf,
                         'housekeeping run', '--timeout', '20')
    assert code == 0, err
    assert broken in out and 'Out Of Service' in out


def test_instances_adopt_asks_the_services(cluster, capsys):
    asked = []

    def adopter(host):
        def adopt(request):
            asked.append((host, request['args'], request['host']))
            if host != 'svc-b':
                return None  # not this one's to adopt
            return {'adopted': ['i-1', 'i-2'], 'host': host}
        return adopt

    for host, service in cluster.services.items():
        service.add_request_handler('adopt', adopter(host))

    adopted = run_json(capsys, cluster.conf, 'instances adopt', '--from',
                       'lost-host', '--timeout', '20')
    assert adopted == {'Host': 'svc-b', 'From': 'lost-host',
                       'Adopted': ['i-1', 'i-2']}
    assert ('svc-b', {'from': 'lost-host'}, None) in asked

    del asked[:]
    adopted = run_json(capsys, cluster.conf, 'instances adopt', '--from',
                       'lost-host', '--to', 'svc-b', '--timeout', '20')
    assert adopted['Host'] == 'svc-b'
    assert asked == [('svc-b', {'from': 'lost-host'}, 'svc-b')]

    code, out, _err = run(capsys, '--config-file', cluster.conf,
                          'instances adopt', '--from', 'lost-host',
                          '--to', 'svc-b', '--timeout', '20')
    assert code == 0
    assert 'i-1, i-2' in out

    # svc-a does not answer: a clear timeout.
    started = time.monotonic()
    err = fails(capsys, '--config-file', cluster.conf, 'instances adopt',
                '--from', 'lost-host', '--to', 'svc-a', '--timeout', '2')
    assert err.strip() == 'No live service answered within 2.0 s'
    assert time.monotonic() - started < 15
    err = fails(capsys, '--config-file', cluster.conf, 'instances adopt',
                '--from', 'lost-host', '--to', 'svc-x')
    assert 'svc-x is not a live compute service (live: svc-a, svc-b)' in err


# -- help and errors -------------------------------------------------------

@pytest.mark.parametrize('command', sorted(COMMAND_OPTIONS))
def test_help_of_every_command_is_complete(command, capsys):
    code, out, _err = run(capsys, *command.split(), '--help')
    assert code == 0
    assert out.startswith('usage: ironic-multi-manage %s' % command)
    flat = ' '.join(out.split())
    for option, text in COMMAND_OPTIONS[command].items():
        assert option in out
        assert text in flat, (option, text)
    # The description: more than the one-line summary.
    assert len(out.split('\n\n')[1].split()) > 20
    if command not in ('reservations release', 'instances adopt'):
        assert '--format' in out


def test_help_of_the_app_lists_every_command(capsys):
    code, out, _err = run(capsys, '--help')
    assert code == 0
    for command in COMMAND_OPTIONS:
        assert command in out
    assert '--config-file PATH' in out and '--config-dir DIR' in out


def test_bad_input_is_one_clear_line(cluster, capsys, tmp_path):
    missing = str(tmp_path / 'missing.conf')
    err = fails(capsys, '--config-file', missing, 'stats')
    assert err.strip() == ('Cannot read the configuration: Failed to find '
                           'some config files: %s' % missing)
    # --debug shows the traceback as well.
    code, _out, err = run(capsys, '--debug', '--config-file', missing,
                          'stats')
    assert code == 1
    assert 'Traceback' in err and 'ConfigFilesNotFoundError' in err

    broken = tmp_path / 'broken.conf'
    broken.write_text('[ironic_multi\nnode_provider = static\n')
    err = fails(capsys, '--config-file', str(broken), 'reservations list')
    assert err.startswith('Cannot read the configuration:')

    err = fails(capsys, '--config-file', cluster.conf, 'reservations show',
                'no-such-instance')
    assert err.strip() == 'Instance no-such-instance holds no node'

    err = fails(capsys, '--config-file', cluster.conf, 'shards assign',
                '--count', '0', code=2)
    assert ('argument --count: must be a whole number of at least 1, '
            "not '0'") in err
    err = fails(capsys, '--config-file', cluster.conf, 'shards assign',
                '--count', '4')
    assert err.strip().endswith('The static node provider does not '
                                'support shard assignment')

    err = fails(capsys, '--config-file', cluster.conf, 'pool flush',
                '--timeout', 'soon', code=2)
    assert 'must be a number of seconds above 0' in err

    code, out, _err = run(capsys, '--config-file', cluster.conf, 'pool shw')
    assert code == 2
    assert "'pool shw' is not an ironic-multi-manage command" in out
    assert 'pool show' in out


def test_unreachable_backends_are_one_clear_line(tmp_path, capsys):
    inventory = static_nodes.StaticInventory(tmp_path / 'nodes')
    inventory.add_nodes(1, 'gold')
    # Nothing listens on port 1: refused at once.
    no_group = write_conf(
        tmp_path / 'no-group.conf', node_provider='static',
        static_inventory=inventory.path, membership_timeout=5,
        coordination_url='etcd3+http://127.0.0.1:1')
    err = fails(capsys, '--config-file', no_group, 'stats')
    assert err.startswith('Coordination backend etcd3+http://127.0.0.1:1')
    assert 'is unavailable' in err
    assert len(err.strip().splitlines()) == 1

    no_ironic = write_conf(
        tmp_path / 'no-ironic.conf', node_provider='ironic',
        ironic={'auth_type': 'none',
                'endpoint_override': 'http://127.0.0.1:1',
                **reservers.retry_options(0)})
    err = fails(capsys, '--config-file', no_ironic, 'reservations list')
    assert err.startswith('Ironic is unavailable')
    assert len(err.strip().splitlines()) == 1


# -- the console script ----------------------------------------------------

def _console_script():
    found = pathlib.Path(sys.executable).parent / 'ironic-multi-manage'
    if not found.exists():
        pytest.skip('ironic-multi-manage is not installed next to %s'
                    % sys.executable)
    return str(found)


def test_console_script_end_to_end(cluster):
    script = _console_script()
    held = cluster.claim()
    env = dict(os.environ, PYTHONWARNINGS='ignore')

    def call(*argv, **kwargs):
        return subprocess.run(
            [script, '--config-file', cluster.conf, *argv],
            capture_output=True, text=True, timeout=120, env=env, **kwargs)

    ring = call('ring', 'show', '-f', 'json')
    assert ring.returncode == 0, ring.stderr
    assert [r['Host'] for r in json.loads(ring.stdout)] == sorted(HOSTS)

    # stdin is no terminal: release needs --yes.
    refused = call('reservations', 'release', held.instance_uuid,
                   stdin=subprocess.DEVNULL)
    assert refused.returncode == 1
    assert refused.stdout == ''
    assert refused.stderr.strip().endswith('pass --yes')
    released = call('reservations', 'release', held.instance_uuid, '--yes',
                    '-f', 'json', stdin=subprocess.DEVNULL)
    assert released.returncode == 0, released.stderr
    assert json.loads(released.stdout)['Node'] == held.node_uuid
    assert cluster.provider.lookup(held.instance_uuid) is None

    missing = call('reservations', 'show', held.instance_uuid)
    assert missing.returncode == 1
    assert missing.stderr.strip() == ('Instance %s holds no node'
                                      % held.instance_uuid)


# -- against the real Ironic -----------------------------------------------

@pytest.fixture
def ironic_conf(ironic, tmp_path):
    """The config file, endpoint and options of the session's Ironic."""
    endpoint = ironic.server.endpoint
    options = dict(
        node_provider='ironic',
        coordination_url=coordination_servers.file_url(
            str(tmp_path / 'coordination')),
        coordination_group='manage-ironic', membership_timeout=5,
        fallback_shard_count=4, request_poll_interval=1)
    conf = write_conf(tmp_path / 'nova.conf',
                      ironic={'auth_type': 'none',
                              'endpoint_override': endpoint},
                      **options)
    return conf, endpoint, options


def test_shards_assign_on_ironic(ironic, ironic_conf, capsys):
    conf, _endpoint, _options = ironic_conf
    loose = ironic.enroll_nodes(3, resource_class='gold')
    sharded = ironic.enroll_nodes(1, resource_class='gold', shard='rack-x')
    expected = {node: shards.ShardKeys(4).fallback_of(node)
                for node in loose}

    planned = run_json(capsys, conf, 'shards assign', '--dry-run')
    assert {r['Node']: r['Shard Key'] for r in planned} == expected
    assert {r['Status'] for r in planned} == {'would assign'}
    assert {n['uuid']: n['shard'] for n in ironic.list_nodes()} == dict(
        dict.fromkeys(loose), **{sharded[0]: 'rack-x'})

    # No terminal to confirm on: nothing changes without --yes.
    err = fails(capsys, '--config-file', conf, 'shards assign', '--count',
                '4')
    assert err.strip() == ('Not assigning shard keys: no terminal to '
                           'confirm on; pass --yes')
    assert {n['uuid']: n['shard'] for n in ironic.list_nodes()} == dict(
        dict.fromkeys(loose), **{sharded[0]: 'rack-x'})

    done = run_json(capsys, conf, 'shards assign', '--count', '4', '--yes')
    assert {r['Node']: r['Shard Key'] for r in done} == expected
    assert {r['Status'] for r in done} == {'assigned'}
    assert {n['uuid']: n['shard'] for n in ironic.list_nodes()} == dict(
        expected, **{sharded[0]: 'rack-x'})

    assert run_json(capsys, conf, 'shards assign', '--dry-run') == []

    _code, _out, err = run(capsys, '--config-file', conf, 'shards assign',
                           '--count', '8', '--dry-run')
    assert 'Warning: 8 shard keys instead of the 4' in err


def test_shards_assign_leaves_other_deployers_nodes_alone(
        ironic, ironic_conf, capsys):
    # No conductor group set: the command sees the whole Ironic.
    conf, endpoint, options = ironic_conf
    nodes = set(ironic.enroll_nodes(3, resource_class='gold'))
    service = reservers.build_reserver(endpoint, 'ironic-svc', **options)
    service.start(background=False)
    try:
        ours = service.claim(str(uuid.uuid4()), GOLD).node_uuid
    finally:
        service.stop()
    # Held by another deployer, straight through Ironic's API.
    theirs = (nodes - {ours}).pop()
    ironic.request('PATCH', '/v1/nodes/%s' % theirs, json=[
        {'op': 'add', 'path': '/instance_uuid',
         'value': str(uuid.uuid4())}])

    code, out, err = run(capsys, '--config-file', conf, 'shards assign',
                         '--yes', '-f', 'json')
    assert code == 0, err
    assert {r['Node'] for r in json.loads(out)} == nodes - {theirs}
    assert ('1 node(s) left alone, not group manage-ironic\'s to change'
            in err)
    assert ironic.get_node(theirs)['shard'] is None
    assert ironic.get_node(ours)['shard'] is not None


def test_pool_and_reservations_on_ironic(ironic, ironic_conf, capsys):
    conf, endpoint, options = ironic_conf
    ironic.enroll_nodes(2, resource_class='gold', shard='rack-1')
    ironic.enroll_nodes(1, resource_class='silver', shard='rack-2')
    service = reservers.build_reserver(endpoint, 'ironic-svc', **options)
    service.start(background=False)
    try:
        held = service.claim(str(uuid.uuid4()), GOLD)
        service.refresh()

        rows = run_json(capsys, conf, 'pool show')
        by_key = {(r['Shard'], r['Resource Class']): r for r in rows}
        assert set(by_key) == {('rack-1', 'gold'), ('rack-2', 'silver')}
        assert by_key['rack-1', 'gold'] == dict(
            by_key['rack-1', 'gold'], Nodes=2, Ready=1, Claimed=1,
            Deploying=0, Active=0, Quarantined=0, Owner='ironic-svc')
        assert by_key['rack-2', 'silver']['Ready'] == 1
        assert 0 <= by_key['rack-1', 'gold']['Pool Age'] < 60

        listed = run_json(capsys, conf, 'reservations list')
        assert listed == [{
            'Instance': held.instance_uuid, 'Node': held.node_uuid,
            'State': 'claimed', 'Host': None, 'Shard': 'rack-1',
            'Resource Class': 'gold', 'Power State': 'off',
            'Foreign': None}]
    finally:
        service.stop()


def test_another_groups_reservation_on_ironic_is_never_released(
        ironic, ironic_conf, capsys):
    conf, endpoint, options = ironic_conf
    (node,) = ironic.enroll_nodes(1, resource_class='gold', shard='rack-1')
    other = reservers.build_reserver(
        endpoint, 'other-svc', **dict(options,
                                      coordination_group='another-group'))
    other.start(background=False)
    try:
        theirs = other.claim(str(uuid.uuid4()), GOLD)
    finally:
        other.stop()

    code, out, err = run(capsys, '--config-file', conf,
                         'reservations list', '-f', 'json')
    assert code == 0, err
    assert json.loads(out) == [{
        'Instance': theirs.instance_uuid, 'Node': node, 'State': 'claimed',
        'Host': None, 'Shard': 'rack-1', 'Resource Class': 'gold',
        'Power State': 'off', 'Foreign': 'group another-group'}]
    assert ('1 of 1 reservation(s) listed are not group manage-ironic\'s'
            in err)
    err = fails(capsys, '--config-file', conf, 'reservations release',
                '--yes', theirs.instance_uuid)
    assert 'group another-group, not of manage-ironic: left alone' in err
    assert ironic.get_node(node)['instance_uuid'] == theirs.instance_uuid


def test_release_checks_again_after_asking(ironic, ironic_conf, capsys,
                                           monkeypatch):
    """The operator answers minutes later: the claim has deployed since."""
    conf, endpoint, options = ironic_conf
    ironic.enroll_nodes(1, resource_class='gold', shard='rack-1')
    service = reservers.build_reserver(endpoint, 'ironic-svc',
                                       state_poll_interval=0.1, **options)
    service.start(background=False)
    try:
        held = service.claim(str(uuid.uuid4()), GOLD)
        monkeypatch.setattr(sys, 'stdin', _Terminal(
            'yes\n', meanwhile=lambda: service.deploy(
                held, provider_contract.deployment(held.instance_uuid,
                                                   'ironic-svc'))))
        err = fails(capsys, '--config-file', conf, 'reservations release',
                    held.instance_uuid)
        assert 'Release node %s' % held.node_uuid in err
        assert 'node %s is active, and may hold its image' % (
            held.node_uuid) in err
        node = ironic.get_node(held.node_uuid)
        assert (node['instance_uuid'], node['provision_state']) == (
            held.instance_uuid, 'active')
    finally:
        service.stop()


@pytest.mark.parametrize('state', ['rescue', 'rescue failed',
                                   'unrescue failed', 'service failed',
                                   'adopt failed', 'deploy failed', 'error'])
def test_release_refuses_every_state_that_may_hold_an_image(
        ironic, ironic_conf, capsys, state):
    # Ironic accepts the release's PATCH in all of these: the image would
    # stay on a node that no instance names.
    conf, endpoint, options = ironic_conf
    ironic.enroll_nodes(1, resource_class='gold', shard='rack-1')
    service = reservers.build_reserver(endpoint, 'ironic-svc', **options)
    service.start(background=False)
    try:
        held = service.claim(str(uuid.uuid4()), GOLD)
    finally:
        service.stop()
    ironic.force_provision_state(held.node_uuid, state)

    err = fails(capsys, '--config-file', conf, 'reservations release',
                held.instance_uuid, '--yes')

    assert err.strip().startswith(
        'Not releasing the reservation of %s: node %s is %s, and may hold '
        'its image' % (held.instance_uuid, held.node_uuid, state))
    assert '--force releases it all the same' in err
    assert ironic.get_node(held.node_uuid)['instance_uuid'] == (
        held.instance_uuid)

    code, out, err = run(capsys, '--config-file', conf, 'reservations release',
                         held.instance_uuid, '--yes', '--force', '-f', 'json')
    assert code == 0, err
    assert 'Releasing with --force: node %s is %s' % (
        held.node_uuid, state) in err
    assert ironic.get_node(held.node_uuid)['instance_uuid'] is None
