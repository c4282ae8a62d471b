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

from oslo_config import cfg

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


def register_opts(conf):
    """Register every group of ironic-multi on ``conf``; idempotent."""
    conf.register_group(groups.ironic_multi())
    conf.register_opts(IRONIC_MULTI_OPTS, group='ironic_multi')
    ironic.register_opts(conf)


def check(conf):
    """Refuse options that contradict each other, naming them.

    :raises ConfigInvalid:
    """
    opts = conf.ironic_multi
    waits = opts.deploy_queue_timeout + opts.claim_timeout
    if opts.stuck_claim_timeout <= waits:
        raise exception.ConfigInvalid(reason=(
            '[ironic_multi] stuck_claim_timeout (%d s) must be longer than '
            'deploy_queue_timeout (%d s) plus claim_timeout (%g s): a claim '
            'waiting for its deploy turn would be released as stuck'
            % (opts.stuck_claim_timeout, opts.deploy_queue_timeout,
               opts.claim_timeout)))
