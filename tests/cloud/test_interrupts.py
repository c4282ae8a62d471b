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

"""Ctrl-C under ``./tox.sh -e sandbox``, the README's main job, as it is.

The sandbox's default is the multi-process cloud: a dozen services, a
RabbitMQ, a MariaDB and an etcd of the run's own.  Interrupted half way,
with servers booting, nothing of it may stay: no process (each carries
the run's marker), no directory (the run's TMPDIR ends empty; the
MariaDB's data goes with it) and no database on the machine's servers.
(tests/functional/test_sandbox.py interrupts ``--in-process`` runs
directly: what tox adds, its own signals and timeouts, is the same.)
"""

import pytest

from ironic_multi.testing import _process
from ironic_multi.testing import kept_sandbox
from tests import interrupts

# Servers are booting: every service of the cloud runs.
HALF_WAY = 'wave 1: posting'
RUN_TIMEOUT = 400
# What the sandbox says once its cloud is up.
CLOUD_LINE = 'Keystone, Placement, Nova (API, conductor, scheduler'
# What the machine's servers would hold had the run put anything there.
MACHINE_DATABASES = ('mysql', 'postgresql')


def _databases_of(pids):
    return [name for kind in MACHINE_DATABASES
            for name in _process.databases(kind, 'ironic_multi_%')
            if any('_%d_' % pid in name for pid in pids)]


@pytest.mark.slow
def test_ctrl_c_under_tox_leaves_nothing_of_the_cloud(tmp_path,
                                                      record_property):
    run = interrupts.ctrl_c_under_tox(tmp_path, kept_sandbox.SMALL,
                                      HALF_WAY, RUN_TIMEOUT)
    databases = _databases_of(run.pids)
    figures = dict(run.figures, databases_left=len(databases))
    for name, value in figures.items():
        record_property(name, value)
    print(interrupts.summary(figures))

    # The default, not the in-process fallback.
    assert CLOUD_LINE in run.output, run.output[-4000:]
    assert 'sandbox interrupted (SIGINT)' in run.output, run.output[-4000:]
    assert figures['sandbox_exit_code'] == 130, run.output[-4000:]
    assert not run.left, 'left running:\n%s' % interrupts.describe(
        run.left)
    assert run.files == []
    assert databases == []
