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

"""Which nodes can serve some Requirements.

Nodes are plain dicts with the keys of an Ironic node; a missing key
counts as absent. Each filter answers one question and says why a node fails.
"""

import abc
import collections
import random

from oslo_log import log as logging

from ironic_multi._reservation import requirements as reqs

LOG = logging.getLogger(__name__)


def _ident(node):
    return node.get('uuid') or node.get('name')


def _properties(node):
    return node.get('properties') or {}


def _node_int(node, name):
    # As Nova's Ironic driver: a missing or malformed size counts as 0.
    try:
        return int(_properties(node).get(name) or 0)
    except (TypeError, ValueError):
        return 0


def _node_capabilities(node):
    """The node's capabilities as a dict, plus ``cpu_arch`` as in Nova."""
    properties = _properties(node)
    caps = {'cpu_arch': properties.get('cpu_arch')}
    raw = properties.get('capabilities')
    if isinstance(raw, dict):
        caps.update(raw)
    elif raw:
        for item in str(raw).split(','):
            parts = item.split(':')
            if len(parts) == 2 and parts[0].strip() and parts[1]:
                caps[parts[0].strip()] = parts[1]
            else:
                LOG.debug('Node %(node)s: ignoring malformed capability '
                          '%(item)r', {'node': _ident(node), 'item': item})
    return caps


def _lookup(caps, scope):
    value = caps
    for name in scope:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


class Filter(metaclass=abc.ABCMeta):
    """One condition on a node."""

    @property
    def name(self):
        return type(self).__name__

    @abc.abstractmethod
    def reason(self, node, requirements):
        """Why ``node`` fails the condition, or None when it passes."""

    def passes(self, node, requirements):
        return self.reason(node, requirements) is None

    def applies(self, requirements):
        """False when no node can fail it for these requirements.

        :func:`match` then skips it: at 10^5 nodes a claim's filtering
        is per node, and most flavors ask for a resource class alone.
        """
        return True


class ReadyFilter(Filter):
    """Nodes a claim may take now, as their provider judges it.

    :param why_not_ready: ``f(node) -> reason or None``; each provider has
        its own idea of a free node.
    """

    def __init__(self, why_not_ready):
        self._why_not_ready = why_not_ready

    def reason(self, node, requirements):
        return self._why_not_ready(node)


class ConductorGroupFilter(Filter):
    """Nodes of one conductor group; None accepts every group."""

    def __init__(self, conductor_group=None):
        # Ironic stores conductor groups in lower case.
        self.conductor_group = (None if conductor_group is None
                                else conductor_group.lower())

    def applies(self, requirements):
        return self.conductor_group is not None

    def reason(self, node, requirements):
        group = (node.get('conductor_group') or '').lower()
        if self.conductor_group is not None and group != self.conductor_group:
            return 'conductor group is %r' % group


class OwnerFilter(Filter):
    """A node with an owner or a lessee serves only those projects.

    A node with neither serves every project.
    """

    def reason(self, node, requirements):
        holders = {node.get('owner'), node.get('lessee')} - {None, ''}
        if holders and requirements.project_id not in holders:
            return 'reserved for %s' % ', '.join(sorted(holders))


class ResourceClassFilter(Filter):
    def applies(self, requirements):
        return bool(requirements.resource_class)

    def reason(self, node, requirements):
        wanted = requirements.resource_class
        have = node.get('resource_class')
        if wanted and not _is_class(have, wanted):
            return 'resource class is %s' % have


def _is_class(name, wanted):
    """Whether Ironic's resource class ``name`` is placement's ``wanted``."""
    return bool(name) and reqs.normalize_resource_class(name) == wanted


def requested_classes(names, requirements):
    """Which of Ironic's resource class ``names`` a request asks for.

    None when it asks for none in particular: every class.
    """
    wanted = requirements.resource_class
    if not wanted:
        return None
    return [name for name in names if _is_class(name, wanted)]


class PropertiesFilter(Filter):
    def applies(self, requirements):
        return bool(requirements.minimums)

    def reason(self, node, requirements):
        for name, minimum in requirements.minimums:
            have = _node_int(node, name)
            if have < minimum:
                return '%s is %d, needs %d' % (name, have, minimum)


class TraitsFilter(Filter):
    def applies(self, requirements):
        return bool(requirements.required_traits
                    or requirements.forbidden_traits)

    def reason(self, node, requirements):
        traits = set(node.get('traits') or ())
        missing = requirements.required_traits - traits
        if missing:
            return 'lacks traits %s' % ', '.join(sorted(missing))
        present = requirements.forbidden_traits & traits
        if present:
            return 'has forbidden traits %s' % ', '.join(sorted(present))


class CapabilitiesFilter(Filter):
    def applies(self, requirements):
        return bool(requirements.capabilities
                    or requirements.legacy_capabilities)

    def reason(self, node, requirements):
        if not self.applies(requirements):
            return None
        caps = _node_capabilities(node)
        checks = requirements.capabilities + tuple(
            check for check in requirements.legacy_capabilities
            if check[0][0] in caps)
        for scope, expression in checks:
            value = _lookup(caps, scope)
            if not expression.matches(value):
                return 'capability %s is %r, needs %s' % (
                    ':'.join(scope), value, expression)


def matching_filters(conductor_group=None):
    """Every filter on what a node is, cheap and selective ones first.

    Whether a node is free is the provider's to say: it adds its
    :class:`ReadyFilter`, in front of these or, for nodes already known
    to be free, behind them.
    """
    return (ResourceClassFilter(), ConductorGroupFilter(conductor_group),
            OwnerFilter(), PropertiesFilter(), TraitsFilter(),
            CapabilitiesFilter())


MATCHING_FILTERS = matching_filters()


def _applying(filters, requirements):
    return [f for f in filters if f.applies(requirements)]


def match(nodes, requirements, filters=MATCHING_FILTERS):
    """The nodes that pass every filter, in their original order.

    Logs, at debug level, how many nodes each filter rejected (a node
    counts for the first filter it fails) with one example.
    """
    matched = []
    rejected = collections.Counter()
    examples = {}
    filters = _applying(filters, requirements)
    for node in nodes:
        for node_filter in filters:
            why = node_filter.reason(node, requirements)
            if why is not None:
                rejected[node_filter.name] += 1
                examples.setdefault(node_filter.name,
                                    '%s: %s' % (_ident(node), why))
                break
        else:
            matched.append(node)
    LOG.debug('%(matched)d of %(total)d nodes match %(req)s; rejected: '
              '%(rejected)s',
              {'matched': len(matched),
               'total': len(matched) + sum(rejected.values()),
               'req': requirements,
               'rejected': '; '.join(
                   '%s %d (e.g. %s)' % (name, count, examples[name])
                   for name, count in rejected.items()) or 'none'})
    return matched


def matching(nodes, requirements, filters=MATCHING_FILTERS):
    """The nodes that pass every filter, lazily, in the order given.

    For a claim, which needs the first few: at 10^5 nodes, filtering a
    whole pool costs more than the claim's PATCH.
    """
    filters = _applying(filters, requirements)
    for node in nodes:
        if all(f.reason(node, requirements) is None for f in filters):
            yield node


def shuffled(items):
    """``items`` in random order, drawn one at a time as they are used.

    A Fisher-Yates shuffle run lazily: each item drawn costs O(1), and the
    items never drawn cost only their copy.
    """
    items = list(items)
    for end in range(len(items) - 1, -1, -1):
        pick = random.randint(0, end)
        items[pick], items[end] = items[end], items[pick]
        yield items[end]
