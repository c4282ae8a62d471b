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

"""The cliff application: global options, commands, logging."""

import logging
import sys

from cliff import app
from cliff import commandmanager

import ironic_multi
from ironic_multi import _argtypes
from ironic_multi._manage import sources

#: The entry point namespace of the commands (setup.cfg), the one list of
#: them: cliff loads it, and so does the CLI reference of the docs.  An
#: entry point ``pool_show`` is the command ``pool show``.
NAMESPACE = 'ironic_multi.manage'

DESCRIPTION = """\
Look into and operate the reservation layer of ironic-multi: the ready
pools, the shard ring, the reservations, the capacity reported to
placement and the services' statistics.  It reads the configuration files
of nova-compute and joins the coordination group as an operator, which
owns no shard.
"""

# -q, default, -v, -vv, -vvv: the least level shown of the CLI's own
# messages and of the libraries'.  The libraries' errors are the CLI's
# error message too: shown from -v on, with what the CLI read.
_CONSOLE_LEVELS = {0: (logging.ERROR, logging.CRITICAL + 1),
                   1: (logging.WARNING, logging.CRITICAL + 1),
                   2: (logging.INFO, logging.WARNING),
                   3: (logging.INFO, logging.INFO)}


class _ConsoleFormatter(logging.Formatter):
    """The CLI's own messages bare, the libraries' with level and name."""

    def format(self, record):
        text = record.getMessage()
        if record.name != sources.NAME:
            text = '%s %s: %s' % (record.levelname, record.name, text)
        elif record.levelno == logging.WARNING:
            text = 'Warning: %s' % text
        if record.exc_info:
            # --debug: the traceback too.
            text += '\n' + self.formatException(record.exc_info)
        return text


class _ConsoleFilter(logging.Filter):
    def __init__(self, own, libraries):
        super().__init__()
        self._own, self._libraries = own, libraries

    def filter(self, record):
        least = self._own if record.name == sources.NAME else self._libraries
        return record.levelno >= least


class ManageApp(app.App):
    NAME = sources.NAME
    LOG = logging.getLogger(sources.NAME)

    def __init__(self, stdin=None, stdout=None, stderr=None):
        super().__init__(description=DESCRIPTION,
                         version=ironic_multi.__version__,
                         command_manager=commandmanager.CommandManager(
                             NAMESPACE),
                         stdin=stdin,
                         stdout=stdout, stderr=stderr,
                         # "CMD --help" is "help CMD": the command's help.
                         deferred_help=True)
        self.sources = None
        self._logging = None

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        # No abbreviations: "--co" must not become --config-file.
        kwargs = dict(argparse_kwargs or {}, allow_abbrev=False)
        parser = super().build_option_parser(description, version, kwargs)
        parser.add_argument(
            '--config-file', action='append', default=[], metavar='PATH',
            help='A configuration file, as nova-compute reads it (for '
                 'example /etc/nova/nova.conf); repeat it for more, later '
                 'ones override earlier ones. Without --config-file and '
                 '--config-dir, nova.conf is looked for in ~/.nova/, ~/, '
                 '/etc/nova/ and /etc/.')
        parser.add_argument(
            '--config-dir', action='append', default=[], metavar='DIR',
            help='A directory whose files ending in .conf are read '
                 'after the --config-file ones, in alphabetical order; '
                 'may be repeated.')
        parser.add_argument(
            '--wait', type=_argtypes.positive_seconds,
            default=sources.DEFAULT_WAIT, metavar='SECONDS',
            help='How long to wait for Ironic and for the coordination '
                 'backend to answer before giving up (default: %d). A '
                 'wait of more than %d s says what it waits for.'
                 % (sources.DEFAULT_WAIT, sources.ANNOUNCE_AFTER))
        return parser

    def configure_logging(self):
        """Log to stderr: the CLI's errors and warnings; more with -v."""
        root = logging.getLogger()
        own, libraries = _CONSOLE_LEVELS.get(
            self.options.verbose_level, (logging.DEBUG, logging.DEBUG))
        level = min(own, libraries)
        console = logging.StreamHandler(self.stderr)
        console.addFilter(_ConsoleFilter(own, libraries))
        console.setFormatter(_ConsoleFormatter())
        handlers = [console]
        if self.options.log_file:
            log_file = logging.FileHandler(self.options.log_file)
            log_file.setFormatter(logging.Formatter(
                self.LOG_FILE_MESSAGE_FORMAT))
            handlers.append(log_file)
            level = logging.DEBUG
        self._logging = (root.level, handlers)
        root.setLevel(level)
        for handler in handlers:
            root.addHandler(handler)

    def restore_logging(self):
        """Take the handlers away again (main() may run many times)."""
        if self._logging is None:
            return
        level, handlers = self._logging
        root = logging.getLogger()
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
        self._logging = None

    def initialize_app(self, argv):
        self.sources = sources.Sources(self.options.config_file,
                                       self.options.config_dir,
                                       wait=self.options.wait)

    def clean_up(self, cmd, result, err):
        if self.sources is not None:
            self.sources.close()


def main(argv=None):
    """Run one command; its exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    manage = ManageApp()
    try:
        # No interactive shell: without a command, the list of commands.
        return manage.run(argv or ['help'])
    except SystemExit as e:
        # argparse's usage errors (2), --help and --version (0).
        return 0 if e.code is None else e.code if isinstance(
            e.code, int) else 1
    finally:
        if manage.sources is not None:
            manage.sources.close()
        manage.restore_logging()
