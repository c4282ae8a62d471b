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

"""Operator hooks of the static provider: commands run for a node.

A hook is a command line from the configuration; it runs with the action
and the node UUID as its last two arguments, and learns the rest from its
environment (``IRONIC_MULTI_NODE_UUID``, ``IRONIC_MULTI_NODE_NAME``,
``IRONIC_MULTI_INSTANCE_UUID``, ``IRONIC_MULTI_HOST``,
``IRONIC_MULTI_IMAGE_SOURCE``, ``IRONIC_MULTI_ACTION``).  That, with the
service's ``PATH`` and ``LANG``, is its whole environment: it does not
inherit the service's, which holds credentials.  It runs without a shell,
in a session of its own, bounded by a timeout after which it is killed
with everything it started.  Its output is logged at DEBUG only (it may
say anything), and a failure becomes HookFailed, with the end of the
output, passwords masked.
"""

import os
import shlex
import signal
import subprocess

from oslo_concurrency import processutils
from oslo_log import log as logging
from oslo_utils import strutils

from ironic_multi import exception

LOG = logging.getLogger(__name__)

# What is kept of a hook's output in errors; the DEBUG log has all of it.
_OUTPUT_TAIL = 2000
# What a hook gets of the service's own environment.
_INHERITED = ('PATH', 'LANG')


def run(command, action, node, timeout, **environment):
    """Run the hook ``command`` for ``action`` on ``node`` (a node dict).

    :param environment: more ``IRONIC_MULTI_<NAME>`` variables, by name
        (``instance_uuid='...'``); None values are left out.
    :raises HookFailed: it exited non-zero, could not start or timed out.
    """
    argv = shlex.split(command) + [str(action), node['uuid']]
    env = _environment(action, node, **environment)
    started = []
    what = {'hook': argv[0], 'action': action, 'node': node['uuid']}

    def failed(reason, output=''):
        return exception.HookFailed(
            action=action, hook=argv[0], node=node['uuid'], reason=reason,
            output=strutils.mask_password(output[-_OUTPUT_TAIL:]) or '-')

    try:
        out, err = processutils.execute(
            *argv, env_variables=env, timeout=timeout,
            preexec_fn=os.setsid, on_execute=started.append,
            loglevel=logging.DEBUG)
    except subprocess.TimeoutExpired:
        _kill_session(started)
        raise failed('timed out after %s s' % timeout)
    except processutils.ProcessExecutionError as e:
        _log_output(what, e.stdout, e.stderr)
        LOG.warning('Hook %(hook)s (%(action)s of node %(node)s) exited '
                    'with %(code)s', dict(what, code=e.exit_code))
        raise failed('exit code %s' % e.exit_code,
                     (e.stdout or '') + (e.stderr or ''))
    except OSError as e:
        raise failed('cannot run: %s' % e)
    _log_output(what, out, err)
    LOG.info('Hook %(hook)s: %(action)s of node %(node)s done', what)


def _environment(action, node, **environment):
    """The whole environment of a hook: ``PATH``, ``LANG`` and ours.

    :param environment: more ``IRONIC_MULTI_<NAME>`` variables, by name;
        None values are left out.
    """
    env = {name: os.environ[name] for name in _INHERITED
           if name in os.environ}
    env.update(IRONIC_MULTI_ACTION=str(action),
               IRONIC_MULTI_NODE_UUID=node['uuid'],
               IRONIC_MULTI_NODE_NAME=node.get('name') or '')
    env.update(('IRONIC_MULTI_%s' % key.upper(), str(value))
               for key, value in environment.items() if value is not None)
    return env


def _log_output(what, out, err):
    LOG.debug('Hook %(hook)s (%(action)s of node %(node)s) stdout: '
              '%(out)s; stderr: %(err)s',
              dict(what, out=(out or '').strip() or '-',
                   err=(err or '').strip() or '-'))


def _kill_session(started):
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
