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

"""Takeover: who is lost, who adopts, the three moves and their order.

Nova's objects and placement are doubles: the services table, compute
nodes and instances are patched lookups over lists the tests build;
placement is a small in-memory one that checks consumer generations and
capacity as the real one does.
"""

import copy
import dataclasses
import datetime
import threading
import time
import types
from unittest import mock

from nova.compute import provider_tree
from nova.compute import utils as compute_utils
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from oslo_utils import timeutils
import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation import membership as membership_mod
from ironic_multi._reservation import ring as ring_mod
from ironic_multi._virt import driver
from ironic_multi._virt import host as host_mod
from ironic_multi._virt import takeover
from ironic_multi import exception
from tests.unit.reservation import fakes as backend_fakes
from tests.unit.virt import fakes

LOST = 'compute-lost'
LIVE = ('compute-a', 'compute-b', 'compute-c')
RC = 'CUSTOM_BAREMETAL'
UUIDS = ['00000000-0000-4000-8000-%012d' % i for i in range(1, 6)]
SHARED = 'ffffffff-0000-4000-8000-000000000001'


def rp(host):
    return host_mod.compute_node_uuid(host)


# -- doubles ---------------------------------------------------------------

class Membership(object):
    """A group of ``hosts`` seen from ``host``; locks shared by name."""

    locks = None

    def __init__(self, host, hosts, locks):
        self.member_id = membership_mod.make_member_id(host)
        self.hosts = list(hosts)
        self.locks = locks

    def members(self):
        return {membership_mod.make_member_id(h) for h in self.hosts}

    def lock(self, name):
        return self.locks.setdefault(name, _Lock())

    def call(self, action, function, *args, late=None):
        return function(*args)


class _Lock(object):
    def __init__(self):
        self._lock = threading.Lock()
        # Whether the backend still says it is held (a partition, a pause
        # past its expiry: it is not).
        self.owned = False

    def acquire(self, blocking=True):
        self.owned = self._lock.acquire(blocking)
        return self.owned

    def is_still_owner(self):
        return self.owned

    def release(self):
        self.owned = False
        self._lock.release()


class Reserver(object):
    """What the takeover uses of a Reserver, over shared node marks."""

    group = 'ironic-multi'

    def __init__(self, host, hosts, nodes, events, locks):
        self.host = host
        self.membership = Membership(host, hosts, locks)
        self.ring = ring_mod.ShardRing(self.membership, partitions=32)
        self.ring.refresh([])
        self.nodes = nodes
        self.events = events
        self.errors = {}

    def lookup(self, instance_uuid):
        return self.nodes.get(instance_uuid)

    def adopt(self, instance_uuid):
        if 'adopt' in self.errors:
            raise self.errors.pop('adopt')
        self.events.append(('mark', instance_uuid, self.host))
        before = self.nodes[instance_uuid]
        self.nodes[instance_uuid] = dataclasses.replace(before,
                                                        host=self.host)
        return before

    def give_back(self, instance_uuid, host):
        if 'give_back' in self.errors:
            raise self.errors.pop('give_back')
        if self.nodes[instance_uuid].host != self.host:
            raise exception.ReservationNotFound(instance=instance_uuid)
        self.events.append(('mark', instance_uuid, host))
        self.nodes[instance_uuid] = dataclasses.replace(
            self.nodes[instance_uuid], host=host)


class Response(object):
    def __init__(self, status_code, body=None):
        self.status_code = status_code
        self._body = body
        self.text = str(body)

    def __bool__(self):
        return self.status_code < 400

    def json(self):
        return copy.deepcopy(self._body)


class Placement(object):
    """Allocations and inventories, with generations and capacity checks."""

    def __init__(self, events):
        self.events = events
        self.consumers = {}
        self.inventories = {}
        self.generations = {}
        self.puts = []
        self.conflicts = 0
        # The report client's provider cache.
        self._provider_tree = provider_tree.ProviderTree()

    def provider(self, uuid, total, reserved=0):
        self.inventories[uuid] = {RC: {
            'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': 1, 'step_size': 1, 'allocation_ratio': 1.0}}
        self.generations[uuid] = 1
        if not self._provider_tree.exists(uuid):
            self._provider_tree.new_root(uuid, uuid)
        self._provider_tree.update_inventory(
            uuid, self.inventories[uuid], generation=1)

    def allocate(self, consumer, provider, units=1, **more):
        allocations = {provider: {'resources': {RC: units}}}
        allocations.update(more)
        self.consumers[consumer] = {'allocations': allocations,
                                    'consumer_generation': 1,
                                    'project_id': 'project',
                                    'user_id': 'user'}

    def used(self, provider):
        return sum(c['allocations'].get(provider, {}).get(
            'resources', {}).get(RC, 0) for c in self.consumers.values())

    def free(self, provider):
        inventory = self.inventories[provider][RC]
        return (inventory['total'] - inventory['reserved']
                - self.used(provider))

    # -- the SchedulerReportClient API ------------------------------------

    def get_allocs_for_consumer(self, context, consumer):
        found = self.consumers.get(consumer)
        if found is None:
            return {'allocations': {}}
        body = copy.deepcopy(found)
        for provider, allocation in body['allocations'].items():
            allocation['generation'] = self.generations.get(provider, 1)
        return body

    def put_allocations(self, context, consumer, payload):
        self.puts.append((consumer, copy.deepcopy(payload)))
        current = self.consumers[consumer]
        if self.conflicts:
            # Someone else wrote the consumer meanwhile.
            self.conflicts -= 1
            current['consumer_generation'] += 1
        if payload['consumer_generation'] != current['consumer_generation']:
            raise nova_exception.AllocationUpdateFailed(
                consumer_uuid=consumer, error='consumer generation conflict')
        for provider, allocation in payload['allocations'].items():
            units = allocation['resources'].get(RC, 0)
            held = current['allocations'].get(provider, {}).get(
                'resources', {}).get(RC, 0)
            if provider in self.inventories and (
                    units - held > self.free(provider)):
                return False
        current['allocations'] = copy.deepcopy(payload['allocations'])
        current['consumer_generation'] += 1
        self.events.append(('allocation', consumer,
                            sorted(payload['allocations'])))
        return True

    def get(self, url, version=None, global_request_id=None):
        provider = url.split('/')[2]
        return Response(200, {
            'inventories': self.inventories[provider],
            'resource_provider_generation': self.generations[provider]})

    def put(self, url, data, version=None, global_request_id=None):
        provider = url.split('/')[2]
        if data['resource_provider_generation'] != self.generations[
                provider]:
            return Response(409, {'errors': [{'code': 'conflict'}]})
        self.inventories[provider] = copy.deepcopy(data['inventories'])
        self.generations[provider] += 1
        return Response(200, {
            'inventories': copy.deepcopy(data['inventories']),
            'resource_provider_generation': self.generations[provider]})

    def cached(self, provider):
        """``(inventory, generation)`` the report client's cache holds."""
        data = self._provider_tree.data(provider)
        return data.inventory, data.generation


def service(host, forced_down=False, down_for=None):
    """A nova-compute Service; ``down_for``: seconds since Nova says so."""
    now = timeutils.utcnow().replace(tzinfo=None)
    seen = now
    if down_for is not None:
        seen = now - datetime.timedelta(seconds=60 + down_for)
    return objects.Service(host=host, binary='nova-compute', topic='compute',
                           forced_down=forced_down, disabled=False,
                           last_seen_up=seen, created_at=seen,
                           updated_at=seen)


def compute_node(host, hypervisor_type='ironic', node_id=None):
    return objects.ComputeNode(
        id=node_id or 10 + sum(map(ord, host)), uuid=rp(host), host=host,
        hypervisor_hostname=host, hypervisor_type=hypervisor_type)


class Cloud(object):
    """Nova's services, compute nodes and instances; Ironic's node marks."""

    def __init__(self, monkeypatch, live=LIVE, ring_hosts=None):
        self.events = []
        self.locks = {}
        self.nodes = {}
        self.instances = []
        self.services = [service(h) for h in live]
        self.compute_nodes = {rp(h): compute_node(h)
                              for h in tuple(live) + (LOST,)}
        self.placement = Placement(self.events)
        self.ring_hosts = list(live if ring_hosts is None else ring_hosts)
        self.saved = []
        self.save_errors = []
        self.read_errors = []
        for host in tuple(live) + (LOST,):
            self.placement.provider(rp(host), total=5)
        monkeypatch.setattr(objects.ServiceList, 'get_by_binary',
                            self._services)
        monkeypatch.setattr(objects.ComputeNode, 'get_by_uuid',
                            self._compute_node)
        monkeypatch.setattr(objects.InstanceList, 'get_by_host',
                            self._instances)
        monkeypatch.setattr(objects.Instance, 'get_by_uuid',
                            self._instance_in_the_database)

        # {uuid: host} as Nova's database has it (saves that landed).
        self.database_hosts = {}
        monkeypatch.setattr(compute_utils, 'add_instance_fault_from_exc',
                            self._fault)

    def _services(self, context, binary, include_disabled=False):
        assert binary == 'nova-compute' and include_disabled
        return list(self.services)

    def _compute_node(self, context, uuid):
        if uuid not in self.compute_nodes:
            raise nova_exception.ComputeHostNotFound(host=uuid)
        return self.compute_nodes[uuid]

    def _instances(self, context, host, expected_attrs=None):
        return [i for i in self.instances if i.host == host]

    def _instance_in_the_database(self, context, uuid, expected_attrs=None):
        if self.read_errors:
            raise self.read_errors.pop(0)
        return types.SimpleNamespace(host=self.database_hosts[uuid])

    def lose(self, host=LOST, **how):
        self.services.append(service(host, **how))

    def boot(self, uuid, host=LOST, mark=None, group='ironic-multi',
             **fields):
        """An instance on ``host``, its node marked, its allocation."""
        fields.setdefault('task_state', None)
        fields.setdefault('vm_state', 'active')
        instance = fakes.instance(uuid, host=host, node=host, **fields)
        instance.save.side_effect = self._saving(instance)
        self.instances.append(instance)
        self.database_hosts[uuid] = host
        self.nodes[uuid] = lifecycle.Reservation(
            instance_uuid=uuid, node_uuid='node-%s' % uuid[-2:],
            state=lifecycle.State.ACTIVE, host=mark or host,
            resource_class='baremetal', group=group)
        self.placement.allocate(uuid, rp(host))
        return instance

    def _saving(self, instance):
        def save(expected_task_state=None, expected_vm_state=None):
            if self.save_errors:
                raise self.save_errors.pop(0)
            if expected_vm_state is None and expected_task_state == [None]:
                # The adoption: host, node and compute_id.
                self.database_hosts[instance.uuid] = instance.host
                self.events.append(('nova', instance.uuid, instance.host,
                                    instance.node, instance.compute_id))
            else:
                # A task ended: the states written, the states expected.
                self.events.append((
                    'state', instance.uuid, instance.vm_state,
                    instance.task_state, expected_vm_state,
                    expected_task_state))
            self.saved.append(instance.uuid)
        return save

    def _fault(self, context, instance, fault, exc_info=None,
               fault_message=None):
        assert fault_message is None
        self.events.append(('fault', instance.uuid, type(fault).__name__,
                            fault.format_message()))

    def reserver(self, host):
        return Reserver(host, self.ring_hosts, self.nodes, self.events,
                        self.locks)

    def takeover(self, host, **kwargs):
        return takeover.Takeover(self.reserver(host), host,
                                 report_client=lambda: self.placement,
                                 **kwargs)


@pytest.fixture
def options(conf):
    conf.config(takeover_forced_down=True, takeover_down_after=0,
                group='ironic_multi')
    return conf


@pytest.fixture
def cloud(monkeypatch, options):
    return Cloud(monkeypatch)


@pytest.fixture
def context():
    return nova_context.get_admin_context()


def owner_of(host, hosts=LIVE):
    shard_ring = ring_mod.ShardRing(Membership(hosts[0], hosts, {}), 32)
    shard_ring.refresh([])
    return shard_ring.owner(host)


# -- what counts as lost -------------------------------------------------

def test_forced_down_is_lost_at_once(cloud, context):
    cloud.lose(forced_down=True)
    assert cloud.takeover(LIVE[0]).lost_hosts(context) == [LOST]


def test_up_services_are_not_lost(cloud, context):
    cloud.lose()  # registered, heartbeating
    survey = cloud.takeover(LIVE[0]).survey(context)
    assert survey.lost == {}
    assert survey.down == frozenset()


def test_forced_down_is_not_lost_without_the_option(cloud, context, conf):
    conf.config(takeover_forced_down=False, takeover_down_after=600,
                group='ironic_multi')
    cloud.lose(forced_down=True)
    survey = cloud.takeover(LIVE[0]).survey(context)
    # Down for Nova, but neither option makes it lost yet.
    assert survey.down == {LOST}
    assert survey.lost == {}


@pytest.mark.parametrize('down_for, lost', [(30, False), (130, True)])
def test_down_past_the_grace_period(cloud, context, conf, down_for, lost):
    conf.config(takeover_forced_down=False, takeover_down_after=120,
                group='ironic_multi')
    cloud.lose(down_for=down_for)
    survey = cloud.takeover(LIVE[0]).survey(context)
    assert survey.down == {LOST}
    assert (LOST in survey.lost) is lost
    if lost:
        assert survey.lost[LOST].startswith('down for 1')


def test_down_without_a_grace_period_is_not_lost(cloud, context):
    cloud.lose(down_for=100000)
    assert cloud.takeover(LIVE[0]).lost_hosts(context) == []


@pytest.mark.parametrize('node', [None, 'libvirt'])
def test_other_drivers_hosts_are_never_lost(cloud, context, node):
    cloud.lose(forced_down=True)
    if node is None:
        del cloud.compute_nodes[rp(LOST)]
    else:
        cloud.compute_nodes[rp(LOST)] = compute_node(LOST, 'QEMU')
    survey = cloud.takeover(LIVE[0]).survey(context)
    assert survey.down == {LOST}
    assert survey.lost == {}


def test_the_own_host_is_never_lost(cloud, context):
    cloud.services[0] = service(LIVE[0], forced_down=True)
    assert cloud.takeover(LIVE[0]).lost_hosts(context) == []


# -- who adopts ----------------------------------------------------------

def test_ring_owner_ignores_the_hosts_left_out():
    hosts = ['h%d' % i for i in range(6)]
    full = ring_mod.ShardRing(Membership('h0', hosts, {}), 32)
    full.refresh([])
    for key in ['compute-%d' % i for i in range(50)]:
        owner = full.owner(key)
        assert full.owner(key, ignore=[]) == owner
        # Leaving the owner out: the host a ring without it would choose.
        smaller = ring_mod.ShardRing(
            Membership('h0', [h for h in hosts if h != owner], {}), 32)
        smaller.refresh([])
        assert full.owner(key, ignore=[owner, 'not-a-member']) == (
            smaller.owner(key))
    assert full.owner('x', ignore=hosts) is None


def test_exactly_the_ring_owner_adopts(monkeypatch, options, context):
    cloud = Cloud(monkeypatch)
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    owner = owner_of(LOST)
    results = {host: cloud.takeover(host).run(context) for host in LIVE}
    assert {h for h, r in results.items() if r} == {owner}
    (result,) = results[owner]
    assert result['adopted'] == [UUIDS[0]]
    assert cloud.instances[0].host == owner


@pytest.mark.parametrize('how', [{'forced_down': True},
                                 {'down_for': 130}])
def test_a_host_live_in_the_group_is_not_lost(monkeypatch, conf, context,
                                              how):
    # Restarted, it serves RPC before its first heartbeat reaches Nova:
    # ending its tasks then would make two services manage one instance.
    conf.config(takeover_forced_down=True, takeover_down_after=120,
                group='ironic_multi')
    cloud = Cloud(monkeypatch, ring_hosts=LIVE + (LOST,))
    cloud.lose(**how)
    instance = cloud.boot(UUIDS[0], vm_state='building',
                          task_state='spawning')
    results = [cloud.takeover(host).run(context) for host in LIVE]
    assert results == [[], [], []]
    assert cloud.takeover(LIVE[0]).lost_hosts(context) == []
    assert cloud.events == [] and cloud.saved == []
    assert (instance.host, instance.vm_state, instance.task_state) == (
        LOST, 'building', 'spawning')


def test_a_host_back_in_the_group_mid_takeover_stops_it(cloud, context):
    cloud.lose(forced_down=True)
    for uuid in UUIDS[:2]:
        cloud.boot(uuid)
    spawning = cloud.boot(UUIDS[2], vm_state='building',
                          task_state='spawning')
    adopter = cloud.takeover(owner_of(LOST))
    real = adopter._adopt_one

    def adopt_one_then_restart(*args, **kwargs):
        real(*args, **kwargs)
        adopter._reserver.membership.hosts.append(LOST)

    adopter._adopt_one = adopt_one_then_restart
    with pytest.raises(exception.TakeoverRefused,
                       match='live member of the coordination group'):
        adopter.adopt(context, LOST)
    assert [i.host for i in cloud.instances] == [owner_of(LOST), LOST, LOST]
    # Its task had ended before the host came back (the first write).
    assert spawning.vm_state == 'error'


def test_a_task_is_not_ended_once_the_host_is_back(cloud, context):
    cloud.lose(forced_down=True)
    instance = cloud.boot(UUIDS[0], vm_state='building',
                          task_state='spawning')
    adopter = cloud.takeover(owner_of(LOST))
    survey = adopter.survey(context)
    assert LOST in survey.lost
    # Back between the survey and the adoption.
    adopter._reserver.membership.hosts.append(LOST)
    with pytest.raises(exception.TakeoverRefused):
        adopter.adopt(context, LOST)
    assert cloud.events == [] and cloud.saved == []
    assert (instance.vm_state, instance.task_state) == ('building',
                                                        'spawning')


def test_nobody_is_lost_while_the_group_cannot_be_read(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    adopter = cloud.takeover(owner_of(LOST))

    def members():
        raise exception.CoordinationUnavailable(url='etcd3+http://x',
                                                reason='etcd is down')

    adopter._reserver.membership.members = members
    assert adopter.run(context) == []
    assert cloud.events == []


def test_hosts_nova_reports_down_never_adopt(cloud, context):
    owner = owner_of(LOST)
    # The ring owner's own nova-compute is down as well: the next one
    # adopts, and the owner stands aside.
    cloud.services = [service(h, down_for=5) if h == owner else service(h)
                      for h in LIVE]
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    results = {host: cloud.takeover(host).run(context) for host in LIVE}
    others = [h for h in LIVE if h != owner]
    expected = owner_of(LOST, tuple(others))
    assert {h for h, r in results.items() if r} == {expected}
    assert cloud.instances[0].host == expected


def test_a_second_adopter_waits_for_the_lock(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    owner = owner_of(LOST)
    lock = cloud.locks.setdefault(takeover.LOCK_NAME % LOST, _Lock())
    lock.acquire()
    assert cloud.takeover(owner).run(context) == []
    with pytest.raises(exception.TakeoverRefused,
                       match='another service is adopting them now'):
        cloud.takeover(owner).adopt(context, LOST)
    assert cloud.placement.puts == []
    lock.release()
    assert cloud.takeover(owner).run(context)[0]['adopted'] == [UUIDS[0]]


# -- the three moves -------------------------------------------------------

def test_the_three_moves_in_order(cloud, context):
    cloud.lose(forced_down=True)
    for uuid in UUIDS[:2]:
        cloud.boot(uuid)
    owner = owner_of(LOST)
    node = cloud.compute_nodes[rp(owner)]
    adopted = []
    result = cloud.takeover(owner, on_adopted=adopted.append).adopt(
        context, LOST)

    assert result['host'] == owner and result['from'] == LOST
    assert result['adopted'] == UUIDS[:2]
    assert result['skipped'] == {}
    assert 0 <= result['seconds'] < 5
    assert adopted == [result]
    moves = [('allocation', u, [rp(owner)]) for u in UUIDS[:2]]
    marks = [('mark', u, owner) for u in UUIDS[:2]]
    saves = [('nova', u, owner, owner, node.id) for u in UUIDS[:2]]
    assert cloud.events == [e for trio in zip(moves, marks, saves)
                            for e in trio]
    for uuid in UUIDS[:2]:
        assert cloud.nodes[uuid].host == owner
        assert cloud.placement.consumers[uuid]['allocations'] == {
            rp(owner): {'resources': {RC: 1}}}


def test_the_instances_are_told_arriving_before_any_move(cloud, context):
    # The inventory must not take a moved allocation for a build that
    # waits for a node: that would take its unit off the room made.
    cloud.lose(forced_down=True)
    for uuid in UUIDS[:2]:
        cloud.boot(uuid)
    owner = owner_of(LOST)
    result = cloud.takeover(owner, on_arriving=lambda uuids: (
        cloud.events.append(('arriving', sorted(uuids))))).adopt(
            context, LOST)
    assert result['adopted'] == UUIDS[:2]
    assert cloud.events[0] == ('arriving', UUIDS[:2])
    assert [e[0] for e in cloud.events[1:]] == [
        'allocation', 'mark', 'nova'] * 2


def test_a_second_run_changes_nothing(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    takeover_ = cloud.takeover(owner_of(LOST))
    takeover_.adopt(context, LOST)
    del cloud.events[:]
    again = takeover_.adopt(context, LOST)
    assert again['adopted'] == [] and again['skipped'] == {}
    assert cloud.events == []


@pytest.mark.parametrize('failing', ['mark', 'nova'])
def test_an_adoption_that_fails_half_way_gives_back_what_moved(
        cloud, context, failing):
    # The lost host may come back before a next run: what moved must not
    # stay on the adopter while Nova routes the instance to the lost host.
    cloud.lose(forced_down=True)
    instance = cloud.boot(UUIDS[0])
    owner = owner_of(LOST)
    takeover_ = cloud.takeover(owner)
    if failing == 'mark':
        # Ironic does not answer: that instance is skipped.
        takeover_._reserver.errors['adopt'] = exception.IronicUnavailable(
            reason='gone')
        first = takeover_.adopt(context, LOST)
        assert first['adopted'] == []
        assert list(first['skipped']) == [UUIDS[0]]
    else:
        # Nova's database fails the save (it did not land).
        cloud.save_errors.append(RuntimeError('database gone'))
        with pytest.raises(RuntimeError):
            takeover_.adopt(context, LOST)
    assert (instance.host, cloud.database_hosts[UUIDS[0]]) == (LOST, LOST)
    assert cloud.nodes[UUIDS[0]].host == LOST
    assert list(cloud.placement.consumers[UUIDS[0]]['allocations']) == [
        rp(LOST)]
    del cloud.events[:]

    second = takeover_.adopt(context, LOST)
    assert second['adopted'] == [UUIDS[0]]
    assert cloud.events == [
        ('allocation', UUIDS[0], [rp(owner)]), ('mark', UUIDS[0], owner),
        ('nova', UUIDS[0], owner, owner, cloud.compute_nodes[rp(owner)].id)]


def test_a_save_whose_answer_was_lost_keeps_what_moved(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    owner = owner_of(LOST)
    takeover_ = cloud.takeover(owner)
    real = cloud.instances[0].save.side_effect

    def saved_then_lost(**kwargs):
        real(**kwargs)
        raise RuntimeError('connection reset')

    cloud.instances[0].save.side_effect = saved_then_lost
    with pytest.raises(RuntimeError):
        takeover_.adopt(context, LOST)
    assert cloud.database_hosts[UUIDS[0]] == owner
    assert cloud.nodes[UUIDS[0]].host == owner
    assert list(cloud.placement.consumers[UUIDS[0]]['allocations']) == [
        rp(owner)]


def test_nothing_is_given_back_when_nova_cannot_say(cloud, context):
    # A crash would leave the same: the next run repairs it if the host
    # stays lost.
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    owner = owner_of(LOST)
    cloud.save_errors.append(RuntimeError('database gone'))
    cloud.read_errors.append(RuntimeError('database gone'))
    with pytest.raises(RuntimeError):
        cloud.takeover(owner).adopt(context, LOST)
    assert cloud.nodes[UUIDS[0]].host == owner
    assert list(cloud.placement.consumers[UUIDS[0]]['allocations']) == [
        rp(owner)]


def test_a_task_started_before_the_save_gives_all_back(cloud, context):
    # A stop cast to the lost host between the read and the save: Nova
    # keeps routing the instance there, so the node and the allocation go
    # back with it.  Left on the adopter, they would outlive the lost
    # host's return, and nobody could act on the instance.
    cloud.lose(forced_down=True)
    instance = cloud.boot(UUIDS[0])
    owner = owner_of(LOST)
    cloud.save_errors.append(nova_exception.UnexpectedTaskStateError(
        instance_uuid=UUIDS[0], expected=[None], actual='powering-off'))
    result = cloud.takeover(owner).adopt(context, LOST)

    assert result['adopted'] == []
    assert result['skipped'][UUIDS[0]].startswith('Conflict updating')
    assert (instance.host, instance.node) == (LOST, LOST)
    assert cloud.nodes[UUIDS[0]].host == LOST
    assert list(cloud.placement.consumers[UUIDS[0]]['allocations']) == [
        rp(LOST)]
    assert cloud.events == [
        ('allocation', UUIDS[0], [rp(owner)]), ('mark', UUIDS[0], owner),
        ('mark', UUIDS[0], LOST), ('allocation', UUIDS[0], [rp(LOST)])]


def test_what_cannot_be_given_back_is_said(cloud, context, caplog):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    adopter = cloud.takeover(owner_of(LOST))
    adopter._reserver.errors['give_back'] = exception.IronicUnavailable(
        reason='gone')
    cloud.save_errors.append(nova_exception.UnexpectedTaskStateError(
        instance_uuid=UUIDS[0], expected=[None], actual='rebooting'))
    result = adopter.adopt(context, LOST)
    assert list(result['skipped']) == [UUIDS[0]]
    assert 'instances adopt --from %s' % LOST in caplog.text


def test_instances_marked_for_a_third_host_are_skipped(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0], mark='compute-9')
    cloud.boot(UUIDS[1])
    result = cloud.takeover(owner_of(LOST)).adopt(context, LOST)
    assert result['adopted'] == [UUIDS[1]]
    assert result['skipped'] == {
        UUIDS[0]: 'its node node-01 is marked for host compute-9'}
    assert cloud.nodes[UUIDS[0]].host == 'compute-9'
    assert cloud.instances[0].host == LOST
    assert [p[0] for p in cloud.placement.puts] == [UUIDS[1]]


def test_instances_of_another_group_are_skipped(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0], group='another-group')
    cloud.boot(UUIDS[1])
    result = cloud.takeover(owner_of(LOST)).adopt(context, LOST)
    assert result['adopted'] == [UUIDS[1]]
    assert result['skipped'] == {
        UUIDS[0]: 'its node node-01 carries the mark of group another-group'}
    assert cloud.nodes[UUIDS[0]].host == LOST
    assert cloud.instances[0].host == LOST


def test_a_lock_lost_mid_takeover_stops_it(cloud, context):
    # Cut off from the backend, or paused past the lock's expiry: the
    # adopter stops before the next instance, and its periodic says so.
    cloud.lose(forced_down=True)
    for uuid in UUIDS[:3]:
        cloud.boot(uuid)
    adopter = cloud.takeover(owner_of(LOST))
    real = adopter._adopt_one

    def adopt_one(*args, **kwargs):
        real(*args, **kwargs)
        cloud.locks['takeover.%s' % LOST].owned = False

    adopter._adopt_one = adopt_one
    with pytest.raises(exception.TakeoverRefused) as e:
        adopter.adopt(context, LOST)
    assert 'no longer this service' in str(e.value)
    assert [i.host for i in cloud.instances] == [owner_of(LOST), LOST, LOST]
    # Whoever holds the lock next finishes the job.
    adopter._adopt_one = real
    assert adopter.adopt(context, LOST)['adopted'] == UUIDS[1:3]


def test_a_lock_lost_before_the_first_instance_changes_nothing(cloud,
                                                               context):
    # Lost while the instances were read: not even placement's inventory
    # is touched.
    owner = owner_of(LOST)
    cloud.placement.provider(rp(owner), total=4, reserved=3)
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    adopter = cloud.takeover(owner)
    real = adopter._check

    def check_then_lose(*args):
        cloud.locks['takeover.%s' % LOST].owned = False
        return real(*args)

    adopter._check = check_then_lose
    with pytest.raises(exception.TakeoverRefused):
        adopter.adopt(context, LOST)
    assert cloud.placement.inventories[rp(owner)][RC]['reserved'] == 3
    assert cloud.placement.puts == [] and cloud.events == []


@pytest.mark.parametrize('vm_state, task, fault, message', [
    ('building', 'spawning', 'BuildAbortException',
     'Build of instance %s aborted: ' % UUIDS[0]),
    ('building', None, 'BuildAbortException',
     'Build of instance %s aborted: ' % UUIDS[0]),
    ('active', 'rebuild_spawning', 'BuildAbortException',
     'Build of instance %s aborted: ' % UUIDS[0]),
    ('active', 'rebooting_hard', 'InstanceRebootFailure',
     'Failed to reboot instance: '),
    ('active', 'deleting', 'InstanceTerminationFailure',
     'Failed to terminate instance: '),
    ('active', 'powering-off', 'InstancePowerOffFailure',
     'Failed to power off instance: '),
    ('stopped', 'powering-on', 'InstancePowerOnFailure',
     'Failed to power on instance: '),
    ('active', 'image_snapshot', 'NovaException',
     'Task of instance %s ended: ' % UUIDS[0]),
])
def test_unfinished_tasks_end_in_error_and_are_adopted(
        cloud, context, vm_state, task, fault, message):
    # The lost host can never finish them, nor time them out: the user
    # would wait for ever.
    cloud.lose(forced_down=True)
    instance = cloud.boot(UUIDS[0], vm_state=vm_state, task_state=task)
    owner = owner_of(LOST)
    (result,) = cloud.takeover(owner).run(context)

    message += 'compute host %s was lost (forced down) during %s' % (
        LOST, task or 'the build')
    assert result['ended'] == {UUIDS[0]: message}
    assert result['adopted'] == [UUIDS[0]]
    assert result['skipped'] == {}
    assert (instance.vm_state, instance.task_state) == ('error', None)
    node = cloud.compute_nodes[rp(owner)]
    # ERROR first, expecting what was read; its fault; then adopted.
    assert cloud.events == [
        ('state', UUIDS[0], 'error', None, [vm_state], [task]),
        ('fault', UUIDS[0], fault, message),
        ('allocation', UUIDS[0], [rp(owner)]),
        ('mark', UUIDS[0], owner),
        ('nova', UUIDS[0], owner, owner, node.id)]


def test_the_fault_says_why_the_host_is_lost(cloud, context, conf):
    conf.config(takeover_forced_down=False, takeover_down_after=120,
                group='ironic_multi')
    cloud.lose(down_for=130)
    cloud.boot(UUIDS[0], task_state='rebooting')
    (result,) = cloud.takeover(owner_of(LOST)).run(context)
    assert result['ended'][UUIDS[0]].startswith(
        'Failed to reboot instance: compute host %s was lost (down for 1'
        % LOST)
    assert result['adopted'] == [UUIDS[0]]


def test_an_unfinished_build_without_a_node_stays_in_error(cloud, context):
    # Its build never claimed a node (or gave it back): ERROR, on the lost
    # host, where Nova deletes it by itself.
    cloud.lose(forced_down=True)
    instance = cloud.boot(UUIDS[0], vm_state='building',
                          task_state='scheduling')
    del cloud.nodes[UUIDS[0]]
    owner = owner_of(LOST)
    (result,) = cloud.takeover(owner).run(context)
    assert list(result['ended']) == [UUIDS[0]]
    assert result['adopted'] == []
    assert result['skipped'] == {
        UUIDS[0]: 'it holds no node that %s can see' % owner}
    assert (instance.vm_state, instance.task_state) == ('error', None)
    assert instance.host == LOST
    assert [e[0] for e in cloud.events] == ['state', 'fault']


def test_a_task_changed_meanwhile_wins(cloud, context):
    # The save expects the states read: a concurrent change (an operator's
    # reset, the host back) is not overwritten, nor faulted, nor adopted.
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0], task_state='rebooting_hard')
    cloud.boot(UUIDS[1])
    cloud.save_errors.append(nova_exception.UnexpectedTaskStateError(
        instance_uuid=UUIDS[0], expected='rebooting_hard', actual=None))
    result = cloud.takeover(owner_of(LOST)).adopt(context, LOST)
    assert result['ended'] == {}
    assert result['adopted'] == [UUIDS[1]]
    assert result['skipped'][UUIDS[0]].startswith(
        'cannot end its task: Conflict updating instance')
    assert not [e for e in cloud.events if e[1] == UUIDS[0]]


class _ExpiredLock(_Lock):
    """Taken, then expired before its first check (a pause, a cut)."""

    def acquire(self, blocking=True):
        super().acquire(blocking)
        self.owned = False
        return True


def test_a_lock_lost_before_a_task_ends_changes_nothing(cloud, context):
    cloud.locks[takeover.LOCK_NAME % LOST] = _ExpiredLock()
    cloud.lose(forced_down=True)
    instance = cloud.boot(UUIDS[0], vm_state='building',
                          task_state='spawning')
    with pytest.raises(exception.TakeoverRefused,
                       match='no longer this service'):
        cloud.takeover(owner_of(LOST)).adopt(context, LOST)
    assert cloud.events == [] and cloud.saved == []
    assert (instance.vm_state, instance.task_state) == ('building',
                                                        'spawning')


def test_instances_without_a_node_are_skipped(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    del cloud.nodes[UUIDS[0]]
    owner = owner_of(LOST)
    result = cloud.takeover(owner).adopt(context, LOST)
    assert result['skipped'] == {
        UUIDS[0]: 'it holds no node that %s can see' % owner}
    assert cloud.events == []


# -- placement -------------------------------------------------------------

def test_the_allocation_payload(cloud, context):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    # A sharing provider's part stays where it is.
    cloud.placement.consumers[UUIDS[0]]['allocations'][SHARED] = {
        'resources': {'DISK_GB': 10}}
    cloud.placement.consumers[UUIDS[0]]['consumer_generation'] = 7
    owner = owner_of(LOST)
    cloud.takeover(owner).adopt(context, LOST)
    assert cloud.placement.puts == [(UUIDS[0], {
        'allocations': {rp(owner): {'resources': {RC: 1}},
                        SHARED: {'resources': {'DISK_GB': 10}}},
        'consumer_generation': 7, 'project_id': 'project',
        'user_id': 'user'})]


def test_moved_allocations_merges_with_the_targets():
    current = {'allocations': {'src': {'resources': {RC: 1}, 'generation': 3},
                               'dst': {'resources': {RC: 2, 'VCPU': 1}}},
               'consumer_generation': 2, 'project_id': 'p', 'user_id': 'u'}
    assert takeover.moved_allocations(current, 'src', 'dst') == {
        'allocations': {'dst': {'resources': {RC: 3, 'VCPU': 1}}},
        'consumer_generation': 2, 'project_id': 'p', 'user_id': 'u'}


@pytest.mark.parametrize('conflicts, adopted', [(1, True), (2, False)])
def test_a_generation_conflict_is_retried_once(cloud, context, conflicts,
                                               adopted):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    cloud.placement.conflicts = conflicts
    result = cloud.takeover(owner_of(LOST)).adopt(context, LOST)
    assert len(cloud.placement.puts) == 2
    assert (result['adopted'] == [UUIDS[0]]) is adopted
    if not adopted:
        assert 'consumer generation conflict' in result['skipped'][UUIDS[0]]
        assert cloud.nodes[UUIDS[0]].host == LOST
        assert cloud.instances[0].host == LOST


def _full_adopter(cloud):
    """A full cluster; returns the adopter.

    The adopter's reserved counts the lost host's two instances and one
    of a third host: placement would refuse the move.
    """
    owner = owner_of(LOST)
    cloud.placement.provider(rp(owner), total=4, reserved=3)
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    cloud.boot(UUIDS[1])
    cloud.boot(UUIDS[2], host=owner)
    return owner


def test_room_is_made_on_a_full_adopter(cloud, context):
    owner = _full_adopter(cloud)
    assert cloud.placement.free(rp(owner)) == 0

    result = cloud.takeover(owner).adopt(context, LOST)

    assert result['adopted'] == UUIDS[:2]
    assert cloud.placement.inventories[rp(owner)][RC]['reserved'] == 1
    assert cloud.placement.used(rp(owner)) == 3
    assert cloud.placement.free(rp(owner)) == 0
    # The compute manager's cache has what was written, with its old
    # generation (a stale write of the resource tracker's conflicts).
    assert cloud.placement.cached(rp(owner)) == (
        cloud.placement.inventories[rp(owner)], 1)


def test_room_is_made_again_when_a_refresh_took_it_back(cloud, context):
    # The adopter's own inventory refresh lands between the room made for
    # the moves and the first move: reserved counts the lost host's
    # instances again, and placement refuses the move for capacity.
    owner = _full_adopter(cloud)
    real_put = cloud.placement.put_allocations
    refreshed = []

    def refresh_then_put(context, consumer, payload):
        if not refreshed:
            refreshed.append(consumer)
            cloud.placement.inventories[rp(owner)][RC]['reserved'] = 3
            cloud.placement.generations[rp(owner)] += 1
        return real_put(context, consumer, payload)

    cloud.placement.put_allocations = refresh_then_put
    result = cloud.takeover(owner).adopt(context, LOST)

    assert refreshed == [UUIDS[0]]
    assert result['adopted'] == UUIDS[:2] and result['skipped'] == {}
    assert cloud.placement.used(rp(owner)) == 3
    assert cloud.placement.free(rp(owner)) == 0


def test_nothing_adopted_calls_nobody_back(cloud, context):
    cloud.lose(forced_down=True)
    called = []
    result = cloud.takeover(owner_of(LOST), on_adopted=called.append).adopt(
        context, LOST)
    assert result['adopted'] == [] and called == []
    # No inventory written.
    assert cloud.placement.generations[rp(owner_of(LOST))] == 1


# -- the operator request --------------------------------------------------

def request(source, host=None, **args):
    return {'id': 'r1', 'op': 'adopt', 'args': dict(args, **{'from': source}),
            'host': host}


def test_request_without_a_host_is_the_ring_owners(cloud):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    owner = owner_of(LOST)
    answers = {h: cloud.takeover(h).serve(request(LOST)) for h in LIVE}
    assert {h for h, a in answers.items() if a is not None} == {owner}
    assert answers[owner]['adopted'] == [UUIDS[0]]


def test_request_to_a_host_is_served_there(cloud):
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    other = [h for h in LIVE if h != owner_of(LOST)][0]
    answer = cloud.takeover(other).serve(request(LOST, host=other))
    assert answer['host'] == other and answer['adopted'] == [UUIDS[0]]
    assert cloud.instances[0].host == other


def test_request_for_an_up_host_is_refused(cloud):
    cloud.lose()
    cloud.boot(UUIDS[0])
    for args in ({}, {'force': True}):
        with pytest.raises(exception.TakeoverRefused,
                           match='Nova reports it up and not forced down'):
            cloud.takeover(LIVE[0]).serve(request(LOST, host=LIVE[0],
                                                  **args))
    assert cloud.events == []
    assert cloud.instances[0].host == LOST


def test_request_for_a_host_live_in_the_group_is_refused(monkeypatch,
                                                         options):
    cloud = Cloud(monkeypatch, ring_hosts=LIVE + (LOST,))
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    with pytest.raises(exception.TakeoverRefused,
                       match='live member of the coordination group .* '
                             'stop it first'):
        cloud.takeover(LIVE[0]).serve(request(LOST, host=LIVE[0]))
    assert cloud.events == []


def test_request_answers_without_a_grace_period(cloud, conf):
    # The operator decides: down is enough, whatever the options say.
    conf.config(takeover_forced_down=False, group='ironic_multi')
    cloud.lose(down_for=1)
    cloud.boot(UUIDS[0])
    answer = cloud.takeover(LIVE[0]).serve(request(LOST, host=LIVE[0]))
    assert answer['adopted'] == [UUIDS[0]]


@pytest.mark.parametrize('source, why', [
    (LIVE[0], 'a host cannot adopt its own instances'),
    ('compute-unknown', 'Nova has no nova-compute service on host'),
])
def test_requests_refused(cloud, source, why):
    with pytest.raises(exception.TakeoverRefused, match=why):
        cloud.takeover(LIVE[0]).serve(request(source, host=LIVE[0]))


def test_a_host_nova_reports_down_refuses(cloud):
    cloud.services[0] = service(LIVE[0], forced_down=True)
    cloud.lose(forced_down=True)
    with pytest.raises(exception.TakeoverRefused,
                       match='Nova reports %s down' % LIVE[0]):
        cloud.takeover(LIVE[0]).serve(request(LOST, host=LIVE[0]))


def test_request_errors_become_answers(cloud, monkeypatch):
    cloud.lose(forced_down=True)
    monkeypatch.setattr(objects.InstanceList, 'get_by_host',
                        mock.Mock(side_effect=RuntimeError('conductor')))
    with pytest.raises(exception.TakeoverRefused, match='conductor'):
        cloud.takeover(LIVE[0]).serve(request(LOST, host=LIVE[0]))


# -- the driver's wiring ---------------------------------------------------

@pytest.mark.parametrize('flags, periodic', [
    ({}, False),
    ({'takeover_forced_down': True}, True),
    ({'takeover_down_after': 300}, True),
])
def test_driver_registers_the_takeover(conf, flags, periodic):
    conf.config(group='ironic_multi', pool_refresh_interval=17, **dict(
        {'takeover_forced_down': False, 'takeover_down_after': 0}, **flags))
    reserver = fakes.FakeReserver()
    drv = driver.IronicMultiDriver(types.SimpleNamespace(reportclient='rc'),
                                   reserver=reserver)
    drv.init_host(fakes.HOST)
    assert sorted(reserver.handlers) == ['adopt', 'migrate-apply',
                                         'migrate-plan', 'migrate-rollback']
    assert reserver.handlers['adopt'] == drv.takeover.serve
    assert reserver.handlers['migrate-apply'] == drv.takeover.serve_migration
    assert drv.takeover.host == fakes.HOST
    assert drv.takeover.client() == 'rc'
    registered = [(name, function.__wrapped__, interval)
                  for name, function, interval in reserver.periodics
                  if name == 'takeover']
    expected = [('takeover', drv.takeover.run, 17)] if periodic else []
    assert registered == expected


def test_an_instance_deleted_meanwhile_is_skipped_in_one_line(
        cloud, context):
    # Deleted through the API while its host was down: the conductor's
    # answer carries the remote traceback, which the report leaves out.
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    cloud.save_errors.append(nova_exception.InstanceNotFound(
        instance_id=UUIDS[0]).__class__(
        'Instance %s could not be found.\nTraceback (most recent call '
        'last):\n  File "manager.py", line 143' % UUIDS[0]))
    result = cloud.takeover(owner_of(LOST)).adopt(context, LOST)
    assert result['skipped'] == {
        UUIDS[0]: 'Instance %s could not be found.' % UUIDS[0]}


def _lost_host_with_its_lock_held(cloud, monkeypatch):
    """LOST down with an instance, its takeover lock held by a pass."""
    monkeypatch.setattr(takeover, 'LOCK_RETRY', 0.01)
    cloud.lose(forced_down=True)
    cloud.boot(UUIDS[0])
    lock = cloud.locks.setdefault(takeover.LOCK_NAME % LOST, _Lock())
    lock.acquire()
    return owner_of(LOST), lock


def test_request_waits_for_a_takeover_in_progress(cloud, monkeypatch):
    """A periodic pass holds the lock a moment, even with nothing to adopt.

    The operator's request used to be refused in that moment ("another
    service is adopting them now"); it waits for it, within a bound.
    """
    owner, lock = _lost_host_with_its_lock_held(cloud, monkeypatch)
    threading.Timer(0.2, lock.release).start()
    answer = cloud.takeover(owner).serve(request(LOST, host=owner))
    assert answer['adopted'] == [UUIDS[0]]


def test_request_is_refused_once_the_wait_is_over(cloud, monkeypatch):
    monkeypatch.setattr(takeover, 'REQUEST_LOCK_WAIT', 0.1)
    owner, _lock = _lost_host_with_its_lock_held(cloud, monkeypatch)
    started = time.monotonic()
    with pytest.raises(exception.TakeoverRefused,
                       match='another service is adopting them now'):
        cloud.takeover(owner).serve(request(LOST, host=owner))
    assert 0.1 <= time.monotonic() - started < 5
    assert cloud.placement.puts == []


def test_a_lock_taken_after_the_bound_is_given_back(tmp_path):
    """Adopting that host was refused for good: its lock had a holder.

    The acquire the adopter gave up on took the lock later, and its
    member's heartbeat kept it ("another service is adopting them now").
    """
    member = membership_mod.Membership('file://%s' % tmp_path, 'g', 1,
                                       host=LIVE[0])
    member.start()
    locks = backend_fakes.Locks()
    adopter = takeover.Takeover(types.SimpleNamespace(membership=member),
                                LIVE[0])
    name = takeover.LOCK_NAME % LOST
    try:
        with mock.patch.object(member, 'lock', side_effect=locks.lock):
            locks.stall()
            with pytest.raises(exception.TakeoverRefused,
                               match='no answer within 1 s'):
                adopter.lock(LOST)
            late = locks.holders[name]
            locks.answer()
            assert late.answered.wait(5)
            assert locks.free(name)
            lock = adopter.lock(LOST)
        assert locks.holders == {name: lock}
    finally:
        member.stop()
