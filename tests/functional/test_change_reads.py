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

"""Incremental refreshes of the ready pool on a real Ironic.

Nodes copied in bulk keep a null ``updated_at`` (never updated since they
were created, as after a database import).  On PostgreSQL those sort first
in a newest-first listing, and Ironic pages past a null marker on ``id``
alone: a changed node with a higher ``id`` than the marker was skipped.
"""

import random
import uuid

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import provider as \
    ironic_provider
from ironic_multi.testing import reservers

MARK = ownership.mark('change-reads')

SHARD = 'changes'
# More than a page of nodes never updated: the first incremental page
# (25 records) ends inside them on PostgreSQL.
NEVER_UPDATED = 60


def _provider(ironic):
    conf = reservers.make_conf(ironic.server.endpoint)
    provider = ironic_provider.IronicProvider(conf)
    provider.start()
    return provider


def _holders(provider):
    return {n['uuid']: n['instance_uuid'] for n in provider.nodes({SHARD})}


def _truth(ironic):
    return {n['uuid']: n['instance_uuid']
            for n in ironic.list_nodes(fields=['uuid', 'instance_uuid'])}


def _fleet(ironic):
    template, = ironic.enroll_nodes(1, shard=SHARD)
    copies = ironic.bulk_clone(template, NEVER_UPDATED, shard=SHARD)
    return template, copies


def test_a_change_behind_nodes_never_updated_is_seen(ironic):
    template, copies = _fleet(ironic)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    provider.refresh({SHARD})
    # The newest copy: the highest id, first of the null run on PostgreSQL.
    changed = copies[-1]
    provider.api.claim_node(changed, str(uuid.uuid4()), MARK)

    read = provider.refresh({SHARD})

    assert _holders(provider) == _truth(ironic)
    # The change and a few records around it, not the nodes never updated.
    assert read < 10, read


def test_every_change_is_seen_pass_after_pass(ironic):
    template, copies = _fleet(ironic)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    chooser = random.Random(7)
    held = {}
    for _ in range(6):
        # Claims and releases anywhere: on nodes never updated, on nodes
        # just changed, and on whichever node the pool reads from.
        for node in chooser.sample([template] + copies, 4):
            if held.get(node):
                provider.api.patch_node(node, [
                    {'op': 'remove', 'path': '/instance_uuid'}])
                held[node] = None
            else:
                held[node] = str(uuid.uuid4())
                provider.api.claim_node(node, held[node], MARK)
        provider.refresh({SHARD})
        assert _holders(provider) == _truth(ironic)


def test_a_deleted_mark_costs_a_full_read_not_a_change(ironic):
    template, copies = _fleet(ironic)
    provider = _provider(ironic)
    provider.refresh({SHARD})
    for node in copies[:5]:
        provider.api.claim_node(node, str(uuid.uuid4()), MARK)
    provider.refresh({SHARD})
    # Whatever the pool reads after: Ironic answers 404 for a marker it
    # cannot find, and the pool's read-back finds no node.
    for node in {template} | set(copies[:5]):
        provider.api.patch_node(node, [
            {'op': 'remove', 'path': '/instance_uuid'}])
        ironic.request('DELETE', '/v1/nodes/%s' % node, expect=(204,))
    changed = copies[-1]
    provider.api.claim_node(changed, str(uuid.uuid4()), MARK)

    provider.refresh({SHARD})

    assert _holders(provider) == _truth(ironic)
