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

"""Imports only go down: the test library never imports the apps above."""

import ast
import pathlib

import pytest

import ironic_multi

PACKAGE = pathlib.Path(ironic_multi.__file__).parent
# The applications built on the test library.
ABOVE = ('ironic_multi._sandbox', 'ironic_multi._manage', 'ironic_multi.cmd')


def imported(path):
    """Every module ``path`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update('%s.%s' % (node.module, alias.name)
                         for alias in node.names)
    return found


def upward(path):
    return sorted(name for name in imported(path)
                  if name.startswith(ABOVE))


@pytest.mark.parametrize('path', sorted(
    (PACKAGE / 'testing').rglob('*.py')), ids=lambda p: str(
        p.relative_to(PACKAGE)))
def test_the_test_library_imports_nothing_above_it(path):
    assert upward(path) == []


def test_an_upward_import_is_caught(tmp_path):
    # Planted: what testing/cloud/ironic.py did before the fleet moved.
    planted = tmp_path / 'ironic.py'
    planted.write_text('from ironic_multi._sandbox import fleet\n'
                       'def f():\n    import ironic_multi.cmd.sandbox\n')
    assert upward(planted) == ['ironic_multi._sandbox',
                               'ironic_multi._sandbox.fleet',
                               'ironic_multi.cmd.sandbox']
