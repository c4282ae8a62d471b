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

"""Deploying a reserved Ironic node, re-imaging it, and taking it back.

The claim (the node's ``instance_uuid``) is not this module's business:
the provider claims before :meth:`Deployer.deploy` and releases after
:meth:`Deployer.teardown`.  Every wait is bounded by
``[ironic_multi] deploy_timeout`` or ``unprovision_timeout``.

Every write is made only while the node holds the instance: the node is
read before each write and each provision request (the answer to the
write of ``instance_info`` is such a read), and the writes of
``instance_info`` carry the ownership mark's guard (:mod:`.ownership`),
so that Ironic refuses them once the node holds another instance.  A
claim released behind a deploy's back (a stuck claim timed out by the
housekeeper) thus ends that deploy instead of deploying another
instance's node.

Maintenance needs no special case: Ironic refuses only deploy and rebuild
of a node in maintenance, never its tear down, and a tear down always ends
by clearing ``instance_uuid``, ``instance_info``, the VIFs and the
allocation, even when it fails.  What is never done is clearing the
``instance_uuid`` of a node that may still hold the instance's disk: if
Ironic does not tear the node down, the error reaches the caller and the
node stays associated (and visible) until an operator, the housekeeper or
a retried delete sorts it out.
"""

import time

from oslo_log import log as logging

from ironic_multi._reservation.providers import base
from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import power
from ironic_multi._reservation.providers.ironic import states
from ironic_multi._reservation.providers.ironic import volumes
from ironic_multi._reservation.providers.ironic import waiters
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# Where the host that deployed an instance is written, as Nova's own
# Ironic driver does: it survives restarts, and it is how a service
# recognizes its instances.
HOST_KEY = 'nova_host_id'
# Written with the instance_info of a node that boots from volumes (whose
# targets the deploy writes next): its tear down removes them.
VOLUME_BOOT_KEY = 'boot_from_volume'
NODE_FIELDS = ('uuid', 'instance_uuid', 'power_state', 'target_power_state',
               'provision_state', 'target_provision_state',
               'provision_updated_at', 'maintenance', 'last_error',
               'resource_class')
# What says whether a node still holds an instance, and under which mark;
# and its properties, for the local_gb the instance_info write carries.
HOLDER_FIELDS = ('uuid', 'instance_uuid', 'instance_info', 'properties')


def instance_info_patch(deployment, guard=None, node=None):
    """JSON patch writing what Ironic's deploy reads in ``instance_info``.

    :param guard: an :func:`.ownership.guard` operation to start with.
    :param node: the node as read just before, with its ``properties``:
        its ``local_gb`` goes in too, as Nova's in-tree driver writes it.
    """
    return [guard] * bool(guard) + [
        {'op': 'add', 'path': '/instance_info/%s' % key, 'value': value}
        for key, value in sorted(_instance_info(deployment, node).items())]


def _instance_info(deployment, node):
    info = dict(deployment.instance_info)
    # A node that boots from a volume has no image to write.
    if deployment.image_source is not None:
        info['image_source'] = deployment.image_source
    if deployment.volume_targets:
        info[VOLUME_BOOT_KEY] = 'true'
    info[HOST_KEY] = deployment.host
    if node is not None and 'properties' in node:
        info['local_gb'] = str((node['properties'] or {}).get('local_gb', 0))
    return info


def _holds_info(node, deployment):
    """Whether ``node`` (as Ironic answered a write) holds the deployment.

    Its instance and mark, and every ``instance_info`` field the deploy
    writes, with the ``local_gb`` of its own properties.
    """
    if node is None or ownership.of(node) is None:
        return False
    info = node.get('instance_info') or {}
    return node.get('instance_uuid') == deployment.instance_uuid and all(
        info.get(key) == value
        for key, value in _instance_info(deployment, node).items())


def _boots_from_volume(node):
    """Whether the deployment on ``node`` boots from volumes.

    The node may then have volume targets of ours.  ``node`` has its
    ``instance_info``.
    """
    return VOLUME_BOOT_KEY in (node.get('instance_info') or {})


def _vif_of(port):
    """The VIF attached to an Ironic port or port group, or None."""
    return ((port.get('internal_info') or {}).get('tenant_vif_port_id')
            or (port.get('extra') or {}).get('vif_port_id'))


def _check_holds(node, current, instance_uuid):
    """:raises DeployFailed: ``current`` (node dict) no longer holds it."""
    if current.get('instance_uuid') != instance_uuid:
        holder = current.get('instance_uuid') or 'none'
        raise exception.DeployFailed(
            node=node, reason='the node no longer holds instance %s (it '
                              'holds %s)' % (instance_uuid, holder))


class Deployer(object):
    """Deploy, rebuild and tear down nodes through an IronicAPI."""

    def __init__(self, api, conf):
        self._api = api
        self._opts = conf.ironic_multi
        self._group = conf.ironic_multi.coordination_group
        self._power = power.PowerControl(api, conf)

    def _bounded(self, seconds):
        return self._api.bounded(time.monotonic() + seconds)

    # -- deploy -----------------------------------------------------------

    def deploy(self, node, deployment, should_stop=None, mark=None,
               written=None):
        """Deploy on ``node`` (claimed by the caller) and wait for it.

        :param mark: the ownership mark to write on a node that carries
            none yet (claimed by allocation); the group's alone by default.
        :param written: the node as Ironic answered the claim that wrote
            ``deployment``'s ``instance_info`` with it: not written again
            where that answer holds all of it.

        On failure, takes back what it did (the claim stays) and raises.

        :returns: the node as Ironic answered the write of its
            ``instance_info`` (every field).

        :raises DeployFailed: the node was taken back.
        :raises TeardownFailed: the node could not be taken back; it must
            not be released.
        """
        try:
            # No request may outlive the deploy's bound, not even one that
            # Ironic never answers.
            with self._bounded(self._opts.deploy_timeout):
                if not _holds_info(written, deployment):
                    written = self._write_instance_info(node, deployment,
                                                        mark)
                if deployment.volume_targets:
                    # The node holds the instance (just read): ours to
                    # change, and off, as a claimed node is.
                    volumes.replace_targets(self._api, node,
                                            deployment.volume_targets)
                for vif in deployment.vifs:
                    self._api.attach_vif(node, vif)
                if deployment.vifs:
                    self._holder(node, deployment.instance_uuid)
                # No validation request of its own: Ironic validates the
                # power and deploy interfaces when asked to deploy, and
                # refuses (400) with the reasons that request would give.
                self._provision(node, states.TARGET_ACTIVE, deployment)
                self._wait_for_active(node, deployment.instance_uuid,
                                      should_stop)
        except Exception as e:
            LOG.error('Deploying node %(node)s for instance %(instance)s '
                      'failed (%(error)s); taking it back',
                      {'node': node, 'error': e,
                       'instance': deployment.instance_uuid})
            # A failed tear down raises TeardownFailed instead: the node
            # may hold the instance and must not be released.
            self.teardown(node, deployment.instance_uuid, deployment.vifs)
            # What should_stop raised is the caller's own: let it through.
            if (isinstance(e, exception.DeployFailed)
                    or not isinstance(e, exception.IronicMultiError)):
                raise
            raise exception.DeployFailed(node=node, reason=e) from e
        LOG.info('Deployed Ironic node %(node)s for instance %(instance)s',
                 {'node': node, 'instance': deployment.instance_uuid})
        return written

    def rebuild(self, node, deployment, mark=None):
        """Re-image in place with ``deployment``; wait for it.

        :param mark: as for :meth:`deploy`.

        :raises DeployFailed:
        """
        try:
            with self._bounded(self._opts.deploy_timeout):
                self._write_instance_info(node, deployment, mark)
                self._provision(node, states.TARGET_REBUILD, deployment)
                self._wait_for_active(node, deployment.instance_uuid)
        except exception.DeployFailed:
            raise
        except exception.IronicMultiError as e:
            raise exception.DeployFailed(node=node, reason=e)
        LOG.info('Rebuilt Ironic node %(node)s for instance %(instance)s',
                 {'node': node, 'instance': deployment.instance_uuid})

    def _holder(self, node, instance_uuid):
        """The node as it is now, if it holds ``instance_uuid``.

        :raises DeployFailed: it does not (any more).
        """
        current = self._api.get_node(node, fields=HOLDER_FIELDS)
        _check_holds(node, current, instance_uuid)
        return current

    def _write_instance_info(self, node, deployment, mark=None):
        """Write what the deploy reads, only while the node is ours.

        A node claimed by allocation carries no mark yet (the allocation
        does, and holds the node for the instance): it gets the group's
        mark with this write.  So does a node claimed before marks, being
        rebuilt for its instance.

        Ironic's answer to the write is the node as it is after it: it is
        checked as a read of the holder would be.

        :param mark: the mark to write on a node without one (the group's
            alone by default).
        :returns: that answer.
        :raises DeployFailed: the node no longer holds the instance.
        """
        instance_uuid = deployment.instance_uuid
        current = self._holder(node, instance_uuid)
        found = ownership.of(current)
        if found is None:
            # Guarded by the holder: never another instance's marks.
            patch = (ownership.mark_patch(
                current, mark or ownership.mark(self._group))
                + instance_info_patch(deployment, node=current))
        else:
            patch = instance_info_patch(
                deployment, ownership.guard(instance_uuid, found['group']),
                node=current)
        try:
            written = self._api.patch_node(node, patch)
        except exception.IronicAPIError as e:
            if found is not None and e.status_code == 400:
                raise exception.DeployFailed(
                    node=node, reason='the node no longer holds instance %s '
                                      'under its mark: %s' % (
                                          deployment.instance_uuid, e))
            raise
        _check_holds(node, written, instance_uuid)
        return written

    def _provision(self, node, target, deployment):
        body = None
        if deployment.configdrive is not None:
            body = {'configdrive': deployment.configdrive(
                self._network(node))}
        try:
            self._api.set_provision_state(node, target, body=body)
        except exception.IronicAPIError as e:
            # Ironic's conductor checks the image when asked to deploy;
            # Nova's in-tree driver aborts the build on this (no other
            # host could use the image either), and so does Nova here.
            if 'InvalidImage' in str(e):
                raise exception.InvalidImage(node=node, reason=e) from e
            raise

    def _network(self, node):
        """The node's ports and port groups, with their VIFs now.

        Two reads, only for a deploy with a config drive: its
        ``network_data.json`` names each VIF's MAC and bonds.
        """
        ports = tuple(base.NodePort(
            id=p['uuid'], address=p.get('address'), vif=_vif_of(p),
            port_group=p.get('portgroup_uuid'))
            for p in self._api.list_ports(node))
        groups = tuple(base.NodePortGroup(
            id=g['uuid'], address=g.get('address'), vif=_vif_of(g),
            mode=g.get('mode'), properties=dict(g.get('properties') or {}))
            for g in self._api.list_port_groups(node))
        return base.NodeNetwork(ports=ports, port_groups=groups)

    def _wait_for_active(self, node, instance_uuid, should_stop=None):
        def read():
            if should_stop is not None:
                should_stop()
            return self._api.get_node(node, fields=NODE_FIELDS)

        def failed(n):
            if n['provision_state'] in states.DEPLOY_FAILED:
                return n.get('last_error') or n['provision_state']
            if n.get('instance_uuid') != instance_uuid:
                return 'the node no longer belongs to the instance'

        waiters.wait_for(
            read,
            lambda n: (n['provision_state'] == states.ACTIVE
                       and not n.get('target_provision_state')
                       and n.get('instance_uuid') == instance_uuid),
            timeout=self._opts.deploy_timeout,
            interval=self._opts.state_poll_interval,
            error=lambda reason: exception.DeployFailed(node=node,
                                                        reason=reason),
            what='deploy of node %s' % node,
            failed=failed,
            # Ironic has just accepted the request: a read now would see
            # the deploy (or rebuild) begin, and nothing more.
            first_after=self._opts.state_poll_interval)

    # -- tear down --------------------------------------------------------

    def teardown(self, node, instance_uuid, vifs=(), wait=True,
                 deadline=None):
        """Remove every trace of ``instance_uuid`` but the claim; idempotent.

        A deployed node is unprovisioned (Ironic clears instance_uuid,
        instance_info, VIFs and allocation itself, whether its tear down
        works or fails); an undeployed one gets its VIFs detached and its
        instance_info cleared, but for the ownership mark, which goes with
        the claim.

        :param wait: wait for Ironic's tear down to end (not for the
            cleaning after it).
        :param deadline: ``time.monotonic()`` value past which neither a
            node Ironic keeps busy nor the tear down is waited for, when
            sooner than ``unprovision_timeout``.
        :returns: False when Ironic's tear down goes on (without ``wait``,
            or past ``deadline``), else True.
        :raises TeardownRefused: Ironic refused it (409) until the
            deadline; nothing was done.
        :raises TeardownFailed: it failed: the node is in ``error``, and
            may hold the instance's data.
        """
        try:
            with self._bounded(self._opts.unprovision_timeout):
                current = self._api.get_node(
                    node, fields=NODE_FIELDS + ('instance_info',))
                if current.get('instance_uuid') != instance_uuid:
                    return True
                undeployed = (
                    current['provision_state'] in states.UNDEPLOYED
                    and not current.get('target_provision_state'))
                if _boots_from_volume(current):
                    self._remove_volume_targets(current, undeployed)
                if undeployed:
                    self._clean_up(current, vifs)
                    return True
                return self._unprovision(current, instance_uuid, wait,
                                         deadline)
        except exception.NodeNotFound:
            LOG.info('Ironic node %s is gone: nothing to tear down', node)
            return True
        except exception.TeardownFailed:
            raise
        except exception.IronicMultiError as e:
            raise exception.TeardownFailed(node=node, reason=e)

    def undeploy(self, node, deadline=None):
        """Tear down ``node``, which holds no instance, in a failed state.

        Waits for the tear down to end, not for the cleaning after it.

        :param node: the node as read just before, with ``uuid`` and
            ``provision_updated_at``.
        :returns: False when ``deadline`` passed first (Ironic goes on).
        :raises TeardownRefused, TeardownFailed: as :meth:`teardown`.
        """
        uuid = node['uuid']
        until = time.monotonic() + self._opts.unprovision_timeout
        with self._bounded(self._opts.unprovision_timeout):
            self._request_teardown(uuid, min(until, deadline or until))
            # The stamp moves with every change of provision state: a node
            # still stamped as read has not begun.
            stamp = node.get('provision_updated_at')
            return self._wait_teardown(uuid, lambda n: n is None or (
                n.get('provision_updated_at') != stamp
                and n['provision_state'] not in states.TEARING_DOWN),
                until, deadline)

    def _remove_volume_targets(self, node, undeployed):
        """Remove the volume targets while the node still holds the instance.

        Ironic's tear down clears ``instance_uuid``: after it the node may
        be another's already.  Ironic changes the targets of a deployed
        node only once it is off; its tear down would power it off
        anyway.
        """
        uuid = node['uuid']
        if not undeployed and node.get('power_state') != states.POWER_OFF:
            # A failure is the tear down's (TeardownFailed, see teardown).
            self._power.apply(uuid, base.PowerAction.OFF)
        volumes.remove_targets(self._api, uuid)

    def _clean_up(self, node, vifs):
        uuid = node['uuid']
        attached = set(vifs) | set(self._api.list_vifs(uuid))
        for vif in sorted(attached):
            self._api.detach_vif(uuid, vif)
        mark = ownership.of(node)
        if mark is None:
            patch = [{'op': 'replace', 'path': '/instance_info', 'value': {}}]
        else:
            info = (node.get('instance_info') or {})
            patch = [ownership.guard(node['instance_uuid'], mark['group']),
                     {'op': 'replace', 'path': '/instance_info',
                      'value': {ownership.KEY: info[ownership.KEY]}}]
        try:
            self._api.patch_node(uuid, patch)
        except exception.IronicAPIError as e:
            if not (mark and e.status_code == 400):
                raise
            # The guard: the instance left the node since it was read.
            current = self._read_or_none(uuid)
            if (current is not None and current.get('instance_uuid')
                    == node['instance_uuid']):
                raise
            LOG.info('Node %(node)s no longer holds instance %(instance)s: '
                     'nothing to clean up',
                     {'node': uuid, 'instance': node['instance_uuid']})

    def _unprovision(self, node, instance_uuid, wait, deadline=None):
        uuid = node['uuid']
        until = time.monotonic() + self._opts.unprovision_timeout
        if node['provision_state'] not in states.TEARING_DOWN:
            self._request_teardown(uuid, min(until, deadline or until))
        if not wait:
            LOG.info('Asked Ironic to tear down node %(node)s of instance '
                     '%(instance)s', {'node': uuid, 'instance': instance_uuid})
            return False
        # Ironic clears instance_uuid as its tear down ends, well or not.
        return self._wait_teardown(
            uuid, lambda n: n is None or n.get('instance_uuid') != (
                instance_uuid) or bool(_teardown_failed(n)), until, deadline)

    def _wait_teardown(self, uuid, ended, until, deadline=None):
        """Wait until ``ended(node)``; False if ``deadline`` passed first.

        :raises TeardownFailed: it ended in ``error``, or not within
            ``until``.
        """
        bound = until if deadline is None else min(until, deadline)
        try:
            node = waiters.wait_for(
                lambda: self._read_or_none(uuid), ended,
                timeout=max(bound - time.monotonic(), 0),
                interval=self._opts.state_poll_interval,
                error=_StillTearingDown, what='tear down of node %s' % uuid)
        except _StillTearingDown as e:
            if bound < until:
                LOG.info('Tear down of node %(node)s goes on past the '
                         'deadline: %(error)s', {'node': uuid, 'error': e})
                return False
            raise exception.TeardownFailed(node=uuid, reason=e)
        failed = node is not None and _teardown_failed(node)
        if failed:
            raise exception.TeardownFailed(node=uuid, reason=failed)
        LOG.info('Tore down Ironic node %(node)s (now %(state)s)',
                 {'node': uuid, 'state': waiters.describe(node)})
        return True

    def _request_teardown(self, node, deadline):
        # A deploy in progress holds the node's lock (409): retry until it
        # lets go or the deadline passes.
        while True:
            try:
                self._api.set_provision_state(node, states.TARGET_DELETED)
                return
            except exception.NodeConflict as e:
                if time.monotonic() + self._opts.state_poll_interval \
                        > deadline:
                    raise exception.TeardownRefused(node=node,
                                                    reason=e) from e
                LOG.debug('Tear down of node %(node)s refused for now: '
                          '%(error)s', {'node': node, 'error': e})
                time.sleep(self._opts.state_poll_interval)

    def _read_or_none(self, node):
        try:
            return self._api.get_node(node, fields=NODE_FIELDS)
        except exception.NodeNotFound:
            return None


class _StillTearingDown(Exception):
    """Ironic's tear down had not ended when the wait did."""


def _teardown_failed(node):
    if (node['provision_state'] == states.ERROR
            and not node.get('target_provision_state')):
        return node.get('last_error') or states.ERROR
