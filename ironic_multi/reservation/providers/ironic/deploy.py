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

"""Deploying a reserved node, re-imaging it, and taking it back.

The reservation (the node's ``instance_uuid``) is not this module's
business: callers claim before :meth:`Deployer.deploy` and release after
:meth:`Deployer.teardown`.  Every wait is bounded by
``[ironic_multi] deploy_timeout`` or ``unprovision_timeout``.

Maintenance needs no special case: Ironic refuses only deploy and rebuild
of a node in maintenance, never its tear down, and a tear down always ends
by clearing ``instance_uuid``, ``instance_info``, the VIFs and the
allocation, even when it fails.  What is never done is clearing the
``instance_uuid`` of a node that may still hold the instance's disk: if
Ironic does not tear the node down, the error reaches Nova and the node
stays associated (and visible) until an operator or a retried delete
sorts it out.
"""

import time

from nova.compute import task_states
from nova.compute import vm_states
from nova import exception as nova_exception
from oslo_log import log as logging
from oslo_utils import excutils

from ironic_multi.conf import CONF
from ironic_multi import exception
from ironic_multi.virt import instances
from ironic_multi.virt import metadata
from ironic_multi.virt import waiters

LOG = logging.getLogger(__name__)

ACTIVE = 'active'
DELETED = 'deleted'
REBUILD = 'rebuild'
_DEPLOY_FAILED = frozenset(('deploy failed', 'error'))
# A tear down is running: wait, do not ask again.
_TEARING_DOWN = frozenset(('deleting', 'undeploy'))
# The node holds no deployment: nothing to tear down, only our traces to
# remove.  Any other state, known or not, is torn down to be safe (Nova
# bug 2131960).
_UNDEPLOYED = frozenset((
    'available', 'manageable', 'enroll', 'verifying', 'inspecting',
    'inspect wait', 'inspect failed', 'cleaning', 'clean wait',
    'clean failed', 'clean hold'))


class Deployer(object):
    """Deploy, rebuild and tear down nodes through an IronicAPI."""

    def __init__(self, api, conf=CONF):
        self._api = api
        self._opts = conf.ironic_multi

    # -- deploy -----------------------------------------------------------

    def deploy(self, node, instance, image_meta, reqs, host, network_info,
               admin_password=None, injected_files=None):
        """Deploy ``instance`` on ``node`` (claimed by the caller).

        On failure, takes back what it did (the claim stays) and re-raises.

        :raises: nova.exception.InstanceTerminationFailure when the node
            could not be taken back: it must not be released.
        """
        try:
            self._api.patch_node(node, metadata.instance_info_patch(
                instance, image_meta, reqs, host))
            for vif in network_info or ():
                self._api.attach_vif(node, vif['id'])
            self._validate(node)
            self._provision(node, ACTIVE, instance, network_info,
                            admin_password, injected_files)
            self._wait_for_active(node, instance)
        except Exception:
            with excutils.save_and_reraise_exception():
                LOG.error('Deploying node %(node)s failed; taking it back',
                          {'node': node}, instance=instance)
                self.teardown(node, instance.uuid, network_info)
        LOG.info('Deployed Ironic node %s', node, instance=instance)

    def rebuild(self, node, instance, image_meta, reqs, host, network_info,
                admin_password=None, injected_files=None,
                preserve_ephemeral=False):
        """Re-image ``instance`` in place on its node.

        :raises: nova.exception.InstanceDeployFailure
        """
        try:
            self._api.patch_node(node, metadata.instance_info_patch(
                instance, image_meta, reqs, host,
                preserve_ephemeral=preserve_ephemeral))
            self._provision(node, REBUILD, instance, network_info,
                            admin_password, injected_files)
        except exception.IronicMultiError as e:
            raise nova_exception.InstanceDeployFailure(reason=str(e))
        self._wait_for_active(node, instance)
        LOG.info('Rebuilt Ironic node %s', node, instance=instance)

    def _validate(self, node):
        result = self._api.validate_node(node) or {}
        bad = ['%s: %s' % (iface, (result.get(iface) or {}).get('reason'))
               for iface in ('deploy', 'power')
               if not (result.get(iface) or {}).get('result')]
        if bad:
            raise nova_exception.InstanceDeployFailure(
                reason='node %s failed validation (%s)'
                % (node, '; '.join(bad)))

    def _provision(self, node, target, instance, network_info,
                   admin_password, injected_files):
        body = None
        if metadata.configdrive_required(instance):
            body = {'configdrive': metadata.build_configdrive(
                instance, network_info, admin_password, injected_files)}
        self._api.set_provision_state(node, target, body=body)

    def _wait_for_active(self, node, instance):
        def read():
            _check_not_deleted(instance)
            return self._api.get_node(node, fields=instances.NODE_FIELDS)

        def failed(n):
            if n['provision_state'] in _DEPLOY_FAILED:
                return n.get('last_error') or n['provision_state']
            if n.get('instance_uuid') != instance.uuid:
                return 'the node no longer belongs to the instance'

        waiters.wait_for(
            read,
            lambda n: (n['provision_state'] == ACTIVE
                       and not n.get('target_provision_state')),
            timeout=self._opts.deploy_timeout,
            interval=self._opts.state_poll_interval,
            error=_deploy_failure,
            what='deploy of node %s' % node,
            failed=failed)

    # -- tear down --------------------------------------------------------

    def teardown(self, node, instance_uuid, network_info=None):
        """Remove every trace of ``instance_uuid`` but the claim; idempotent.

        A deployed node is unprovisioned (Ironic clears instance_uuid,
        instance_info, VIFs and allocation itself); an undeployed one gets
        its VIFs detached and its instance_info cleared.

        :raises: nova.exception.InstanceTerminationFailure
        """
        try:
            current = self._api.get_node(node, fields=instances.NODE_FIELDS)
            if current.get('instance_uuid') != instance_uuid:
                return
            if (current['provision_state'] in _UNDEPLOYED
                    and not current.get('target_provision_state')):
                self._clean_up(node, network_info)
            else:
                self._unprovision(current, instance_uuid)
        except exception.NodeNotFound:
            LOG.info('Ironic node %s is gone: nothing to tear down', node)
        except exception.IronicMultiError as e:
            raise nova_exception.InstanceTerminationFailure(
                reason='node %s: %s' % (node, e))

    def _clean_up(self, node, network_info):
        vifs = {vif['id'] for vif in network_info or ()}
        vifs.update(self._api.list_vifs(node))
        for vif in sorted(vifs):
            self._api.detach_vif(node, vif)
        self._api.patch_node(node, [{'op': 'replace', 'path': '/instance_info',
                                     'value': {}}])

    def _unprovision(self, node, instance_uuid):
        uuid = node['uuid']
        deadline = time.monotonic() + self._opts.unprovision_timeout
        if node['provision_state'] not in _TEARING_DOWN:
            self._request_teardown(uuid, deadline)
        node = waiters.wait_for(
            lambda: self._read_or_none(uuid),
            lambda n: n is None or n.get('instance_uuid') != instance_uuid,
            timeout=max(deadline - time.monotonic(), 0),
            interval=self._opts.state_poll_interval,
            error=_termination_failure,
            what='tear down of node %s' % uuid,
            failed=_teardown_failed)
        LOG.info('Tore down Ironic node %(node)s (now %(state)s)',
                 {'node': uuid, 'state': waiters.describe(node)})

    def _request_teardown(self, node, deadline):
        # A deploy in progress holds the node's lock (409): retry until it
        # lets go or the deadline passes.
        while True:
            try:
                self._api.set_provision_state(node, DELETED)
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
            return self._api.get_node(node, fields=instances.NODE_FIELDS)
        except exception.NodeNotFound:
            return None


def _check_not_deleted(instance):
    """Stop waiting for a deploy whose instance is being deleted."""
    instance.refresh()
    if (instance.task_state == task_states.DELETING
            or instance.vm_state == vm_states.DELETED):
        raise nova_exception.UnexpectedDeletingTaskStateError(
            instance_uuid=instance.uuid, expected='not deleting',
            actual=instance.task_state or instance.vm_state)


def _teardown_failed(node):
    if (node['provision_state'] == 'error'
            and not node.get('target_provision_state')):
        return node.get('last_error') or 'error'


def _deploy_failure(reason):
    return nova_exception.InstanceDeployFailure(reason=reason)


def _termination_failure(reason):
    return nova_exception.InstanceTerminationFailure(reason=reason)
