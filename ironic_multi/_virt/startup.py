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

"""nova-compute refuses to start on a bad configuration: one line, exit 2.

Nova lets an exception from a driver's constructor or ``init_host`` end
the process with a traceback and exit status 1, the status of any crash
(``nova/cmd/compute.py`` catches nothing; with ``no_fork`` oslo.service
starts the service in the main thread).  A configuration error is not a
crash: it says which option to fix, in one line, and exits with status 2
(a usage error, as argparse's; systemd's ``RestartPreventExitStatus=2``
then stops a restart loop that cannot succeed).
"""

import logging as py_logging
import sys

from oslo_log import log as logging

from ironic_multi import exception

LOG = logging.getLogger(__name__)

#: What a service cannot start with, whatever it retries.
CONFIG_ERRORS = (exception.ConfigInvalid, exception.ProviderNotFound)
EXIT_STATUS = 2


def refuse(error):
    """Log ``error`` in one line and exit with status 2.

    The line goes to the service's log and to standard error, once where
    the log is standard error.

    :raises SystemExit:
    """
    line = 'ironic-multi cannot start: %s' % error
    LOG.critical('%s', line)
    if not _logs_to_stderr():
        sys.stderr.write(line + '\n')
        sys.stderr.flush()
    raise SystemExit(EXIT_STATUS)


def _logs_to_stderr():
    for handler in py_logging.getLogger().handlers:
        if getattr(handler, 'stream', None) is sys.stderr:
            return True
    return False
