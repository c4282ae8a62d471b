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

"""Static-provider nodes for tests: a YAML inventory in a directory."""

import os

from oslo_utils import uuidutils
import yaml

from ironic_multi._reservation.providers.static import provider
from ironic_multi._reservation.providers.static import records


class StaticInventory(object):
    """An inventory file the tests add nodes to.

    :param directory: where ``nodes.yaml`` (and the provider's state and
        lock files) live.
    :param conf: options for :meth:`provider` (see
        :func:`ironic_multi.testing.reservers.make_conf`).
    """

    def __init__(self, directory, conf=None):
        os.makedirs(str(directory), exist_ok=True)
        self.path = os.path.join(str(directory), 'nodes.yaml')
        self.conf = conf
        self.entries = []
        self.write()

    def write(self):
        """Replace the file with :attr:`entries`, atomically."""
        tmp = self.path + '.tmp'
        with open(tmp, 'w') as f:
            yaml.safe_dump(self.entries, f)
        os.replace(tmp, self.path)

    def add_nodes(self, count, resource_class, traits=(), properties=None,
                  shard=None, owner=None, lessee=None):
        """Declare ``count`` nodes; return their UUIDs in order."""
        added = []
        for _ in range(count):
            entry = {'uuid': uuidutils.generate_uuid(),
                     'name': 'node-%d' % len(self.entries),
                     'resource_class': resource_class,
                     'properties': dict(properties or {}),
                     'traits': list(traits)}
            entry.update({key: value for key, value
                          in (('shard', shard), ('owner', owner),
                              ('lessee', lessee))
                          if value is not None})
            self.entries.append(entry)
            added.append(entry['uuid'])
        self.write()
        return added

    def provider(self, conf=None):
        """A new, started StaticProvider on this inventory."""
        static = provider.StaticProvider(conf or self.conf,
                                         inventory_path=self.path)
        static.start()
        return static

    def claim_unmarked(self, node_uuid, instance_uuid):
        """Reserve a node the way a version without ownership marks did."""
        with records.RecordFile(self.path).changing() as document:
            document['reservations'][instance_uuid] = {
                'node_uuid': node_uuid, 'state': 'claimed'}

    def snapshot(self):
        """The inventory's bytes and the reservations, for comparisons."""
        with open(self.path, 'rb') as f:
            declared = f.read()
        return declared, records.RecordFile(self.path).read()
