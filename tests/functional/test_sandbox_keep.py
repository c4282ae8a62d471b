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

"""``ironic-multi-sandbox --keep``: the CLI on a kept cloud, as documented.

One sandbox for the module: the line it prints works when pasted, every
command of the documentation's example output runs on it and prints the
columns the documentation shows, and Ctrl-C stops it with the report's
exit code, leaving nothing running.
"""

import importlib.metadata
import json
import os
import pathlib
import re
import uuid

import pytest

from ironic_multi._sandbox import keep
from ironic_multi.testing import kept_sandbox
from tests import interrupts
from tests import keep_banner

EXAMPLES = (pathlib.Path(__file__).resolve().parents[2] / 'doc' / 'source'
            / 'cli-examples.inc')
PROMPT = '   $ ironic-multi-manage --config-file ironic-multi-manage.conf '
MARKER = 'IRONIC_MULTI_KEEP_TEST_MARKER'
REGENERATE = 'regenerate it: ./tox.sh -e cli-examples'


@pytest.fixture(scope='module')
def marker():
    return uuid.uuid4().hex


@pytest.fixture(scope='module')
def sandbox(tmp_path_factory, marker):
    output = tmp_path_factory.mktemp('kept')
    env = dict(os.environ, PYTHONWARNINGS='ignore', **{MARKER: marker})
    with kept_sandbox.KeptSandbox(output, env=env) as kept:
        yield kept


def documented():
    """``{command line: output}`` of the documentation's examples."""
    found, command = {}, None
    for line in EXAMPLES.read_text().splitlines():
        if line.startswith(PROMPT):
            command = line[len(PROMPT):]
            found[command] = []
        elif command is not None and line.startswith('   '):
            found[command].append(line[3:])
        elif line.strip():
            command = None
    return {command: '\n'.join(lines) for command, lines in found.items()}


def shape(output):
    """What a command's table shows, whatever the values.

    The column names of a listing; the field names of a record (cliff's
    Field/Value table); ``()`` for no output.
    """
    rows = [[cell.strip() for cell in line.strip('|').split('|')]
            for line in output.splitlines() if line.startswith('|')]
    if not rows:
        return ()
    if rows[0] == ['Field', 'Value']:
        # Continuation lines of a multi-line value have no field name.
        return ('fields',) + tuple(r[0] for r in rows[1:] if r[0])
    return ('columns',) + tuple(rows[0])


def _example_of(command, values):
    """The keep.EXAMPLES template that ``command`` is an instance of."""
    for example in keep.EXAMPLES:
        pattern = re.escape(example).replace(
            r'\{instance\}', '[0-9a-f-]{36}').replace(
            r'\{claimed\}', '[0-9a-f-]{36}').replace(
            r'\{stopped\}', r'\S+').replace(r'\{live\}', r'\S+')
        if re.fullmatch(pattern, command):
            return example.format(**values)
    return None


def test_the_pasted_line_reaches_the_kept_cloud(sandbox):
    result = sandbox.manage('ring', 'show', '-f', 'json')
    assert result.returncode == 0, result.stderr
    hosts = [row['Host'] for row in json.loads(result.stdout)]
    report = sandbox.report
    assert hosts == sorted(set(report['hosts']) - {report['ring']['victim']})
    assert 'sandbox OK' in sandbox.text()


def test_the_banner_is_what_try_it_shows(sandbox):
    lines = [line.strip() for line in sandbox.lines]
    start = next(i for i, line in enumerate(lines)
                 if line.startswith(keep_banner.FIRST))
    end = lines.index(kept_sandbox.READY, start)
    printed = [line for line in lines[start:end + 1] if line]

    assert keep_banner.shape(printed) == keep_banner.shape(
        keep_banner.documented()), 'doc/source/try-it.rst quotes another'


def test_the_documented_examples_cover_every_command():
    commands = {entry.name.replace('_', ' ') for entry in
                importlib.metadata.entry_points(group='ironic_multi.manage')}
    shown = set()
    for command in documented():
        shown.update(c for c in commands if command.startswith(c + ' ')
                     or command == c)
    assert shown == commands, 'missing in %s: %s; %s' % (
        EXAMPLES.name, ', '.join(sorted(commands - shown)), REGENERATE)


def test_every_documented_example_prints_what_the_docs_show(sandbox):
    values = sandbox.example_values()
    for command, output in documented().items():
        now = _example_of(command, values)
        assert now is not None, '%s is not in keep.EXAMPLES; %s' % (
            command, REGENERATE)
        result = sandbox.manage(*now.split())
        assert result.returncode == 0, (now, result.stderr)
        assert shape(result.stdout) == shape(output), (
            '%s prints other columns than %s shows; %s' % (
                now, EXAMPLES.name, REGENERATE))


def test_ctrl_c_stops_the_kept_cloud(sandbox, marker):
    assert sandbox.stop() == 0, sandbox.text()[-4000:]
    text = sandbox.text()
    assert 'SIGINT: stopping the kept cloud' in text
    assert 'stopped in' in text and 'nothing left running' in text
    report = json.loads((pathlib.Path(sandbox.output)
                         / 'sandbox.json').read_text())
    assert report['cleanup']['left_running'] == []
    assert report['kept']['manage_conf'].endswith(keep.MANAGE_CONF)
    assert pathlib.Path(report['chart']).exists()
    left = interrupts.wait_until_gone(marker, name=MARKER)
    assert left == [], interrupts.describe(left)
