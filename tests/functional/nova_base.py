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

"""Nova's in-process services on a real Ironic, under pytest.

The harness itself ships in ``ironic_multi.testing.nova_services`` (the
sandbox and the benchmarks use it outside any test runner); this module
adds what is pytest's: the session's Ironic (``conftest.py``), shared by
every test and emptied after each, and ``record_property`` for the
figures a test measures.  Under another runner each test starts its own
Ironic.
"""

import contextlib
import io
import os

import fixtures
import pytest

from ironic_multi.cmd import manage
from ironic_multi import conf as conf_mod
from ironic_multi.testing import nova_services

# Re-exported: the scenarios use them by these names.
COMPUTE_DRIVER = nova_services.IRONIC_MULTI_DRIVER
RESOURCE_CLASS = nova_services.RESOURCE_CLASS
BAREMETAL_SPECS = nova_services.BAREMETAL_SPECS
SCHEDULER_FILTERS = nova_services.SCHEDULER_FILTERS
API_PASTE_CONFIG = nova_services.API_PASTE_CONFIG
ReaderPreferringLock = nova_services.ReaderPreferringLock


class IronicMultiTestBase(nova_services.NovaServicesCase):
    """N compute services with IronicMultiDriver on one real Ironic.

    Set ``COMPUTES`` (hosts ``compute1``...) and ``NODES`` (enrolled,
    available, powered off, resource class ``baremetal``) in subclasses,
    or override ``enroll()`` for another layout (traits, shards, ...).
    After setUp: ``self.ironic`` (node helpers), ``self.flavor_id`` (a
    bare metal flavor), ``self.computes``.  The rest is
    :class:`~ironic_multi.testing.nova_services.NovaServicesCase`.
    """

    COMPUTE_DRIVER = nova_services.IRONIC_MULTI_DRIVER

    _record_property = None

    @pytest.fixture(autouse=True)
    def _session_ironic(self, ironic):
        # Runs before setUp under pytest: reuse the session's Ironic.
        self._ironic = ironic

    @pytest.fixture(autouse=True)
    def _pytest_properties(self, record_property):
        self._record_property = record_property

    def record(self, name, value):
        """A property in pytest's report (junit XML), and on stdout."""
        super().record(name, value)
        if self._record_property is not None:
            self._record_property(name, value)

    def manage_config_file(self):
        """An operator's nova.conf for ``ironic-multi-manage``: the group."""
        opts = conf_mod.CONF.ironic_multi
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write('[ironic_multi]\n'
                    'coordination_url = %s\n'
                    'coordination_group = %s\n'
                    'membership_timeout = %d\n'
                    'request_poll_interval = 1\n'
                    % (opts.coordination_url, opts.coordination_group,
                       self.MEMBERSHIP_TIMEOUT))
        return path

    def manage(self, *argv):
        """``(exit code, stdout, stderr)`` of the CLI, in this process."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = manage.main(list(argv))
        return code, out.getvalue(), err.getvalue()
