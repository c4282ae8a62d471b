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

"""The one test suite every reservation backend passes.

As tooz runs one ``TestAPI`` against every coordination driver, each
backend's test module subclasses :class:`BackendSuite` and provides a
``harness`` fixture: a small object that knows how to make nodes in that
backend's source of truth.  The suite then speaks only the
:class:`~ironic_multi.reservation.backends.base.Backend` API.  Behaviour
that is not in that API (``set_state``) is tested when the backend has it
and skipped otherwise.

A harness provides:

``add_nodes(count, resource_class, traits=(), properties=None,
shard=None, owner=None)``
    Create ``count`` free nodes (available, powered off, unreserved) with
    these attributes; return their UUIDs in creation order.
``backend()``
    A NEW, started backend object on the same source, every call: what a
    restarted service would build.
``snapshot()``
    A comparable picture of everything a claim or a release may change in
    the source (for Ironic: the harness's nodes as the API shows them).

Every test puts its nodes in shard keys of its own, and only ever asks
about those, so that the suite also runs against a shared Ironic.
"""

import threading
import time

from oslo_utils import uuidutils
import pytest

from ironic_multi import exception
from ironic_multi.reservation import requirements as reqs
from ironic_multi.reservation import states

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


class BackendSuite(object):
    """Tests of the backend contract; mix into a ``Test*`` class."""

    @pytest.fixture(autouse=True)
    def _suite_setup(self, harness):
        self.harness = harness
        tag = uuidutils.generate_uuid()[:8]
        self.shard = 'suite-%s' % tag
        self.other_shard = 'suite-%s-other' % tag
        self.backend = harness.backend()

    # -- helpers ------------------------------------------------------------

    def add_nodes(self, count=1, resource_class=GOLD, shard=None,
                  properties=None, **attributes):
        return self.harness.add_nodes(
            count, resource_class=resource_class,
            properties=dict(PROPERTIES, **(properties or {})),
            shard=shard or self.shard, **attributes)

    def ready(self, requirements=None, shards=None, backend=None):
        """Node dicts the backend offers, after a refresh."""
        backend = backend or self.backend
        shards = frozenset(shards or [self.shard])
        backend.refresh(shards)
        return backend.ready_nodes(requirements or request(), shards)

    def ready_uuids(self, *args, **kwargs):
        return {node['uuid'] for node in self.ready(*args, **kwargs)}

    def claim(self, instance_uuid, candidates=None, requirements=None,
              backend=None):
        backend = backend or self.backend
        requirements = requirements or request()
        if candidates is None:
            candidates = self.ready(requirements, backend=backend)
        return backend.claim(candidates, instance_uuid, requirements,
                             time.monotonic() + DEADLINE)

    def held(self, instances, backend=None):
        """``{instance: node}`` of ``instances`` per reservations()."""
        backend = backend or self.backend
        return {r.instance_uuid: r.node_uuid for r in backend.reservations()
                if r.instance_uuid in instances}

    # -- claiming -----------------------------------------------------------

    def test_claim_gets_matching_node(self):
        gold = set(self.add_nodes(2, GOLD))
        self.add_nodes(2, SILVER)
        instance = new_instance()

        reservation = self.claim(instance)

        assert reservation.instance_uuid == instance
        assert reservation.node_uuid in gold
        assert reservation.state == states.State.CLAIMED
        assert reservation.shard == self.shard
        assert reservation.resource_class == GOLD
        assert self.backend.lookup(instance) == reservation
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
        assert self.backend.lookup(loser) is None
        assert self.backend.lookup(holder).node_uuid == (
            candidates[0]['uuid'])

    # -- releasing ----------------------------------------------------------

    def test_release_is_idempotent_and_returns_node_to_ready(self):
        self.add_nodes(2)
        instance = new_instance()
        reservation = self.claim(instance)
        assert reservation.node_uuid not in self.ready_uuids()

        released = self.backend.release(instance)

        assert released.instance_uuid == instance
        assert released.node_uuid == reservation.node_uuid
        assert released.state == states.State.RELEASED
        assert self.backend.lookup(instance) is None
        assert reservation.node_uuid in self.ready_uuids()
        assert self.backend.release(instance) is None
        assert len(self.ready()) == 2

    def test_release_of_unknown_instance_returns_none(self):
        self.add_nodes(1)
        assert self.backend.release(new_instance()) is None
        assert len(self.ready()) == 1

    def test_release_never_frees_another_instances_node(self):
        self.add_nodes(2)
        first, second = new_instance(), new_instance()
        kept = self.claim(first)
        freed = self.claim(second)

        assert self.backend.release(new_instance()) is None
        self.backend.release(second)
        self.backend.release(second)

        assert self.backend.lookup(first) == kept
        assert self.ready_uuids() == {freed.node_uuid}
        assert self.held({first, second}) == {first: kept.node_uuid}

    # -- state lives in the source ------------------------------------------

    def test_lookup_after_restart(self):
        self.add_nodes(2)
        instance = new_instance()
        reservation = self.claim(instance)

        restarted = self.harness.backend()

        assert restarted is not self.backend
        assert restarted.lookup(instance) == reservation
        assert self.held({instance}, restarted) == {
            instance: reservation.node_uuid}
        assert reservation.node_uuid not in self.ready_uuids(
            backend=restarted)
        # What one object did, another can undo.
        assert restarted.release(instance).node_uuid == reservation.node_uuid
        assert self.backend.lookup(instance) is None

    def test_ready_nodes_filters_by_shard(self):
        here = set(self.add_nodes(2))
        there = set(self.add_nodes(3, shard=self.other_shard))

        assert self.ready_uuids(shards=[self.shard]) == here
        assert self.ready_uuids(shards=[self.other_shard]) == there
        assert self.ready_uuids(
            shards=[self.shard, self.other_shard]) == here | there
        assert self.ready_uuids(shards=[self.shard + '-none']) == set()
        for node in self.ready(shards=[self.other_shard]):
            assert self.backend.shard_of(node) == self.other_shard
        keys = self.backend.shard_keys()
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
            self.backend.release(a)
            self.backend.release(a)
            self.backend.release(b)
            self.backend.release(c)

        assert self.harness.snapshot() == before
        assert self.held({a, b, c}) == {}
        assert len(self.ready()) == 2

    def test_reservations_lists_current_ones(self):
        self.add_nodes(3)
        a, b = new_instance(), new_instance()
        assert self.held({a, b}) == {}

        ra, rb = self.claim(a), self.claim(b)
        listed = [r for r in self.backend.reservations()
                  if r.instance_uuid in (a, b)]
        assert len(listed) == 2
        assert set(listed) == {ra, rb}

        self.backend.release(a)
        assert self.held({a, b}) == {b: rb.node_uuid}

    # -- lifecycle (backends with set_state) ---------------------------------

    def test_lifecycle_states_are_kept_in_the_source(self):
        if not hasattr(self.backend, 'set_state'):
            pytest.skip('%s has no set_state' % type(self.backend).__name__)
        self.add_nodes(1)
        instance = new_instance()
        self.claim(instance)

        self.backend.set_state(instance, states.State.DEPLOYING)
        active = self.backend.set_state(instance, states.State.ACTIVE)
        assert active.state == states.State.ACTIVE
        # Retried calls stay idempotent.
        assert self.backend.set_state(instance, states.State.ACTIVE) == active

        restarted = self.harness.backend()
        assert restarted.lookup(instance) == active
        with pytest.raises(exception.InvalidStateTransition):
            restarted.set_state(instance, states.State.CLAIMED)
        assert restarted.lookup(instance) == active
        assert self.ready_uuids() == set()

        released = restarted.release(instance)
        assert released.state == states.State.RELEASED
        assert self.ready_uuids() == {active.node_uuid}
