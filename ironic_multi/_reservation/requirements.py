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

"""What a node must offer to serve a request, parsed from flavor and image.

The input is plain data (the virt driver converts Nova's objects), so this
module needs nothing from Nova. What is read, and how:

``resources:NAME=AMOUNT``
    At most one ``CUSTOM_*`` class, with amount 1: the Ironic node's
    resource class. ``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` override the
    amounts Nova derives from the flavor; 0 (the usual Ironic flavor) means
    "not counted". Any other class can only be 0: nodes offer no more.
``trait:NAME=required|forbidden``, image ``traits_required`` and image
``trait:NAME=required``
    Required and forbidden node traits.
``capabilities:KEY[:SUBKEY...]=EXPR``
    Node capabilities, with the operators of :mod:`._spec_ops`.
``KEY=EXPR`` (no namespace)
    Nova's legacy form: checked only on nodes that have capability KEY
    (every Ironic node has ``cpu_arch``).
The flavor's ``memory_mb``, ``vcpus`` and disk
    Minimums of the node properties ``memory_mb``, ``cpus`` and
    ``local_gb``, each only while its standard resource is counted, as in
    placement (disk is root + ephemeral + swap rounded up to GiB).

Other namespaces (``hw:``, ``quota:``, ...) are ignored.  Granular
request groups (``resources1:``, ``trait1:``, ``trait_x:``) count as if
they were unnumbered, as Nova's in-tree driver counts their traits: one
node is one provider, so every group's resources and traits are that
node's.
"""

import dataclasses
import functools
import re

from ironic_multi._reservation import _spec_ops
from ironic_multi import exception

CUSTOM = 'CUSTOM_'
REQUIRED = 'required'
FORBIDDEN = 'forbidden'

# Placement's rule for resource class and trait names.
_NAME = re.compile(r'^(?!CUSTOM_$)[A-Z0-9_]{1,255}$')
_AMOUNT = re.compile(r'^[0-9]+$')
# A key of the flavor's ``resources`` or ``trait`` namespace, unnumbered or
# of a granular request group (Nova's suffix rule).
_SPEC = re.compile(r'^(resources|trait)(?:[a-zA-Z0-9_-]{1,64})?:(.*)$')

# Standard resource class -> the node property it is compared with.
_STANDARD = {'DISK_GB': 'local_gb', 'MEMORY_MB': 'memory_mb',
             'VCPU': 'cpus'}


# Every node of the pool is checked at every claim, and a cloud has few
# resource classes: each is normalized once.
@functools.lru_cache(maxsize=256)
def normalize_resource_class(name):
    """The placement name Nova gives an Ironic resource class.

    ``baremetal-gold`` and ``baremetal_gold`` both become
    ``CUSTOM_BAREMETAL_GOLD``: runs of other characters than letters and
    digits turn into one ``_``. As in Nova, the prefix is always added.
    """
    return CUSTOM + re.sub('[^0-9A-Za-z]+', '_', name).upper()


def _invalid(key, value, reason):
    return exception.InvalidRequestSpec(key=key, value=value, reason=reason)


def _integer(key, value):
    text = str(value).strip()
    if not _AMOUNT.match(text):
        raise _invalid(key, value, 'not a non-negative integer')
    return int(text)


def _check_name(key, value, name, what):
    if not _NAME.match(name):
        raise _invalid(key, value, '%r is not a valid %s name (A-Z, 0-9 '
                       'and _ only)' % (name, what))


def _items(specs, prefix):
    """(key, name, value) of the specs in one namespace, in key order."""
    return [(key, key[len(prefix):], specs[key])
            for key in sorted(specs) if key.startswith(prefix)]


def _grouped_items(specs, namespace):
    """As :func:`_items`, with the granular groups' keys of ``namespace``."""
    found = []
    for key in sorted(specs):
        match = _SPEC.match(key)
        if match is not None and match.group(1) == namespace:
            found.append((key, match.group(2), specs[key]))
    return found


def _resources(specs):
    resource_class, amounts = None, {}
    for key, name, value in _grouped_items(specs, 'resources'):
        amount = _integer(key, value)
        _check_name(key, value, name, 'resource class')
        if name.startswith(CUSTOM):
            # A node holds exactly one unit of its class: 0 would drop the
            # class (any node) and more than 1 fits no node.
            if amount != 1:
                raise _invalid(key, value, 'a bare metal resource class '
                               'must be requested with amount 1')
            if resource_class is not None:
                raise _invalid(key, value, 'only one custom resource class '
                               'can be requested, %s already is'
                               % resource_class)
            resource_class = name
        elif name in _STANDARD:
            # The groups of one node add up.
            amounts[name] = amounts.get(name, 0) + amount
        elif amount:
            raise _invalid(key, value, 'bare metal nodes provide only '
                           'their custom resource class and %s'
                           % ', '.join(sorted(_STANDARD)))
    return resource_class, amounts


def _minimums(flavor, amounts):
    """((node property, minimum), ...) of the counted standard resources."""
    size = {key: _integer(key, flavor.get(key) or 0)
            for key in ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb',
                        'swap')}
    derived = {
        'VCPU': size['vcpus'],
        'MEMORY_MB': size['memory_mb'],
        'DISK_GB': (size['root_gb'] + size['ephemeral_gb']
                    + -(-size['swap'] // 1024)),
    }
    derived.update(amounts)
    return tuple((_STANDARD[rc], amount)
                 for rc, amount in sorted(derived.items()) if amount)


def _traits(specs, image_properties):
    wanted = {REQUIRED: set(), FORBIDDEN: set()}
    for key, name, value in _grouped_items(specs, 'trait'):
        if value not in wanted:
            raise _invalid(key, value, 'must be "required" or "forbidden"')
        _check_name(key, value, name, 'trait')
        wanted[value].add(name)

    image_traits = image_properties.get('traits_required') or []
    if not isinstance(image_traits, (list, tuple, set, frozenset)) or not all(
            isinstance(name, str) for name in image_traits):
        raise _invalid('traits_required', image_traits,
                       'must be a list of trait names')
    for name in image_traits:
        _check_name('traits_required', image_traits, name, 'trait')
    # As Nova's ImageMetaProps: image "trait:" props other than
    # "required" are ignored.
    image_traits = set(image_traits)
    for key, name, value in _items(image_properties, 'trait:'):
        if value == REQUIRED:
            _check_name(key, value, name, 'trait')
            image_traits.add(name)
    wanted[REQUIRED] |= image_traits

    for name in sorted(wanted[REQUIRED] & wanted[FORBIDDEN]):
        raise _invalid('trait:%s' % name, FORBIDDEN,
                       'the trait is also required')
    return frozenset(wanted[REQUIRED]), frozenset(wanted[FORBIDDEN])


def _capabilities(specs):
    scoped, legacy = [], []
    for key in sorted(specs):
        namespace, colon, rest = key.partition(':')
        if not colon:
            legacy.append(((key,), _spec_ops.parse(key, specs[key])))
        elif namespace == 'capabilities':
            scope = tuple(rest.split(':'))
            if not all(scope):
                raise _invalid(key, specs[key], 'empty capability name')
            scoped.append((scope, _spec_ops.parse(key, specs[key])))
    return tuple(scoped), tuple(legacy)


@dataclasses.dataclass(frozen=True)
class Requirements:
    """What a node must offer; immutable and hashable.

    :ivar resource_class: placement name (``CUSTOM_*``) or None for any.
    :ivar minimums: ``((node property, minimum), ...)`` for ``memory_mb``,
        ``cpus`` and ``local_gb``; only counted, non-zero resources.
    :ivar required_traits: traits the node must have.
    :ivar forbidden_traits: traits the node must not have.
    :ivar capabilities: ``((scope, Expression), ...)``; the node must have
        each capability and match its expression.
    :ivar legacy_capabilities: the same for namespace-less keys, checked
        only when the node has the capability.
    :ivar project_id: the project the instance belongs to.
    """

    resource_class: str | None = None
    minimums: tuple = ()
    required_traits: frozenset = frozenset()
    forbidden_traits: frozenset = frozenset()
    capabilities: tuple = ()
    legacy_capabilities: tuple = ()
    project_id: str | None = None

    @classmethod
    def from_request(cls, flavor, image_properties=None, project_id=None):
        """Parse a flavor mapping and image properties.

        :param flavor: ``{'memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb',
            'swap', 'extra_specs'}``; missing sizes count as 0.
        :param image_properties: image properties mapping, or None.
        :param project_id: project of the instance, or None.
        :raises: InvalidRequestSpec naming the offending key and value.
        """
        specs = flavor.get('extra_specs') or {}
        resource_class, amounts = _resources(specs)
        required, forbidden = _traits(specs, image_properties or {})
        scoped, legacy = _capabilities(specs)
        return cls(resource_class=resource_class,
                   minimums=_minimums(flavor, amounts),
                   required_traits=required,
                   forbidden_traits=forbidden,
                   capabilities=scoped,
                   legacy_capabilities=legacy,
                   project_id=project_id)

    def describe(self):
        """A short human description, for logs and errors."""
        parts = []
        if self.resource_class:
            parts.append('resource_class=%s' % self.resource_class)
        parts.extend('%s>=%d' % item for item in self.minimums)
        traits = (['+' + t for t in sorted(self.required_traits)]
                  + ['-' + t for t in sorted(self.forbidden_traits)])
        if traits:
            parts.append('traits=%s' % ','.join(traits))
        parts.extend('%s=%s' % (':'.join(scope), expr) for scope, expr
                     in self.capabilities + self.legacy_capabilities)
        if self.project_id:
            parts.append('project=%s' % self.project_id)
        return ', '.join(parts) or 'any node'

    __str__ = describe
