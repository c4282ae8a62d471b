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

"""The one place where ironic-multi's errors become Nova's.

Every driver method that calls the reservation layer does so inside
:func:`translated`, naming the Nova exception its caller (the compute
manager) expects; the reason carries our error's message, which names the
node and what went wrong.
"""

import contextlib

from nova import exception as nova_exception

from ironic_multi._reservation.providers import base
from ironic_multi import exception

_POWER_FAILURES = {
    base.PowerAction.ON: nova_exception.InstancePowerOnFailure,
    base.PowerAction.OFF: nova_exception.InstancePowerOffFailure,
    base.PowerAction.SOFT_OFF: nova_exception.InstancePowerOffFailure,
    base.PowerAction.REBOOT: nova_exception.InstanceRebootFailure,
    base.PowerAction.SOFT_REBOOT: nova_exception.InstanceRebootFailure,
}


@contextlib.contextmanager
def translated(error, instance_uuid):
    """Raise ``error(reason)`` for any of our errors.

    :param error: ``f(reason) -> Nova exception``.
    :param instance_uuid: for InstanceNotFound, raised when the instance
        holds no node.
    """
    try:
        yield
    except exception.ReservationNotFound as e:
        raise nova_exception.InstanceNotFound(instance_id=instance_uuid) \
            from e
    except exception.IronicMultiError as e:
        raise error(str(e)) from e


def power_failure(action):
    """The Nova exception factory for a failed :class:`PowerAction`."""
    return lambda reason: _POWER_FAILURES[action](reason=reason)


def deploy_failure(reason):
    return nova_exception.InstanceDeployFailure(reason=reason)


def termination_failure(reason):
    return nova_exception.InstanceTerminationFailure(reason=reason)


def build_abort(instance_uuid):
    """Nova's "do not retry elsewhere": the same would happen anywhere."""
    return lambda reason: nova_exception.BuildAbortException(
        instance_uuid=instance_uuid, reason=reason)


def reschedule(instance_uuid):
    """Nova's "try another host"."""
    return lambda reason: nova_exception.RescheduledException(
        instance_uuid=instance_uuid, reason=reason)


def vif_failure(reason):
    return nova_exception.VirtualInterfacePlugException(reason)
