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

"""Housekeeping, health poll, quarantine, deploy throttling, takeover."""

from oslo_config import cfg

OPTS = [
    cfg.IntOpt(
        'request_poll_interval',
        default=5,
        min=1,
        help='Seconds between two looks at the coordination group for '
             'requests of the operator CLI (pool flush, housekeeping run, '
             'instances adopt).'),
    cfg.IntOpt(
        'housekeeping_interval',
        default=300,
        min=10,
        help='Seconds between two passes of the housekeeper. One service of '
             'the coordination group at a time runs it (the holder of the '
             'group\'s housekeeper lock); the others stand by and take '
             'over within the membership timeout when it dies.'),
    cfg.IntOpt(
        'orphan_grace_period',
        default=600,
        min=0,
        help='Seconds a reservation whose instance Nova does not have (or '
             'has deleted) must be seen so before the housekeeper tears '
             'its node down and releases it. Covers instances deleted '
             'while their compute service was down and claims whose '
             'answer was lost.'),
    cfg.IntOpt(
        'housekeeping_pass_timeout',
        default=300,
        min=10,
        help='Seconds one housekeeping pass may take. Past them the pass '
             'starts no further action; what it did not get to is reported '
             'as left for the next pass. The tear downs a pass asks for '
             'are waited for within this bound, to note one that fails '
             '(the next pass recovers it); one that Ironic refuses as busy '
             'is asked again until this bound, not for '
             'unprovision_timeout.'),
    cfg.IntOpt(
        'stuck_claim_timeout',
        default=3600,
        min=60,
        help='Seconds after which a claim that never got to deploy (no host '
             'mark on its node) is released by the housekeeper, once the '
             'member of the coordination group that made it has left the '
             'group (its service crashed right after claiming). A claim '
             'whose member is alive is never stuck: it waits for a deploy '
             'turn. Must be longer than deploy_queue_timeout plus '
             'claim_timeout, which bound how long a claim of a service '
             'that runs without the group may wait to deploy; checked at '
             'start.'),
    cfg.IntOpt(
        'failure_cooldown',
        default=300,
        min=0,
        help='Seconds a node whose deploy or tear down failed is not '
             'offered to claims again.'),
    cfg.IntOpt(
        'quarantine_after_failures',
        default=3,
        min=1,
        help='Failures in a row (deploys, tear downs, recoveries) after '
             'which the housekeeper quarantines a node: maintenance with a '
             'reason, out of service until an operator or the "cycle" '
             'scheme returns it.'),
    cfg.IntOpt(
        'max_preserved',
        default=5,
        min=0,
        help='How many quarantined nodes are kept for inspection (Octavia\'s '
             'preservation of failed units).'),
    cfg.StrOpt(
        'preserve_scheme',
        default='keep',
        choices=[('keep', 'Quarantine no more than max_preserved nodes; '
                          'further failed nodes stay out of service by '
                          'their failure count only.'),
                 ('cycle', 'When a new node is quarantined beyond '
                           'max_preserved, return the oldest quarantined '
                           'node to service.')],
        help='What happens to quarantined nodes beyond max_preserved.'),
    cfg.DictOpt(
        'spare_targets',
        default={},
        help='Free nodes wanted per resource class, e.g. '
             '"baremetal-gold:4,baremetal-silver:2". The housekeeper warns '
             'and reports when fewer are free.'),
    cfg.IntOpt(
        'health_poll_interval',
        default=60,
        min=5,
        help='Seconds between two checks of the nodes of this service\'s '
             'instances (node gone, maintenance, power drift, provision '
             'error). What they find is what get_info and Nova\'s power '
             'state sync see.'),
    cfg.IntOpt(
        'max_concurrent_deploys',
        default=10,
        min=0,
        help='Deploys in flight at once on this service; the others wait '
             'in order. 0 means no limit. Nova\'s max_concurrent_builds '
             'bounds the builds a service runs at once (claims included); '
             'this bounds only the deploys among them, which load Ironic.'),
    cfg.IntOpt(
        'deploy_queue_timeout',
        default=1800,
        min=1,
        help='Seconds a deploy may wait for its turn before its spawn fails '
             'and Nova reschedules the instance.'),
    cfg.BoolOpt(
        'takeover_forced_down',
        default=False,
        help='Adopt the instances of a compute service of this group as '
             'soon as Nova reports it forced down: their Nova host and '
             'node, placement allocation and the nodes\' host marks move to '
             'a live service. Otherwise use "ironic-multi-manage instances '
             'adopt".'),
    cfg.IntOpt(
        'takeover_down_after',
        default=0,
        min=0,
        help='Also adopt the instances of a service Nova has reported down '
             '(not forced) for this many seconds. 0 disables it: only a '
             'forced-down service is taken over.'),
]
