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


"""The sandbox's fleet and workload, computed from N, M and a seed.

Three Ironic resource classes:

``gold``
    GPU nodes (trait ``CUSTOM_GPU``, UEFI) and plain ones (BIOS).
``silver``
    UEFI nodes, BIOS nodes, and BIOS nodes owned by another project,
    which servers of the sandbox's project must never get.
``bronze``
    a few nodes, deliberately oversubscribed: the servers beyond them are
    rescheduled and end in ERROR, holding nothing.

Each flavor is served by exactly one group of the sandbox project's
nodes (a required trait, or a ``capabilities:boot_mode`` extra spec), so
that the outcome of a run does not depend on which node a racing claim
happened to pick: every server of a flavor that fits gets a node, only
the bronze surplus fails.  Shard keys (``rack-1``...) are dealt over the
nodes round robin, so that every rack holds a mix.
"""

import dataclasses
import math
import random

GPU_TRAIT = 'CUSTOM_GPU'
# The project that owns a few silver nodes: not the sandbox's.
OTHER_PROJECT = 'f00dcafe' * 4
NODE_PROPERTIES = {'memory_mb': 4096, 'cpus': 2, 'local_gb': 50}
# What the flavors ask for (and the nodes have).
FLAVOR_SIZE = {'memory_mb': 4096, 'vcpu': 2, 'disk': 40, 'ephemeral': 0}
MIN_NODES = 8
MIN_SERVERS = 4
MIN_COMPUTES = 2
MAX_SHARDS = 8


class LayoutError(ValueError):
    """N, K and M that the scenario cannot be built from."""


@dataclasses.dataclass(frozen=True)
class NodeGroup:
    """Nodes enrolled alike."""

    name: str
    resource_class: str
    count: int
    traits: tuple = ()
    boot_mode: str = 'bios'
    owner: str = None

    @property
    def properties(self):
        return dict(NODE_PROPERTIES,
                    capabilities='boot_mode:%s' % self.boot_mode)

    def describe(self):
        parts = ['boot_mode:%s' % self.boot_mode]
        parts += ['+' + trait for trait in self.traits]
        if self.owner:
            parts.append('owner: other project')
        return ', '.join(parts)


@dataclasses.dataclass(frozen=True)
class Flavor:
    """A bare metal flavor and the node group that serves it."""

    name: str
    resource_class: str
    serves: str
    trait: str = None
    boot_mode: str = None

    @property
    def placement_class(self):
        return 'CUSTOM_' + self.resource_class.upper()

    @property
    def extra_specs(self):
        specs = {'resources:%s' % self.placement_class: '1',
                 'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                 'resources:DISK_GB': '0'}
        if self.trait:
            specs['trait:%s' % self.trait] = 'required'
        if self.boot_mode:
            specs['capabilities:boot_mode'] = self.boot_mode
        return specs

    def describe(self):
        if self.trait:
            return 'trait:%s=required' % self.trait
        if self.boot_mode:
            return 'capabilities:boot_mode=%s' % self.boot_mode
        return 'resource class only'

    def matches(self, node):
        """Whether an Ironic node (a dict from the API) fits the flavor."""
        if node.get('resource_class') != self.resource_class:
            return False
        if self.trait and self.trait not in (node.get('traits') or ()):
            return False
        if self.boot_mode:
            capabilities = ((node.get('properties') or {})
                            .get('capabilities') or '')
            if 'boot_mode:%s' % self.boot_mode not in capabilities.split(
                    ','):
                return False
        return True


@dataclasses.dataclass(frozen=True)
class Layout:
    nodes: int
    computes: int
    servers: int
    seed: int
    groups: tuple
    flavors: tuple
    shards: tuple
    # Flavor names in the order they are posted, per wave.
    waves: tuple
    # Servers of the oversubscribed flavor beyond its nodes.
    surplus: int

    @property
    def oversubscribed(self):
        return 'bronze'

    def group(self, name):
        return next(g for g in self.groups if g.name == name)

    def flavor(self, name):
        return next(f for f in self.flavors if f.name == name)

    def node_specs(self):
        """``[(group, shard)]``, one per node, racks dealt round robin."""
        nodes = []
        pending = {g.name: g.count for g in self.groups}
        # Interleave the groups, so that every rack gets a mix.
        while any(pending.values()):
            for group in self.groups:
                if pending[group.name]:
                    pending[group.name] -= 1
                    nodes.append(group)
        return [(group, self.shards[i % len(self.shards)])
                for i, group in enumerate(nodes)]

    def requested(self):
        """``{flavor name: servers}`` over both waves."""
        counts = dict.fromkeys((f.name for f in self.flavors), 0)
        for wave in self.waves:
            for name in wave:
                counts[name] += 1
        return counts

    def expected_errors(self):
        return self.surplus

    def resource_classes(self):
        return sorted({g.resource_class for g in self.groups})


def make_layout(nodes, computes, servers, seed=0):
    """The fleet and workload for N nodes, K computes and M servers.

    :raises LayoutError: with what would work instead.
    """
    if nodes < MIN_NODES:
        raise LayoutError('--nodes must be at least %d' % MIN_NODES)
    if computes < MIN_COMPUTES:
        raise LayoutError('--computes must be at least %d: one of them is '
                          'stopped half way' % MIN_COMPUTES)
    if servers < MIN_SERVERS:
        raise LayoutError('--servers must be at least %d' % MIN_SERVERS)
    bronze = max(2, nodes // 8)
    other = max(1, nodes // 8)
    rest = nodes - bronze - other
    gold = rest // 2
    gpu = max(1, gold // 3)
    silver = rest - gold
    uefi = max(1, silver // 2)
    groups = (
        NodeGroup('gold-gpu', 'gold', gpu, traits=(GPU_TRAIT,),
                  boot_mode='uefi'),
        NodeGroup('gold', 'gold', gold - gpu),
        NodeGroup('silver-uefi', 'silver', uefi, boot_mode='uefi'),
        NodeGroup('silver', 'silver', silver - uefi),
        NodeGroup('silver-other', 'silver', other, owner=OTHER_PROJECT),
        NodeGroup('bronze', 'bronze', bronze),
    )
    flavors = (
        Flavor('gold', 'gold', 'gold', boot_mode='bios'),
        Flavor('silver', 'silver', 'silver', boot_mode='bios'),
        Flavor('gold-gpu', 'gold', 'gold-gpu', trait=GPU_TRAIT),
        Flavor('silver-uefi', 'silver', 'silver-uefi', boot_mode='uefi'),
        Flavor('bronze', 'bronze', 'bronze'),
    )
    surplus = 2 if servers >= 12 else 1
    fitting = servers - bronze - surplus
    capacity = {f.name: _group(groups, f.serves).count
                for f in flavors if f.name != 'bronze'}
    if fitting < 0 or fitting > sum(capacity.values()):
        raise LayoutError(
            '--servers must be between %d and %d for %d nodes (the %d '
            'bronze nodes get %d more servers than they can serve; the '
            'other flavors fit)' % (bronze + surplus,
                                    bronze + surplus + sum(capacity.values()),
                                    nodes, bronze, surplus))
    # The other flavors in turn, each up to its nodes.
    mixed = []
    while len(mixed) < fitting:
        for name in capacity:
            if len(mixed) < fitting and mixed.count(name) < capacity[name]:
                mixed.append(name)
    # Every bronze server and 60 % of the others first; the rest after a
    # compute service is stopped.
    first = math.ceil(0.6 * fitting)
    rng = random.Random(seed)
    wave1 = ['bronze'] * (bronze + surplus) + mixed[:first]
    wave2 = mixed[first:]
    rng.shuffle(wave1)
    rng.shuffle(wave2)
    shard_count = min(MAX_SHARDS, max(2 * computes, nodes // 3))
    return Layout(
        nodes=nodes, computes=computes, servers=servers, seed=seed,
        groups=groups, flavors=flavors,
        shards=tuple('rack-%d' % i for i in range(1, shard_count + 1)),
        waves=(tuple(wave1), tuple(wave2)), surplus=surplus)


def _group(groups, name):
    return next(g for g in groups if g.name == name)
