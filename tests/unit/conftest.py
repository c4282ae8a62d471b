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

import importlib
import os
import sys

import pytest


@pytest.fixture
def clock(monkeypatch):
    """time.monotonic that only moves when something sleeps.

    Waits and deadlines then take no real time, and tests can say exactly
    how much time passed.
    """
    now = [1000.0]

    def sleep(seconds):
        now[0] += seconds

    monkeypatch.setattr('time.monotonic', lambda: now[0])
    monkeypatch.setattr('time.sleep', sleep)
    return now


@pytest.fixture
def bench_module():
    """``bench_module(name)`` imports a module of ``tools/bench``."""
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'tools',
                        'bench')
    sys.path.insert(0, path)
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(path)
