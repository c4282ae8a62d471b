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

"""The promises a chaos run checks, as pure functions of API answers.

Servers are dicts with ``id``, ``name``, ``status``, ``task_state``,
``host`` and ``project_id``; nodes are Ironic's node dicts.  Each check
returns ``[(invariant, detail)]``, empty when the promise holds.
"""

import collections

from ironic_multi._reservation.providers.ironic import deploy
from ironic_multi._reservation.providers.ironic import ownership

# The invariants, by name.
ONE_NODE_PER_INSTANCE = 'one node per instance'
GIVEN_TWICE = 'no node given to two instances'
ACTIVE_HOLDS_A_NODE = 'every ACTIVE server holds its node'
PROJECT = 'no node of another project'
FOREIGN_UNTOUCHED = 'nodes of other deployers untouched'
SETTLED = 'every server ACTIVE, SHUTOFF, ERROR or deleted'
NO_LEAK = 'no node held for no live instance'
ONE_MANAGER = 'host mark equal to Nova\'s host'
CAPACITY = 'placement\'s free counts equal Ironic\'s'
TYPED_ERRORS = 'every error typed'
BOUNDED = 'every operation ends within its bound'
WATCHED = 'the cloud watched all along'

INVARIANTS = (ONE_NODE_PER_INSTANCE, GIVEN_TWICE, ACTIVE_HOLDS_A_NODE,
              PROJECT, FOREIGN_UNTOUCHED, SETTLED, NO_LEAK, ONE_MANAGER,
              CAPACITY, TYPED_ERRORS, BOUNDED, WATCHED)
# The tests that plant each invariant's violation and see it reported: a
# check is only as good as the defects it has been shown to catch.  The
# chaos report lists them; tests/unit/test_chaos.py checks that each
# exists and names its invariant.
_UNIT = 'tests/unit/test_chaos.py::'
_CLOUD = 'tests/cloud/test_chaos_checker.py::'
PROVEN_BY = {
    # Ironic refuses an instance on a second node (HTTP 409): the cloud
    # test checks that refusal, and the checker on samples only.
    ONE_NODE_PER_INSTANCE: (_UNIT + 'test_an_instance_on_two_nodes',
                            _UNIT + 'test_no_safety_violation_is_forgiven'),
    GIVEN_TWICE: (
        _UNIT + 'test_a_node_that_went_to_another_instance_is_given_twice',
        _UNIT + 'test_no_safety_violation_is_forgiven',
        _CLOUD + 'test_a_node_given_to_another_instance_by_a_direct_patch'),
    ACTIVE_HOLDS_A_NODE: (_UNIT + 'test_an_active_server_without_a_node',),
    PROJECT: (_UNIT + 'test_a_node_of_another_project',),
    FOREIGN_UNTOUCHED: (
        _UNIT + 'test_foreign_nodes_and_allocations_kept',
        _UNIT + 'test_a_write_sent_to_a_foreign_node_is_a_violation_'
                'refused_or_not',
        'tests/functional/test_foreign_nodes.py::'
        'test_the_chaos_runs_other_deployers_survive_housekeeping'),
    SETTLED: (_UNIT + 'test_settled_leaks_and_host_marks',
              _CLOUD + 'test_a_server_hung_in_build'),
    NO_LEAK: (_UNIT + 'test_settled_leaks_and_host_marks',
              _CLOUD + 'test_a_leaked_node'),
    ONE_MANAGER: (_UNIT + 'test_settled_leaks_and_host_marks',),
    CAPACITY: (_UNIT + 'test_placement_held_apart_from_ironic',
               _CLOUD + 'test_placement_held_apart_from_ironic'),
    TYPED_ERRORS: (_UNIT + 'test_an_untyped_error_in_a_log_fails_the_run',
                   _CLOUD + 'test_an_untyped_exception_in_a_compute_log'),
    BOUNDED: (_UNIT + 'test_an_operation_that_never_ended_is_a_violation',),
    WATCHED: (_UNIT + 'test_failed_looks_fail_the_run',
              _UNIT + 'test_the_watch_is_judged'),
}
# What no excuse can lift: a server Nova stranded may excuse the
# liveness findings about it (SETTLED, BOUNDED, ...), never one of these.
SAFETY = (ONE_NODE_PER_INSTANCE, GIVEN_TWICE, PROJECT, FOREIGN_UNTOUCHED,
          NO_LEAK, ONE_MANAGER)
# Stable states: nothing is in progress on such a server.
STABLE = ('ACTIVE', 'SHUTOFF', 'ERROR')
# What a foreign node must keep, whatever happens to ours.
KEPT = ('instance_uuid', 'provision_state', 'power_state', 'maintenance',
        'instance_info', 'extra', 'conductor_group')


def _steady_active(before, after):
    """Servers ACTIVE with no task in both listings, by id."""
    was = {s['id'] for s in before
           if s['status'] == 'ACTIVE' and not s.get('task_state')}
    return {s['id']: s for s in after
            if s['id'] in was and s['status'] == 'ACTIVE'
            and not s.get('task_state')}


def holders(nodes):
    """``{instance uuid: [node, ...]}`` of the nodes that hold one."""
    held = collections.defaultdict(list)
    for node in nodes:
        if node.get('instance_uuid'):
            held[node['instance_uuid']].append(node)
    return held


def check_sample(before, nodes, after, last_nodes, foreign=()):
    """One look at Nova and Ironic during the run.

    A server ACTIVE with no task in Nova's listings ``before`` and
    ``after`` the nodes were read was ACTIVE all along: it must hold
    exactly one node.  If it holds none and the node it held at an
    earlier look (``last_nodes``, ``{server id: node uuid}``, updated
    here) now serves another instance, that node was given to two.

    :param foreign: uuids of other deployers' nodes, which are not ours to
        judge (another project's servers may sit on them).
    """
    found = []
    held = holders(nodes)
    by_uuid = {n['uuid']: n for n in nodes}
    for instance, its_nodes in sorted(held.items()):
        if len(its_nodes) > 1:
            found.append((ONE_NODE_PER_INSTANCE, 'instance %s holds %s' % (
                instance, ', '.join(n['uuid'] for n in its_nodes))))
    for server_id, server in sorted(_steady_active(before, after).items()):
        its_nodes = held.get(server_id, [])
        if len(its_nodes) == 1:
            node = its_nodes[0]
            last_nodes[server_id] = node['uuid']
            if node['uuid'] not in foreign:
                found.extend(check_project(server, node))
            continue
        if its_nodes:
            continue  # Reported above.
        earlier = by_uuid.get(last_nodes.get(server_id))
        if earlier is not None and earlier.get('instance_uuid'):
            found.append((GIVEN_TWICE, 'node %s of ACTIVE server %s (%s) '
                          'now serves instance %s' % (
                              earlier['uuid'], server['name'], server_id,
                              earlier['instance_uuid'])))
        else:
            found.append((ACTIVE_HOLDS_A_NODE, 'ACTIVE server %s (%s) holds '
                          'no node' % (server['name'], server_id)))
    return found


def check_project(server, node):
    """A node owned or leased by a project serves only that project."""
    projects = {node.get('owner'), node.get('lessee')} - {None, ''}
    if projects and server.get('project_id') not in projects:
        return [(PROJECT, 'server %s of project %s is on node %s of %s' % (
            server['name'], server.get('project_id'), node['uuid'],
            ', '.join(sorted(projects))))]
    return []


def kept(node):
    return {field: node.get(field) for field in KEPT}


def check_foreign(baseline, nodes, allocations=None,
                  allocations_baseline=None):
    """Other deployers' nodes (and allocations) as they were at the start.

    :param baseline: ``{node uuid: kept(node)}`` at the start.
    """
    found = []
    now = {n['uuid']: n for n in nodes}
    for node_uuid, was in sorted(baseline.items()):
        node = now.get(node_uuid)
        current = kept(node) if node is not None else None
        if current != was:
            changed = sorted(k for k in KEPT
                             if (current or {}).get(k) != was.get(k))
            found.append((FOREIGN_UNTOUCHED, 'node %s changed: %s' % (
                node_uuid, ', '.join('%s %r -> %r' % (
                    k, was.get(k), (current or {}).get(k))
                    for k in changed) if current else 'gone')))
    if allocations_baseline is not None and allocations is not None:
        now = {a['uuid']: a for a in allocations}
        for allocation_uuid, was in sorted(allocations_baseline.items()):
            if now.get(allocation_uuid) != was:
                found.append((FOREIGN_UNTOUCHED, 'allocation %s changed: '
                              '%s -> %s' % (allocation_uuid, was,
                                            now.get(allocation_uuid))))
    return found


def check_foreign_writes(writes):
    """No write sent to another deployer's node, refused or not.

    :param writes: :func:`.logscan.node_writes` of the seeded nodes.
    """
    return [(FOREIGN_UNTOUCHED, '%s %s sent (HTTP %d)' % (method, path,
                                                          status))
            for _wall, method, path, status in writes]


def check_watched(looks, failed, longest_blind, most_failed=0.15,
                  blind_bound=45.0):
    """The observer's looks: few failed, and none for long.

    A run whose looks mostly failed would pass the sampled invariants for
    want of samples.

    :param looks: looks that ended with their findings recorded.
    :param failed: looks that failed.
    :param longest_blind: the longest time, in seconds, without a good
        look (from the observer's start to its end).
    """
    found = []
    tried = looks + failed
    if not tried or failed > most_failed * tried:
        found.append((WATCHED, '%d of %d looks failed (bound %d %%)' % (
            failed, tried, most_failed * 100)))
    if longest_blind > blind_bound:
        found.append((WATCHED, 'no good look for %.1f s (bound %g s)' % (
            longest_blind, blind_bound)))
    return found


def check_settled(servers):
    """Nothing left in progress: no BUILD, no DELETING, no task."""
    return [(SETTLED, 'server %s (%s) is %s%s' % (
        s['name'], s['id'], s['status'],
        '/%s' % s['task_state'] if s.get('task_state') else ''))
        for s in servers
        if s['status'] not in STABLE or s.get('task_state')]


def check_leaks(servers, nodes, foreign=()):
    """Every node that holds an instance holds a live server."""
    live = {s['id'] for s in servers}
    return [(NO_LEAK, 'node %s (%s, %s) holds %s, which Nova does not have'
             % (n['uuid'], n.get('name'), n.get('provision_state'),
                n['instance_uuid']))
            for n in nodes
            if n.get('instance_uuid') and n['uuid'] not in foreign
            and n['instance_uuid'] not in live]


def check_host_marks(servers, nodes, group):
    """The compute that manages a node is the one Nova names.

    A node this group claimed and deployed carries the host that deployed
    it (or adopted its instance); Nova's ``host`` of its server must be
    that host, or two compute services would both act on it.
    """
    by_id = {s['id']: s for s in servers}
    found = []
    for node in nodes:
        mark = ownership.of(node)
        server = by_id.get(node.get('instance_uuid'))
        if server is None or not mark or mark.get('group') != group:
            continue
        if not server.get('host'):
            # Nova routes nothing to a server without a host (a build that
            # failed past its deploy): no manager, not two.  Its delete
            # is local, and the housekeeper releases the node.
            continue
        host = (node.get('instance_info') or {}).get(deploy.HOST_KEY)
        if host and host != server.get('host'):
            found.append((ONE_MANAGER, 'node %s of server %s is marked for '
                          '%s, Nova says %s' % (node['uuid'], server['name'],
                                                host, server.get('host'))))
    return found


def check_typed(untyped):
    """The ERROR records :mod:`.logscan` found untyped, as violations."""
    return [(TYPED_ERRORS, '%s: %s (%s)' % (
        record.service, record.exception, record.message[:200]))
        for record in untyped]


def check_capacity(wrong):
    """:func:`~ironic_multi.testing.checks.compare_capacity`'s findings."""
    return [(CAPACITY, '%s %s: placement %s free, Ironic %s' % item)
            for item in wrong]
