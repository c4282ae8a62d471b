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

"""Nova's in-tree ``[ironic]`` options, read as that driver reads them.

A nova.conf copied from a compute service of Nova's in-tree Ironic driver
keeps its meaning here, or the service refuses to start with one line that
says what to set instead: no option of it is ignored in silence.  Where an
``[ironic]`` option and an ``[ironic_multi]`` one say the same thing, the
``[ironic]`` value becomes the other's default, and both set to different
values is refused.  ``doc/source/configuration.rst`` has the table.
"""

import math

from oslo_config import cfg

from ironic_multi import exception

IRONIC = 'ironic'
IRONIC_MULTI = 'ironic_multi'

# Set by the operator: in a file, on the command line, in the environment,
# or by an override (how Nova's tests and ours set "nova.conf").
_EXPLICIT = frozenset(
    [cfg.Locations.set_override]
    + [location for location in cfg.Locations
       if location.is_user_controlled])

# [ironic] options whose in-tree meaning has no counterpart here: setting
# one is refused, with what to do instead.
_REFUSED = {
    'retriable_status_codes': (
        'ironic-multi retries HTTP 503 only ([ironic] status_code_retries) '
        'and never a 409, which is a lost claim race: remove it'),
}


def explicit(conf, name, group):
    """Whether the operator set ``[group] name`` (not a default)."""
    # None: a default of an option declared without a location (some of
    # keystoneauth's).
    location = conf.get_location(name, group)
    return location is not None and location.location in _EXPLICIT


def shard_scope(conf):
    """The shard keys ``[ironic] shard`` limits the group to, or None."""
    shard = conf.ironic.shard
    return frozenset([shard]) if shard else None


def peers(conf):
    """The hosts ``[ironic] peer_list`` names, where in-tree reads it.

    Nova's in-tree driver reads the list only with ``[ironic]
    conductor_group`` set and ``shard`` unset; None otherwise, and when it
    is empty.
    """
    if (conf.ironic.conductor_group is None or shard_scope(conf)
            or not conf.ironic.peer_list):
        return None
    return frozenset(conf.ironic.peer_list)


def serves(conf):
    """Which nodes a service of ``conf`` serves, to compare with others."""
    group = conf.ironic_multi.conductor_group
    return {'conductor_group': None if group is None else group.lower(),
            'shard': conf.ironic.shard or None}


def apply(conf, host=None):
    """Refuse or take over the in-tree ``[ironic]`` options; idempotent.

    :param host: the compute service's host, which ``[ironic] peer_list``
        must name (as in-tree); not checked when None.
    :raises ConfigInvalid: the option, and what to set instead.
    """
    for name, instead in sorted(_REFUSED.items()):
        if _registered(conf, name) and explicit(conf, name, IRONIC):
            _refuse(name, '[%s] %s is set, but %s' % (IRONIC, name, instead))
    _inherit(conf, 'conductor_group', 'conductor_group',
             conf.ironic.conductor_group,
             same=lambda a, b: a.lower() == b.lower())
    if explicit(conf, 'api_retry_interval', IRONIC):
        _inherit(conf, 'state_poll_interval', 'api_retry_interval',
                 float(conf.ironic.api_retry_interval))
    else:
        conf.clear_default('state_poll_interval', group=IRONIC_MULTI)
    if explicit(conf, 'api_max_retries', IRONIC):
        # Nova's destroy reads the node api_max_retries + 1 times,
        # api_retry_interval apart, and then fails.
        _inherit(conf, 'unprovision_timeout', 'api_max_retries',
                 math.ceil((conf.ironic.api_max_retries + 1)
                           * conf.ironic.api_retry_interval))
    else:
        conf.clear_default('unprovision_timeout', group=IRONIC_MULTI)
    listed = peers(conf)
    if host is not None and listed is not None and host not in listed:
        _refuse('peer_list', (
            '[ironic] peer_list (%s) does not name this host, %s: name '
            'every compute service of conductor group %r in it, as Nova\'s '
            'in-tree driver requires, or remove it (the live services of '
            '[ironic_multi] coordination_group share the nodes)' % (
                ', '.join(sorted(listed)), host,
                conf.ironic_multi.conductor_group)))


def _registered(conf, name):
    try:
        conf.get_location(name, IRONIC)
    except cfg.NoSuchOptError:
        return False
    return True


def _inherit(conf, name, ironic_name, value, same=lambda a, b: a == b):
    """Make the ``[ironic]`` value the default of ``[ironic_multi] name``.

    None clears a default set before (the options changed).
    """
    if value is None:
        conf.clear_default(name, group=IRONIC_MULTI)
        return
    if explicit(conf, name, IRONIC_MULTI):
        current = conf.ironic_multi[name]
        if current is None or not same(current, value):
            _refuse(ironic_name, (
                '[%s] %s (%s) and [%s] %s (%s) disagree: set one of them, '
                'they mean the same here' % (
                    IRONIC, ironic_name, _shown(conf.ironic[ironic_name]),
                    IRONIC_MULTI, name, _shown(current))))
        return
    try:
        conf.set_default(name, value, group=IRONIC_MULTI)
    except ValueError as e:
        _refuse(ironic_name, (
            '[%s] %s (%s) gives [%s] %s the value %s, which is invalid: %s'
            % (IRONIC, ironic_name, _shown(conf.ironic[ironic_name]),
               IRONIC_MULTI, name, _shown(value), _lower_first(str(e)))))


def _refuse(name, reason):
    raise exception.ConfigInvalid(reason=reason,
                                  option='[%s] %s' % (IRONIC, name))


def _shown(value):
    return repr(value) if isinstance(value, str) else str(value)


def _lower_first(text):
    return text[:1].lower() + text[1:]
