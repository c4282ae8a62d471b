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

"""The errors ironic-multi raises.

Everything derives from :class:`IronicMultiError`.  Each class names the
situation, not the call that found it, and carries its context as
attributes (``node``, ``instance``, ``shard``, ...) so that callers can act
on an error without parsing its message.
"""


class IronicMultiError(Exception):
    """Root of every error ironic-multi raises.

    Subclasses set ``msg_fmt``; keyword arguments fill it and become
    attributes of the exception.
    """

    msg_fmt = 'An unknown error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        for key, value in kwargs.items():
            setattr(self, key, value)
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                # A missing context argument must not hide the real error.
                message = '%s (%s)' % (self.msg_fmt, kwargs)
        self.message = message
        super().__init__(message)


# Configuration and input -------------------------------------------------

class ConfigInvalid(IronicMultiError):
    msg_fmt = 'Invalid configuration: %(reason)s'


class InvalidRequestSpec(IronicMultiError):
    """A flavor or image property cannot be turned into requirements."""

    msg_fmt = ('Invalid request spec: %(key)s=%(value)r: %(reason)s')


# Ironic access -----------------------------------------------------------

class IronicError(IronicMultiError):
    msg_fmt = 'Ironic API error: %(reason)s'


class IronicUnavailable(IronicError):
    """Ironic did not answer (connection error, timeout, 503) in time."""

    msg_fmt = 'Ironic is unavailable: %(reason)s'


class IronicAPIError(IronicError):
    """Ironic answered with an error this project does not handle."""

    msg_fmt = 'Ironic returned HTTP %(status_code)s: %(reason)s'


class IronicVersionUnsupported(IronicError):
    msg_fmt = ('Ironic API %(server_max)s is older than %(required)s, '
               'which %(feature)s needs')


class NodeNotFound(IronicError):
    msg_fmt = 'Ironic node %(node)s was not found'


class NodeConflict(IronicError):
    """Ironic refused a change with 409 Conflict."""

    msg_fmt = 'Ironic node %(node)s refused the change: %(reason)s'


class NodeAlreadyClaimed(NodeConflict):
    """The node already belongs to another instance (or is locked)."""

    msg_fmt = ('Ironic node %(node)s cannot be claimed for instance '
               '%(instance)s: %(reason)s')


class InstanceAlreadyClaimed(NodeAlreadyClaimed):
    """Ironic refused the claim because the instance holds a node already.

    A retried claim, or one whose earlier answer was lost: the instance's
    node is found by its ``instance_uuid``.
    """

    msg_fmt = ('Instance %(instance)s already holds an Ironic node; node '
               '%(node)s refused it: %(reason)s')


class AllocationFailed(IronicError):
    msg_fmt = ('Ironic allocation %(allocation)s failed: %(reason)s')


# Reservations ------------------------------------------------------------

class ReservationError(IronicMultiError):
    msg_fmt = 'Reservation error: %(reason)s'


class NoNodeAvailable(ReservationError):
    """No node matches the requirements: the instance must reschedule."""

    msg_fmt = ('No Ironic node is available for instance %(instance)s '
               '(%(requirements)s)')


class ClaimTimeout(ReservationError):
    msg_fmt = ('Claiming a node for instance %(instance)s did not finish '
               'within %(timeout)s seconds')


class ReleaseRefused(ReservationError):
    """The node belongs to another consumer; releasing it would steal it."""

    msg_fmt = ('Refusing to release node %(node)s for instance '
               '%(instance)s: it belongs to %(holder)s')


class InvalidStateTransition(ReservationError):
    msg_fmt = ('Reservation %(reservation)s cannot move from %(current)s '
               'to %(target)s')


class DeployThrottled(ReservationError):
    """Too many deploys in flight on this service for too long."""

    msg_fmt = ('%(what)s waited %(timeout)s s for one of %(running)s '
               'deploys in flight to finish')


class ReservationNotFound(ReservationError):
    """The instance holds no node (never claimed, or already released)."""

    msg_fmt = 'Instance %(instance)s holds no node'


class ProviderNotFound(ReservationError):
    msg_fmt = 'No node provider named %(name)s (known: %(known)s)'


class ForeignReservation(ReservationError):
    """The reservation carries another group's ownership mark, or none.

    What a group did not mark it never releases, tears down or adopts on
    its own initiative.
    """

    msg_fmt = ('Instance %(instance)s holds node %(node)s under the mark of '
               'group %(group)s, not of %(ours)s: left alone')


class ForeignNode(ReservationError):
    """A node this group has no mark on: it is not this group's to act on."""

    msg_fmt = ('Node %(node)s is marked by group %(group)s, not by %(ours)s: '
               'left alone')


class NodeNotOurs(ForeignNode):
    """This group's marks are on the node, but it is not the group's now.

    Another deployer deployed it or put it in maintenance, or it moved on
    since the marks were written: the group leaves it alone.
    """

    msg_fmt = ('Node %(node)s is not group %(ours)s\'s to act on now: '
               '%(reason)s; left alone')


class LeadershipLost(ReservationError):
    """This member can no longer be sure to lead: destruction stops."""

    msg_fmt = 'Not leading %(role)s any more: %(reason)s'


class TakeoverRefused(ReservationError):
    """A service does not adopt the instances of a compute host."""

    msg_fmt = ('Host %(host)s does not adopt the instances of %(source)s: '
               '%(reason)s')


class RollbackRefused(ReservationError):
    """``migrate rollback`` refused for the whole host; nothing moved."""

    msg_fmt = ('Host %(host)s does not hand its servers to the in-tree '
               'driver on %(target)s: %(reason)s')


class RecordsLocked(ReservationError):
    """The static provider's records stayed locked past the bound."""

    msg_fmt = ('The reservation records %(path)s stayed locked for '
               '%(timeout)s s: another process of this host holds them '
               'and may be stuck')


class HousekeepingRunning(ReservationError):
    """A housekeeping pass is running on this service already."""

    msg_fmt = ('A housekeeping pass is already running on host %(host)s; '
               'its report is logged there. Ask again when it ends.')


# Node providers: what was done to a node ----------------------------------

class NodeActionFailed(IronicMultiError):
    """An action on a reserved node failed; the node is named."""

    msg_fmt = '%(action)s of node %(node)s failed: %(reason)s'


class DeployFailed(NodeActionFailed):
    """The deploy failed and was undone; the claim is still held."""

    msg_fmt = 'Deploy of node %(node)s failed: %(reason)s'


class InvalidImage(DeployFailed):
    """Ironic refused the image: the same would happen on any node."""

    msg_fmt = ('Deploy of node %(node)s failed: Ironic refused the image: '
               '%(reason)s')


class TeardownFailed(NodeActionFailed):
    """The node may still hold the instance: it must not be released."""

    msg_fmt = 'Tear down of node %(node)s failed: %(reason)s'


class TeardownRefused(TeardownFailed):
    """Ironic kept refusing the tear down (409: the node is busy).

    Nothing was done to the node; it may be asked again later.
    """

    msg_fmt = ('Tear down of node %(node)s refused by Ironic until the '
               'deadline: %(reason)s')


class PowerActionFailed(NodeActionFailed):
    msg_fmt = '%(action)s of node %(node)s failed: %(reason)s'


class VifActionFailed(NodeActionFailed):
    msg_fmt = '%(action)s of VIF %(vif)s on node %(node)s failed: %(reason)s'


class RescueFailed(NodeActionFailed):
    """A rescue or unrescue failed, or did not end in time."""


class ConsoleUnavailable(NodeActionFailed):
    """The node's console could not be had, or is of another kind."""


class CrashDumpFailed(NodeActionFailed):
    """The NMI that asks the node's OS for a crash dump was not sent."""


class NodeCannot(NodeActionFailed):
    """The node has no interface for the action; nothing was done.

    Its Ironic driver (or hardware) lacks it: a rescue of a node whose
    rescue interface is ``no-rescue``, a console of one without a console.
    Asking again cannot help.
    """

    msg_fmt = ('Node %(node)s cannot %(action)s: %(reason)s. Nothing was '
               'done')


class HookFailed(NodeActionFailed):
    """An operator hook of the static provider failed or timed out."""

    msg_fmt = ('Hook %(hook)s of node %(node)s failed (%(reason)s); output: '
               '%(output)s')


class NotSupported(IronicMultiError):
    """The node provider cannot do this (a feature it does not declare)."""

    msg_fmt = 'The %(provider)s node provider does not support %(feature)s'


class StaticInventoryInvalid(ConfigInvalid):
    msg_fmt = 'Static node inventory %(path)s is invalid: %(reason)s'


# Nova --------------------------------------------------------------------

class NovaUnavailable(IronicMultiError):
    """Nova's conductor did not answer (message bus down, timeout)."""

    msg_fmt = 'Nova did not answer: %(reason)s'


# Coordination ------------------------------------------------------------

class CoordinationUnavailable(IronicMultiError):
    """The tooz coordination backend cannot be reached."""

    msg_fmt = 'Coordination backend %(url)s is unavailable: %(reason)s'


class RequestOutcomeUnknown(IronicUnavailable):
    """A write was sent but its answer was lost: it may or may not apply.

    Callers settle the outcome by reading the resource back; they never
    assume either result.
    """

    msg_fmt = ('The answer to %(method)s %(url)s was lost (%(reason)s); '
               'whether it was applied is unknown')
