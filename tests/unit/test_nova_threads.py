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

"""Nova's concurrency mode: chosen quietly after eventlet was imported."""

import os
import subprocess
import sys

# Nova chooses once per process: each case is a process of its own.
CHOOSE = '''
import logging
import eventlet  # As tooz and futurist import it, unpatched.
from ironic_multi.testing import nova_threads
logging.basicConfig(level=logging.INFO, format='LOG %(levelname)s %(message)s')
nova_threads.choose()
nova_threads.choose()
from nova import monkey_patch
print('patched', monkey_patch.is_patched())
'''


def _choose(script):
    env = dict(os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING='1')
    return subprocess.run([sys.executable, '-c', script], env=env,
                          capture_output=True, text=True, timeout=120)


def test_native_threads_are_chosen_with_one_quiet_line():
    done = _choose(CHOOSE)
    assert done.returncode == 0, done.stderr
    assert 'patched False' in done.stdout
    about = [line for line in done.stderr.splitlines()
             if line.startswith('LOG ') and 'eventlet' in line]
    assert about == ['LOG INFO Nova runs with native threads; eventlet, '
                     'imported unpatched by tooz or futurist before Nova '
                     'chose, stays unused']
    assert 'This is a bug' not in done.stderr


def test_nothing_reaches_the_screen_without_logging_set_up():
    # The sandbox's first lines: Python's last-resort handler prints a
    # WARNING or worse to stderr before any logging is configured.
    done = _choose(CHOOSE.replace('logging.basicConfig', 'dict'))
    assert done.returncode == 0, done.stderr
    assert 'This is a bug' not in done.stderr
    assert 'Native threads' not in done.stderr
