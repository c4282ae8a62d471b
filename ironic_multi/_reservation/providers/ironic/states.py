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

"""Ironic's state vocabulary, and what each state means here.

The one place that knows Ironic's provision and power state names (as
``ironic.common.states`` spells them): which nodes are free, which count
as capacity, what a reservation's lifecycle state is, and when a deploy,
tear down or power change is over.
"""

from ironic_multi._reservation import lifecycle

# Provision states.
AVAILABLE = 'available'
ACTIVE = 'active'
DEPLOYING = 'deploying'
DEPLOYWAIT = 'wait call-back'
DEPLOYHOLD = 'deploy hold'
DEPLOYFAIL = 'deploy failed'
REBUILD = 'rebuild'
DELETING = 'deleting'
UNDEPLOY = 'undeploy'
CLEANING = 'cleaning'
CLEANWAIT = 'clean wait'
CLEANHOLD = 'clean hold'
CLEANFAIL = 'clean failed'
ERROR = 'error'
MANAGEABLE = 'manageable'
ENROLL = 'enroll'
VERIFYING = 'verifying'
INSPECTING = 'inspecting'
INSPECTWAIT = 'inspect wait'
INSPECTFAIL = 'inspect failed'
RESCUE = 'rescue'
RESCUING = 'rescuing'
RESCUEWAIT = 'rescue wait'
RESCUEFAIL = 'rescue failed'
UNRESCUING = 'unrescuing'
UNRESCUEFAIL = 'unrescue failed'
SERVICING = 'servicing'
SERVICEWAIT = 'service wait'
SERVICEHOLD = 'service hold'
SERVICEFAIL = 'service failed'
ADOPTING = 'adopting'
ADOPTFAIL = 'adopt failed'

# Provision targets (``PUT /v1/nodes/X/states/provision``).
TARGET_ACTIVE = 'active'
TARGET_DELETED = 'deleted'
TARGET_REBUILD = 'rebuild'
TARGET_RESCUE = 'rescue'
TARGET_UNRESCUE = 'unrescue'

# Power states and targets.
POWER_ON = 'power on'
POWER_OFF = 'power off'
REBOOT = 'rebooting'
SOFT_POWER_OFF = 'soft power off'
SOFT_REBOOT = 'soft rebooting'

# A deploy is running (or a rebuild, which is one).
DEPLOY_IN_PROGRESS = frozenset((DEPLOYING, DEPLOYWAIT, DEPLOYHOLD, REBUILD))
# The instance is deployed, and the node is in (or on its way into or out
# of) a rescue environment: still the instance's, as active is.
RESCUED = frozenset((RESCUING, RESCUEWAIT, RESCUE, RESCUEFAIL, UNRESCUING,
                     UNRESCUEFAIL))
# A node serving an instance, or about to.
IN_USE = DEPLOY_IN_PROGRESS | RESCUED | {ACTIVE}
# A deploy ended badly.
DEPLOY_FAILED = frozenset((DEPLOYFAIL, ERROR))
# A tear down is running: wait, do not ask again.
TEARING_DOWN = frozenset((DELETING, UNDEPLOY))
# The instance is gone from the node, which is being cleaned.
RELEASING = TEARING_DOWN | {CLEANING, CLEANWAIT, CLEANHOLD}
FAILED = frozenset((DEPLOYFAIL, ERROR, CLEANFAIL))
# The node holds no deployment: nothing to tear down, only our traces to
# remove.  Any other state, known or not, is torn down to be safe (Nova
# bug 2131960).
UNDEPLOYED = frozenset((
    AVAILABLE, MANAGEABLE, ENROLL, VERIFYING, INSPECTING, INSPECTWAIT,
    INSPECTFAIL, CLEANING, CLEANWAIT, CLEANFAIL, CLEANHOLD))

# A deployed node, rescued, serviced or being adopted: it holds an image
# all the same, and only a tear down removes it.
DEPLOYED_OTHERWISE = frozenset((
    RESCUE, RESCUING, RESCUEWAIT, RESCUEFAIL, UNRESCUING, UNRESCUEFAIL,
    SERVICING, SERVICEWAIT, SERVICEHOLD, SERVICEFAIL, ADOPTING, ADOPTFAIL))
# Failed, but holding the image: the instance is there, in error.  (A
# failed rescue or unrescue leaves the instance deployed, and the user
# can try again: still active, see RESCUED.)
FAILED_DEPLOYED = frozenset((SERVICEFAIL, ADOPTFAIL))
# At rest, and holding no deployment of anyone's: the only states the
# housekeeper's failed-node rules act in (a node holding no instance in
# any other state is another deployer's deployment, or busy).
AT_REST = FAILED | frozenset((AVAILABLE, MANAGEABLE, ENROLL))
# A quarantined node in these states goes back to service by lifting its
# maintenance: nothing is left to finish.
RETURNABLE = frozenset((AVAILABLE,))

_POWER = {POWER_ON: lifecycle.PowerState.ON,
          POWER_OFF: lifecycle.PowerState.OFF}


def why_not_ready(node):
    """Why a claim may not take ``node`` now, or None when it may."""
    state = node.get('provision_state')
    if state != AVAILABLE:
        return 'provision state is %s' % state
    if node.get('maintenance'):
        return 'in maintenance'
    for key in ('instance_uuid', 'allocation_uuid'):
        if node.get(key):
            return '%s is %s' % (key, node[key])
    # Ironic has not reached the BMC yet: deploying would fail.
    if node.get('power_state') is None:
        return 'power state unknown'
    return None


def is_ready(node):
    """Whether a claim may take ``node`` right now."""
    return why_not_ready(node) is None


def is_usable(node):
    """Whether ``node`` counts towards capacity: free or serving."""
    if node.get('maintenance') or node.get('retired'):
        return False
    return is_ready(node) or (
        bool(node.get('instance_uuid'))
        and node.get('provision_state') in IN_USE | {AVAILABLE})


def in_conductor_group(node, group):
    """Whether ``node`` is in conductor ``group`` (None: any group).

    Ironic stores groups in lower case; the empty one is the default.
    """
    if group is None:
        return True
    return (node.get('conductor_group') or '') == group.lower()


def reservation_state(node):
    """The lifecycle state of the reservation held on ``node``.

    ``node`` must have ``instance_uuid`` set; this is what a restarted
    service recovers without any memory of its own.
    """
    provision_state = node.get('provision_state')
    if provision_state in FAILED_DEPLOYED:
        return lifecycle.State.ERROR
    if provision_state == ACTIVE or provision_state in DEPLOYED_OTHERWISE:
        return lifecycle.State.ACTIVE
    if provision_state in DEPLOY_IN_PROGRESS:
        return lifecycle.State.DEPLOYING
    if provision_state in RELEASING:
        return lifecycle.State.RELEASING
    if provision_state in FAILED:
        return lifecycle.State.ERROR
    return lifecycle.State.CLAIMED


def holds_image(provision_state):
    """Whether a node in ``provision_state`` may hold an instance's image.

    Every state but those of a node never deployed, or cleaned after its
    tear down: a failed deploy or tear down may have left the image.
    """
    return provision_state not in UNDEPLOYED


def power_state(node):
    """The :class:`~.lifecycle.PowerState` of ``node``."""
    return _POWER.get(node.get('power_state'), lifecycle.PowerState.UNKNOWN)


def count_capacity(nodes, shard_of):
    """``{shard: {resource_class: {'total': usable, 'free': ready}}}``."""
    counts = {}
    for node in nodes:
        if not is_usable(node):
            continue
        entry = counts.setdefault(shard_of(node), {}).setdefault(
            node.get('resource_class'), {'total': 0, 'free': 0})
        entry['total'] += 1
        entry['free'] += is_ready(node)
    return counts
