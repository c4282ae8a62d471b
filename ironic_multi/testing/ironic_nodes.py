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

"""Nodes and allocations of a test Ironic, through its REST API.

Bulk copies and wipes go straight to the database: through the API, 10,000
nodes would take most of an hour.
"""

import concurrent.futures
import datetime
import itertools
import json
import logging
import os
import time
import uuid

import requests

from ironic_multi.testing import ironic_server

LOG = logging.getLogger(__name__)

DEFAULT_PROPERTIES = {'memory_mb': 4096, 'cpus': 2, 'local_gb': 50}
NODE_FIELDS = ('uuid', 'name', 'provision_state', 'power_state',
               'instance_uuid', 'maintenance', 'resource_class', 'shard',
               'owner', 'lessee')
SNAPSHOT_NODE_FIELDS = ('uuid', 'provision_state', 'instance_uuid',
                        'allocation_uuid', 'maintenance', 'power_state')
SNAPSHOT_ALLOCATION_FIELDS = ('uuid', 'node_uuid', 'state')
_STATE_FIELDS = ('provision_state', 'target_provision_state', 'power_state',
                 'target_power_state', 'last_error')
# The server's [api] max_limit: a shorter page is the last one.
PAGE = 1000
# Ironic is CPU-bound: on 2 cores, 2 threads enrolled fastest.
ENROLL_THREADS = 2
WAIT_TIMEOUT = 30
# Node names are unique per test process; wipe() does not reset this.
_SERIAL = itertools.count()


class IronicRequestError(Exception):
    def __init__(self, response):
        super().__init__('%s %s: HTTP %d %s' % (
            response.request.method, response.request.url,
            response.status_code, response.text[:500]))
        self.response = response


class IronicNodes:
    """Helpers over one IronicServer."""

    def __init__(self, server):
        self.server = server
        self.session = requests.Session()
        self.session.headers.update(ironic_server.API_HEADERS)

    def request(self, method, path, expect=(200,), **kwargs):
        """Send a request; raise IronicRequestError on another status."""
        response = self.session.request(
            method, self.server.endpoint + path, timeout=60, **kwargs)
        if response.status_code not in expect:
            raise IronicRequestError(response)
        return response

    def enroll_nodes(self, count, resource_class='baremetal',
                     properties=None, traits=(), shard=None, owner=None,
                     lessee=None, conductor_group=None, name_prefix='node'):
        """Create nodes and drive them to available, powered off.

        Returns their UUIDs in creation order.  Ironic refuses a
        ``conductor_group`` that its conductor does not serve (see
        IronicServer); ``bulk_clone(..., conductor_group=...)`` makes such
        nodes.
        """
        body = {'driver': 'fake-hardware', 'resource_class': resource_class,
                'properties': DEFAULT_PROPERTIES if properties is None
                else properties}
        optional = {'shard': shard, 'owner': owner, 'lessee': lessee,
                    'conductor_group': conductor_group}
        body.update((k, v) for k, v in optional.items() if v is not None)
        bodies = [dict(body, name='%s-%d' % (name_prefix, next(_SERIAL)))
                  for _ in range(count)]
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(ENROLL_THREADS) as pool:
            uuids = list(pool.map(
                lambda b: self._enroll(b, traits), bodies))
        LOG.debug('Enrolled %d nodes in %.1f s', count,
                  time.monotonic() - started)
        return uuids

    def bulk_clone(self, template_uuid, count, **overrides):
        """Copy a node's database row ``count`` times; returns the UUIDs.

        Copies get new UUIDs and names (``clone-N``), the template's state
        and traits, and no instance or allocation.  ``overrides`` set
        columns of the copies (``shard='s1'``; times as naive UTC
        datetimes), ``traits`` replaces the trait list; a callable value
        is called with the copy's index (``shard=lambda i: ...``).
        """
        copies = []
        for index in range(count):
            copy = {'uuid': str(uuid.uuid4()),
                    'name': 'clone-%d' % next(_SERIAL)}
            for column, value in overrides.items():
                value = value(index) if callable(value) else value
                # Ironic's JSON columns hold JSON text.
                if column != 'traits' and isinstance(value, (dict, list)):
                    value = json.dumps(value)
                elif isinstance(value, datetime.datetime):
                    value = value.isoformat()
                copy[column] = value
            copies.append(copy)
        self.server.run_db_tool('clone', self.server.db_url, template_uuid,
                                stdin=json.dumps(copies))
        return [copy['uuid'] for copy in copies]

    def force_provision_state(self, node_uuid, state):
        """Put a node in ``state`` behind the API (in the database).

        For states fake hardware never reaches (a failed tear down, a
        failed rescue or service); the node moves as a conductor would
        move it: no target, a new ``provision_updated_at``.
        """
        self.server.run_db_tool('provision', self.server.db_url, node_uuid,
                                state)

    def config_drive_file(self, node_uuid, path):
        """A file of the config drive Ironic stored for the node, as text.

        Read from the database: Ironic's API masks the drive.
        """
        return self.server.run_db_tool('configdrive-file',
                                       self.server.db_url, node_uuid, path)

    def writes(self, node_uuids, since):
        """Requests that wrote to ``node_uuids`` since ``since``.

        ``[(wall, method, path, status)]`` from Ironic's access log,
        refused ones included; ``since`` is wall-clock time.
        """
        # Here, not at the top: the chaos package imports this module.
        from ironic_multi.testing.chaos import logscan
        return logscan.node_writes(os.path.dirname(self.server.log_path),
                                   set(node_uuids), since)

    def wipe(self):
        """Delete every node and allocation (in the database)."""
        self.server.run_db_tool('wipe', self.server.db_url)

    def snapshot(self):
        """What tests compare to check that Ironic is as it started."""
        return {
            'nodes': _pick(self.list_nodes(fields=None),
                           SNAPSHOT_NODE_FIELDS),
            'allocations': _pick(self.list_allocations(),
                                 SNAPSHOT_ALLOCATION_FIELDS),
        }

    def list_nodes(self, fields=NODE_FIELDS, **filters):
        """All nodes matching the filters (``shard='s1'``, ...).

        ``fields=None`` gets every field from ``/v1/nodes/detail``: Ironic
        39 answers HTTP 500 when a listing asks for ``allocation_uuid``.
        """
        if fields is None:
            return self._list('/v1/nodes/detail', 'nodes', filters)
        return self._list('/v1/nodes', 'nodes',
                          dict(filters, fields=_fields(fields)))

    def list_allocations(self, fields=SNAPSHOT_ALLOCATION_FIELDS,
                         **filters):
        return self._list('/v1/allocations', 'allocations',
                          dict(filters, fields=_fields(fields)))

    def get_node(self, node_uuid, fields=None):
        """The node: all its fields, or only those named."""
        params = {'fields': ','.join(fields)} if fields else None
        return self.request('GET', '/v1/nodes/%s' % node_uuid,
                            params=params).json()

    def wait_for_node(self, node_uuid, timeout=WAIT_TIMEOUT, **expected):
        """Poll until the node's fields have the expected values."""
        def failed(node):
            # Nothing in progress and an error: waiting will not help.
            busy = node['target_provision_state'] or node['target_power_state']
            return node['last_error'] and not busy

        fields = dict.fromkeys(_STATE_FIELDS + tuple(expected))
        return _wait(lambda: self.get_node(node_uuid, fields), expected,
                     timeout, failed)

    def wait_for_allocation(self, allocation_uuid, timeout=WAIT_TIMEOUT,
                            **expected):
        """Poll until the allocation's fields have the expected values."""
        path = '/v1/allocations/%s' % allocation_uuid
        return _wait(lambda: self.request('GET', path).json(), expected,
                     timeout, lambda item: item['state'] == 'error')

    def add_bond(self, node_uuid, mode='802.3ad', miimon='100',
                 physical_network=None, local_link=None):
        """A port group of two ports on the node, as a bonded NIC pair.

        The MACs end in the node UUID's last three bytes: unique per node
        for any fleet of a test.  ``physical_network``: the ports'.
        ``local_link(mac)``: a port's ``local_link_connection``, where it
        is cabled.  Returns the port group's UUID.
        """
        group = self.request('POST', '/v1/portgroups', expect=(201,), json={
            'node_uuid': node_uuid, 'address': _mac(node_uuid, 0),
            'mode': mode, 'properties': {'miimon': miimon}}).json()['uuid']
        for index in (1, 2):
            self.add_port(node_uuid, index, physical_network, local_link,
                          portgroup_uuid=group)
        return group

    def add_port(self, node_uuid, index, physical_network=None,
                 local_link=None, portgroup_uuid=None):
        """The node's NIC number ``index`` (1 to 255), as :meth:`add_bond`.

        Returns its UUID.
        """
        address = _mac(node_uuid, index)
        body = {'node_uuid': node_uuid, 'address': address}
        if portgroup_uuid:
            body['portgroup_uuid'] = portgroup_uuid
        if physical_network:
            body['physical_network'] = physical_network
        if local_link:
            body['local_link_connection'] = local_link(address)
        return self.request('POST', '/v1/ports', expect=(201,),
                            json=body).json()['uuid']

    def add_volume_connector(self, node_uuid, type='iqn', connector_id=None):
        """A volume connector: by default the node's iSCSI initiator."""
        connector_id = connector_id or (
            'iqn.2026-11.org.openstack.ironic-multi:%s' % node_uuid)
        self.request('POST', '/v1/volume/connectors', expect=(201,), json={
            'node_uuid': node_uuid, 'type': type,
            'connector_id': connector_id})
        return connector_id

    def _enroll(self, body, traits):
        node = self.request('POST', '/v1/nodes', expect=(201,),
                            json=body).json()['uuid']
        self._provision(node, 'manage', 'manageable')
        self._provision(node, 'provide', 'available')
        self.request('PUT', '/v1/nodes/%s/states/power' % node,
                     expect=(202,), json={'target': 'power off'})
        self.wait_for_node(node, power_state='power off')
        if traits:
            self.request('PUT', '/v1/nodes/%s/traits' % node, expect=(204,),
                         json={'traits': list(traits)})
        return node

    def _provision(self, node, action, state):
        self.request('PUT', '/v1/nodes/%s/states/provision' % node,
                     expect=(202,), json={'target': action})
        self.wait_for_node(node, provision_state=state,
                           target_provision_state=None)

    def _list(self, path, key, params):
        params = dict(params, limit=PAGE)
        items = []
        # Page with marker and the filters: Ironic's "next" link drops the
        # filters.
        while True:
            page = self.request('GET', path, params=params).json()[key]
            items.extend(page)
            if len(page) < PAGE:
                return items
            params['marker'] = page[-1]['uuid']


def admin_nodes(server):
    """Node helpers of ``server`` acting as its admin.

    Behind Keystone that is a system-scoped admin token; under noauth the
    helpers need nothing more.
    """
    nodes = IronicNodes(server)
    nodes.session.headers.update(server.api_headers())
    return nodes


def diff_snapshots(before, after):
    """What changed between two :meth:`IronicNodes.snapshot` results.

    :returns: ``[(kind, uuid, old, new)]`` sorted, empty when equal;
        ``old`` or ``new`` is None for an item that appeared or vanished.
    """
    changes = []
    for kind in sorted(set(before) | set(after)):
        old = {item['uuid']: item for item in before.get(kind, ())}
        new = {item['uuid']: item for item in after.get(kind, ())}
        changes.extend((kind, key, old.get(key), new.get(key))
                       for key in sorted(set(old) | set(new))
                       if old.get(key) != new.get(key))
    return changes


def _wait(fetch, expected, timeout, failed):
    deadline = time.monotonic() + timeout
    while True:
        item = fetch()
        if all(item[k] == v for k, v in expected.items()):
            return item
        if failed(item) or time.monotonic() > deadline:
            raise AssertionError('Expected %s, got %s' % (expected, item))
        time.sleep(0.05)


def _fields(names):
    # Paging needs the UUID.
    return ','.join(dict.fromkeys(('uuid', *names)))


def _pick(items, fields):
    return sorted(({f: item[f] for f in fields} for item in items),
                  key=lambda item: item['uuid'])


def _mac(node_uuid, index):
    """MAC ``index`` of a node: 52:54:<index>:<the UUID's last 3 bytes>."""
    suffix = ':'.join('%02x' % b for b in uuid.UUID(node_uuid).bytes[-3:])
    return '52:54:%02x:%s' % (index, suffix)
