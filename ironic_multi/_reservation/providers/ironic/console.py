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

"""A node's console, enabled through Ironic, as Nova's proxies reach it.

As Nova's in-tree driver does:

- a **serial** console is Ironic's ``socat`` console, a TCP endpoint
  (``tcp://host:port``) that Nova's serial proxy connects to.  IPMI serial
  consoles take one session at a time: one enabled already is disabled
  and enabled again, which ends the session before.
- a **graphical** console is Ironic's VNC console (``fake-graphical``,
  ``redfish-graphical``): the URL Ironic gives is its own noVNC proxy's,
  so the VNC server's host and port come from the node's
  ``driver_internal_info`` (``vnc_host``, ``vnc_port``) for Nova's noVNC
  proxy.

Each state change is waited for, bounded by Nova's ``[ironic]
serial_console_state_timeout`` or ``vnc_console_state_timeout``.  A node
without a console of the kind asked for is refused, and its console left
as it was: enabled only if it was before.
"""

import time
import urllib.parse

from oslo_log import log as logging

from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import waiters
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# An interface of that name has nothing to offer.
NO_CONSOLE = 'no-console'
_FIELDS = ('console_interface', 'console_enabled')
# The console_info type Ironic gives for each kind Nova can proxy.
_TYPES = {base.ConsoleKind.SERIAL: 'socat',
          base.ConsoleKind.GRAPHICAL: 'vnc'}


class Consoles(object):
    """The consoles of the nodes of this group's instances."""

    def __init__(self, api, conf):
        self._api = api
        self._conf = conf
        self._group = conf.ironic_multi.coordination_group

    def check(self, node_uuid, instance_uuid):
        """:raises NodeCannot: the node has no console interface."""
        _check_interface(ownership.held(self._api, node_uuid, instance_uuid,
                                        self._group, _FIELDS))

    def console(self, node_uuid, instance_uuid, kind):
        """Enable the node's console of ``kind``; where it is served.

        :returns: a :class:`~.base.Console`.
        :raises NodeCannot: the node has no console of ``kind``.
        :raises ConsoleUnavailable:
        """
        kind = base.ConsoleKind(kind)
        timeout = self._timeout(kind)
        try:
            with self._api.bounded(time.monotonic() + 3 * timeout):
                return self._console(node_uuid, instance_uuid, kind, timeout)
        except (exception.NodeCannot, exception.ConsoleUnavailable,
                exception.ReservationNotFound,
                exception.ForeignReservation):
            raise
        except exception.IronicMultiError as e:
            raise exception.ConsoleUnavailable(
                action='%s console' % kind, node=node_uuid, reason=e) from e

    def _console(self, node_uuid, instance_uuid, kind, timeout):
        node = ownership.held(self._api, node_uuid, instance_uuid,
                              self._group, _FIELDS)
        interface = _check_interface(node, kind)
        if node.get('console_enabled'):
            info = self._info(node_uuid)
            # Nothing changed yet: a console of another kind stays on.
            _check_kind(node_uuid, kind, interface, info)
            if kind is base.ConsoleKind.SERIAL:
                self._switch(node_uuid, False, timeout)
                info = self._switch(node_uuid, True, timeout)
        else:
            info = self._switch(node_uuid, True, timeout)
            try:
                _check_kind(node_uuid, kind, interface, info)
            except exception.NodeCannot:
                self._switch(node_uuid, False, timeout)
                raise
        console = self._where(node_uuid, kind, info)
        LOG.info('Node %(node)s of instance %(instance)s: %(kind)s console '
                 'at %(host)s:%(port)s',
                 {'node': node_uuid, 'instance': instance_uuid, 'kind': kind,
                  'host': console.host, 'port': console.port})
        return console

    def _timeout(self, kind):
        opts = self._conf.ironic
        seconds = (opts.serial_console_state_timeout
                   if kind is base.ConsoleKind.SERIAL
                   else opts.vnc_console_state_timeout)
        # Nova's 0 waits for good; here nothing does.
        return seconds or self._conf.ironic_multi.power_timeout

    def _info(self, node_uuid):
        return self._api.get_console(node_uuid).get('console_info') or {}

    def _switch(self, node_uuid, enabled, timeout):
        """Enable or disable the console; its console_info once done."""
        self._api.set_console(node_uuid, enabled)
        found = waiters.wait_for(
            lambda: self._api.get_console(node_uuid),
            lambda console: bool(console.get('console_enabled')) == enabled,
            timeout=timeout,
            interval=self._conf.ironic_multi.state_poll_interval,
            error=lambda reason: exception.ConsoleUnavailable(
                action='console', node=node_uuid, reason=reason),
            what='%s the console of node %s' % (
                'enabling' if enabled else 'disabling', node_uuid))
        return found.get('console_info') or {}

    def _where(self, node_uuid, kind, info):
        if kind is base.ConsoleKind.GRAPHICAL:
            # Ironic's URL is its own noVNC proxy's: Nova's proxy needs the
            # VNC server behind it.
            internal = self._api.get_node(
                node_uuid, fields=('uuid', 'driver_internal_info')).get(
                    'driver_internal_info') or {}
            host, port = internal.get('vnc_host'), internal.get('vnc_port')
            where = 'vnc_host %s, vnc_port %s' % (host, port)
        else:
            url = urllib.parse.urlparse(info.get('url') or '')
            try:
                host, port = url.hostname, url.port
            except ValueError:
                host = port = None
            if url.scheme != 'tcp':
                host = None
            where = 'URL %r' % info.get('url')
        if not (host and port):
            raise exception.ConsoleUnavailable(
                action='%s console' % kind, node=node_uuid,
                reason='Ironic gave no endpoint Nova can reach (%s)' % where)
        return base.Console(node_uuid=node_uuid, kind=kind, host=host,
                            port=int(port))


def _cannot(node_uuid, kind, reason):
    return exception.NodeCannot(action='open a %s console' % kind,
                                node=node_uuid, reason=reason)


def _check_interface(node, kind=None):
    """The node's console interface; NodeCannot when it has none."""
    interface = node.get('console_interface')
    if interface in (None, NO_CONSOLE):
        raise exception.NodeCannot(
            action='open a %sconsole' % ('%s ' % kind if kind else ''),
            node=node['uuid'],
            reason='its console interface is %s' % (interface or 'unknown'))
    return interface


def _check_kind(node_uuid, kind, interface, info):
    found = info.get('type')
    if found != _TYPES[kind]:
        raise _cannot(node_uuid, kind, 'its console (%s interface) is of '
                      'type %s, not %s' % (interface, found or 'none',
                                           _TYPES[kind]))
