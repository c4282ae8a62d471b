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

"""Bounded waits on an Ironic node.

Every wait of the provider has a deadline and a poll interval from
``[ironic_multi]``; none can hang a Nova worker for good.
"""

import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def wait_for(read, done, timeout, interval, error, what, failed=None,
             first_after=0.0):
    """Poll ``read()`` until ``done(value)``; return that value.

    :param read: returns the current value (usually a node dict).
    :param done: predicate of success.
    :param timeout: seconds before giving up.
    :param interval: seconds between two reads.
    :param error: ``f(reason) -> Exception`` raised on failure or timeout.
    :param what: what is awaited, for logs and errors.
    :param failed: ``f(value) -> reason or None``; a reason stops the wait
        at once (the operation failed, waiting longer will not help).
    :param first_after: seconds before the first read, when the value
        cannot have changed sooner (a request Ironic has only accepted).
    """
    deadline = time.monotonic() + timeout
    if first_after:
        time.sleep(first_after)
    while True:
        value = read()
        if done(value):
            return value
        reason = failed(value) if failed is not None else None
        if reason:
            raise error('%s failed: %s' % (what, reason))
        if time.monotonic() + interval > deadline:
            raise error('%s did not happen within %s seconds (last seen: '
                        '%s)' % (what, timeout, describe(value)))
        LOG.debug('Still waiting for %(what)s: %(state)s',
                  {'what': what, 'state': describe(value)})
        time.sleep(interval)


def describe(node):
    """The state fields of a node dict, for logs."""
    if not isinstance(node, dict):
        return repr(node)
    keys = ('provision_state', 'target_provision_state', 'power_state',
            'target_power_state', 'last_error')
    return ', '.join('%s=%s' % (k, node[k]) for k in keys if k in node)
