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

"""``stats``: what each live service counted."""

import time

from ironic_multi._manage import base

_PREFIX = 'housekeeping: '


class Stats(base.Lister):
    """Show each live service's claims, conflicts and housekeeping.

    Per service, since it started: claims made, claim races lost to
    another service (Ironic refused the node), claims that found no node,
    the claim latency (seconds: median, 99th percentile, maximum of the
    last claims), deploys running and waiting for a turn, the age of its
    ready pool (seconds since its last full read), whether it leads
    housekeeping, and the housekeeping actions it took, by kind.
    """

    def take_action(self, parsed_args):
        now = time.time()
        rows = []
        for service in self.sources.services():
            payload = service.payload
            snapshot = payload.get('stats') or {}
            counters = snapshot.get('counters') or {}
            claim = (snapshot.get('latency') or {}).get('claim') or {}
            deploys = payload.get('deploys') or {}
            rows.append((
                service.host, base.Maybe(service.age(now)),
                counters.get('claims', 0),
                counters.get('claim races lost', 0),
                counters.get('no node available', 0),
                base.Maybe(claim.get('p50')), base.Maybe(claim.get('p99')),
                base.Maybe(claim.get('max')),
                base.Maybe(deploys.get('running')),
                base.Maybe(deploys.get('waiting')),
                base.Maybe(base.pool_age(payload, now)),
                base.YesNo(payload.get('leads')),
                base.Counters({name[len(_PREFIX):]: value
                               for name, value in counters.items()
                               if name.startswith(_PREFIX)})))
        return (('Host', 'Heartbeat Age', 'Claims', 'Races Lost', 'No Node',
                 'Claim p50', 'Claim p99', 'Claim Max', 'Deploys Running',
                 'Deploys Waiting', 'Pool Age', 'Leader', 'Housekeeping'),
                rows)
