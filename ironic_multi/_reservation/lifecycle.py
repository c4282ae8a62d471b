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

"""The lifecycle of one reservation, as one small state machine.

::

    requested -> claimed -> deploying -> active -> releasing -> released
                    |           |           |          |
                    +-----------+-----------+----------+--> error
    active -> deploying (rebuild)
    error -> releasing (clean up) | claimed (claimed again)

A reservation's state is never only in memory: node providers derive it
from their source of truth (for Ironic: the node's instance_uuid,
allocation and provision state), so a restarted service recovers it.
"""

import dataclasses
import enum

from ironic_multi import exception


class State(str, enum.Enum):
    REQUESTED = 'requested'
    CLAIMED = 'claimed'
    DEPLOYING = 'deploying'
    ACTIVE = 'active'
    RELEASING = 'releasing'
    RELEASED = 'released'
    ERROR = 'error'

    def __str__(self):
        return self.value


_TRANSITIONS = {
    State.REQUESTED: {State.CLAIMED, State.RELEASING, State.ERROR},
    State.CLAIMED: {State.DEPLOYING, State.RELEASING, State.ERROR},
    State.DEPLOYING: {State.ACTIVE, State.RELEASING, State.ERROR},
    State.ACTIVE: {State.DEPLOYING, State.RELEASING, State.ERROR},
    State.RELEASING: {State.RELEASED, State.ERROR},
    State.RELEASED: set(),
    State.ERROR: {State.RELEASING, State.CLAIMED},
}

# Reservations in these states hold a node.
HOLDING = frozenset([State.CLAIMED, State.DEPLOYING, State.ACTIVE])


def check_transition(reservation, current, target):
    """Raise InvalidStateTransition unless ``current -> target`` is legal.

    Moving to the state one is already in is allowed so that retried calls
    stay idempotent.
    """
    if target != current and target not in _TRANSITIONS[current]:
        raise exception.InvalidStateTransition(
            reservation=reservation, current=current, target=target)


class PowerState(str, enum.Enum):
    """A node's power, as far as its provider knows."""

    ON = 'on'
    OFF = 'off'
    UNKNOWN = 'unknown'

    def __str__(self):
        return self.value


@dataclasses.dataclass(frozen=True)
class Reservation:
    """One node reserved for one consumer (a Nova instance).

    :ivar host: the compute service whose instance it is, once its
        deployment was written (the provider's host mark: with the claim,
        or as its deploy begins); None before.
    :ivar group: the coordination group whose ownership mark the claim
        carries; None when it carries none (made by another deployer, or
        by a version of ironic-multi before marks).  Only a group's own
        reservations are ever released, torn down or adopted by it on its
        own initiative.
    :ivar claimer: the member of that group that made the claim, when the
        mark names it: while that member lives, its claim is not stuck.
    :ivar consumer: the consumer (Nova cell) the claim was made for, when
        the mark names it: only that consumer can say the instance is
        gone.
    :ivar node_state: the provider's own word for the state of the node
        (Ironic's provision state), for people to read.
    :ivar holds_image: whether the node may hold the instance's image (or
        data): only a tear down frees it.
    """

    instance_uuid: str
    node_uuid: str
    state: State
    shard: str = None
    resource_class: str = None
    host: str = None
    power_state: PowerState = PowerState.UNKNOWN
    group: str = None
    claimer: str = None
    consumer: str = None
    node_state: str = None
    holds_image: bool = False

    def owned_by(self, group):
        """Whether the reservation carries ``group``'s ownership mark."""
        return self.group is not None and self.group == group

    def moved_to(self, target):
        """This reservation in state ``target``, if the move is legal."""
        check_transition(self.instance_uuid, self.state, target)
        return dataclasses.replace(self, state=target)

    def released(self):
        """This reservation after a release: releasing, then released."""
        return self.moved_to(State.RELEASING).moved_to(State.RELEASED)
