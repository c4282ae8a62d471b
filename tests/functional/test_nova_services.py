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

"""The NovaServices harness itself: what one service's stop leaves.

The in-process sandbox failed its run once with a bare ``AssertionError``
from Nova's executor fixture: a compute stopped at the end was still in
its graceful shutdown when the services' fixtures went, and that shutdown
then stopped the process-wide executors for good.
"""

import functools
import time
from unittest import mock

from nova import thread_pool_factory

from ironic_multi._virt import driver as virt_driver
from ironic_multi.testing import nova_services

# Seconds the driver's cleanup_host takes here: longer than the rest of
# the services' clean-up.
SLOW_CLEANUP = 3


def test_a_shutdown_still_running_stops_no_executor(ironic):
    real = virt_driver.IronicMultiDriver.cleanup_host

    @functools.wraps(real)
    def slow_cleanup_host(driver, host):
        time.sleep(SLOW_CLEANUP)
        return real(driver, host)

    try:
        with mock.patch.object(virt_driver.IronicMultiDriver,
                               'cleanup_host', slow_cleanup_host):
            with nova_services.NovaServices(ironic, computes=1) as nova:
                # Returns at once: its manager shuts down in a thread.
                nova.stop_compute('compute1')
            # Whatever still runs of that shutdown ends within the bound.
            time.sleep(SLOW_CLEANUP + 1)
        assert not thread_pool_factory.FACTORY._shutdown
    finally:
        # Do not leave later tests of this process without executors.
        thread_pool_factory.FACTORY._shutdown = False
