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

"""What every node provider does: the interface of Nodepool's drivers.

A node provider owns its nodes: it is the source of truth of their state
and of the reservations on them, makes the one atomic write that makes a
claim safe, and does everything done to a reserved node afterwards
(deploy, power, VIFs, tear down).  It knows nothing of Nova and nothing of
hash rings: the :class:`~ironic_multi.Reserver` decides which shards to
look in, in which order, and when.

Nodes travel as plain dicts with the keys of an Ironic node (``uuid``,
``name``, ``resource_class``, ``properties``, ``traits``, ``owner``,
``lessee``, ``shard``, ``conductor_group``, ``maintenance``): the
matching filters read those.  Whether a node is free is the provider's
business.

What a provider cannot do is declared in :attr:`NodeProvider.features`;
calling it raises :class:`~ironic_multi.exception.NotSupported`, and the
shipped contract suite skips its tests.

**Ownership.**  Every claim writes, in its one atomic write, an ownership
mark naming the coordination group (:attr:`NodeProvider.group`) and the
claiming member; reservations carry it back (``Reservation.group``).  A
source of truth may be shared with other deployers and other groups:
what a group did not mark is never released, torn down, recovered or
quarantined on its own initiative.
"""

import abc
import contextlib
import dataclasses
import enum

from ironic_multi._reservation import filters
from ironic_multi._reservation import shards
from ironic_multi import exception


class Feature(str, enum.Enum):
    """Optional abilities of a node provider."""

    #: Attach and detach network interfaces (VIFs) to and from nodes.
    VIFS = 'vifs'
    #: Re-image an active node in place.
    REBUILD = 'rebuild'
    #: Soft power off and soft reboot (ACPI), besides hard ones.
    SOFT_POWER = 'soft power'
    #: Deliver a config drive to the node.
    CONFIGDRIVE = 'config drive'
    #: Store a reservation's lifecycle state as given (the Ironic provider
    #: derives it from the node instead).
    SET_STATE = 'set state'
    #: Write shard keys to nodes that have none.
    SHARD_ASSIGNMENT = 'shard assignment'
    #: Boot a node into a rescue environment and back (Nova's rescue).
    RESCUE = 'rescue'
    #: A serial console: a TCP endpoint Nova's serial proxy connects to.
    SERIAL_CONSOLE = 'serial console'
    #: A graphical console: a VNC endpoint Nova's noVNC proxy connects to.
    GRAPHICAL_CONSOLE = 'graphical console'
    #: Send the node an NMI, on which its OS writes a crash dump.
    CRASH_DUMP = 'crash dump'
    #: Boot the node from a remote volume: the node's volume connectors
    #: (its initiator), and the volumes it boots from as targets.
    VOLUME_BOOT = 'volume boot'

    def __str__(self):
        return self.value


class PowerAction(str, enum.Enum):
    ON = 'power on'
    OFF = 'power off'
    SOFT_OFF = 'soft power off'
    REBOOT = 'reboot'
    SOFT_REBOOT = 'soft reboot'

    def __str__(self):
        return self.value

    @property
    def soft(self):
        return self in (PowerAction.SOFT_OFF, PowerAction.SOFT_REBOOT)


class ConsoleKind(str, enum.Enum):
    SERIAL = 'serial'
    GRAPHICAL = 'graphical'

    def __str__(self):
        return self.value

    @property
    def feature(self):
        """The :class:`Feature` a provider declares for this kind."""
        return (Feature.SERIAL_CONSOLE if self is ConsoleKind.SERIAL
                else Feature.GRAPHICAL_CONSOLE)


@dataclasses.dataclass(frozen=True)
class Console:
    """Where a node's console is served: what a console proxy connects to.

    :ivar kind: a :class:`ConsoleKind`.
    :ivar host: the host (or address) of the console's endpoint.
    :ivar port: its TCP port.
    """

    node_uuid: str
    kind: ConsoleKind
    host: str
    port: int


@dataclasses.dataclass(frozen=True)
class Deployment:
    """What to put on a reserved node, in the provider's own terms.

    :ivar host: the compute service host that owns the instance; written
        to the node (its host mark) so that the service finds its
        instances after a restart.
    :ivar image_source: the image to deploy (a Glance UUID or a URL);
        None for a node that boots from a volume.
    :ivar instance_info: further deploy parameters (``root_gb``,
        ``capabilities``, ...), as Ironic's ``instance_info`` takes them.
    :ivar vifs: network interface (Neutron port) IDs to attach.
    :ivar configdrive: a callable returning the config drive (gzipped and
        base64-encoded), called only if the provider can deliver one, with
        the node's :class:`NodeNetwork` once its VIFs are attached (None
        when the provider knows no ports); None when the instance needs
        none.
    :ivar volume_targets: the :class:`VolumeTarget` s the node boots from
        (:attr:`Feature.VOLUME_BOOT`); empty for a node that boots from
        its own disk.
    """

    instance_uuid: str
    host: str
    image_source: str
    instance_info: dict = dataclasses.field(default_factory=dict)
    vifs: tuple = ()
    configdrive: object = None
    volume_targets: tuple = ()


@dataclasses.dataclass(frozen=True)
class VolumeConnector:
    """How a node connects to volumes (Ironic's volume connector).

    :ivar type: ``iqn`` (its iSCSI initiator), ``ip``, ``mac``,
        ``wwpn`` or ``wwnn`` (Fibre Channel).
    :ivar connector_id: the value: the IQN, the address...
    """

    type: str
    connector_id: str


@dataclasses.dataclass(frozen=True)
class VolumeTarget:
    """A volume a node boots from or sees (Ironic's volume target).

    :ivar volume_type: the storage protocol (``iscsi``, ``fibre_channel``),
        Cinder's ``driver_volume_type``.
    :ivar properties: how to reach it: the ``data`` of Cinder's
        connection info.
    :ivar boot_index: 0 for the volume the node boots from.
    """

    volume_id: str
    volume_type: str
    properties: dict
    boot_index: int


@dataclasses.dataclass(frozen=True)
class NodePort:
    """A network port of a node (Ironic's ``port``).

    :ivar vif: the VIF (Neutron port) attached to it, or None.
    :ivar port_group: the id of its :class:`NodePortGroup`, or None.
    """

    id: str
    address: str
    vif: str = None
    port_group: str = None


@dataclasses.dataclass(frozen=True)
class NodePortGroup:
    """Ports of a node bonded together (Ironic's ``portgroup``).

    :ivar mode: the bonding mode (``802.3ad``, ``active-backup``...).
    :ivar properties: the bonding driver's options (``miimon``...).
    """

    id: str
    address: str = None
    vif: str = None
    mode: str = None
    properties: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class NodeNetwork:
    """A node's ports and port groups: what its NICs are.

    The config drive's ``network_data.json`` gives the guest each VIF's
    MAC, and a port group as a bond of its ports' MACs.
    """

    ports: tuple = ()
    port_groups: tuple = ()


@dataclasses.dataclass(frozen=True)
class NodeHealth:
    """What a health poll found on the node of a reservation.

    :ivar problem: None when the node is fine, else a short reason
        (``gone``, ``maintenance: <reason>``, ``provision error: ...``).
    """

    instance_uuid: str
    node_uuid: str
    power_state: object
    problem: str = None


@dataclasses.dataclass(frozen=True)
class TroubledNode:
    """A node the housekeeper may have to look after.

    :ivar failures: failed deploys, tear downs and recoveries in a row.
    :ivar last_failure: when the last one happened (seconds since the
        epoch), or None.
    :ivar failed_state: the provider's word for a failed state the node is
        in (``clean failed``), or None.
    :ivar quarantined_at: when it was quarantined, or None.
    :ivar holder: the instance the node holds, if any.
    :ivar group: the group whose failure marks the node carries, or
        None: only that group recovers or quarantines it.
    :ivar left_alone: why that group must not act on the node now,
        although its marks are there (another deployer's deployment or
        maintenance, or a node that moved on since the marks were
        written), or None.
    :ivar returnable: whether lifting its quarantine would return the
        node to service (nothing left to finish, such as a failed tear
        down).
    """

    node_uuid: str
    failures: int = 0
    last_failure: float = None
    reason: str = None
    failed_state: str = None
    quarantined_at: float = None
    holder: str = None
    group: str = None
    left_alone: str = None
    returnable: bool = False


class NodeProvider(abc.ABC):
    """A source of nodes that can be reserved atomically and used.

    Subclasses set :attr:`name` (their entry point name) and
    :attr:`features`, and implement the abstract methods.
    """

    #: Entry point name in ``ironic_multi.node_providers``.
    name = None
    #: The optional :class:`Feature` s this provider has.
    features = frozenset()
    #: Whether a reservation the provider reports ``releasing`` ends by
    #: itself (Ironic ends its tear down and the claim with it), or waits
    #: for :meth:`release` (a release that never came, the caller gone or
    #: fenced off, is then the housekeeper's to finish).
    releasing_ends_itself = True

    def __init__(self, conf):
        self.conf = conf
        #: The group whose mark this provider's claims write.
        self.group = conf.ironic_multi.coordination_group
        #: What tells the consumer this group serves from another (a Nova
        #: cell), written into the mark of every claim; None when there
        #: is nothing to tell apart.  Set before the first claim.
        self.consumer = None
        self.keys = shards.ShardKeys(conf.ironic_multi.fallback_shard_count)
        self.filters = filters.matching_filters(
            conf.ironic_multi.conductor_group)

    def start(self):
        """Open connections and check the configuration; called once."""

    def stop(self):
        """Release what :meth:`start` took; called once at shutdown."""

    def failed_too_often(self, failures):
        """Why ``failures`` in a row keep a node out of service, or None.

        Quarantined or not (the quarantine keeps only ``max_preserved``),
        such a node is offered to no claim and counts for no capacity
        until its failures are cleared.
        """
        if failures >= self.conf.ironic_multi.quarantine_after_failures:
            return 'failed %d times in a row' % failures
        return None

    def require(self, feature):
        """Raise NotSupported unless this provider has ``feature``."""
        if feature not in self.features:
            raise exception.NotSupported(provider=self.name,
                                         feature=feature)

    # -- inventory --------------------------------------------------------

    def shard_of(self, node):
        """The shard key of a node dict."""
        return self.keys.of(node)

    @abc.abstractmethod
    def shard_keys(self):
        """``{shard_key: node_count}`` over every node of the provider."""

    @abc.abstractmethod
    def nodes(self, shards):
        """Every node of ``shards`` (None: all) the provider knows."""

    @abc.abstractmethod
    def capacity(self, shards):
        """``{shard: {resource_class: {'total': n, 'free': n}}}``.

        Per shard of ``shards`` (None: all) that has nodes.  ``total``
        counts the nodes that can serve an instance (free or serving one),
        ``free`` those a claim could take now.
        """

    @abc.abstractmethod
    def usable_traits(self, shards):
        """The traits of the nodes of ``shards`` that can serve."""

    @abc.abstractmethod
    def ready_nodes(self, requirements, shards):
        """Free nodes of ``shards`` (None: all) matching, cheaply.

        May answer from a cache (the ready pool): a node listed here can
        still turn out to be taken when claimed.
        """

    def ready_candidates(self, requirements, shards):
        """:meth:`ready_nodes` in random order, possibly lazily.

        A claim draws a few; a provider with a large cache overrides this
        to filter only the nodes drawn.
        """
        return filters.shuffled(self.ready_nodes(requirements, shards))

    @abc.abstractmethod
    def search(self, requirements, shards):
        """Like :meth:`ready_nodes`, but asking the source of truth."""

    def refresh(self, shards):
        """Bring the cache of ``shards`` up to date.

        :returns: how many node records were read.
        """
        return 0

    def flush(self):
        """Drop every cached node; the next refresh reads everything."""

    def describe(self):
        """Facts about the provider's cache, JSON-ready, for operators."""
        return {}

    def bounded(self, deadline):
        """Context in which no call of this thread works past ``deadline``.

        ``deadline`` is a ``time.monotonic()`` value.
        """
        return contextlib.nullcontext()

    # -- reservations -----------------------------------------------------

    @abc.abstractmethod
    def claim(self, candidates, instance_uuid, requirements, deadline,
              claimer=None, deployment=None):
        """Atomically reserve one of ``candidates`` (node dicts).

        The same atomic write marks the reservation with :attr:`group`,
        :attr:`consumer` and ``claimer``: there is no claim without the
        mark.  Idempotent: an
        instance that holds a node already gets it back.

        :param deadline: ``time.monotonic()`` value not to work past.
        :param claimer: the member id of the claiming service.
        :param deployment: the :class:`Deployment` that :meth:`deploy`
            will get next, when known: a provider may write what it can of
            it with the claim, saving the deploy a write.
        :returns: the :class:`~.lifecycle.Reservation`, state ``claimed``.
        :raises NodeAlreadyClaimed: every candidate was taken meanwhile.
        """

    @abc.abstractmethod
    def release(self, instance_uuid):
        """Release the reservation of ``instance_uuid``; idempotent.

        Never touches a node reserved for another consumer, even one that
        claimed it between a read and the write.

        :returns: the released reservation, or None when there was none.
        """

    @abc.abstractmethod
    def lookup(self, instance_uuid):
        """The reservation of ``instance_uuid``, or None.

        Read from the source of truth, never from memory.
        """

    def node(self, reservation):
        """The node of ``reservation`` as a node dict, or None.

        For what a consumer shows of its instance (Nova's server
        diagnostics): the node's ``properties`` (``cpus``, ``memory_mb``,
        ``local_gb``), ``power_state`` and ``provision_state`` where the
        provider has them.
        """
        return next((node for node in self.nodes(None)
                     if node['uuid'] == reservation.node_uuid), None)

    @abc.abstractmethod
    def reservations(self):
        """Every reservation the source of truth holds, marked or not."""

    def instances(self, host):
        """``{instance_uuid: reservation}`` of the instances of ``host``.

        Only those with this provider's group mark.
        """
        return {r.instance_uuid: r for r in self.reservations()
                if r.host == host and r.owned_by(self.group)}

    @abc.abstractmethod
    def own(self, instance_uuid):
        """Mark an unmarked reservation as this group's (an upgrade).

        For instances the consumer says are this group's, claimed by a
        version without marks.  A reservation marked for another group is
        never taken.

        :returns: the reservation, marked; None when the instance holds
            none (or no longer holds the node it was found on).
        :raises ForeignReservation: another group's mark is on it.
        """

    def assign_shards(self, count, dry_run=False):
        """Give nodes without a shard key a stable one of ``count``.

        The key is the node's fallback key for ``count``
        (:class:`~.shards.ShardKeys`), so that a service's ring does not
        move when keys are written.  Only this group's nodes: free ones
        (of its conductor group, if set) and those it holds; never one
        that an instance holds without the group's mark.
        (:attr:`Feature.SHARD_ASSIGNMENT`)

        :returns: ``({node_uuid: shard_key}, {node_uuid: why})``: the
            nodes (to be) changed, and those left alone.
        """
        self.require(Feature.SHARD_ASSIGNMENT)

    def set_state(self, instance_uuid, target):
        """Store a reservation's state (:attr:`Feature.SET_STATE`)."""
        self.require(Feature.SET_STATE)

    # -- what is done to a reserved node ---------------------------------

    @abc.abstractmethod
    def deploy(self, reservation, deployment, should_stop=None):
        """Put ``deployment`` on the node of ``reservation``; wait for it.

        On failure, undoes what it did (the claim stays) and raises.  On
        success, the node's failures are forgotten (:meth:`clear_failures`):
        it served well.

        :param should_stop: called between polls; raises to stop waiting
            (for instance when the instance is being deleted).
        :returns: the reservation, ``active``.
        :raises DeployFailed: the deploy failed and was undone.
        :raises TeardownFailed: undoing failed; the node must not be
            released.
        """

    @abc.abstractmethod
    def teardown(self, reservation, vifs=(), wait=True, deadline=None):
        """Remove every trace of the instance but the claim; idempotent.

        :param vifs: VIF IDs the caller knows of, detached as well.
        :param wait: wait for the tear down to end; else only start it.
        :param deadline: ``time.monotonic()`` value past which a node the
            provider keeps busy is not waited for (TeardownRefused).
        :returns: True when it has ended (or there was nothing to do),
            False when it goes on in the provider (only without ``wait``):
            the reservation is then the provider's to end, or to fail.
        :raises TeardownRefused: the provider refused it until the
            deadline, the node being busy; nothing was done.
        :raises TeardownFailed: the node may still hold the instance.
        """

    def rebuild(self, reservation, deployment):
        """Re-image the node in place (:attr:`Feature.REBUILD`)."""
        self.require(Feature.REBUILD)

    @abc.abstractmethod
    def power(self, reservation, action, timeout=None):
        """Apply a :class:`PowerAction` and wait for it.

        A soft action that the node refuses or that does not finish
        within ``timeout`` falls back to the hard one.

        :raises PowerActionFailed:
        """

    def check(self, reservation, feature):
        """Raise unless the node of ``reservation`` can do ``feature``.

        Reads only: for a caller that must know before it changes
        anything (Nova powers a node off before it rescues it).  What
        cannot be known without trying passes.

        :raises NotSupported: the provider cannot.
        :raises NodeCannot: this node cannot.
        """
        self.require(feature)

    def rescue(self, reservation, password):
        """Boot the node into its rescue environment; wait for it.

        The instance's disk stays as it is; ``password`` is the rescue
        environment's root password.  Idempotent: a node in rescue already
        stays there.  (:attr:`Feature.RESCUE`)

        :raises NodeCannot: the node has no rescue interface; nothing was
            done.
        :raises RescueFailed:
        """
        self.require(Feature.RESCUE)

    def unrescue(self, reservation):
        """Boot the node back into the instance; wait for it.

        Idempotent: an active node stays as it is.
        (:attr:`Feature.RESCUE`)

        :raises RescueFailed:
        """
        self.require(Feature.RESCUE)

    def console(self, reservation, kind):
        """Enable the node's console of :class:`ConsoleKind` ``kind``.

        (:attr:`ConsoleKind.feature`)

        :returns: the :class:`Console`.
        :raises NodeCannot: the node has no console of that kind; it was
            left as it was.
        :raises ConsoleUnavailable:
        """
        self.require(ConsoleKind(kind).feature)

    def crash_dump(self, reservation):
        """Send the node an NMI (:attr:`Feature.CRASH_DUMP`).

        What the node's OS does with it is its own business (a kernel
        crash dump, usually); nothing is waited for.

        :raises NodeCannot: the node cannot receive one; nothing was done.
        :raises CrashDumpFailed:
        """
        self.require(Feature.CRASH_DUMP)

    def volume_connectors(self, reservation):
        """The node's :class:`VolumeConnector` s (:attr:`Feature.VOLUME_BOOT`).

        What a volume service needs to export a volume to the node.
        """
        self.require(Feature.VOLUME_BOOT)

    def attach_vif(self, reservation, vif_id):
        """Attach a VIF to the node (:attr:`Feature.VIFS`)."""
        self.require(Feature.VIFS)

    def detach_vif(self, reservation, vif_id):
        """Detach a VIF; an absent one is fine (:attr:`Feature.VIFS`)."""
        self.require(Feature.VIFS)

    @abc.abstractmethod
    def health(self, reservations):
        """``{instance_uuid: NodeHealth}`` of ``reservations``."""

    @abc.abstractmethod
    def mark_host(self, reservation, host):
        """Make ``host`` the owner of the instance (a takeover)."""

    def disown(self, reservation, host):
        """Hand a deployed node to Nova's in-tree driver on ``host``.

        This group's mark goes and the host mark names ``host``; the node
        keeps its instance and is otherwise left as it is (a rollback of
        ``migrate apply``).  Only a provider of Ironic nodes can.

        :raises ReservationNotFound: the node no longer holds the
            instance under this group's mark.
        :raises NodeCannot: the node cannot be handed over.
        :raises NotSupported: the provider has no Ironic nodes.
        """
        raise exception.NotSupported(provider=self.name,
                                     feature='a rollback to Nova\'s '
                                             'in-tree Ironic driver')

    # -- failures and quarantine (the housekeeper's tools) ----------------

    @abc.abstractmethod
    def record_failure(self, node_uuid, reason):
        """Count a failure of the node; claims skip it for a cooldown.

        :returns: the failures in a row, this one included.
        """

    @abc.abstractmethod
    def clear_failures(self, node_uuid):
        """Forget the node's failures (it served well)."""

    @abc.abstractmethod
    def troubled_nodes(self):
        """:class:`TroubledNode` s: failed, failing or quarantined nodes."""

    def troubled_node(self, node_uuid):
        """The :class:`TroubledNode` of ``node_uuid`` as it is now, or None.

        Read from the source of truth: what the housekeeper checks right
        before it acts on the node.
        """
        return next((node for node in self.troubled_nodes()
                     if node.node_uuid == node_uuid), None)

    @abc.abstractmethod
    def recover(self, node_uuid, deadline=None):
        """Try once to bring a node in a failed state back to service.

        :param deadline: ``time.monotonic()`` value past which the try is
            not waited for.
        :raises ForeignNode: the node is not this group's to act on (see
            :attr:`TroubledNode.left_alone`); nothing was done.
        """

    @abc.abstractmethod
    def quarantine(self, node_uuid, reason):
        """Take the node out of service, saying why.

        :raises ForeignNode: as :meth:`recover`.
        """

    @abc.abstractmethod
    def unquarantine(self, node_uuid):
        """Return a quarantined node to service, its failures forgotten.

        :raises ForeignNode: as :meth:`recover`.
        :raises NodeConflict: it is not :attr:`TroubledNode.returnable`;
            it stays quarantined, marks and all.
        """
