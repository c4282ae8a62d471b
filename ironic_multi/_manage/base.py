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

"""What the commands of ironic-multi-manage share.

Command bases that turn every failure into a one-line message with a
non-zero exit, and cell types that print ``-`` for humans where JSON
gets ``null``, lists and mappings for JSON where humans get a short text.
"""

from cliff import columns
from cliff import command
from cliff import lister
from cliff import show
from oslo_config import cfg

from ironic_multi import _argtypes
from ironic_multi import exception


class ManageError(Exception):
    """A failure reported as one line (cliff's handling), exit code 1."""


class _Guarded(object):
    """Errors as one-line messages; an exit code the command may set."""

    #: Set by a command that printed its output but did not fully succeed.
    exit_code = 0

    def run(self, parsed_args):
        try:
            result = super().run(parsed_args)
        except ManageError:
            raise
        except (exception.IronicMultiError, cfg.Error) as e:
            raise ManageError(str(e)) from e
        except Exception as e:
            # Not a bug report for the operator: one line, and --debug
            # shows the traceback.
            raise ManageError('%s: %s' % (type(e).__name__, e)) from e
        return result or self.exit_code

    @property
    def sources(self):
        """The :class:`~.sources.Sources` of this run."""
        return self.app.sources

    def confirm(self, question, refusal):
        """Ask ``question`` (``[y/N]`` is added) on the terminal.

        :param refusal: what is not done, for the message of a refusal
            ("Not releasing ...").
        :raises ManageError: not answered yes, or no terminal to ask on
            (a script passes ``--yes``).
        """
        stdin = self.app.stdin
        if not (hasattr(stdin, 'isatty') and stdin.isatty()):
            raise ManageError('%s: no terminal to confirm on; pass --yes'
                              % refusal)
        self.app.stderr.write('%s [y/N] ' % question)
        self.app.stderr.flush()
        if stdin.readline().strip().lower() not in ('y', 'yes'):
            raise ManageError('%s: not confirmed' % refusal)


class Command(_Guarded, command.Command):
    """A command that prints no table."""


class Lister(_Guarded, lister.Lister):
    """A command that prints rows (``-f table|json|yaml|csv|value``)."""


class ShowOne(_Guarded, show.ShowOne):
    """A command that prints one record (``-f table|json|yaml|...``)."""


# -- options ---------------------------------------------------------------

#: argparse types, shared with the other console scripts.
positive_int = _argtypes.at_least(1)
positive_float = _argtypes.positive_seconds


def add_yes(parser, action):
    """The ``--yes`` of commands that ask before they act."""
    parser.add_argument(
        '--yes', action='store_true',
        help='%s without asking for confirmation (required without a '
             'terminal).' % action)


def add_timeout(parser):
    """The ``--timeout`` of commands that wait for the services."""
    parser.add_argument(
        '--timeout', type=positive_float, metavar='SECONDS',
        help='How long to wait for the services to answer (default: 3 '
             'times [ironic_multi]request_poll_interval, plus 30 s).')


# -- cells -----------------------------------------------------------------

class Maybe(columns.FormattableColumn):
    """A value that may be absent: ``-`` for humans, null in JSON."""

    def human_readable(self):
        return '-' if self._value is None else str(self._value)


class YesNo(columns.FormattableColumn):
    """A boolean: yes/no for humans, true/false in JSON."""

    def human_readable(self):
        if self._value is None:
            return '-'
        return 'yes' if self._value else 'no'


class Listing(columns.FormattableColumn):
    """A list: comma-separated (the first :attr:`LIMIT`) for humans."""

    LIMIT = 8

    def human_readable(self):
        items = [str(item) for item in self._value or ()]
        if not items:
            return '-'
        shown = ', '.join(items[:self.LIMIT])
        if len(items) > self.LIMIT:
            shown += ', ... (%d more)' % (len(items) - self.LIMIT)
        return shown


class Lines(columns.FormattableColumn):
    """Text lines (a list in JSON); ``-`` when there are none."""

    def __init__(self, value, lines=None):
        super().__init__(value)
        self._lines = lines

    def human_readable(self):
        return '\n'.join(self._lines or ()) or '-'


class Counters(columns.FormattableColumn):
    """A mapping: ``key: value`` lines for humans, an object in JSON."""

    def human_readable(self):
        if not self._value:
            return '-'
        return '\n'.join('%s: %s' % (key, value)
                         for key, value in sorted(self._value.items()))


def age(at, now):
    """Seconds since ``at`` (a ``time.time()``), to 0.1 s; None if unknown."""
    if at is None:
        return None
    return round(max(now - at, 0.0), 1)


def pool_age(payload, now):
    """How old a service's ready pool is now, from what it published.

    Its last full read was ``full_read_age`` seconds old when it published
    at ``at``.  None when its provider keeps no pool.
    """
    read_age = (payload.get('pool') or {}).get('full_read_age')
    at = payload.get('at')
    if read_age is None or at is None:
        return None
    return round(read_age + max(now - at, 0.0), 1)
