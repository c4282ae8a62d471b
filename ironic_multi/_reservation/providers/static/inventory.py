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

"""The inventory of the static provider: a YAML list of nodes.

Each entry takes the keys of an Ironic node::

    - uuid: 0f5bc5b4-7d4c-4b6e-9a55-1e0b8a6a3a01   # required, unique
      resource_class: baremetal-gold              # required
      name: rack1-u07                             # optional, unique
      properties:                                 # optional
        memory_mb: 65536                          # integers >= 0
        cpus: 16
        local_gb: 400
        cpu_arch: x86_64
        capabilities: 'boot_mode:uefi,raid:1'     # string or mapping
      traits: [HW_CPU_X86_AVX2, CUSTOM_RAID]      # optional
      shard: rack1             # optional; default: hash of the UUID
      owner: <project id>      # optional; with lessee, who may use it
      lessee: <project id>
      conductor_group: lab     # optional
      maintenance: false       # optional; true keeps the node out

Any other key, a missing required key, a malformed value or a UUID or name
declared twice makes the whole file invalid (StaticInventoryInvalid naming
the file and the entry): a typo must not silently become a node that
matches nothing.
"""

import re

from oslo_utils import uuidutils
import yaml

from ironic_multi import exception

_REQUIRED = ('uuid', 'resource_class')
_STRINGS = ('uuid', 'name', 'resource_class', 'shard', 'owner', 'lessee',
            'conductor_group')
_KEYS = frozenset(_STRINGS + ('properties', 'traits', 'maintenance'))
_SIZES = ('memory_mb', 'cpus', 'local_gb')
# Placement's rule for trait names.
_TRAIT = re.compile(r'^[A-Z0-9_]{1,255}$')


def invalid(path, reason, entry=None):
    return exception.StaticInventoryInvalid(path=path, reason=reason,
                                            entry=entry)


def _check_entry(path, index, entry):
    """A normalized copy of one inventory entry, or raise."""
    if not isinstance(entry, dict):
        raise invalid(path, 'entry %d is not a mapping: %r'
                      % (index, entry), index)
    label = 'entry %d (%s)' % (index, entry.get('uuid') or
                               entry.get('name') or 'no uuid')

    def fail(reason):
        return invalid(path, '%s: %s' % (label, reason), index)

    unknown = set(entry) - _KEYS
    if unknown:
        raise fail('unknown key(s) %s; known: %s'
                   % (', '.join(sorted(map(str, unknown))),
                      ', '.join(sorted(_KEYS))))
    for key in _REQUIRED:
        if entry.get(key) in (None, ''):
            raise fail('missing required key %s' % key)
    for key in _STRINGS:
        if key in entry and not isinstance(entry[key], (str, type(None))):
            raise fail('%s must be a string, not %r' % (key, entry[key]))
    if not uuidutils.is_uuid_like(entry['uuid']):
        raise fail('uuid %r is not a UUID' % entry['uuid'])

    properties = entry.get('properties') or {}
    if not isinstance(properties, dict):
        raise fail('properties must be a mapping')
    for key in _SIZES:
        value = properties.get(key)
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, int)
                                  or value < 0):
            raise fail('properties.%s must be an integer >= 0, not %r'
                       % (key, value))
    if not isinstance(properties.get('capabilities', ''), (str, dict)):
        raise fail('properties.capabilities must be a string or a mapping')

    traits = entry.get('traits') or []
    if not isinstance(traits, list):
        raise fail('traits must be a list')
    for trait in traits:
        if not isinstance(trait, str) or not _TRAIT.match(trait):
            raise fail('trait %r is not a valid trait name (A-Z, 0-9 and _ '
                       'only)' % (trait,))
    if not isinstance(entry.get('maintenance', False), bool):
        raise fail('maintenance must be true or false')

    node = {key: entry.get(key) for key in _STRINGS}
    node.update(uuid=entry['uuid'].lower(),
                properties=properties, traits=sorted(set(traits)),
                maintenance=entry.get('maintenance', False))
    return node


def load(path):
    """The nodes declared in ``path``, validated: ``{uuid: node}``.

    :raises: StaticInventoryInvalid naming ``path`` and the entry.
    """
    try:
        with open(path, 'rb') as f:
            document = yaml.safe_load(f)
    except OSError as e:
        raise invalid(path, 'cannot be read: %s' % e.strerror)
    except yaml.YAMLError as e:
        raise invalid(path, 'not valid YAML: %s' % e)
    if not isinstance(document, list):
        raise invalid(path, 'must be a YAML list of nodes, not %s'
                      % type(document).__name__)
    nodes, names = {}, {}
    for index, entry in enumerate(document):
        node = _check_entry(path, index, entry)
        if node['uuid'] in nodes:
            raise invalid(path, 'entry %d: uuid %s is already declared'
                          % (index, node['uuid']), index)
        if node['name'] is not None:
            if node['name'] in names:
                raise invalid(path, 'entry %d: name %s is already used by '
                              '%s' % (index, node['name'],
                                      names[node['name']]), index)
            names[node['name']] = node['uuid']
        nodes[node['uuid']] = node
    return nodes
