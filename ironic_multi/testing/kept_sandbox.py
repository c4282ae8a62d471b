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

"""``ironic-multi-sandbox --keep`` as a fixture: a cloud to run the CLI on.

The sandbox runs as a subprocess until it says how to reach its kept
cloud; :meth:`KeptSandbox.manage` runs ``ironic-multi-manage`` against
it, :meth:`KeptSandbox.stop` sends Ctrl-C and returns the exit code.
For the tests of ``--keep`` and for the documentation's example output
(``tools/cli_examples.py``).
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import fixtures
from oslo_config import cfg
from oslo_utils import uuidutils

from ironic_multi._reservation import providers
from ironic_multi._reservation import requirements
from ironic_multi import conf as im_conf

# The sandbox's last line while it keeps its cloud up.
READY = 'Ctrl-C (or SIGTERM) stops it.'
START_TIMEOUT = 400
STOP_TIMEOUT = 90
SMALL = ('--nodes', '8', '--computes', '2', '--servers', '6')
# Nova's services in the sandbox's process, Ironic without Keystone.
IN_PROCESS = SMALL + ('--in-process',)


class KeptSandboxError(Exception):
    pass


def _script(name):
    """A console script of this Python's environment, or ``-m`` of it."""
    found = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(found):
        return [found]
    module = {'ironic-multi-sandbox': 'ironic_multi.cmd.sandbox',
              'ironic-multi-manage': 'ironic_multi.cmd.manage'}[name]
    return [sys.executable, '-m', module]


class KeptSandbox(fixtures.Fixture):
    """One ``ironic-multi-sandbox --keep`` run, kept up until cleanUp.

    :param output: the sandbox's ``--output`` directory.
    :param args: more sandbox arguments (default: a small fleet, Nova's
        services in the sandbox's process).
    :param env: the environment of the sandbox and the CLI.

    After setUp: ``lines`` (what it printed so far), ``command`` (the
    ``ironic-multi-manage --config-file ...`` line it printed, as argv),
    ``report`` (its sandbox.json).  After :meth:`stop`: ``returncode``.
    """

    def __init__(self, output, args=IN_PROCESS, env=None):
        super().__init__()
        self.output = str(output)
        self.args = list(args)
        self.env = dict(os.environ if env is None else env,
                        PYTHONUNBUFFERED='1')
        self.lines = []
        self.command = self.report = self.returncode = None
        self._process = None

    def _setUp(self):
        self._process = subprocess.Popen(
            _script('ironic-multi-sandbox') + self.args
            + ['--keep', '--output', self.output],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=self.env)
        self.addCleanup(self._kill)
        deadline = time.monotonic() + START_TIMEOUT
        for line in self._process.stdout:
            self.lines.append(line)
            if line.strip() == READY:
                break
            if time.monotonic() > deadline:
                raise KeptSandboxError('not kept up within %d s:\n%s' % (
                    START_TIMEOUT, self.text()[-4000:]))
        else:
            raise KeptSandboxError('the sandbox ended without keeping its '
                                   'cloud up:\n%s' % self.text()[-4000:])
        pasted = [line.strip() for line in self.lines
                  if ' --config-file ' in line]
        if not pasted:
            raise KeptSandboxError('no ironic-multi-manage line:\n%s'
                                   % self.text()[-4000:])
        # The line ends with the first command to try.
        self.command = shlex.split(pasted[-1])[:3]
        with open(os.path.join(self.output, 'sandbox.json')) as f:
            self.report = json.load(f)

    def text(self):
        return ''.join(self.lines)

    def manage(self, *argv, timeout=120):
        """Run ``ironic-multi-manage`` on the cloud: CompletedProcess."""
        return subprocess.run(
            self.command + list(argv), capture_output=True, text=True,
            timeout=timeout, env=self.env, stdin=subprocess.DEVNULL)

    def example_values(self):
        """``{'instance', 'claimed', 'stopped', 'live'}`` for keep.EXAMPLES.

        ``claimed`` is a claim that never deployed, as a service that
        crashed right after claiming leaves it: the one kind of
        reservation ``reservations release`` is for.
        """
        listed = self.manage('reservations', 'list', '-f', 'json')
        if listed.returncode:
            raise KeptSandboxError('reservations list failed: %s'
                                   % listed.stderr)
        instances = sorted(r['Instance'] for r in json.loads(listed.stdout))
        if not instances:
            raise KeptSandboxError('no instance holds a node')
        ring = self.manage('ring', 'show', '-f', 'json')
        if ring.returncode:
            raise KeptSandboxError('ring show failed: %s' % ring.stderr)
        live = sorted({row['Host'] for row in json.loads(ring.stdout)})
        if not live:
            raise KeptSandboxError('no live compute service')
        return {'instance': instances[0], 'claimed': self.claim_free_node(),
                'stopped': self.report['ring']['victim'], 'live': live[0]}

    def claim_free_node(self):
        """Claim a free node through the group's provider; its instance."""
        conf = cfg.ConfigOpts()
        im_conf.register_opts(conf)
        conf(['--config-file', self.command[2]], default_config_files=[])
        provider = providers.load_provider(conf)
        provider.start()
        try:
            everything = requirements.Requirements()
            free = provider.search(everything, None)[:1]
            if not free:
                raise KeptSandboxError('no free node to claim')
            instance = uuidutils.generate_uuid()
            provider.claim(free, instance, everything,
                           time.monotonic() + 60,
                           claimer='example:0:crashed')
            return instance
        finally:
            provider.stop()

    def stop(self, signum=signal.SIGINT):
        """Stop the sandbox as Ctrl-C does; its exit code."""
        self._process.send_signal(signum)
        rest, _ = self._process.communicate(timeout=STOP_TIMEOUT)
        self.lines.append(rest)
        self.returncode = self._process.returncode
        return self.returncode

    def _kill(self):
        if self._process.poll() is None:
            try:
                self.stop()
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
