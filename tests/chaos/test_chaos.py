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

"""A reduced chaos run in CI: one seed, every fault kind once.

On a cloud of its own (run as a pytest session of its own by the cloud
tox env, after tests/cloud, so that the two clouds never run at once).
``./tox.sh -e chaos`` runs the full one.
"""

import os

import pytest

from ironic_multi.testing.chaos import report
from ironic_multi.testing.chaos import run as run_mod
from ironic_multi.testing.chaos import schedule

SEED = 1
# The shortest window that holds one fault of each kind, with room to
# spare (2.6 minutes hold them; 2.4 do not): .ci/run stays near 30 minutes.
MINUTES = 2.8


# The run takes 5 to 7 minutes on 2 cores; pytest's default is 600 s.
@pytest.mark.timeout(1800)
def test_every_fault_kind_once_and_every_invariant_holds(tmp_path,
                                                         record_property):
    output = os.environ.get('IRONIC_MULTI_CHAOS_OUTPUT', str(tmp_path))
    result = run_mod.ChaosRun(run_mod.Options(
        seed=SEED, minutes=MINUTES, reduced=True, output=output)).run()
    report.print_report(result)
    run = result.history.as_dict()
    for kind, entry in report.fault_counts(run).items():
        record_property('faults %s' % kind, entry['count'])
    for recovery in run['recoveries']:
        record_property(recovery['what'], recovery['seconds'])
    record_property('operations', len(run['operations']))

    injected = {f['kind'] for f in run['faults'] if 'error' not in f}
    assert injected >= set(schedule.KINDS), (
        'not injected: %s' % sorted(set(schedule.KINDS) - injected))
    assert result.passed, '\n'.join(
        '%s: %s' % (v['invariant'], v['detail'])
        for v in result.violations)
