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

"""The sandbox's signals: a Ctrl-C whose exception is lost still ends it."""

import argparse
import os
import signal
import time

import pytest

from ironic_multi._sandbox import run
from ironic_multi._sandbox import scenario as scenario_mod


def _scenario():
    args = argparse.Namespace(seed=0, timeout=10)
    return scenario_mod.Scenario(args, layout=None, display=None,
                                 clock=time.monotonic)


def _swallowed(signum):
    """Deliver ``signum`` while code that swallows its exception runs."""
    try:
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the handler runs here and raises...
    except KeyboardInterrupt:
        pass  # ...into code that ignores it
    else:
        pytest.fail('the handler did not run')


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_swallowed_signal_ends_the_run_at_the_next_pause(signum):
    scenario = _scenario()
    with run._signals(scenario.interrupt):
        _swallowed(signum)
        with pytest.raises(scenario_mod.Interrupted) as info:
            scenario._pause(0)
    assert info.value.signum == signum


def test_only_the_first_signal_raises():
    # Under tox a Ctrl-C arrives twice: the terminal's and tox's.  The
    # second must not interrupt the clean-up the first one started.
    scenario = _scenario()
    with run._signals(scenario.interrupt):
        with pytest.raises(scenario_mod.Interrupted):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
    assert scenario.signalled == signal.SIGINT


def test_without_a_signal_a_pause_only_waits():
    scenario = _scenario()
    with run._signals(scenario.interrupt):
        scenario._pause(0)
    assert scenario.signalled is None


def test_the_previous_handlers_come_back():
    before = {s: signal.getsignal(s)
              for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with run._signals(lambda signum: None):
        assert signal.getsignal(signal.SIGINT) is not before[signal.SIGINT]
    assert before == {s: signal.getsignal(s) for s in before}
