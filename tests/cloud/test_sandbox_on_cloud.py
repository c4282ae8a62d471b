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

"""``ironic-multi-sandbox --cloud --keep``, as a newcomer runs it.

One sandbox for the module, on the multi-process cloud: its scenario
passes every check, the lines it prints for the ``openstack`` client work
when pasted into a shell (a server boots on the kept cloud), its
``ironic-multi-manage`` line works, and Ctrl-C stops every process with
the report's exit code.
"""

import json
import os
import pathlib
import subprocess

import pytest

from ironic_multi._sandbox import on_cloud
from ironic_multi.testing import kept_sandbox

ARGS = kept_sandbox.SMALL + ('--cloud',)
PASTE_TIMEOUT = 300


@pytest.fixture(scope='module')
def sandbox(tmp_path_factory):
    output = tmp_path_factory.mktemp('cloud-sandbox')
    env = dict(os.environ, PYTHONWARNINGS='ignore')
    with kept_sandbox.KeptSandbox(output, args=ARGS, env=env) as kept:
        yield kept


def _pasted(sandbox):
    """The shell lines the sandbox printed for the openstack client."""
    return [line.strip() for line in sandbox.lines
            if line.strip().startswith('export ')]


def test_the_scenario_passes_on_the_cloud(sandbox):
    report = sandbox.report
    assert report['problems'] == [], report['problems']
    assert report['cloud']['start_seconds'] > 0
    assert report['cloud']['rss_mib'] > 0
    # A compute process was stopped with SIGTERM: its keys moved, its
    # instances were adopted.
    ring = report['ring']
    assert ring['victim'] not in ring['after'].values()
    takeover = report['takeover']
    assert len(takeover['adopted']) == len(takeover['instances'])
    assert report['double_bookings'] == 0
    assert report['capacity']['mismatches'] == []


def test_the_pasted_lines_boot_a_server(sandbox):
    exports = _pasted(sandbox)
    assert any('OS_CLOUD=' in line for line in exports), sandbox.text()
    (create,) = [line.strip() for line in sandbox.lines
                 if line.strip().startswith('openstack server create')]
    script = '; '.join(exports + [
        create + ' -f json',
        'openstack server delete --wait s1'])
    # Nothing of the test's own environment: only what was pasted.
    env = {'PATH': '/usr/bin:/bin', 'HOME': os.environ.get('HOME', '/')}
    result = subprocess.run(['bash', '-ec', script], capture_output=True,
                            text=True, env=env, timeout=PASTE_TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    server, _ = json.JSONDecoder().raw_decode(
        result.stdout[result.stdout.index('{'):])
    assert server['status'] == 'ACTIVE'
    assert server['name'] == 's1'


def test_the_manage_line_reaches_the_cloud(sandbox):
    result = sandbox.manage('ring', 'show', '-f', 'json')
    assert result.returncode == 0, result.stderr
    hosts = {row['Host'] for row in json.loads(result.stdout)}
    survivors = set(sandbox.report['ring']['survivors'])
    assert hosts == survivors


def test_ctrl_c_stops_every_process(sandbox):
    assert sandbox.stop() == 0, sandbox.text()[-4000:]
    assert 'nothing left running' in sandbox.text()
    report = json.loads((pathlib.Path(sandbox.output)
                         / 'sandbox.json').read_text())
    assert report['cleanup']['left_running'] == []
    assert report['cleanup']['what'] == on_cloud.CloudScenario.SERVICES
    logs = pathlib.Path(sandbox.output) / 'cloud-logs'
    assert (logs / 'nova-compute-compute-1.log').exists()
