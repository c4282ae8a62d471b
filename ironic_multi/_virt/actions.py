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

"""Rescue, consoles and crash dumps: Nova's calls on the reservation layer.

Each goes to the node the instance holds, through the reservation layer
(which acts only on a node this group holds for the instance); our errors
become the Nova exceptions the compute manager expects, with our reason:

- a failed rescue or unrescue, InstanceRescueFailure or
  InstanceUnRescueFailure (Nova puts the server in ERROR, as for any
  failed rescue);
- a console the node has not, ConsoleTypeUnavailable (HTTP 400);
- an NMI the node cannot take, TriggerCrashDumpNotSupported.

Nova's compute manager has no capability for these actions: the entries
of :data:`CAPABILITIES` other than ``supports_attach_interface`` are the
driver's own, saying what its node provider serves.
"""

import contextlib

from nova.console import type as console_type
from nova import exception as nova_exception
from oslo_log import log as logging

from ironic_multi._reservation.providers import base
from ironic_multi._virt import errors
from ironic_multi import exception

LOG = logging.getLogger(__name__)

#: Capability (in the driver's ``capabilities``) -> the provider Feature
#: it needs.
CAPABILITIES = {
    'supports_attach_interface': base.Feature.VIFS,
    'supports_rescue': base.Feature.RESCUE,
    'supports_serial_console': base.Feature.SERIAL_CONSOLE,
    'supports_vnc_console': base.Feature.GRAPHICAL_CONSOLE,
    'supports_trigger_crash_dump': base.Feature.CRASH_DUMP,
    'supports_boot_from_volume': base.Feature.VOLUME_BOOT,
}


def capabilities(features):
    """``{capability: bool}``: which :data:`CAPABILITIES` are served.

    :param features: the node provider's features.
    """
    return {name: feature in features
            for name, feature in CAPABILITIES.items()}


def _rescue_failure(reason):
    return nova_exception.InstanceRescueFailure(reason=reason)


def check_rescue(reserver, instance):
    """Refuse now a rescue that cannot happen (reads only)."""
    with errors.translated(_rescue_failure, instance.uuid):
        reserver.check(instance.uuid, base.Feature.RESCUE)


def rescue(reserver, instance, password):
    LOG.debug('Rescuing the node of the instance', instance=instance)
    with errors.translated(_rescue_failure, instance.uuid):
        reserver.rescue(instance.uuid, password)


def unrescue(reserver, instance):
    LOG.debug('Unrescuing the node of the instance', instance=instance)
    with errors.translated(
            lambda reason: nova_exception.InstanceUnRescueFailure(
                reason=reason), instance.uuid):
        reserver.unrescue(instance.uuid)


def serial_console(reserver, instance):
    console = _console(reserver, instance, base.ConsoleKind.SERIAL,
                       'serial')
    return console_type.ConsoleSerial(host=console.host, port=console.port)


def vnc_console(reserver, instance):
    console = _console(reserver, instance, base.ConsoleKind.GRAPHICAL,
                       'vnc')
    return console_type.ConsoleVNC(host=console.host, port=console.port)


def _console(reserver, instance, kind, nova_type):
    def unavailable(reason):
        LOG.warning('No %(type)s console: %(reason)s',
                    {'type': nova_type, 'reason': reason},
                    instance=instance)
        return nova_exception.ConsoleTypeUnavailable(
            message='Unavailable console type %s: %s' % (nova_type, reason),
            console_type=nova_type)

    with errors.translated(unavailable, instance.uuid):
        return reserver.console(instance.uuid, kind)


def crash_dump(reserver, instance):
    with _crash_dump_errors(instance):
        reserver.crash_dump(instance.uuid)


@contextlib.contextmanager
def _crash_dump_errors(instance):
    try:
        yield
    except (exception.NotSupported, exception.NodeCannot) as e:
        # The API answered already (a cast): the log and the fault say it.
        LOG.warning('No crash dump: %s', e, instance=instance)
        raise nova_exception.TriggerCrashDumpNotSupported(
            message=str(e)) from e
    except exception.ReservationNotFound as e:
        raise nova_exception.InstanceNotFound(instance_id=instance.uuid) \
            from e
    except exception.IronicMultiError as e:
        raise nova_exception.NovaException(str(e)) from e
