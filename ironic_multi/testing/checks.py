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


"""What the sandbox checks, on what Nova, placement and Ironic say.

Pure functions over API answers (dicts), so that they are easy to read and
to test on their own.
"""

import collections
import math
import statistics

# Fields of ``GET /v1/nodes`` the sandbox reads (Ironic 39 answers 500 for
# allocation_uuid in a listing).
NODE_FIELDS = ('uuid', 'name', 'resource_class', 'provision_state',
               'power_state', 'instance_uuid', 'maintenance', 'owner',
               'lessee', 'traits', 'properties', 'shard')


def ironic_truth(nodes):
    """``{resource class: {'total', 'used', 'free'}}`` from Ironic's nodes.

    ``used``: nodes that hold an instance; ``free``: nodes a claim may
    take now (available, no instance, out of maintenance, power state
    known).  ``total``: nodes out of maintenance.
    """
    truth = {}
    for node in nodes:
        entry = truth.setdefault(node['resource_class'],
                                 {'total': 0, 'used': 0, 'free': 0})
        if node.get('maintenance'):
            continue
        entry['total'] += 1
        if node.get('instance_uuid'):
            entry['used'] += 1
        elif (node.get('provision_state') == 'available'
              and node.get('power_state') is not None):
            entry['free'] += 1
    return truth


def placement_view(inventory, usages):
    """``{'total', 'reserved', 'used', 'free'}`` of one provider and class.

    :param inventory: the class's inventory record (or None).
    :param usages: the units the provider's allocations use.
    """
    if inventory is None:
        return None
    total, reserved = inventory['total'], inventory['reserved']
    return {'total': total, 'reserved': reserved, 'used': usages,
            'free': total - reserved - usages}


def compare_capacity(truth, placement):
    """Where the live providers' free counts do not add up to Ironic's.

    Each compute service offers placement the free nodes of its own
    shards, so the scheduler can place as many builds as the providers'
    free counts add up to (a provider over its capacity offers nothing).

    :param truth: :func:`ironic_truth`.
    :param placement: ``{host: {placement class: view or None}}``.
    :returns: ``[(hosts, placement class, placement free, ironic free)]``;
        ``hosts`` names the providers, placement's free is None when one
        of them has no inventory of the class.
    """
    wrong = []
    hosts = ', '.join(sorted(placement))
    for resource_class, counts in sorted(truth.items()):
        name = placement_class(resource_class)
        free = offered(placement, name)
        if free != counts['free']:
            wrong.append((hosts, name, free, counts['free']))
    return wrong


def offered(placement, name):
    """The providers' free counts of class ``name``, added up.

    What the scheduler may place: a provider over its capacity (a
    negative free count) offers nothing.

    :param placement: ``{host: {placement class: view or None}}``.
    :returns: None when a provider (or every one) has no inventory of it.
    """
    views = [by_class.get(name) for by_class in placement.values()]
    if not views or None in views:
        return None
    return sum(max(view['free'], 0) for view in views)


def placement_class(resource_class):
    return 'CUSTOM_' + resource_class.upper().replace('-', '_')


def audit(servers, nodes, flavors, project_id):
    """Check the servers against Ironic's nodes.

    :param servers: Nova's servers (``GET /servers/{id}``), deleted ones
        excluded.
    :param nodes: Ironic's nodes (``NODE_FIELDS``).
    :param flavors: ``{server id: fleet.Flavor}``.
    :param project_id: the sandbox's project.
    :returns: a dict of lists, each empty when all is well:

        ``double_bookings``
            an ACTIVE server that is not the instance of exactly one
            active node (its node went to someone else, or it has two);
        ``leaked``
            a node holding an instance that is not an ACTIVE server;
        ``other_project``
            a server of the sandbox's project on a node that another
            project owns or leases;
        ``mismatched``
            an ACTIVE server on a node that does not fit its flavor.
    """
    holding = collections.defaultdict(list)
    for node in nodes:
        if node.get('instance_uuid'):
            holding[node['instance_uuid']].append(node)
    active = {s['id']: s for s in servers if s['status'] == 'ACTIVE'}
    found = {key: [] for key in ('double_bookings', 'leaked',
                                 'other_project', 'mismatched')}
    for server_id, server in sorted(active.items()):
        held = holding.get(server_id, [])
        if len(held) != 1 or held[0]['provision_state'] != 'active':
            found['double_bookings'].append(
                '%s (%s) is ACTIVE, held by %s' % (
                    server['name'], server_id,
                    ', '.join('%s (%s)' % (n['name'], n['provision_state'])
                              for n in held) or 'no node'))
            continue
        node = held[0]
        holders = {node.get('owner'), node.get('lessee')} - {None, ''}
        if server.get('tenant_id') == project_id and holders and (
                project_id not in holders):
            found['other_project'].append(
                '%s is on %s, owned by %s' % (server['name'], node['name'],
                                              ', '.join(sorted(holders))))
        flavor = flavors.get(server_id)
        if flavor is not None and not flavor.matches(node):
            found['mismatched'].append(
                '%s (flavor %s) is on %s (%s)' % (
                    server['name'], flavor.name, node['name'],
                    node['resource_class']))
    for instance, held in sorted(holding.items()):
        if instance not in active:
            found['leaked'].extend(
                '%s holds %s, which is not an ACTIVE server' % (
                    n['name'], instance) for n in held)
    return found


def percentile(values, fraction):
    """The ``fraction`` quantile (0..1), nearest rank; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


def median(values):
    return statistics.median(values) if values else None
