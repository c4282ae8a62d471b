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

"""The ``--keep`` banner as doc/source/try-it.rst quotes it.

The unit tests compare it with what ``ironic_multi._sandbox.keep``
prints, the functional ones with a kept sandbox's own banner.
"""

import pathlib
import re

TRY_IT = (pathlib.Path(__file__).resolve().parents[1] / 'doc' / 'source'
          / 'try-it.rst')
# The banner's first line.
FIRST = "The sandbox's cloud stays up: "
# What differs from one run to the next.
VARYING = (
    # A path: only the file's name counts (not a URL's slashes).
    (re.compile(r'(?<![:/\w])/\S*/'), ''),
    (re.compile(r'127\.0\.0\.1:\d+'), '127.0.0.1:PORT'),
    (re.compile(r'\bsandbox-[0-9a-f]{8}\b'), 'sandbox-GROUP'),
    (re.compile(r'\bcompute\d+\b'), 'computeN'),
    (re.compile(r'\b\d+ nodes\b'), 'N nodes'),
)


def documented():
    """The banner's lines, as the page quotes them (a literal block)."""
    lines = TRY_IT.read_text().splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.strip().startswith(FIRST))
    indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
    quoted = []
    for line in lines[start:]:
        if line.strip() and not line.startswith(indent):
            break
        quoted.append(line[len(indent):].rstrip())
    return [line for line in quoted if line]


def shape(lines):
    """``lines`` with what differs from run to run replaced."""
    shaped = []
    for line in lines:
        line = line.strip()
        for pattern, replacement in VARYING:
            line = pattern.sub(replacement, line)
        shaped.append(line)
    return shaped
