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

"""Test doubles of the driver's collaborators: a Reserver and Nova objects.

The driver talks only to the Reserver: :class:`FakeReserver` keeps its
reservations in a dict, records every call and raises what a test
configures.  What a node provider does with Ironic is tested against the
provider (tests/unit/reservation/providers).
"""

import dataclasses
import types
from unittest import mock

from nova import objects

from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi import exception

objects.register_all()

HOST = 'compute-1'
NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'
INSTANCE = 'a7a9a2a6-7ee0-4a4c-bb36-6b6a0cbd2d01'
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
BAREMETAL_SPECS = {'resources:CUSTOM_BAREMETAL': '1', 'resources:VCPU': '0',
                   'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}
ALL_FEATURES = frozenset(base.Feature)


class FakeReserver(object):
    """The Reserver API the driver uses, over a dict of reservations.

    :ivar calls: ``(method name, args...)`` of every call, in order.
    :ivar errors: ``{method name: exception}`` raised by that method
        (after the call is recorded).
    :ivar claims: ``{instance_uuid: requirements}`` of every claim.
    :ivar deployments: the Deployments given to ``deploy`` and
        ``rebuild``.
    :ivar on_deploy: called with ``should_stop`` while deploying, as a
        provider polls.
    """

    def __init__(self, features=ALL_FEATURES, cluster=None, traits=(),
                 host=HOST):
        self.provider = types.SimpleNamespace(name='fake',
                                              features=frozenset(features))
        self.host = host
        self.cluster = dict(cluster or {})
        self.traits = frozenset(traits)
        self.held = {}
        self.claims = {}
        self.claimed_with = {}
        self.deployments = []
        self.calls = []
        self.errors = {}
        self.on_deploy = None
        # What volume_connectors answers.
        self.connectors = ()
        self.started = self.stopped = False
        self.consumers = None
        self.listeners = []
        self.capacity_listeners = []
        self.capacity_changes = 0
        self.extra = {}
        # This member's builds waiting for a node, as published, and
        # whether it offers its shards' free nodes.
        self.waiting = {}
        self.offering = True
        self.health = FakeHealth()
        self.handlers = {}
        self.periodics = []

    def _call(self, name, *args):
        self.calls.append((name,) + args)
        if name in self.errors:
            raise self.errors[name]

    def names(self):
        """The names of the methods called, in order."""
        return [call[0] for call in self.calls]

    def hold(self, instance_uuid=INSTANCE, host=HOST,
             power_state=lifecycle.PowerState.ON, node_uuid=NODE):
        """Give ``instance_uuid`` a deployed node."""
        self.held[instance_uuid] = lifecycle.Reservation(
            instance_uuid=instance_uuid, node_uuid=node_uuid,
            state=lifecycle.State.ACTIVE, host=host,
            resource_class='baremetal', power_state=power_state)
        return self.held[instance_uuid]

    def _held(self, instance_uuid):
        reservation = self.held.get(instance_uuid)
        if reservation is None or reservation.node_uuid is None:
            raise exception.ReservationNotFound(instance=instance_uuid)
        return reservation

    # -- life -------------------------------------------------------------

    def start(self, background=True):
        self._call('start')
        self.started = True
        self.refresh()

    def refresh(self):
        """What the real refresh tells its listeners."""
        for listener in self.listeners:
            listener(self)

    def set_consumers(self, consumers, identity=None):
        self.consumers = consumers
        self.consumer_identity = identity

    def own(self, instance_uuids):
        self._call('own', sorted(instance_uuids))
        return []

    def on_refresh(self, listener):
        self.listeners.append(listener)

    def on_capacity_change(self, listener):
        self.capacity_listeners.append(listener)

    def capacity_changed(self):
        self.capacity_changes += 1

    def publish_extra(self, **fields):
        self.extra.update(fields)

    def add_periodic(self, name, function, interval):
        assert not self.started, 'periodics are added before start'
        self.periodics.append((name, function, interval))

    def add_request_handler(self, op, handler):
        self.handlers[op] = handler

    def leave(self):
        self._call('leave')

    def stop(self):
        self._call('stop')
        self.stopped = True

    @property
    def features(self):
        return self.provider.features

    def cluster_capacity(self):
        self._call('cluster_capacity')
        return {rc: dict(counts) for rc, counts in self.cluster.items()}

    def cluster_traits(self):
        self._call('cluster_traits')
        return self.traits

    def builds_waiting(self, waiting):
        self._call('builds_waiting', waiting)
        changed = waiting != self.waiting
        self.waiting = {uuid: dict(resources)
                        for uuid, resources in waiting.items()}
        return changed

    def offer(self):
        """``cluster`` stands for the nodes and the free ones offered."""
        units = {}
        for resources in self.waiting.values():
            for name, count in resources.items():
                units[name] = units.get(name, 0) + count
        return self.cluster_capacity(), units

    def set_offering(self, offering):
        self._call('set_offering', offering)
        self.offering = offering

    def claimed_lately(self):
        return set(self.claims)

    # -- reservations -----------------------------------------------------

    def claim(self, instance_uuid, requirements, deployment=None):
        self._call('claim', instance_uuid, requirements)
        self.claims[instance_uuid] = requirements
        self.claimed_with[instance_uuid] = deployment
        self.held[instance_uuid] = lifecycle.Reservation(
            instance_uuid=instance_uuid, node_uuid=NODE,
            state=lifecycle.State.CLAIMED, resource_class='baremetal')
        return self.held[instance_uuid]

    def release(self, instance_uuid):
        self._call('release', instance_uuid)
        reservation = self.held.pop(instance_uuid, None)
        return None if reservation is None else reservation.released()

    def lookup(self, instance_uuid):
        self._call('lookup', instance_uuid)
        return self.held.get(instance_uuid)

    def node(self, instance_uuid):
        self._call('node', instance_uuid)
        return {'uuid': self._held(instance_uuid).node_uuid,
                'provision_state': 'active',
                'properties': {'cpus': 2, 'memory_mb': 4096,
                               'local_gb': 50}}

    def instances(self):
        self._call('instances')
        return {uuid: r for uuid, r in self.held.items()
                if r.host == self.host}

    # -- what is done to a reserved node ---------------------------------

    def deploy(self, reservation, deployment, should_stop=None):
        self._call('deploy', reservation, deployment)
        if deployment.volume_targets:
            self._require(base.Feature.VOLUME_BOOT)
        self.deployments.append(deployment)
        if self.on_deploy is not None:
            self.on_deploy(should_stop)
        deployed = dataclasses.replace(
            reservation, state=lifecycle.State.ACTIVE, host=deployment.host)
        self.held[reservation.instance_uuid] = deployed
        return deployed

    def teardown(self, instance_uuid, vifs=()):
        self._call('teardown', instance_uuid, tuple(vifs))
        return self.held.get(instance_uuid)

    def rebuild(self, instance_uuid, deployment):
        self._call('rebuild', instance_uuid, deployment)
        self._held(instance_uuid)
        self.deployments.append(deployment)

    def power(self, instance_uuid, action, timeout=None):
        self._call('power', instance_uuid, action, timeout)
        self._held(instance_uuid)

    def check(self, instance_uuid, feature):
        self._call('check', instance_uuid, feature)
        self._held(instance_uuid)

    def rescue(self, instance_uuid, password):
        self._call('rescue', instance_uuid, password)
        self._held(instance_uuid)

    def unrescue(self, instance_uuid):
        self._call('unrescue', instance_uuid)
        self._held(instance_uuid)

    def console(self, instance_uuid, kind):
        self._call('console', instance_uuid, kind)
        reservation = self._held(instance_uuid)
        return base.Console(node_uuid=reservation.node_uuid, kind=kind,
                            host='192.0.2.1', port=5900)

    def crash_dump(self, instance_uuid):
        self._call('crash_dump', instance_uuid)
        self._held(instance_uuid)

    def attach_vif(self, instance_uuid, vif_id):
        self._call('attach_vif', instance_uuid, vif_id)
        self._held(instance_uuid)

    def detach_vif(self, instance_uuid, vif_id):
        self._call('detach_vif', instance_uuid, vif_id)

    def volume_connectors(self, instance_uuid):
        self._call('volume_connectors', instance_uuid)
        self._require(base.Feature.VOLUME_BOOT)
        self._held(instance_uuid)
        return self.node(instance_uuid), self.connectors

    def _require(self, feature):
        if feature not in self.provider.features:
            raise exception.NotSupported(provider='fake', feature=feature)


class FakeHealth(object):
    """The Reserver's health poll: findings set by the test."""

    def __init__(self):
        self.found = {}

    def latest(self, instance_uuid):
        return self.found.get(instance_uuid)


def flavor(extra_specs=None, **fields):
    values = dict(flavorid='bm', name='baremetal', memory_mb=4096, vcpus=2,
                  root_gb=40, ephemeral_gb=0, swap=0,
                  extra_specs=dict(BAREMETAL_SPECS if extra_specs is None
                                   else extra_specs))
    values.update(fields)
    return objects.Flavor(**values)


def instance(uuid=INSTANCE, **fields):
    """An Instance object whose refresh() changes nothing."""
    values = dict(uuid=uuid, project_id='project', user_id='user',
                  display_name='server-1', host=HOST, node=HOST,
                  task_state='spawning', vm_state='building',
                  config_drive='', system_metadata={}, image_ref=IMAGE,
                  flavor=flavor())
    values.update(fields)
    inst = objects.Instance(**values)
    inst.refresh = mock.Mock()
    inst.save = mock.Mock()
    return inst


def image_meta(**properties):
    return objects.ImageMeta.from_dict({'id': IMAGE, 'name': 'image',
                                        'properties': properties})
