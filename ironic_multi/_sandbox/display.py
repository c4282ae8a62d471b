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


"""What the sandbox shows while it runs: rich's Progress, one row a phase.

Each phase is a row with a bar (or a spinner while its size is unknown)
and a status; lines printed through :meth:`Display.say` scroll above the
rows, with the time since the start.  On a terminal the rows refresh
live; otherwise (a log, a test's pipe) the lines are printed as they
come and the rows once at the end.
"""

from rich import console as rich_console
from rich import markup
from rich import progress as rich_progress


class Phase(object):
    """One row of the display."""

    def __init__(self, progress, task):
        self._progress = progress
        self._task = task

    def update(self, completed=None, status=None, total=None):
        fields = {}
        if completed is not None:
            fields['completed'] = completed
        if total is not None:
            fields['total'] = total
        if status is not None:
            fields['status'] = status
        self._progress.update(self._task, **fields)

    def advance(self, steps=1):
        self._progress.advance(self._task, steps)

    def done(self, status=None):
        task = next(t for t in self._progress.tasks if t.id == self._task)
        total = task.total if task.total is not None else 1
        self.update(completed=total, total=total, status=status)
        self._progress.stop_task(self._task)


class Display(object):
    """The progress rows and the lines above them."""

    def __init__(self, clock, console=None):
        self.console = console or rich_console.Console(highlight=False)
        self._clock = clock
        self._progress = rich_progress.Progress(
            rich_progress.SpinnerColumn(finished_text='[green]✓'),
            rich_progress.TextColumn('{task.description:<34}'),
            rich_progress.BarColumn(bar_width=30),
            rich_progress.MofNCompleteColumn(),
            rich_progress.TextColumn('{task.fields[status]}'),
            rich_progress.TimeElapsedColumn(),
            console=self.console, transient=False)

    def __enter__(self):
        self._progress.start()
        return self

    def __exit__(self, *exc_info):
        self._progress.stop()

    def phase(self, description, total=None, status=''):
        return Phase(self._progress, self._progress.add_task(
            description, total=total, status=status))

    def say(self, text, *args):
        """A line above the rows: ``[  12.3 s] text``."""
        # Not wrapped: a terminal wraps long lines, a log keeps them whole.
        self.console.print('[dim]\\[%6.1f s][/dim] %s' % (
            self._clock(), markup.escape(text % args if args else text)),
            soft_wrap=True)
