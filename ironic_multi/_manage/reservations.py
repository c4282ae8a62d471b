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

"""``reservations list|show|release``: nodes reserved for instances."""

from ironic_multi._manage import base
from ironic_multi import exception

COLUMNS = ('Instance', 'Node', 'State', 'Host', 'Shard', 'Resource Class',
           'Power State', 'Foreign')


def _foreign(reservation, group):
    """Whose a reservation is when it is not ``group``'s, else None."""
    if reservation.owned_by(group):
        return None
    if reservation.group is None:
        return 'unmarked'
    return 'group %s' % reservation.group


def _row(reservation, group):
    return (reservation.instance_uuid, base.Maybe(reservation.node_uuid),
            str(reservation.state), base.Maybe(reservation.host),
            base.Maybe(reservation.shard),
            base.Maybe(reservation.resource_class),
            str(reservation.power_state),
            base.Maybe(_foreign(reservation, group)))


def _add_instance(parser):
    parser.add_argument('instance', metavar='INSTANCE',
                        help='UUID of the (Nova) instance.')


def _lookup(provider, instance_uuid):
    found = provider.lookup(instance_uuid)
    if found is None:
        raise exception.ReservationNotFound(instance=instance_uuid)
    return found


class ReservationsList(base.Lister):
    """List the reservations: which instance holds which node.

    Read from the node provider (the source of truth), with the lifecycle
    state, the compute service host that owns the instance (once its
    deploy began), the node's shard and resource class.  A failed claim
    that holds no node shows with Node "-".  Reservations without this
    coordination group's ownership mark are listed too, with Foreign
    saying whose they are ("group X", or "unmarked": another deployer's,
    or claimed before marks); no command acts on them.  The count of
    foreign ones goes to standard error.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--host', metavar='HOST',
            help='Only the reservations of this compute service host.')
        parser.add_argument(
            '--state', metavar='STATE',
            help='Only the reservations in this lifecycle state (claimed, '
                 'deploying, active, releasing, error).')
        return parser

    def take_action(self, parsed_args):
        provider = self.sources.provider()
        rows, foreign = [], 0
        for reservation in sorted(provider.reservations(),
                                  key=lambda r: r.instance_uuid):
            if parsed_args.host and reservation.host != parsed_args.host:
                continue
            if parsed_args.state and str(reservation.state) != (
                    parsed_args.state):
                continue
            foreign += not reservation.owned_by(provider.group)
            rows.append(_row(reservation, provider.group))
        self.app.stderr.write('%d of %d reservation(s) listed are not group '
                              '%s\'s: they are never acted on\n'
                              % (foreign, len(rows), provider.group))
        return COLUMNS, rows


class ReservationsShow(base.ShowOne):
    """Show the reservation of one instance.

    Read from the node provider: the node the instance holds, the
    lifecycle state, the compute service host that owns the instance
    (once its deploy began), the node's shard, resource class and power
    state.  Fails when the instance holds no node.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_instance(parser)
        return parser

    def take_action(self, parsed_args):
        provider = self.sources.provider()
        return COLUMNS, _row(_lookup(provider, parsed_args.instance),
                             provider.group)


class ReservationsRelease(base.ShowOne):
    """Release the node reserved for an instance.

    The node becomes free for claims; it is not torn down, so this is for
    claims that never deployed, or whose node was cleaned otherwise (the
    housekeeper tears down and releases the nodes of deleted instances on
    its own).  Only this coordination group's reservations: one without
    its ownership mark is refused.  A reservation whose node may hold the
    instance's image or data (deployed, deploying, rescued, serviced, or
    failed in any of these) is refused, even with --yes, unless --force:
    the released node would keep the image with no instance to tell
    whose it is.  Asks for confirmation on the terminal unless --yes;
    without a terminal, --yes is required.  Shows the reservation as it
    was.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_instance(parser)
        base.add_yes(parser, 'Release')
        parser.add_argument(
            '--force', action='store_true',
            help='Release even a node that may hold the instance\'s image '
                 'or data, leaving it there: for an operator who cleans '
                 'the node otherwise.')
        return parser

    def take_action(self, parsed_args):
        provider = self.sources.provider()
        force = parsed_args.force
        found = _releasable(provider, parsed_args.instance, force)
        if found.holds_image:
            self.app.stderr.write(
                'Releasing with --force: node %s is %s, and keeps what the '
                'instance left on it\n' % (found.node_uuid,
                                           found.node_state or found.state))
        if not parsed_args.yes:
            self.confirm(
                'Release node %s of instance %s (state %s, host %s)? The '
                'node is not torn down.' % (
                    found.node_uuid or '-', found.instance_uuid,
                    found.state, found.host or '-'),
                'Not releasing the reservation of %s' % found.instance_uuid)
            # The answer may have come minutes later: the reservation may
            # have moved on meanwhile (deployed, released, claimed again).
            now = _releasable(provider, parsed_args.instance, force)
            if now.node_uuid != found.node_uuid:
                raise base.ManageError(
                    'Not releasing the reservation of %s: it holds node %s '
                    'now, not node %s as when asked' % (
                        found.instance_uuid, now.node_uuid or '-',
                        found.node_uuid or '-'))
        provider.release(parsed_args.instance)
        return COLUMNS, _row(found, provider.group)


def _releasable(provider, instance_uuid, force=False):
    """The reservation of the instance, if this command may release it.

    :raises ForeignReservation: it is not this group's.
    :raises ManageError: it is deployed, or deploying.
    """
    found = _lookup(provider, instance_uuid)
    if not found.owned_by(provider.group):
        raise exception.ForeignReservation(
            instance=found.instance_uuid, node=found.node_uuid or '-',
            group=found.group or '(none)', ours=provider.group)
    if not force:
        _refuse_deployed(found)
    return found


def _refuse_deployed(reservation):
    # Nova's delete of the instance would then find no node to tear down,
    # and the node would stay deployed with the tenant's image.
    if not reservation.holds_image:
        return
    raise base.ManageError(
        'Not releasing the reservation of %(instance)s: node %(node)s is '
        '%(state)s, and may hold its image. Delete the server instead '
        '(openstack server delete %(instance)s): that tears the node down '
        'and releases it. If Nova no longer has the server, the '
        'housekeeper tears down and releases the node after '
        '[ironic_multi] orphan_grace_period (ironic-multi-manage '
        'housekeeping run). --force releases it all the same, leaving '
        'the image on the node.' % {
            'instance': reservation.instance_uuid,
            'state': reservation.node_state or reservation.state,
            'node': reservation.node_uuid})
