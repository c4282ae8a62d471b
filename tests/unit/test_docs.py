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

"""What the documentation says the same way everywhere."""

import pathlib
import re

import pytest

from ironic_multi._sandbox import keep
from ironic_multi.testing import kept_sandbox
from tests import keep_banner

ROOT = pathlib.Path(__file__).resolve().parents[2]
# What a newcomer reads; the release notes keep their history as written.
DOCUMENTS = sorted(
    [ROOT / 'README.rst', ROOT / 'devstack' / 'README.rst',
     ROOT / 'etc' / 'ironic-multi' / 'README.rst',
     ROOT / 'doc' / 'requirements.txt', ROOT / 'doc' / 'source' / 'conf.py']
    + list((ROOT / 'doc' / 'source').glob('*.rst'))
    + list((ROOT / 'tools').rglob('*.py')))
# "tox -e" not led by "./": the README's ./tox.sh is the one spelling.
BARE_TOX = re.compile(r'(?<![./\w])tox -e')


@pytest.mark.parametrize('path', DOCUMENTS,
                         ids=[str(p.relative_to(ROOT)) for p in DOCUMENTS])
def test_one_spelling_of_the_tox_command(path):
    found = [line.strip() for line in path.read_text().splitlines()
             if BARE_TOX.search(line)]
    assert found == [], 'say ./tox.sh -e, as the README does'


def test_the_try_it_page_is_in_the_documentation():
    index = (ROOT / 'doc' / 'source' / 'index.rst').read_text()
    assert '\n   try-it\n' in index
    assert 'try-it' in (ROOT / 'doc' / 'source' / 'cli.rst').read_text()


def test_try_it_quotes_the_keep_banner_as_printed():
    printed = keep.paste_lines('/srv/out/%s' % keep.MANAGE_CONF) + [
        kept_sandbox.READY]
    quoted = keep_banner.documented()

    # The cloud's description first, then the lines keep.py prints.
    assert quoted[0].startswith(keep_banner.FIRST)
    assert keep_banner.shape(quoted[1:]) == keep_banner.shape(printed)
