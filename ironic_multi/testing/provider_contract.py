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

"""The one contract suite every node provider passes (pytest).

As tooz runs one ``TestAPI`` against every coordination driver, each
provider's test module subclasses :class:`ProviderContract` and provides
a ``harness`` fixture: a small object that knows how to make nodes in that
provider's source of truth.  The suite then speaks only the
:class:`ironic_multi.NodeProvider` API.  What a provider does not declare
in its ``features`` is skipped, through :func:`requires` and nothing else.

A harness provides:

``add_nodes(count, resource_class, traits=(), properties=None,
shard=None, owner=None)``
    Create ``count`` free nodes (available, powered off, unreserved) with
    these attributes; return their UUIDs in creation order.
``provider(group=None)``
    A NEW, started provider object on the same source, every call: what a
    restarted service would build.  Its power actions must work (for the
    static provider: configure a power command).  With ``group``, its
    ``[ironic_multi] coordination_group`` is that one: another group of
    services sharing the source.
``claim_unmarked(node_uuid, instance_uuid)``
    Reserve the node for the instance as another deployer would (or a
    version of ironic-multi before ownership marks): with no mark.
``snapshot()``
    A comparable picture of everything a claim, a deploy or a release may
    change in the source (for Ironic: the nodes as the API shows them).
``without(node_uuid, feature)``
    Only for a provider that declares ``Feature.RESCUE`` or a console:
    make the free node lack the interface of ``feature`` (for Ironic: its
    rescue or console interface set to ``no-rescue``, ``no-console``).
``can_nmi``
    Whether the harness's nodes take an NMI (Ironic's fake hardware does
    not: its management interface refuses, and the provider says so).
``add_volume_connector(node_uuid, type, connector_id)``,
``add_volume_target(node_uuid, target)`` and ``volume_targets(node_uuid)``
    Only for a provider that declares ``Feature.VOLUME_BOOT``: give the
    free node a volume connector (an iSCSI initiator...) or a
    :class:`~.base.VolumeTarget`; the node's volume targets, as
    :class:`~.base.VolumeTarget` s.

Every test puts its nodes in shard keys of its own, and only ever asks
about those, so that the suite also runs against a shared Ironic.

An out-of-tree provider runs it like this::

    from ironic_multi.testing import provider_contract

    @pytest.fixture
    def harness(tmp_path):
        return MyHarness(tmp_path)

    class TestMyProvider(provider_contract.ProviderContract):
        pass
"""

import functools
import threading
import time

from oslo_utils import uuidutils
import pytest

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi._reservation import requirements as reqs
from ironic_multi import exception

GOLD = 'baremetal-gold'
SILVER = 'baremetal-silver'
PROPERTIES = {'memory_mb': 4096, 'cpus': 8, 'local_gb': 100,
              'cpu_arch': 'x86_64'}
DEADLINE = 60.0
THREADS = 16
# Upper bound for any thread of a race to finish; a hang is a failure.
JOIN_TIMEOUT = 120.0


def request(resource_class=GOLD, project_id=None, flavor=None,
            **extra_specs):
    """Requirements for one node of ``resource_class``."""
    flavor = dict(flavor or {})
    specs = {'resources:%s' % reqs.normalize_resource_class(
        resource_class): '1'}
    specs.update(extra_specs)
    flavor['extra_specs'] = specs
    return reqs.Requirements.from_request(flavor, project_id=project_id)


def new_instance():
    return uuidutils.generate_uuid()


def requires(*features):
    """Skip the test unless the provider declares every one of ``features``.

    The one way a contract test is skipped.
    """
    def decorate(test):
        @functools.wraps(test)
        def run(self, *args, **kwargs):
            missing = set(features) - set(self.provider.features)
            if missing:
                pytest.skip('the %s provider does not declare %s' % (
                    self.provider.name, ', '.join(sorted(map(str, missing)))))
            return test(self, *args, **kwargs)
        return run
    return decorate


def _candidate(node_uuid, resource_class=GOLD):
    """A node dict of ``node_uuid`` as a claim's candidate."""
    return {'uuid': node_uuid, 'resource_class': resource_class}


def deployment(instance_uuid, host='contract-host', volume_targets=()):
    return base.Deployment(
        instance_uuid=instance_uuid, host=host,
        image_source=(None if volume_targets
                      else 'http://images.example.com/contract.qcow2'),
        instance_info={'root_gb': '10'}, volume_targets=volume_targets)


def volume_target(boot_index=0):
    """A volume target as Cinder's iSCSI connection info makes it."""
    volume_id = uuidutils.generate_uuid()
    return base.VolumeTarget(
        volume_id=volume_id, volume_type='iscsi', boot_index=boot_index,
        properties={'target_iqn': 'iqn.2010-10.org.openstack:volume-%s'
                                  % volume_id,
                    'target_portal': '192.0.2.10:3260', 'target_lun': 1})


class ProviderContract(object):
    """Tests of the provider contract; mix into a ``Test*`` class."""

    @pytest.fixture(autouse=True)
    def _suite_setup(self, harness):
        self.harness = harness
        tag = uuidutils.generate_uuid()[:8]
        self.shard = 'suite-%s' % tag
        self.other_shard = 'suite-%s-other' % tag
        self.provider = harness.provider()

    # -- helpers ------------------------------------------------------------

    def add_nodes(self, count=1, resource_class=GOLD, shard=None,
                  properties=None, **attributes):
        return self.harness.add_nodes(
            count, resource_class=resource_class,
            properties=dict(PROPERTIES, **(properties or {})),
            shard=shard or self.shard, **attributes)

    def ready(self, requirements=None, shards=None, provider=None):
        """Node dicts the provider offers, after a refresh."""
        provider = provider or self.provider
        shards = frozenset(shards or [self.shard])
        provider.refresh(shards)
        return provider.ready_nodes(requirements or request(), shards)

    def ready_uuids(self, *args, **kwargs):
        return {node['uuid'] for node in self.ready(*args, **kwargs)}

    def claim(self, instance_uuid, candidates=None, requirements=None,
              provider=None, claimer=None):
        provider = provider or self.provider
        requirements = requirements or request()
        if candidates is None:
            candidates = self.ready(requirements, provider=provider)
        return provider.claim(candidates, instance_uuid, requirements,
                              time.monotonic() + DEADLINE, claimer=claimer)

    @staticmethod
    def eventually(read, expected, timeout=DEADLINE):
        """``read()`` once it returns ``expected``, or at ``timeout``."""
        deadline = time.monotonic() + timeout
        value = read()
        while value != expected and time.monotonic() < deadline:
            time.sleep(0.1)
            value = read()
        return value

    def held(self, instances, provider=None):
        """``{instance: node}`` of ``instances`` per reservations()."""
        provider = provider or self.provider
        return {r.instance_uuid: r.node_uuid for r in provider.reservations()
                if r.instance_uuid in instances}

    # -- claiming -----------------------------------------------------------

    def test_claim_gets_matching_node(self):
        gold = set(self.add_nodes(2, GOLD))
        self.add_nodes(2, SILVER)
        instance = new_instance()

        reservation = self.claim(instance)

        assert reservation.instance_uuid == instance
        assert reservation.node_uuid in gold
        assert reservation.state == lifecycle.State.CLAIMED
        assert reservation.shard == self.shard
        assert reservation.resource_class == GOLD
        assert self.provider.lookup(instance) == reservation
        assert reservation.node_uuid not in self.ready_uuids()

    def test_requirements_exclude_non_matching_nodes(self):
        raid = ['CUSTOM_RAID']
        (free,) = self.add_nodes(1, traits=raid)
        (own,) = self.add_nodes(1, traits=raid, owner='project-a')
        self.add_nodes(1, SILVER, traits=raid)
        self.add_nodes(1)
        self.add_nodes(1, traits=raid, properties={'memory_mb': 1024})
        self.add_nodes(1, traits=raid, owner='project-b')
        self.add_nodes(1, traits=raid + ['CUSTOM_GPU'])
        requirements = request(
            project_id='project-a', flavor={'memory_mb': 2048},
            **{'trait:CUSTOM_RAID': 'required',
               'trait:CUSTOM_GPU': 'forbidden'})

        assert self.ready_uuids(requirements) == {free, own}
        reservation = self.claim(new_instance(), requirements=requirements)
        assert reservation.node_uuid in {free, own}

    def test_claim_again_for_same_instance_is_idempotent(self):
        self.add_nodes(3)
        instance = new_instance()

        first = self.claim(instance)
        again = self.claim(instance)
        # Even when offered only other nodes: one instance, one node.
        others = [n for n in self.ready() if n['uuid'] != first.node_uuid]
        third = self.claim(instance, candidates=others)

        assert again == first
        assert third == first
        assert self.held({instance}) == {instance: first.node_uuid}
        assert len(self.ready()) == 2

    def test_instances_never_share_a_node(self):
        nodes = set(self.add_nodes(3))
        candidates = self.ready()
        instances = [new_instance() for _ in range(3)]

        # The same, stale candidate list for everyone.
        got = [self.claim(i, candidates=candidates).node_uuid
               for i in instances]

        assert set(got) == nodes
        assert self.held(set(instances)) == dict(zip(instances, got))
        with pytest.raises(exception.NodeAlreadyClaimed):
            self.claim(new_instance(), candidates=candidates)

    def test_racing_threads_never_double_book(self):
        nodes = set(self.add_nodes(4))
        candidates = self.ready()
        assert {n['uuid'] for n in candidates} == nodes
        instances = [new_instance() for _ in range(THREADS)]
        barrier = threading.Barrier(THREADS, timeout=JOIN_TIMEOUT)
        results, lock = {}, threading.Lock()

        def race(instance):
            barrier.wait()
            try:
                outcome = self.claim(instance, candidates=candidates)
            except exception.NodeAlreadyClaimed as e:
                outcome = e
            except Exception as e:  # reported below, never swallowed
                outcome = e
            with lock:
                results[instance] = outcome

        threads = [threading.Thread(target=race, args=(i,), daemon=True)
                   for i in instances]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
        assert not any(t.is_alive() for t in threads), 'a claim hung'

        won = {i: r.node_uuid for i, r in results.items()
               if not isinstance(r, Exception)}
        errors = [r for r in results.values() if isinstance(r, Exception)]
        assert all(isinstance(e, exception.NodeAlreadyClaimed)
                   for e in errors), errors
        assert len(results) == THREADS
        assert sorted(won.values()) == sorted(nodes)
        assert self.held(set(instances)) == won
        assert self.ready_uuids() == set()

    def test_claim_raises_when_every_candidate_is_taken(self):
        self.add_nodes(1)
        candidates = self.ready()
        holder, loser = new_instance(), new_instance()
        self.claim(holder, candidates=candidates)

        with pytest.raises(exception.NodeAlreadyClaimed):
            self.claim(loser, candidates=candidates)
        assert self.provider.lookup(loser) is None
        assert self.provider.lookup(holder).node_uuid == (
            candidates[0]['uuid'])

    # -- releasing ----------------------------------------------------------

    def test_release_is_idempotent_and_returns_node_to_ready(self):
        self.add_nodes(2)
        instance = new_instance()
        reservation = self.claim(instance)
        assert reservation.node_uuid not in self.ready_uuids()

        released = self.provider.release(instance)

        assert released.instance_uuid == instance
        assert released.node_uuid == reservation.node_uuid
        assert released.state == lifecycle.State.RELEASED
        assert self.provider.lookup(instance) is None
        assert reservation.node_uuid in self.ready_uuids()
        assert self.provider.release(instance) is None
        assert len(self.ready()) == 2

    def test_release_of_unknown_instance_returns_none(self):
        self.add_nodes(1)
        assert self.provider.release(new_instance()) is None
        assert len(self.ready()) == 1

    def test_release_never_frees_another_instances_node(self):
        self.add_nodes(2)
        first, second = new_instance(), new_instance()
        kept = self.claim(first)
        freed = self.claim(second)

        assert self.provider.release(new_instance()) is None
        self.provider.release(second)
        self.provider.release(second)

        assert self.provider.lookup(first) == kept
        assert self.ready_uuids() == {freed.node_uuid}
        assert self.held({first, second}) == {first: kept.node_uuid}

    # -- state lives in the source ------------------------------------------

    def test_lookup_after_restart(self):
        self.add_nodes(2)
        instance = new_instance()
        reservation = self.claim(instance)

        restarted = self.harness.provider()

        assert restarted is not self.provider
        assert restarted.lookup(instance) == reservation
        assert self.held({instance}, restarted) == {
            instance: reservation.node_uuid}
        assert reservation.node_uuid not in self.ready_uuids(
            provider=restarted)
        # What one object did, another can undo.
        assert restarted.release(instance).node_uuid == reservation.node_uuid
        assert self.provider.lookup(instance) is None

    def test_ready_candidates_are_the_ready_nodes(self):
        gold = set(self.add_nodes(3))
        self.add_nodes(2, resource_class='baremetal-bronze')
        shards = frozenset([self.shard])
        assert self.ready_uuids() == gold
        drawn = [n['uuid'] for n in self.provider.ready_candidates(
            request(), shards)]
        assert sorted(drawn) == sorted(gold)

    def test_ready_nodes_filters_by_shard(self):
        here = set(self.add_nodes(2))
        there = set(self.add_nodes(3, shard=self.other_shard))

        assert self.ready_uuids(shards=[self.shard]) == here
        assert self.ready_uuids(shards=[self.other_shard]) == there
        assert self.ready_uuids(
            shards=[self.shard, self.other_shard]) == here | there
        assert self.ready_uuids(shards=[self.shard + '-none']) == set()
        for node in self.ready(shards=[self.other_shard]):
            assert self.provider.shard_of(node) == self.other_shard
        keys = self.provider.shard_keys()
        assert keys.get(self.shard) == 2
        assert keys.get(self.other_shard) == 3

    def test_claim_release_cycles_leave_source_unchanged(self):
        self.add_nodes(2)
        candidates = self.ready()
        before = self.harness.snapshot()
        a, b, c = new_instance(), new_instance(), new_instance()

        for _ in range(2):
            self.claim(a, candidates=candidates)
            self.claim(a, candidates=candidates)
            self.claim(b, candidates=candidates)
            with pytest.raises(exception.NodeAlreadyClaimed):
                self.claim(c, candidates=candidates)
            self.provider.release(a)
            self.provider.release(a)
            self.provider.release(b)
            self.provider.release(c)

        assert self.harness.snapshot() == before
        assert self.held({a, b, c}) == {}
        assert len(self.ready()) == 2

    def test_reservations_lists_current_ones(self):
        self.add_nodes(3)
        a, b = new_instance(), new_instance()
        assert self.held({a, b}) == {}

        ra, rb = self.claim(a), self.claim(b)
        listed = [r for r in self.provider.reservations()
                  if r.instance_uuid in (a, b)]
        assert len(listed) == 2
        assert set(listed) == {ra, rb}

        self.provider.release(a)
        assert self.held({a, b}) == {b: rb.node_uuid}

    # -- lifecycle -------------------------------------------------------

    @requires(base.Feature.SET_STATE)
    def test_lifecycle_states_are_kept_in_the_source(self):
        self.add_nodes(1)
        instance = new_instance()
        self.claim(instance)

        self.provider.set_state(instance, lifecycle.State.DEPLOYING)
        active = self.provider.set_state(instance, lifecycle.State.ACTIVE)
        assert active.state == lifecycle.State.ACTIVE
        # Retried calls stay idempotent.
        assert self.provider.set_state(instance,
                                       lifecycle.State.ACTIVE) == active

        restarted = self.harness.provider()
        assert restarted.lookup(instance) == active
        with pytest.raises(exception.InvalidStateTransition):
            restarted.set_state(instance, lifecycle.State.CLAIMED)
        assert restarted.lookup(instance) == active
        assert self.ready_uuids() == set()

        released = restarted.release(instance)
        assert released.state == lifecycle.State.RELEASED
        assert self.ready_uuids() == {active.node_uuid}

    # -- what is done to a reserved node ---------------------------------

    def deployed(self, host='contract-host', provider=None):
        """A free node claimed and deployed: ``(instance, reservation)``."""
        provider = provider or self.provider
        instance = new_instance()
        reservation = self.claim(instance, provider=provider)
        deployed = provider.deploy(reservation, deployment(instance, host))
        return instance, deployed

    def test_deploy_teardown_release_leave_source_unchanged(self):
        self.add_nodes(1)
        before = self.harness.snapshot()
        instance, deployed = self.deployed()

        assert deployed.state == lifecycle.State.ACTIVE
        found = self.provider.lookup(instance)
        assert found.state == lifecycle.State.ACTIVE
        assert found.host == 'contract-host'
        assert found.node_uuid == deployed.node_uuid

        self.provider.teardown(found)
        self.provider.teardown(found)  # idempotent
        # Ironic's tear down ends the claim too: release may find nothing.
        self.provider.release(instance)
        assert self.provider.lookup(instance) is None
        # A node may still be cleaning after its tear down: give it time.
        assert self.eventually(self.harness.snapshot, before) == before
        assert len(self.ready()) == 1

    def test_instances_of_a_host(self):
        self.add_nodes(3)
        here, on_here = self.deployed('contract-host-a')
        there, on_there = self.deployed('contract-host-b')
        claimed_only = new_instance()
        self.claim(claimed_only)

        mine = self.provider.instances('contract-host-a')
        assert set(mine) & {here, there, claimed_only} == {here}
        assert mine[here].node_uuid == on_here.node_uuid
        theirs = self.harness.provider().instances('contract-host-b')
        assert set(theirs) & {here, there, claimed_only} == {there}

    def test_power_actions_are_recorded(self):
        self.add_nodes(1)
        instance, deployed = self.deployed()

        self.provider.power(deployed, base.PowerAction.OFF)
        assert self.provider.lookup(instance).power_state == (
            lifecycle.PowerState.OFF)
        self.provider.power(deployed, base.PowerAction.ON)
        assert self.provider.lookup(instance).power_state == (
            lifecycle.PowerState.ON)
        self.provider.power(deployed, base.PowerAction.REBOOT)
        assert self.provider.lookup(instance).power_state == (
            lifecycle.PowerState.ON)
        # A soft action falls back to its hard one when the node cannot.
        self.provider.power(deployed, base.PowerAction.SOFT_OFF, timeout=5)
        assert self.provider.lookup(instance).power_state == (
            lifecycle.PowerState.OFF)

    def test_health_of_healthy_and_released_nodes(self):
        self.add_nodes(1)
        instance, deployed = self.deployed()
        healthy = self.provider.health([deployed])[instance]
        assert healthy.problem is None
        assert healthy.node_uuid == deployed.node_uuid

        self.provider.teardown(deployed)
        self.provider.release(instance)
        gone = self.provider.health([deployed])[instance]
        assert gone.problem is not None

    @requires(base.Feature.REBUILD)
    def test_rebuild_keeps_the_node(self):
        self.add_nodes(1)
        instance, deployed = self.deployed()
        self.provider.rebuild(deployed, deployment(instance))
        found = self.provider.lookup(instance)
        assert found.node_uuid == deployed.node_uuid
        assert found.state == lifecycle.State.ACTIVE

    def test_what_is_not_declared_is_not_supported(self):
        self.add_nodes(1)
        instance, deployed = self.deployed()
        undeclared = {
            base.Feature.REBUILD: lambda: self.provider.rebuild(
                deployed, deployment(instance)),
            base.Feature.VIFS: lambda: self.provider.attach_vif(
                deployed, new_instance()),
            base.Feature.VOLUME_BOOT: lambda: self.provider.volume_connectors(
                deployed),
        }
        for feature, call in undeclared.items():
            if feature not in self.provider.features:
                with pytest.raises(exception.NotSupported):
                    call()
        assert self.provider.lookup(instance).state == (
            lifecycle.State.ACTIVE)

    # -- boot from volume ---------------------------------------------------

    @requires(base.Feature.VOLUME_BOOT)
    def test_a_node_boots_from_its_volumes_until_torn_down(self):
        (node,) = self.add_nodes(1)
        initiator = 'iqn.2026-11.org.example:%s' % node
        self.harness.add_volume_connector(node, 'iqn', initiator)
        instance = new_instance()
        claimed = self.claim(instance)
        assert self.provider.volume_connectors(claimed) == (
            base.VolumeConnector(type='iqn', connector_id=initiator),)
        targets = (volume_target(0), volume_target(1))

        deployed = self.provider.deploy(
            claimed, deployment(instance, volume_targets=targets))
        assert deployed.state == lifecycle.State.ACTIVE
        assert sorted(self.harness.volume_targets(node),
                      key=lambda t: t.boot_index) == list(targets)
        # The tear down takes them away while the node is still ours.
        self.provider.teardown(deployed)
        assert self.harness.volume_targets(node) == []
        self.provider.release(instance)
        assert self.eventually(self.ready_uuids, {node}) == {node}

    @requires(base.Feature.VOLUME_BOOT)
    def test_a_deploy_replaces_the_volumes_a_node_was_left_with(self):
        (node,) = self.add_nodes(1)
        # What a tear down that was not waited for leaves behind.
        self.harness.add_volume_target(node, volume_target(0))
        instance = new_instance()
        fresh = volume_target(0)
        self.provider.deploy(self.claim(instance),
                             deployment(instance, volume_targets=(fresh,)))
        assert self.harness.volume_targets(node) == [fresh]

    # -- rescue, consoles, crash dump -------------------------------------

    def actions_on(self, deployed):
        """``(feature, call)`` of each action Nova may ask on the node."""
        return [
            (base.Feature.RESCUE,
             lambda: self.provider.rescue(deployed, 'secret')),
            (base.Feature.RESCUE, lambda: self.provider.unrescue(deployed)),
            (base.Feature.SERIAL_CONSOLE, lambda: self.provider.console(
                deployed, base.ConsoleKind.SERIAL)),
            (base.Feature.GRAPHICAL_CONSOLE, lambda: self.provider.console(
                deployed, base.ConsoleKind.GRAPHICAL)),
            (base.Feature.CRASH_DUMP,
             lambda: self.provider.crash_dump(deployed)),
        ]

    def still_active_on(self, instance, deployed):
        found = self.provider.lookup(instance)
        assert found.node_uuid == deployed.node_uuid
        assert found.state == lifecycle.State.ACTIVE

    @requires(base.Feature.RESCUE)
    def test_rescue_and_unrescue_keep_the_instance(self):
        self.add_nodes(1)
        instance, deployed = self.deployed()

        self.provider.check(deployed, base.Feature.RESCUE)
        self.provider.rescue(deployed, 'secret')
        self.provider.rescue(deployed, 'secret')  # idempotent
        rescued = self.harness.provider().lookup(instance)
        assert rescued.node_uuid == deployed.node_uuid
        # The instance is still on its node: nothing may take it.
        assert rescued.state == lifecycle.State.ACTIVE
        assert set(self.provider.instances('contract-host')) >= {instance}
        self.provider.unrescue(deployed)
        self.provider.unrescue(deployed)  # idempotent
        assert self.provider.lookup(instance).state == (
            lifecycle.State.ACTIVE)

    @requires(base.Feature.RESCUE)
    def test_a_node_without_rescue_is_refused_untouched(self):
        (node,) = self.add_nodes(1)
        self.harness.without(node, base.Feature.RESCUE)
        instance, deployed = self.deployed()
        before = self.harness.snapshot()

        for act in (lambda: self.provider.check(deployed,
                                                base.Feature.RESCUE),
                    lambda: self.provider.rescue(deployed, 'secret')):
            with pytest.raises(exception.NodeCannot) as e:
                act()
            assert e.value.node == deployed.node_uuid

        assert self.harness.snapshot() == before
        self.still_active_on(instance, deployed)

    @requires(base.Feature.GRAPHICAL_CONSOLE)
    def test_a_graphical_console_is_served(self):
        self.add_nodes(1)
        _instance, deployed = self.deployed()
        console = self.provider.console(deployed,
                                        base.ConsoleKind.GRAPHICAL)
        assert console.node_uuid == deployed.node_uuid
        assert console.kind == base.ConsoleKind.GRAPHICAL
        assert console.host and console.port > 0
        # Asked again, the same console.
        assert self.provider.console(
            deployed, base.ConsoleKind.GRAPHICAL) == console

    def test_a_node_without_console_is_refused_untouched(self):
        kinds = [kind for kind in base.ConsoleKind
                 if kind.feature in self.provider.features]
        if not kinds:
            pytest.skip('the %s provider declares no console'
                        % self.provider.name)
        (node,) = self.add_nodes(1)
        self.harness.without(node, kinds[0].feature)
        _instance, deployed = self.deployed()
        before = self.harness.snapshot()
        for kind in kinds:
            with pytest.raises(exception.NodeCannot):
                self.provider.check(deployed, kind.feature)
            with pytest.raises(exception.NodeCannot):
                self.provider.console(deployed, kind)
        assert self.harness.snapshot() == before

    @requires(base.Feature.CRASH_DUMP)
    def test_a_crash_dump_is_sent_or_refused_by_the_node(self):
        self.add_nodes(1)
        instance, deployed = self.deployed()
        before = self.harness.snapshot()
        if self.harness.can_nmi:
            self.provider.crash_dump(deployed)
        else:
            with pytest.raises(exception.NodeCannot) as e:
                self.provider.crash_dump(deployed)
            assert e.value.node == deployed.node_uuid
        # An NMI changes nothing the source records.
        assert self.harness.snapshot() == before
        self.still_active_on(instance, deployed)

    def test_nova_actions_never_reach_another_groups_node(self):
        self.add_nodes(1)
        other = self.harness.provider(group='another-group')
        _instance, theirs = self.deployed(provider=other)
        before = self.harness.snapshot()
        for feature, act in self.actions_on(theirs):
            expected = (exception.ForeignReservation
                        if feature in self.provider.features
                        else exception.NotSupported)
            with pytest.raises(expected):
                act()
        assert self.harness.snapshot() == before

    def test_what_is_not_declared_is_refused_untouched(self):
        self.add_nodes(1)
        instance, deployed = self.deployed()
        before = self.harness.snapshot()
        for feature, act in self.actions_on(deployed):
            if feature in self.provider.features:
                continue
            with pytest.raises(exception.NotSupported):
                self.provider.check(deployed, feature)
            with pytest.raises(exception.NotSupported):
                act()
        assert self.harness.snapshot() == before
        self.still_active_on(instance, deployed)

    def test_a_node_goes_to_the_in_tree_driver_or_is_refused_untouched(self):
        """``migrate rollback``: the mark goes, the in-tree host is named.

        The harness's ``disown_refusal`` says what a provider that cannot
        refuses with (NotSupported by default: no Ironic nodes).
        """
        self.add_nodes(2)
        refusal = getattr(self.harness, 'disown_refusal',
                          exception.NotSupported)
        other = self.harness.provider(group='another-group')
        _theirs, foreign = self.deployed(provider=other)
        instance, deployed = self.deployed()
        before = self.harness.snapshot()
        with pytest.raises(exception.NotSupported
                           if refusal is exception.NotSupported
                           else exception.ForeignReservation):
            self.provider.disown(foreign, 'in-tree-host')
        if refusal is not None:
            with pytest.raises(refusal):
                self.provider.disown(deployed, 'in-tree-host')
            assert self.harness.snapshot() == before
            return
        assert self.harness.snapshot() == before
        for _run in (1, 2):
            # Twice: a run that stopped half way is run again.
            self.provider.disown(deployed, 'in-tree-host')
            found = self.provider.lookup(instance)
            assert (found.node_uuid, found.group, found.host) == (
                deployed.node_uuid, None, 'in-tree-host')
            assert found.state == lifecycle.State.ACTIVE
        assert instance not in self.provider.instances('contract-host')

    # -- failures and quarantine -----------------------------------------

    def troubled(self, node_uuid, provider=None):
        provider = provider or self.provider
        return next((t for t in provider.troubled_nodes()
                     if t.node_uuid == node_uuid), None)

    def test_a_failed_node_cools_down_and_is_remembered(self):
        failing, other = self.add_nodes(2)
        assert self.troubled(failing) is None

        self.provider.record_failure(failing, 'deploy failed: no image')
        self.provider.record_failure(failing, 'deploy failed: again')

        assert self.ready_uuids() == {other}
        found = self.troubled(failing, self.harness.provider())
        assert found.failures == 2
        assert found.reason == 'deploy failed: again'
        assert found.quarantined_at is None
        self.provider.clear_failures(failing)
        assert self.troubled(failing) is None
        assert self.ready_uuids() == {failing, other}

    def test_a_deploy_forgets_the_failures_of_its_node(self):
        self.add_nodes(1)
        instance = new_instance()
        reservation = self.claim(instance)
        node = reservation.node_uuid
        self.provider.record_failure(node, 'deploy failed: an earlier one')
        assert self.troubled(node).failures == 1

        self.provider.deploy(reservation, deployment(instance))

        assert self.troubled(node) is None

    def test_quarantine_takes_a_node_out_until_returned(self):
        node, other = self.add_nodes(2)
        before = self.harness.snapshot()

        # What the housekeeper does: failures first, then the quarantine.
        self.provider.record_failure(node, 'deploy failed')
        self.provider.quarantine(node, 'deploy failed three times')

        assert self.ready_uuids() == {other}
        found = self.troubled(node, self.harness.provider())
        assert found.quarantined_at is not None
        assert found.reason == 'deploy failed three times'
        assert found.group == self.provider.group
        assert self.provider.capacity([self.shard])[self.shard][GOLD] == {
            'total': 1, 'free': 1}
        self.provider.unquarantine(node)
        assert self.troubled(node) is None
        assert self.ready_uuids() == {node, other}
        assert self.eventually(self.harness.snapshot, before) == before

    def test_too_many_failures_keep_a_node_out_of_claims(self):
        # The "keep" scheme's promise: a node the quarantine has no room
        # for stays out of service by its failure count.
        failing, other = self.add_nodes(2)
        limit = self.provider.conf.ironic_multi.quarantine_after_failures
        for _ in range(limit):
            self.provider.record_failure(failing, 'deploy failed')
        past_cooldown = time.time() + 10 * 24 * 3600
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(time, 'time', lambda: past_cooldown)
            assert self.ready_uuids() == {other}
            assert self.provider.capacity([self.shard])[self.shard][
                GOLD] == {'total': 1, 'free': 1}

    # -- ownership ----------------------------------------------------------

    def test_the_node_of_a_reservation_shows_its_size(self):
        (node,) = self.add_nodes(1, properties={'memory_mb': 2048})
        reservation = self.claim(new_instance())
        found = self.harness.provider().node(reservation)
        assert found['uuid'] == node
        assert int(found['properties']['memory_mb']) == 2048

    def test_a_claim_carries_the_groups_mark(self):
        self.add_nodes(1)
        instance = new_instance()
        claimed = self.claim(instance, claimer='host-1:123:abcd')
        assert claimed.group == self.provider.group
        assert claimed.claimer == 'host-1:123:abcd'
        for found in (self.harness.provider().lookup(instance),
                      next(r for r in self.provider.reservations()
                           if r.instance_uuid == instance)):
            assert found.owned_by(self.provider.group)
            assert found.claimer == 'host-1:123:abcd'

    def test_the_marks_of_others_are_told_apart(self):
        ours, theirs, unmarked = self.add_nodes(3)
        other = self.harness.provider(group='another-group')
        mine, their_instance, foreign = (new_instance() for _ in range(3))
        self.claim(mine, candidates=[_candidate(ours)])
        self.claim(their_instance, candidates=[_candidate(theirs)],
                   provider=other)
        self.harness.claim_unmarked(unmarked, foreign)

        found = {r.instance_uuid: r for r in self.provider.reservations()
                 if r.instance_uuid in (mine, their_instance, foreign)}
        assert found[mine].group == self.provider.group
        assert found[their_instance].group == 'another-group'
        assert found[foreign].group is None
        assert not found[foreign].owned_by(self.provider.group)
        assert self.provider.lookup(their_instance).node_uuid == theirs

    def test_the_instances_of_a_host_are_the_groups_own(self):
        self.add_nodes(2)
        other = self.harness.provider(group='another-group')
        instance, _ = self.deployed('contract-host')
        elsewhere, _ = self.deployed('contract-host', provider=other)
        assert set(self.provider.instances('contract-host')) == {instance}
        assert set(other.instances('contract-host')) == {elsewhere}

    def test_failed_nodes_of_others_are_not_ours_to_repair(self):
        ours, theirs = self.add_nodes(2)
        other = self.harness.provider(group='another-group')
        other.record_failure(theirs, 'deploy failed')
        self.provider.record_failure(ours, 'deploy failed')
        assert self.troubled(ours).group == self.provider.group
        assert self.troubled(theirs).group == 'another-group'
        for act in (lambda: self.provider.quarantine(theirs, 'no'),
                    lambda: self.provider.recover(theirs),
                    lambda: self.provider.unquarantine(theirs)):
            with pytest.raises(exception.ForeignNode):
                act()
        assert self.troubled(theirs, other).quarantined_at is None

    def test_own_marks_an_unmarked_reservation_once(self):
        unmarked, theirs = self.add_nodes(2)
        legacy, their_instance = new_instance(), new_instance()
        self.harness.claim_unmarked(unmarked, legacy)
        other = self.harness.provider(group='another-group')
        self.claim(their_instance, candidates=[_candidate(theirs)],
                   provider=other)

        owned = self.provider.own(legacy)
        assert owned.node_uuid == unmarked
        assert owned.owned_by(self.provider.group)
        assert self.harness.provider().lookup(legacy).owned_by(
            self.provider.group)
        assert self.provider.own(legacy).owned_by(self.provider.group)
        with pytest.raises(exception.ForeignReservation):
            self.provider.own(their_instance)
        assert self.provider.lookup(their_instance).group == 'another-group'
        assert self.provider.own(new_instance()) is None

    def test_mark_host_moves_an_instance(self):
        self.add_nodes(1)
        instance, deployed = self.deployed('contract-host-old')

        self.provider.mark_host(deployed, 'contract-host-new')

        assert instance not in self.provider.instances('contract-host-old')
        moved = self.provider.instances('contract-host-new')[instance]
        assert moved.node_uuid == deployed.node_uuid
        assert moved.state == lifecycle.State.ACTIVE
