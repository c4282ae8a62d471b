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
    error -> releasing (clean up) | claimed (retry after the cooldown)

A reservation's state is never only in memory: backends derive it from
their source of truth (for Ironic: the node's instance_uuid, allocation and
provision state), so a restarted service recovers it with
:func:`from_ironic_node`.
"""

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


def check_transition(reservation, current, target):
    """Raise InvalidStateTransition unless ``current -> target`` is legal.

    ``active -> deploying`` is a rebuild; moving to the state one is
    already in is allowed so that retried calls stay idempotent.
    """
    if target != current and target not in _TRANSITIONS[current]:
        raise exception.InvalidStateTransition(
            reservation=reservation, current=current, target=target)


# Ironic provision states, grouped by what they mean for a reservation.
_DEPLOYING = {'deploying', 'wait call-back', 'deploy hold', 'rebuild'}
_RELEASING = {'deleting', 'cleaning', 'clean wait', 'clean hold',
              'undeploy'}
_FAILED = {'deploy failed', 'error', 'clean failed'}


def from_ironic_node(node):
    """Derive the state of the reservation held on an Ironic node.

    ``node`` must have ``instance_uuid`` set; the result is what a restarted
    service recovers without any memory of its own.
    """
    provision_state = node.get('provision_state')
    if provision_state == 'active':
        return State.ACTIVE
    if provision_state in _DEPLOYING:
        return State.DEPLOYING
    if provision_state in _RELEASING:
        return State.RELEASING
    if provision_state in _FAILED:
        return State.ERROR
    return State.CLAIMED
