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

from ironic_multi.conf import groups

OPTS = [
    cfg.StrOpt(
        'coordination_url',
        default='file:///var/lib/ironic-multi/coordination',
        help='tooz URL of the coordination backend whose group members '
             'share the Ironic shards. ``file://`` works on one host only '
             '(the embedded default); use ``etcd3+http://``, '
             '``redis://`` or ``zookeeper://`` when compute services run '
             'on several hosts.'),
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
             'considered gone and its shards move to the other members. '
             'Passed to the tooz driver (``membership_timeout`` or '
             '``timeout`` in its URL) unless the URL sets it.'),
    cfg.IntOpt(
        'ring_partitions',
        default=32,
        min=1,
        max=4096,
        help='Number of replicas of each member on the hash ring (the '
             'partition exponent is derived from it). More replicas give '
             'a more even spread of few shard keys over few members.'),
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


def register_opts(conf):
    conf.register_group(groups.IRONIC_MULTI)
    conf.register_opts(OPTS, group=groups.IRONIC_MULTI)


def list_opts():
    return [(groups.IRONIC_MULTI, OPTS)]
