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

"""The seeded plans of a chaos run: which faults when, which operations.

Pure functions of a seed: the same seed gives the same plans (what the
cloud makes of them depends on timing, as it does in production).
"""

import dataclasses
import random
import time

# Fault kinds.  A compute's process: SIGKILL while it claims, deploys or
# tears down (restarted after a while, as an init system would); SIGSTOP
# for longer than membership_timeout, then SIGCONT (a stuck process that
# wakes up); SIGTERM, then a start.
KILL_CLAIM = 'kill-claim'
KILL_DEPLOY = 'kill-deploy'
KILL_DELETE = 'kill-delete'
STOP_COMPUTE = 'sigstop-compute'
TERM_COMPUTE = 'sigterm-compute'
# A compute cut off from etcd alone (its own proxy to etcd).
PARTITION = 'etcd-partition'
# Services restarted or stopped for everyone.
RABBITMQ = 'rabbitmq-restart'
IRONIC = 'ironic-restart'
ETCD = 'etcd-down'
DATABASE = 'database-restart'
# Ironic as the computes reach it, through the fault proxy.
IRONIC_503 = 'ironic-503'
IRONIC_STALL = 'ironic-stall'
IRONIC_LOST = 'ironic-lost-answers'

KINDS = (KILL_CLAIM, KILL_DEPLOY, KILL_DELETE, STOP_COMPUTE, TERM_COMPUTE,
         PARTITION, RABBITMQ, IRONIC, ETCD, DATABASE, IRONIC_503,
         IRONIC_STALL, IRONIC_LOST)
# Faults on one compute: never two at once on the same one.
ON_A_COMPUTE = frozenset((KILL_CLAIM, KILL_DEPLOY, KILL_DELETE, STOP_COMPUTE,
                          TERM_COMPUTE, PARTITION))
# Faults that SIGKILL a compute once they catch the phase they aim at.
KILLS = frozenset((KILL_CLAIM, KILL_DEPLOY, KILL_DELETE))
# What else a fault holds for its duration: one fault per resource at a
# time (the proxy applies one fault to a request; a kill during a claim
# delays that claim in the proxy).
RESOURCES = {
    KILL_CLAIM: 'ironic-proxy', IRONIC_503: 'ironic-proxy',
    IRONIC_STALL: 'ironic-proxy', IRONIC_LOST: 'ironic-proxy',
    RABBITMQ: 'rabbitmq', IRONIC: 'ironic', ETCD: 'etcd',
    DATABASE: 'database',
}
# Seconds each fault is planned to take, at most (a kill waits for the
# phase it aims at, then the compute stays down a while; a restart takes
# what it takes).
KILL_SECONDS = 45
SECONDS = {
    KILL_CLAIM: KILL_SECONDS, KILL_DEPLOY: KILL_SECONDS,
    KILL_DELETE: KILL_SECONDS, TERM_COMPUTE: 25, RABBITMQ: 20, IRONIC: 15,
    ETCD: 30, DATABASE: 15, IRONIC_503: 15, IRONIC_STALL: 15,
    IRONIC_LOST: 15,
}
# Faults per second of a full run, beyond one of each kind.
FULL_RATE = 1 / 20.0

# Operations of the workload, and how often each is drawn.
BOOT, BURST, DELETE, REBOOT, STOP_START, REBUILD = (
    'boot', 'burst', 'delete', 'reboot', 'stop-start', 'rebuild')
OPERATIONS = {BOOT: 34, BURST: 4, DELETE: 26, REBOOT: 12, STOP_START: 12,
              REBUILD: 12}
# Seconds between two operations, on average.
MEAN_GAP = 4.0


@dataclasses.dataclass(frozen=True)
class Fault:
    """One planned fault.

    :ivar compute: the index of the compute it hits (``ON_A_COMPUTE``),
        or None.
    :ivar hold: seconds the compute stays killed or stopped, a partition
        lasts, or a proxy fault applies.
    """

    kind: str
    start: float
    seconds: float
    compute: int = None
    hold: float = 0.0

    @property
    def end(self):
        return self.start + self.seconds

    def overlaps(self, other):
        return self.start < other.end and other.start < self.end


@dataclasses.dataclass(frozen=True)
class Operation:
    """One planned operation; ``flavor`` for boots and bursts."""

    index: int
    at: float
    kind: str
    flavor: str = None


class PlanError(ValueError):
    """The faults cannot all be placed in the window."""


def fault_seconds(kind, membership_timeout):
    """How long a fault of ``kind`` is planned to hold its resources."""
    if kind == STOP_COMPUTE:
        # Stopped longer than the membership timeout: the others take its
        # keys; it wakes up believing it still holds them.
        return membership_timeout + 15
    if kind == PARTITION:
        return membership_timeout + 20
    return SECONDS[kind]


def plan_faults(seed, window, computes, membership_timeout, reduced=False):
    """The faults of a run, sorted by start.

    Every kind occurs at least once; a full run adds more, drawn at
    random, about one per ``1 / FULL_RATE`` seconds.  No two faults hit
    the same compute or resource at once, and at least one compute is
    spared at any moment.  ``reduced``: each kind exactly once.

    :raises PlanError: the window is too short for one of each.
    """
    rng = random.Random('faults-%s' % seed)
    kinds = list(KINDS)
    rng.shuffle(kinds)
    # The faults on computes compete for them: those first, longest first.
    kinds.sort(key=lambda k: (k not in ON_A_COMPUTE,
                              -fault_seconds(k, membership_timeout)))
    if not reduced:
        extra = max(0, int(window * FULL_RATE) - len(KINDS))
        kinds += [rng.choice(KINDS) for _ in range(extra)]
    placed = []
    for number, kind in enumerate(kinds):
        fault = _place(rng, kind, window, computes, membership_timeout,
                       placed)
        if fault is None:
            if number < len(KINDS):
                raise PlanError('%d s are too short for one fault of each '
                                'kind (%s did not fit)' % (window, kind))
            continue
        placed.append(fault)
    return sorted(placed, key=lambda f: f.start)


def _place(rng, kind, window, computes, membership_timeout, placed):
    seconds = fault_seconds(kind, membership_timeout)
    latest = window - seconds
    if latest < 0:
        return None
    # Random starts first, then every start in turn: a fault of each kind
    # is placed whenever it fits at all.
    starts = [rng.uniform(0, latest) for _ in range(40)]
    starts += [float(s) for s in range(0, int(latest) + 1, 2)]
    for start in starts:
        candidate = Fault(kind, round(start, 1), seconds)
        during = [f for f in placed if f.overlaps(candidate)]
        resource = RESOURCES.get(kind)
        if resource and any(RESOURCES.get(f.kind) == resource
                            for f in during):
            continue
        if kind not in ON_A_COMPUTE:
            return candidate
        busy = {f.compute for f in during if f.compute is not None}
        # One compute stays out of every fault, at every moment.
        free = [c for c in range(computes) if c not in busy]
        if len(free) < 2:
            continue
        return dataclasses.replace(candidate, compute=rng.choice(free),
                                   hold=_hold(rng, kind, seconds))
    return None


def _hold(rng, kind, seconds):
    if kind in (STOP_COMPUTE, PARTITION):
        return seconds - 5
    if kind == TERM_COMPUTE:
        return round(rng.uniform(2, 8), 1)
    # A killed compute: back after a while, as an init system would.
    return round(rng.uniform(3, 12), 1)


def plan_operations(seed, seconds, flavors):
    """The workload: operations drawn at random over ``seconds``.

    The gaps between them are exponential (``MEAN_GAP`` on average), the
    kinds drawn by their weights in ``OPERATIONS``; boots and bursts name
    a flavor.  Which server an operation acts on is chosen when it runs.
    """
    rng = random.Random('operations-%s' % seed)
    kinds, weights = zip(*sorted(OPERATIONS.items()))
    plan = []
    at = 0.0
    while True:
        at += rng.expovariate(1 / MEAN_GAP)
        if at >= seconds:
            return plan
        kind = rng.choices(kinds, weights)[0]
        flavor = rng.choice(flavors) if kind in (BOOT, BURST) else None
        plan.append(Operation(len(plan), round(at, 2), kind, flavor))


def play(plan, at, stopping, act):
    """``act(item)`` for each item of ``plan`` at its time, in order.

    :param at: ``f(item)``: seconds from now when the item is due.
    :param stopping: a threading.Event; nothing more is done once set.
    """
    started = time.monotonic()
    for item in plan:
        if stopping.wait(max(0.0, started + at(item) - time.monotonic())):
            return
        act(item)
