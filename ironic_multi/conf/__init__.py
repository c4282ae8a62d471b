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

"""Configuration options of ironic-multi.

Options are declared once, in the modules of this package, and registered
by the entry points that use them (the virt driver, the console scripts,
the test support) with :func:`register_opts`, never as a side effect of an
import or of a constructor.  ``[ironic]`` is registered tolerantly: Nova
declares that group too, and whichever definition came first is kept.
"""

import re

from oslo_config import cfg

from ironic_multi.conf import compat
from ironic_multi.conf import coordination
from ironic_multi.conf import deploy
from ironic_multi.conf import groups
from ironic_multi.conf import ironic
from ironic_multi.conf import operations
from ironic_multi.conf import reservation
from ironic_multi.conf import static
from ironic_multi import exception

IRONIC_MULTI_OPTS = (coordination.OPTS + reservation.OPTS + deploy.OPTS
                     + static.OPTS + operations.OPTS)

CONF = cfg.CONF
# Which nodes the in-tree [ironic] options limit a service to.
shard_scope = compat.shard_scope
serves = compat.serves
peers = compat.peers
# oslo.config's message about a bad value in a file: "... from
# LocationInfo(location=<Locations.user: (4, True)>, detail='FILE') ...".
_FILE_IN_MESSAGE = re.compile(r"detail='([^']+)'")


def register_opts(conf):
    """Register every group of ironic-multi on ``conf``; idempotent."""
    conf.register_group(groups.ironic_multi())
    conf.register_opts(IRONIC_MULTI_OPTS, group='ironic_multi')
    ironic.register_opts(conf)


def check(conf, host=None):
    """Refuse what cannot work, in one line naming the option.

    Every option's value must be valid (oslo.config checks a value only
    when it is read: a bad one would otherwise stop a service long after
    it started); Nova's in-tree ``[ironic]`` options are taken over or
    refused (:mod:`.compat`); options must not contradict each other.
    Idempotent; nova-compute's driver calls it before anything starts.

    :param host: the compute service's host, for ``[ironic] peer_list``.
    :raises ConfigInvalid: with ``option``, the first option at fault.
    """
    for group, opts in all_opts():
        for opt in opts:
            _check_value(conf, group.name, opt)
    compat.apply(conf, host=host)
    opts = conf.ironic_multi
    waits = opts.deploy_queue_timeout + opts.claim_timeout
    if opts.stuck_claim_timeout <= waits:
        raise exception.ConfigInvalid(
            option='[ironic_multi] stuck_claim_timeout', reason=(
                '[ironic_multi] stuck_claim_timeout (%d s) must be longer '
                'than deploy_queue_timeout (%d s) plus claim_timeout (%g s): '
                'a claim waiting for its deploy turn would be released as '
                'stuck' % (opts.stuck_claim_timeout, opts.deploy_queue_timeout,
                           opts.claim_timeout)))
    for resource_class, wanted in sorted(opts.spare_targets.items()):
        # A DictOpt's values are strings in a file, anything in an override.
        if not str(wanted).isdigit():
            raise exception.ConfigInvalid(
                option='[ironic_multi] spare_targets', reason=(
                    '[ironic_multi] spare_targets gives resource class %s '
                    '%r spare nodes: it must be a whole number, 0 or more'
                    % (resource_class, wanted)))


def all_opts():
    """``[(group, [opts])]`` of every option; see ``opts.list_opts``."""
    return [(groups.IRONIC_MULTI, IRONIC_MULTI_OPTS)] + ironic.list_opts()


def _check_value(conf, group, opt):
    try:
        conf[group][opt.dest]
    except cfg.NoSuchOptError:
        # Listed, not registered: an auth plugin's options.
        return
    except (ValueError, cfg.Error) as e:
        raise exception.ConfigInvalid(
            option='[%s] %s' % (group, opt.dest),
            reason='[%s] %s %s%s' % (group, opt.dest, _what_is_wrong(opt, e),
                                     _where(e)))


def _what_is_wrong(opt, error):
    """``must be at least 10``, or oslo.config's own words."""
    said = str(error).rsplit(' is not valid: ', 1)[-1]
    low, high = (getattr(opt.type, 'min', None),
                 getattr(opt.type, 'max', None))
    if said.startswith('Should be') and (low, high) != (None, None):
        if high is None:
            return 'must be at least %s' % low
        if low is None:
            return 'must be at most %s' % high
        return 'must be between %s and %s' % (low, high)
    return 'is invalid: %s' % (said[:1].lower() + said[1:])


def _where(error):
    """`` (in FILE)`` when oslo.config's message names the file."""
    found = _FILE_IN_MESSAGE.search(str(error))
    return ' (in %s)' % found.group(1) if found else ''
