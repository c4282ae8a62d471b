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

"""What the Nova services' logs say: their errors, and who led when.

oslo.log writes each line as ``DATE TIME.MS PID LEVEL LOGGER ...``: a
record's first line goes on with its request context (``[None req-...]``
or ``[-]``), and every line of its traceback has the same head without
one.  :func:`errors` gathers each ERROR record with its traceback (two
records of one logger in one millisecond stay two);
:func:`classify` tells whether its exception is typed.

The rule: an error is *typed* when its exception is one of
ironic-multi's (:mod:`ironic_multi.exception`) or Nova's
(``nova.exception``).  An ERROR record without a traceback is a message
its service chose to write (Nova's, oslo.messaging's while the broker
restarts, or ours) and counts as typed.  An ERROR record whose traceback
ends in another exception is *untyped* when it passed through this
project's code, and *infrastructure* otherwise (a library of Nova's that
lost its broker or database: Nova's own handling, not ours).  Untyped
errors are defects.
"""

import collections
import dataclasses
import datetime
import glob
import os
import re

from ironic_multi import exception as ours

TYPED, INFRASTRUCTURE, UNTYPED = 'typed', 'infrastructure', 'untyped'
# oslo.log's default line head.
_HEAD = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (\d+) '
                   r'(ERROR|CRITICAL) (\S+) ?(.*)$')
_LEADS = re.compile(r'Member (\S+) now leads (\w+)')
_STANDS_DOWN = re.compile(r'Member (\S+) stands down from leading (\w+)')
# The request context that opens a record (oslo.log's context and default
# format strings); a traceback line (logging_exception_prefix) has none.
_CONTEXT = re.compile(r'^\[(-|None req-|req-)')
_TIME = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) ')
# The last line of a traceback: "module.Class: message" or "Class".
_RAISED = re.compile(r'^([A-Za-z_][\w.]*)(?::|$)')
OUR_CODE = 'ironic_multi/'
NOVA_LOGS = 'nova-*.log'


@dataclasses.dataclass
class Record:
    """One ERROR (or CRITICAL) record of a service's log."""

    service: str
    wall: float
    logger: str
    message: str
    traceback: list = dataclasses.field(default_factory=list)

    @property
    def exception(self):
        """The class name the traceback ends with, or None."""
        for line in reversed(self.traceback):
            if line.startswith((' ', 'Traceback', 'During handling',
                                'The above exception')) or not line:
                continue
            found = _RAISED.match(line)
            return found.group(1) if found else None
        return None

    @property
    def through_our_code(self):
        return (self.logger.startswith('ironic_multi')
                or any(OUR_CODE in line for line in self.traceback))

    def as_dict(self):
        return {'service': self.service, 'wall': self.wall,
                'logger': self.logger, 'message': self.message[:300],
                'exception': self.exception}


def _wall(stamp):
    return datetime.datetime.strptime(
        stamp, '%Y-%m-%d %H:%M:%S.%f').timestamp()


def errors(log_dir, pattern=NOVA_LOGS, since=None):
    """The ERROR records of the logs in ``log_dir`` matching ``pattern``.

    :param since: wall-clock time; earlier records are left out.
    """
    found = []
    for path in sorted(glob.glob(os.path.join(log_dir, pattern))):
        service = os.path.basename(path)[:-len('.log')]
        with open(path, errors='replace') as f:
            found.extend(_records(service, f, since))
    return found


def _records(service, lines, since):
    current = None
    head = None
    for line in lines:
        match = _HEAD.match(line.rstrip('\n'))
        if match is None:
            continue
        stamp, pid, _level, logger, rest = match.groups()
        opens = _CONTEXT.match(rest) is not None
        rest = _strip_context(rest)
        if (current is not None and head == (stamp, pid, logger)
                and not opens):
            current.traceback.append(rest)
            continue
        if current is not None:
            yield current
        current = head = None
        wall = _wall(stamp)
        if since is not None and wall < since:
            continue
        current = Record(service, wall, logger, rest)
        head = (stamp, pid, logger)
    if current is not None:
        yield current


def _strip_context(text):
    # "[req-... ...] " or "[-] ", then "[instance: ...] ".
    for prefix in (r'^\[[^\]]*\] ?', r'^\[instance: [^\]]*\] ?'):
        text = re.sub(prefix, '', text, count=1)
    return text


def is_typed_exception(name):
    """Whether an exception, as a traceback names it, is ours or Nova's.

    Python names an exception by its module and class (builtins by class
    alone); Nova's remote errors keep Nova's module with a ``_Remote``
    suffix.
    """
    module, _, short = name.rpartition('.')
    if module == ours.__name__:
        return short in _OURS
    return module.split('.', 1)[0] == 'nova'


_OURS = {name for name, value in vars(ours).items()
         if isinstance(value, type) and issubclass(value, Exception)}


def classify(record):
    """TYPED, INFRASTRUCTURE or UNTYPED (see the module's docstring)."""
    name = record.exception
    if name is None or is_typed_exception(name):
        return TYPED
    return UNTYPED if record.through_our_code else INFRASTRUCTURE


def classify_fault(fault):
    """The same rule for an instance fault (``{'message', 'details'}``).

    Nova keeps the traceback of a fault in ``details``, its exception's
    message (or class name) in ``message``.
    """
    details = (fault.get('details') or '').splitlines()
    record = Record('fault', 0.0, 'nova', fault.get('message') or '',
                    details)
    if not details and fault.get('message') in _builtin_names():
        # A bare class name: Nova hides the message of exceptions that
        # are not its own.
        return UNTYPED
    return classify(record)


def _builtin_names():
    import builtins
    return {name for name, value in vars(builtins).items()
            if isinstance(value, type) and issubclass(value, Exception)}


def summary(records):
    """``{class: Counter(exception or logger)}`` of ERROR records."""
    counts = collections.defaultdict(collections.Counter)
    for record in records:
        counts[classify(record)][record.exception or record.logger] += 1
    return counts


def lines_about(log_dir, subjects, text, pattern=NOVA_LOGS):
    """``{subject: first line}`` of log lines with ``text`` and a subject.

    For evidence: which of ``subjects`` (instance UUIDs) a service logged
    ``text`` about.
    """
    found = {}
    for path in sorted(glob.glob(os.path.join(log_dir, pattern))):
        with open(path, errors='replace') as f:
            for line in f:
                if text not in line:
                    continue
                for subject in subjects:
                    if subject in line and subject not in found:
                        found[subject] = '%s: %s' % (
                            os.path.basename(path), line.strip()[:300])
    return found


def last_lines_about(log_dir, subject, count=4, pattern=NOVA_LOGS):
    """The last ``count`` log lines about ``subject``, oldest first.

    Over every log of ``pattern``, in the order of their timestamps
    (oslo.log's lines begin with one), each with its log's name: what
    a violation's detail carries, so that a run that failed where its
    logs are gone (a CI machine) still says what Nova last did.
    """
    found = []
    for path in sorted(glob.glob(os.path.join(log_dir, pattern))):
        name = os.path.basename(path)
        with open(path, errors='replace') as f:
            found.extend((line[:23], '%s: %s' % (name, line.strip()[:300]))
                         for line in f if subject in line)
    found.sort(key=lambda entry: entry[0])
    return [line for _stamp, line in found[-count:]]


def count(log_dir, text, pattern=NOVA_LOGS):
    """How many lines of the logs hold ``text``."""
    total = 0
    for path in glob.glob(os.path.join(log_dir, pattern)):
        with open(path, errors='replace') as f:
            total += sum(1 for line in f if text in line)
    return total


# Ironic's access log: "... 127.0.0.1 - PATCH /v1/nodes/UUID - 400 (..)".
_NODE_WRITE = re.compile(r' (PATCH|PUT|POST|DELETE) (/v1/nodes/([0-9a-f-]{36})'
                         r'\S*) - (\d{3}) ')
IRONIC_LOG = 'ironic.log'


def node_writes(log_dir, node_uuids, since):
    """``[(wall, method, path, status)]``: writes to ``node_uuids``.

    From Ironic's access log, after ``since`` (wall-clock time), refused
    ones included: sending one is already touching the node.
    """
    found = []
    path = os.path.join(log_dir, IRONIC_LOG)
    if not os.path.exists(path):
        return found
    with open(path, errors='replace') as f:
        for line in f:
            match = _NODE_WRITE.search(line)
            stamp = _TIME.match(line)
            if (match is None or stamp is None
                    or match.group(3) not in node_uuids):
                continue
            wall = _wall(stamp.group(1))
            if wall >= since:
                found.append((wall, match.group(1), match.group(2),
                              int(match.group(4))))
    return found


def leadership(log_dir, pattern=NOVA_LOGS, role='housekeeper'):
    """``[(wall, member, 'leads' | 'stands down')]`` sorted by time."""
    events = []
    for path in sorted(glob.glob(os.path.join(log_dir, pattern))):
        with open(path, errors='replace') as f:
            for line in f:
                for kind, pattern_ in (('leads', _LEADS),
                                       ('stands down', _STANDS_DOWN)):
                    found = pattern_.search(line)
                    stamp = _TIME.match(line)
                    if found and stamp and found.group(2) == role:
                        events.append((_wall(stamp.group(1)),
                                       found.group(1), kind))
    return sorted(events)
