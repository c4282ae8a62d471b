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

"""A real nova-compute refuses a bad configuration: one line, exit 2.

nova-compute makes its driver once nova-conductor answers, so it takes a
cloud: the driver refuses bad options there, and what only shows when
the reservation layer starts (here a live member of the coordination
group serving other nodes) in ``init_host``.  Either way the process
exits with status 2 and one line on standard error, and Nova never hears
of the service.
"""

import configparser
import subprocess
import time

import pytest

from ironic_multi.testing.cloud import nova as cloud_nova

# Seconds a refused nova-compute may take, imports on a loaded machine
# included; one that starts does not exit at all.
REFUSED_WITHIN = 180


def compute_conf(cloud, host, **sections):
    """The cloud's nova.conf of a new compute, with ``sections`` set."""
    path = cloud_nova.compute_config(cloud, host)
    parser = configparser.RawConfigParser()
    parser.read(path)
    for name, options in sections.items():
        if not parser.has_section(name):
            parser.add_section(name)
        for option, value in options.items():
            parser.set(name, option, value)
    with open(path, 'w') as f:
        parser.write(f)
    return path


def start_nova_compute(cloud, conf):
    started = time.monotonic()
    try:
        done = subprocess.run([cloud.bin('nova-compute'), '--config-file',
                               conf], capture_output=True, text=True,
                              env=cloud.env(), timeout=REFUSED_WITHIN)
    except subprocess.TimeoutExpired as e:
        pytest.fail('nova-compute did not stop within %d s: %s' % (
            REFUSED_WITHIN, str(e.stdout)[-3000:]))
    return done, time.monotonic() - started


@pytest.mark.parametrize('host, sections, expected', [
    # In the driver's constructor.
    ('refused-range', {'ironic_multi': {'housekeeping_interval': '5'}},
     '[ironic_multi] housekeeping_interval must be at least 10 (in '
     '{conf})'),
    ('refused-conflict', {'ironic': {'conductor_group': 'rack-1'},
                          'ironic_multi': {'conductor_group': 'rack-2'}},
     "[ironic] conductor_group ('rack-1') and [ironic_multi] "
     "conductor_group ('rack-2') disagree"),
    # In init_host: the live computes serve every conductor group.
    ('refused-member', {'ironic': {'conductor_group': 'rack-1'}},
     'host compute-1 of coordination group {group} serves every '
     'conductor group and every shard key, this host (refused-member) '
     "serves conductor group 'rack-1' and every shard key"),
], ids=['range', 'conflict', 'member'])
def test_nova_compute_refuses_to_start_in_one_line(
        cloud, host, sections, expected, record_property):
    conf = compute_conf(cloud, host, **sections)
    done, seconds = start_nova_compute(cloud, conf)
    record_property('refused_seconds', round(seconds, 1))
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        'ironic-multi cannot start: Invalid configuration: ')
    assert expected.format(conf=conf, group=cloud.coordination_group) in (
        lines[0])
    # Its log (standard output, without a log file): the same line once,
    # and no traceback.
    logged = [entry for entry in done.stdout.splitlines()
              if ' CRITICAL ' in entry]
    assert len(logged) == 1 and lines[0] in logged[0], (logged, lines)
    assert 'Traceback' not in done.stdout + done.stderr
    assert host not in cloud.nova_services()
