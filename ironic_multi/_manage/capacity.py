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

"""``capacity``: the nodes' capacity beside what placement is told."""

from cliff import columns

from ironic_multi._manage import base
from ironic_multi._reservation import capacity as capacity_mod
from ironic_multi._reservation import requirements


class _Placement(columns.FormattableColumn):
    """``{host: {total, reserved, used, free} or None}``."""

    def human_readable(self):
        if not self._value:
            return '-'
        lines = []
        for host, seen in sorted(self._value.items()):
            if seen is None:
                lines.append('%s: -' % host)
            else:
                lines.append('%s: total %s, reserved %s, used %s, free %s, '
                             'builds waiting %s'
                             % (host, seen['total'], seen['reserved'],
                                seen['used'], seen['free'],
                                seen['waiting']))
        seen = [s for s in self._value.values() if s is not None]
        if len(seen) > 1:
            lines.append('added up: free %d, builds waiting %d' % (
                sum(max(s['free'], 0) for s in seen),
                sum(s['waiting'] for s in seen)))
        return '\n'.join(lines)


def _placement_class(resource_class):
    return (requirements.normalize_resource_class(resource_class)
            if resource_class else None)


class Capacity(base.Lister):
    """Compare the nodes' capacity with what placement is told.

    Per resource class, from the node provider read in full: Total nodes
    that can serve an instance, Used by reservations, Free for a claim.
    Beside, under Placement, what each live compute service reports to
    placement (total and reserved of its one resource provider), the
    nodes its own instances use, the free count placement derives
    (total - reserved - used) and the service's builds that wait for a
    node.  Each service offers the free nodes of its own shards, less its
    builds waiting: added up, the free counts converge to Free less every
    service's builds waiting; "-" where a service published no
    inventory.
    """

    def take_action(self, parsed_args):
        provider = self.sources.provider(full=True)
        ironic = {}
        names = {}
        for resource_class, counts in capacity_mod.total(
                provider.capacity(None)).items():
            name = _placement_class(resource_class)
            names.setdefault(name, set()).add(resource_class or '-')
            entry = ironic.setdefault(name, {'total': 0, 'free': 0})
            entry['total'] += counts['total']
            entry['free'] += counts['free']
        used = {}
        for reservation in provider.reservations():
            if reservation.node_uuid and reservation.host:
                key = (reservation.host,
                       _placement_class(reservation.resource_class))
                used[key] = used.get(key, 0) + 1

        payloads = self.sources.payloads_by_host(self.sources.services())
        inventories = {host: payload.get('inventory')
                       for host, payload in payloads.items()}
        waiting = {host: capacity_mod.waiting_of(payload)
                   for host, payload in payloads.items()}
        classes = set(ironic)
        for inventory in inventories.values():
            classes.update(inventory or ())
        rows = []
        for name in sorted(classes, key=str):
            placement = {}
            for host, inventory in inventories.items():
                seen = (inventory or {}).get(name)
                if seen is None:
                    placement[host] = None
                    continue
                total = seen.get('total', 0)
                reserved = seen.get('reserved', 0)
                in_use = used.get((host, name), 0)
                placement[host] = {'total': total, 'reserved': reserved,
                                   'used': in_use,
                                   'free': total - reserved - in_use,
                                   'waiting': waiting[host].get(name, 0)}
            counts = ironic.get(name)
            rows.append((
                ', '.join(sorted(names.get(name, ()))) or '-',
                base.Maybe(name),
                base.Maybe(counts and counts['total']),
                base.Maybe(counts and counts['total'] - counts['free']),
                base.Maybe(counts and counts['free']),
                _Placement(placement)))
        return (('Resource Class', 'Placement Class', 'Total', 'Used',
                 'Free', 'Placement'), rows)
