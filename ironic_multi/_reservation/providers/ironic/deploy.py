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

from ironic_multi._reservation.providers.ironic import states
from ironic_multi._reservation.providers.ironic import waiters
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# Where the host that deployed an instance is written, as Nova's own
# Ironic driver does: it survives restarts, and it is how a service
# recognizes its instances.
HOST_KEY = 'nova_host_id'
NODE_FIELDS = ('uuid', 'instance_uuid', 'power_state', 'target_power_state',
               'provision_state', 'target_provision_state', 'maintenance',
               'last_error', 'resource_class')


def instance_info_patch(deployment):
    """JSON patch writing what Ironic's deploy reads in ``instance_info``."""
    info = dict(deployment.instance_info,
                image_source=deployment.image_source)
    info[HOST_KEY] = deployment.host
    return [{'op': 'add', 'path': '/instance_info/%s' % key, 'value': value}
            for key, value in sorted(info.items())]


class Deployer(object):
    """Deploy, rebuild and tear down nodes through an IronicAPI."""

    def __init__(self, api, conf):
        self._api = api
        self._opts = conf.ironic_multi

    def _bounded(self, seconds):
        return self._api.bounded(time.monotonic() + seconds)

    # -- deploy -----------------------------------------------------------

    def deploy(self, node, deployment, should_stop=None):
        """Deploy on ``node`` (claimed by the caller) and wait for it.

        On failure, takes back what it did (the claim stays) and raises.

        :raises DeployFailed: the node was taken back.
        :raises TeardownFailed: the node could not be taken back; it must
            not be released.
        """
        try:
            # No request may outlive the deploy's bound, not even one that
            # Ironic never answers.
            with self._bounded(self._opts.deploy_timeout):
                self._api.patch_node(node, instance_info_patch(deployment))
                for vif in deployment.vifs:
                    self._api.attach_vif(node, vif)
                self._validate(node)
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

    def rebuild(self, node, deployment):
        """Re-image in place with ``deployment``; wait for it.

        :raises DeployFailed:
        """
        try:
            with self._bounded(self._opts.deploy_timeout):
                self._api.patch_node(node, instance_info_patch(deployment))
                self._provision(node, states.TARGET_REBUILD, deployment)
                self._wait_for_active(node, deployment.instance_uuid)
        except exception.DeployFailed:
            raise
        except exception.IronicMultiError as e:
            raise exception.DeployFailed(node=node, reason=e)
        LOG.info('Rebuilt Ironic node %(node)s for instance %(instance)s',
                 {'node': node, 'instance': deployment.instance_uuid})

    def _validate(self, node):
        result = self._api.validate_node(node) or {}
        bad = ['%s: %s' % (iface, (result.get(iface) or {}).get('reason'))
               for iface in ('deploy', 'power')
               if not (result.get(iface) or {}).get('result')]
        if bad:
            raise exception.DeployFailed(
                node=node, reason='validation failed (%s)' % '; '.join(bad))

    def _provision(self, node, target, deployment):
        body = None
        if deployment.configdrive is not None:
            body = {'configdrive': deployment.configdrive()}
        self._api.set_provision_state(node, target, body=body)

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
            failed=failed)

    # -- tear down --------------------------------------------------------

    def teardown(self, node, instance_uuid, vifs=()):
        """Remove every trace of ``instance_uuid`` but the claim; idempotent.

        A deployed node is unprovisioned (Ironic clears instance_uuid,
        instance_info, VIFs and allocation itself); an undeployed one gets
        its VIFs detached and its instance_info cleared.

        :raises TeardownFailed:
        """
        try:
            with self._bounded(self._opts.unprovision_timeout):
                current = self._api.get_node(node, fields=NODE_FIELDS)
                if current.get('instance_uuid') != instance_uuid:
                    return
                if (current['provision_state'] in states.UNDEPLOYED
                        and not current.get('target_provision_state')):
                    self._clean_up(node, vifs)
                else:
                    self._unprovision(current, instance_uuid)
        except exception.NodeNotFound:
            LOG.info('Ironic node %s is gone: nothing to tear down', node)
        except exception.TeardownFailed:
            raise
        except exception.IronicMultiError as e:
            raise exception.TeardownFailed(node=node, reason=e)

    def _clean_up(self, node, vifs):
        attached = set(vifs) | set(self._api.list_vifs(node))
        for vif in sorted(attached):
            self._api.detach_vif(node, vif)
        self._api.patch_node(node, [{'op': 'replace', 'path': '/instance_info',
                                     'value': {}}])

    def _unprovision(self, node, instance_uuid):
        uuid = node['uuid']
        deadline = time.monotonic() + self._opts.unprovision_timeout
        if node['provision_state'] not in states.TEARING_DOWN:
            self._request_teardown(uuid, deadline)
        node = waiters.wait_for(
            lambda: self._read_or_none(uuid),
            lambda n: n is None or n.get('instance_uuid') != instance_uuid,
            timeout=max(deadline - time.monotonic(), 0),
            interval=self._opts.state_poll_interval,
            error=lambda reason: exception.TeardownFailed(node=uuid,
                                                          reason=reason),
            what='tear down of node %s' % uuid,
            failed=_teardown_failed)
        LOG.info('Tore down Ironic node %(node)s (now %(state)s)',
                 {'node': uuid, 'state': waiters.describe(node)})

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
                    raise
                LOG.debug('Tear down of node %(node)s refused for now: '
                          '%(error)s', {'node': node, 'error': e})
                time.sleep(self._opts.state_poll_interval)

    def _read_or_none(self, node):
        try:
            return self._api.get_node(node, fields=NODE_FIELDS)
        except exception.NodeNotFound:
            return None


def _teardown_failed(node):
    if (node['provision_state'] == states.ERROR
            and not node.get('target_provision_state')):
        return node.get('last_error') or states.ERROR
