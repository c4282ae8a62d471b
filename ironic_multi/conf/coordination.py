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

"""Who owns which shard: the tooz group and hash ring."""

from oslo_config import cfg

OPTS = [
    cfg.StrOpt(
        'coordination_url',
        default='file:///var/lib/ironic-multi/coordination',
        # It may carry a password; nova-compute logs its options at start.
        secret=True,
        help='tooz URL of the coordination backend whose group members '
             'share the Ironic shards. ``file://`` works on one host only '
             '(the embedded default); use ``etcd3+http://``, '
             '``redis://`` or ``zookeeper://`` when compute services run '
             'on several hosts.  The ``mysql://``, ``postgresql://``, '
             '``kubernetes://`` and ``ipc://`` drivers are refused: they '
             'lack group membership or lock ownership checks.'),
    cfg.StrOpt(
        'coordination_group',
        default='ironic-multi',
        regex=r'^[A-Za-z0-9_.-]+$',
        help='Name of the tooz group whose members share the shards. '
             'Services of different Nova cells or Ironic deployments must '
             'use different groups.'),
    cfg.IntOpt(
        'membership_timeout',
        default=30,
        min=1,
        help='Seconds after which a member that stopped heartbeating is '
             'considered gone and its shards move to the other members '
             '(half of it to all of it after the member died, plus the '
             'next ring refresh). '
             'Passed to the tooz driver as ``membership_timeout`` in its '
             'URL (``timeout`` for ``file://`` and ZooKeeper) unless the '
             'URL sets it. A member that leaves cleanly is gone at once. '
             'Also the longest a call to the backend may wait.'),
    cfg.IntOpt(
        'ring_partitions',
        default=32,
        min=1,
        max=4096,
        help='Points of each compute service host on the hash ring. '
             'More points spread few shard keys over few hosts more '
             'evenly (with 32, a host may get 0.75 to 1.25 times its '
             'share; with 128, about 0.85 to 1.2); every service must use '
             'the same value.'),
    cfg.IntOpt(
        'fallback_shard_count',
        default=64,
        min=1,
        max=65536,
        help='When Ironic has no shard support (API older than 1.82) or '
             'a node has no shard key, its UUID is hashed into this many '
             'virtual shard keys. The operator CLI uses the same number '
             'when it assigns real shard keys.'),
]
