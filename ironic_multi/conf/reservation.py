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

"""How nodes are reserved: backend, ready pool, claims."""

from oslo_config import cfg

OPTS = [
    cfg.StrOpt(
        'node_provider',
        default='ironic',
        deprecated_name='reservation_backend',
        help='Name of the node provider, an entry point in the '
             '``ironic_multi.node_providers`` namespace: ``ironic`` '
             'reserves and deploys real Ironic nodes, ``static`` hands '
             'over pre-installed machines declared in '
             '``static_inventory``.'),
    cfg.BoolOpt(
        'use_allocations',
        default=False,
        help='Claim nodes with Ironic allocations (API 1.52) when the '
             'server supports them; otherwise, and by default, set the '
             'node\'s instance_uuid, which Ironic refuses with 409 when '
             'the node is taken: one request instead of three (measured: '
             '1.2 times a raw PATCH at the median, against 2.2 times for '
             'an allocation). Allocations need system-scoped '
             'credentials ([ironic] system_scope = all): Ironic restricts '
             'the allocations of a project-scoped user to its project\'s '
             'nodes, so with such credentials claims fall back to '
             'instance_uuid, with a warning at start. Both work with '
             'system scope, and with a project-scoped service user when '
             'Ironic\'s rbac_service_role_elevated_access is enabled.'),
    cfg.IntOpt(
        'claim_candidates',
        default=8,
        min=1,
        max=100,
        help='How many matching nodes from the ready pool are offered to '
             'Ironic in one claim attempt.'),
    cfg.FloatOpt(
        'claim_timeout',
        default=60.0,
        min=1.0,
        help='Upper bound, in seconds, of one claim, including conflicts, '
             'retries and the search of other shards. A claim that has not '
             'finished by then fails with a typed error and leaves no '
             'reservation behind. A release has the same bound, and so '
             'has every wait of the static node provider for the lock of '
             'its reservation records.'),
    cfg.IntOpt(
        'pool_refresh_interval',
        default=30,
        min=1,
        help='Seconds between incremental refreshes of the ready pool '
             '(nodes changed since the last refresh).'),
    cfg.FloatOpt(
        'ring_poll_interval',
        default=1.0,
        min=0.2,
        max=60,
        help='Seconds between two reads of the coordination group\'s '
             'members.  When a host joined or left, the shard ring and the '
             'pool are refreshed at once, instead of at the next '
             'pool_refresh_interval: the keys of a service that stops move '
             'to the others within about this long.  Each service makes '
             'one small read per interval.  On etcd3 a watch on the '
             'group\'s keys sees a join or a leave at once as well; the '
             'poll stays on in case its stream breaks.  On other backends '
             'each poll also reads the members\' payloads, so that a node '
             'another service claimed leaves this service\'s inventory in '
             'placement within about this long (etcd3\'s watch streams '
             'them).'),
    cfg.FloatOpt(
        'placement_poll_interval',
        default=0.5,
        min=0.1,
        max=60,
        help='Seconds between two reads of this compute node\'s usages in '
             'placement by the virt driver.  A usage that moved (the '
             'scheduler allocated a build here, or a failed build left) '
             'is counted at once: the build waits for a node, and its '
             'unit comes off this provider\'s offer, as its node will.  '
             'Each compute makes one small placement request per '
             'interval.'),
    cfg.IntOpt(
        'pool_full_refresh_interval',
        default=600,
        min=10,
        help='Seconds between full re-reads of the owned shards; needed '
             'because deleted nodes never show up in incremental '
             'listings.'),
    cfg.IntOpt(
        'pool_clock_skew',
        default=10,
        min=0,
        help='Seconds of clock skew allowed between the Ironic hosts that '
             'stamp node changes and the one that answers the refresh (or '
             'this host, when Ironic\'s answers carry no Date header), '
             'commit delays included. An incremental refresh lists the '
             'changes after a change stamped this long before the previous '
             'listing started, so that a change committed while that '
             'listing ran, with a time stamp it had already passed, is '
             'still seen. Larger costs a few more node records per '
             'refresh; too small may hide a change until the next full '
             'read.'),
    cfg.StrOpt(
        'conductor_group',
        default=None,
        max_length=255,
        regex=r'^[a-zA-Z0-9_.-]*$',
        help='If set, only nodes of this Ironic conductor group are '
             'reserved.'),
]
