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

"""What every reservation backend provides.

A backend owns the source of truth of its nodes and reservations and the
one atomic write that makes a claim safe.  It knows nothing of Nova and
nothing of hash rings: the :class:`~ironic_multi.reservation.reserver.
Reserver` decides which shards to look in and in which order.
"""

import abc
import contextlib
import dataclasses
import time

from ironic_multi.reservation import pool as ready_pool
from ironic_multi.reservation import states


@dataclasses.dataclass(frozen=True)
class Reservation:
    """One node reserved for one consumer (a Nova instance)."""

    instance_uuid: str
    node_uuid: str
    state: states.State
    shard: str = None
    resource_class: str = None

    def moved_to(self, target):
        """This reservation in state ``target``, if the move is legal."""
        states.check_transition(self.instance_uuid, self.state, target)
        return dataclasses.replace(self, state=target)


class Backend(abc.ABC):
    """A source of nodes that can be reserved atomically."""

    #: Entry point name in ``ironic_multi.reservation.backends``.
    name = None

    def __init__(self, conf):
        self.conf = conf

    def start(self):
        """Open connections and warm caches; called once before use."""

    def stop(self):
        """Release what :meth:`start` took; called once at shutdown."""

    @abc.abstractmethod
    def shard_of(self, node):
        """The shard key of a node dict."""

    @abc.abstractmethod
    def shard_keys(self):
        """``{shard_key: node_count}`` over every node of the backend."""

    @abc.abstractmethod
    def capacity(self, shards):
        """``{resource_class: {'total': n, 'free': n}}`` of ``shards``.

        ``total`` counts the nodes that can serve an instance (free or
        serving one), ``free`` those a claim could take now.
        """

    @abc.abstractmethod
    def nodes(self, shards):
        """Every node of ``shards`` (None: all) the backend knows."""

    def usable_traits(self, shards):
        """The traits of the nodes of ``shards`` that can serve."""
        return {trait for node in self.nodes(shards)
                if ready_pool.is_usable(node)
                for trait in node.get('traits') or ()}

    @abc.abstractmethod
    def ready_nodes(self, requirements, shards):
        """Free nodes of ``shards`` (None: all) matching, cheaply.

        May answer from a cache (the ready pool): a node listed here can
        still turn out to be taken when claimed.
        """

    @abc.abstractmethod
    def search(self, requirements, shards):
        """Like :meth:`ready_nodes`, but asking the source of truth."""

    @abc.abstractmethod
    def claim(self, candidates, instance_uuid, requirements, deadline):
        """Atomically reserve one of ``candidates`` (node dicts).

        :param deadline: ``time.monotonic()`` value not to work past.
        :returns: the :class:`Reservation` in state ``claimed``.
        :raises NodeAlreadyClaimed: every candidate was taken meanwhile.
        """

    @abc.abstractmethod
    def release(self, instance_uuid):
        """Release the reservation of ``instance_uuid``; idempotent.

        Never touches a node reserved for another consumer.

        :returns: the released :class:`Reservation`, or None when there
            was none.
        """

    @abc.abstractmethod
    def lookup(self, instance_uuid):
        """The reservation of ``instance_uuid``, or None.

        Read from the source of truth, never from memory.
        """

    @abc.abstractmethod
    def reservations(self):
        """Every reservation the source of truth holds."""

    def bounded(self, deadline):
        """Context in which no call retries past ``deadline``."""
        return contextlib.nullcontext()

    def refresh(self, shards):
        """Bring the ready pool of ``shards`` up to date.

        :returns: how many node records were read.
        """
        return 0

    def flush(self):
        """Drop every cached node; the next refresh reads everything."""

    @staticmethod
    def remaining(deadline):
        return deadline - time.monotonic()
