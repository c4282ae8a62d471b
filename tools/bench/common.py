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

"""What the benchmarks share.

- statistics: :func:`summary` (p50, p99, min, max), :func:`ratio` (a ratio
  of medians or p99s with its spread over blocks of consecutive rounds);
- interleaving: :func:`rotations` (each round runs every operation once,
  in a rotated order, so that drift hits them alike);
- the participant-process protocol: :class:`Participant` (a reservation
  service in a process of its own, driven over JSON lines) and
  :class:`Group` (K of them, sharing one coordination group);
- request counting: :class:`RequestCounter` (installed in a participant,
  it wraps ``requests.Session.send``: requests by kind and status, node
  records served by listings, conflicts);
- profiles: :func:`spy` (py-spy on another process, e.g. Ironic's API);
- the result format: :func:`result`, :func:`goal`.

Modules here import each other as top-level modules: ``python tools/bench``
puts this directory first on ``sys.path``.
"""

import collections
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from ironic_multi.testing.cloud import process as cloud_process

HERE = os.path.dirname(os.path.abspath(__file__))
PARTICIPANT = os.path.join(HERE, 'participant.py')

# The flavor every benchmark claims with: one unit of CUSTOM_GOLD.
GOLD = 'gold'
OTHER = 'silver'
GOLD_SPEC = {'extra_specs': {'resources:CUSTOM_GOLD': '1'}}
# K: reservation services in separate processes.
SERVICES = 4
# Shard keys of a fleet: enough that a ring of 4 hosts splits them evenly
# enough, few enough that a shard holds hundreds of nodes.
SHARD_COUNT = 32
# Seconds a participant may take to answer one command.
ANSWER_TIMEOUT = 900
# How long the Ironic API may take to answer one of our own requests.
REQUEST_TIMEOUT = 120


def shard_name(index):
    return 'shard-%02d' % (index % SHARD_COUNT)


# -- statistics ---------------------------------------------------------------

def percentile(values, q):
    """The ``q``-th percentile (0-100), linear between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return None
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values, scale=1.0, digits=2):
    """``{'n', 'p50', 'p99', 'min', 'max'}`` of ``values`` times ``scale``."""
    if not values:
        return {'n': 0, 'p50': None, 'p99': None, 'min': None, 'max': None}

    def r(value):
        return round(value * scale, digits)

    return {'n': len(values), 'p50': r(statistics.median(values)),
            'p99': r(percentile(values, 99)), 'min': r(min(values)),
            'max': r(max(values))}


def ratio(values, base, q=50, blocks=5):
    """The ratio of the ``q``-th percentiles, and its spread.

    ``values`` and ``base`` are paired samples in round order (sample i of
    each was taken in round i).  The spread is the range of the same ratio
    over ``blocks`` runs of consecutive rounds: drift in the machine's load
    shows up there, not in the ratio of the whole.

    :returns: ``{'ratio', 'spread': [low, high], 'blocks'}``
    """
    whole = percentile(values, q) / percentile(base, q)
    size = max(1, len(values) // blocks)
    # With few samples per block, p99 of a block is its maximum: still a
    # fair spread of the tail, not a p99.
    parts = []
    for start in range(0, len(values) - size + 1, size):
        part, part_base = (values[start:start + size],
                           base[start:start + size])
        parts.append(percentile(part, q) / percentile(part_base, q))
    return {'ratio': round(whole, 3),
            'spread': [round(min(parts), 3), round(max(parts), 3)],
            'blocks': len(parts)}


def spread_text(entry):
    """``1.12 (1.05-1.20)`` from a :func:`ratio` entry."""
    low, high = entry['spread']
    return '%.2f (%.2f-%.2f)' % (entry['ratio'], low, high)


def rotations(operations, rounds):
    """Round by round, every operation once, in a rotated order.

    Yields ``(round, [operations])``; operation i goes first in round i.
    """
    operations = list(operations)
    for index in range(rounds):
        shift = index % len(operations)
        yield index, operations[shift:] + operations[:shift]


# -- the result format --------------------------------------------------------

def goal(name, target, measured, met):
    return {'name': name, 'target': target, 'measured': measured,
            'met': bool(met)}


def result(title, headers, rows, results, goals, chart=None):
    """What a measurement's ``measure(bench)`` returns."""
    answer = {'title': title, 'headers': list(headers),
              'rows': [list(row) for row in rows], 'results': results,
              'goals': list(goals)}
    if chart is not None:
        answer['chart'] = chart
    return answer


def say(text):
    print('  . %s' % text, flush=True)


# -- request counting ---------------------------------------------------------

_ALLOCATION = re.compile(r'/v1/allocations(/|$|\?)')
_NODE = re.compile(r'/v1/nodes/[^/?]+(\?|$)')
_LISTING = re.compile(r'/v1/nodes(/detail)?(\?|$)')


class RequestCounter(object):
    """Counts what the HTTP clients of this process send to Ironic.

    :meth:`install` wraps ``requests.Session.send`` (keystoneauth, hence
    python-ironicclient, sends through it), so the package needs no hook.
    Counted: requests by ``METHOD kind status``; node records served by
    node listings (what Ironic's database and the network pay for, whole
    pages) and by reads of one node; conflicts, that is atomic writes
    that lost a race: a 409 to a ``PATCH`` of a node or to ``POST
    /v1/allocations``, and allocations seen in state ``error``.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        with self._lock:
            self.requests = collections.Counter()
            self.records = 0
            self.listings = 0
            self.conflicts = 0
            self._failed_allocations = set()

    def snapshot(self):
        with self._lock:
            return {'requests': sum(self.requests.values()),
                    'by_kind': dict(self.requests),
                    'records': self.records, 'listings': self.listings,
                    'conflicts': self.conflicts}

    def install(self):
        import requests

        counter = self
        send = requests.Session.send

        def counted(session, prepared, **kwargs):
            response = send(session, prepared, **kwargs)
            with contextlib.suppress(Exception):
                counter.count(prepared.method, prepared.url, response)
            return response

        requests.Session.send = counted
        return self

    def count(self, method, url, response):
        path = url.split('://', 1)[-1]
        path = path[path.find('/'):] if '/' in path else '/'
        status = response.status_code
        if _LISTING.match(path) and method == 'GET':
            kind = 'node-list'
        elif _NODE.match(path):
            kind = 'node'
        elif _ALLOCATION.match(path):
            kind = 'allocation'
        elif path.startswith('/v1/shards'):
            kind = 'shards'
        else:
            kind = 'other'
        records = 0
        failed = None
        if kind == 'node-list' and status == 200:
            # Each node record has one "uuid" key; instance_uuid and
            # allocation_uuid do not match with the quote in front.
            records = response.content.count(b'"uuid":')
        elif kind == 'node' and method == 'GET' and status == 200:
            records = 1
        elif (kind == 'allocation' and method in ('GET', 'POST')
                and status in (200, 201)):
            body = response.json()
            if body.get('state') == 'error':
                failed = body.get('uuid')
        with self._lock:
            self.requests['%s %s %d' % (method, kind, status)] += 1
            if kind == 'node-list' and status == 200:
                self.listings += 1
            self.records += records
            if status == 409 and (
                    (method == 'PATCH' and kind == 'node')
                    or (method == 'POST' and kind == 'allocation')):
                self.conflicts += 1
            if failed and failed not in self._failed_allocations:
                self._failed_allocations.add(failed)
                self.conflicts += 1


# -- participants -------------------------------------------------------------

class ParticipantError(Exception):
    pass


class Participant(object):
    """participant.py in a process of its own, and its JSON lines.

    :param argv: the participant's arguments (see participant.py).
    :param log_path: where its standard error goes.

    :meth:`wait_started` reads its first answer (what it started).
    """

    def __init__(self, name, argv, log_path, env=None):
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, 'w')
        self.process = subprocess.Popen(
            [sys.executable, PARTICIPANT] + list(argv),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            text=True, bufsize=1, env=env)
        self.pid = self.process.pid
        self._answers = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.started = None

    def wait_started(self):
        self.started = self.answer()
        return self.started

    def _read(self):
        for line in self.process.stdout:
            try:
                self._answers.put(json.loads(line))
            except ValueError:
                self._answers.put({'failure': 'not JSON: %r' % line[:300]})
        self._answers.put(None)

    def send(self, **command):
        self.process.stdin.write(json.dumps(command) + '\n')
        self.process.stdin.flush()

    def answer(self, timeout=ANSWER_TIMEOUT):
        try:
            answer = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise ParticipantError('%s gave no answer within %d s; log: %s'
                                   % (self.name, timeout, self.log_path))
        if answer is None:
            raise ParticipantError('%s exited with %s:\n%s' % (
                self.name, self.process.wait(), self.log_tail()))
        if 'failure' in answer:
            raise ParticipantError('%s: %s\n%s' % (
                self.name, answer['failure'], answer.get('trace', '')))
        return answer

    def call(self, **command):
        self.send(**command)
        return self.answer()

    def rss_kib(self):
        """VmRSS of the process, in KiB, from /proc."""
        return _proc_status(self.pid, 'VmRSS')

    def hwm_kib(self):
        """VmHWM (peak RSS) of the process, in KiB, from /proc."""
        return _proc_status(self.pid, 'VmHWM')

    def log_tail(self, lines=30):
        self._log.flush()
        with open(self.log_path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])

    def stop(self):
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def _proc_status(pid, field):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return None


class Placeholders(object):
    """The K hosts on the ring before their services start.

    Ring nodes are hosts, not member ids (doc/source/architecture.rst):
    with a member of every host in the group first, each service's first
    read is of its own shards, not of everything it would own alone for a
    moment.
    """

    def __init__(self, url, groups, hosts, timeout):
        from tooz import coordination as tooz_coordination

        self._tooz = tooz_coordination
        separator = '&' if '?' in url else '?'
        option = 'timeout' if url.startswith('file:') else (
            'membership_timeout')
        url = '%s%s%s=%d' % (url, separator, option, timeout)
        self.members = []
        for host in hosts:
            member = tooz_coordination.get_coordinator(
                url, ('%s:0:placeholder' % host).encode())
            member.start(start_heart=True)
            self.members.append(member)
            for group in groups:
                group = group.encode()
                with contextlib.suppress(
                        tooz_coordination.GroupAlreadyExist):
                    member.create_group(group).get()
                member.join_group(group).get()
        self.groups = groups

    def stop(self):
        for member in self.members:
            for group in self.groups:
                with contextlib.suppress(Exception):
                    member.leave_group(group.encode()).get()
            with contextlib.suppress(Exception):
                member.stop()
        self.members = []


class Group(object):
    """K participants in one coordination group, all on one Ironic.

    :param modes: claim modes each participant serves, each with a
        Reserver of its own in a coordination group of its own
        (``allocation``, ``patch``).
    :param options: more ``[ironic_multi]`` options of the reservers.
    """

    def __init__(self, bench, count=SERVICES, modes=('allocation', 'patch'),
                 name=None, options=None, membership_timeout=10):
        self.bench = bench
        self.name = name or 'bench-%s' % uuid.uuid4().hex[:8]
        self.modes = tuple(modes)
        self.members = []
        hosts = ['bench-host-%d' % index for index in range(count)]
        argv = ['--endpoint', bench.server.endpoint,
                '--coordination', bench.coordination_url,
                '--group', self.name, '--modes', ','.join(self.modes),
                '--membership-timeout', str(membership_timeout)]
        if options:
            argv += ['--options', json.dumps(options)]
        started = time.monotonic()
        placeholders = Placeholders(
            bench.coordination_url,
            ['%s-%s' % (self.name, mode) for mode in self.modes], hosts,
            membership_timeout)
        try:
            for host in hosts:
                self.members.append(Participant(
                    host, argv + ['--host', host],
                    os.path.join(bench.workdir, '%s-%s.log'
                                 % (self.name, host))))
            for member in self.members:
                member.wait_started()
            placeholders.stop()
            # Every member sees every other: the ring has settled.
            self.settled = self.broadcast(op='refresh')
        except BaseException:
            placeholders.stop()
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started

    def __iter__(self):
        return iter(self.members)

    def __len__(self):
        return len(self.members)

    def broadcast(self, **command):
        """Send ``command`` to every member at once; their answers."""
        for member in self.members:
            member.send(**command)
        return [member.answer() for member in self.members]

    def each(self, commands):
        """Send ``commands[i]`` to member i at once; their answers."""
        for member, command in zip(self.members, commands):
            member.send(**command)
        return [member.answer() for member in self.members]

    def stop(self):
        for member in self.members:
            member.stop()
        self.members = []


# -- profiles -----------------------------------------------------------------

def busiest(pids):
    """The PID that used the most CPU so far."""
    def cpu(pid):
        try:
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            return int(fields[11]) + int(fields[12])
        except OSError:
            return -1
    return max(pids, key=cpu) if pids else None


def py_spy():
    return (shutil.which('py-spy', path=os.path.dirname(sys.executable))
            or shutil.which('py-spy'))


def spy(pid, function, top=15, rate=100, keep=None, focus=None):
    """py-spy's view of process ``pid`` while ``function()`` runs.

    :param focus: a path prefix (``ironic/``): the inclusive list then
        names only frames of files under it (the code of that project, not
        the web server and ORM around it).
    :returns: ``(function's result, profile)``; the profile is
        ``{'samples', 'inclusive': [[frame, share]], 'leaf': [...],
        'text'}`` or ``{'error': why}``.  Idle samples (threads waiting)
        are left out: what remains is what the process spent CPU on.
    """
    binary = py_spy()
    if binary is None:
        return function(), {'error': 'py-spy is not installed'}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'profile.txt')
        process = subprocess.Popen(
            [binary, 'record', '--pid', str(pid), '--format', 'raw',
             '--nonblocking', '--rate', str(rate), '--output', out],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1)
        try:
            value = function()
        finally:
            process.send_signal(signal.SIGINT)
            try:
                _out, err = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                _out, err = process.communicate()
        if not os.path.exists(out):
            return value, {'error': 'py-spy wrote nothing: %s'
                           % err.decode(errors='replace')[-300:]}
        with open(out) as f:
            lines = f.read().splitlines()
        if keep:
            shutil.copy(out, keep)
    return value, _collapse(lines, top, focus)


# Frames every request of Ironic's API passes through: left out of the
# inclusive list of an ``ironic/`` focus, which then starts at the
# controller.
WRAPPERS = ('ironic/api/app.py', 'ironic/api/middleware/',
            'ironic/api/method.py', 'ironic/common/args.py',
            'ironic/common/metrics.py')
_FRAME = re.compile(r'^(?P<function>.*?) \((?P<path>[^:()]*)(:\d+)?\)$')


def _frame(text):
    """``function (project/module.py)`` from py-spy's raw frame."""
    match = _FRAME.match(text)
    if not match:
        return text, ''
    path = match.group('path')
    for marker in ('site-packages/', 'lib/python3'):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return '%s (%s)' % (match.group('function'), path), path


def _collapse(lines, top, focus=None):
    inclusive = collections.Counter()
    focused = collections.Counter()
    leaf = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rpartition(' ')
        if not stack or not count.isdigit():
            continue
        frames = [_frame(f) for f in stack.split(';')
                  if not f.startswith(('process ', 'thread '))]
        if not frames:
            continue
        count = int(count)
        total += count
        for name, path in set(frames):
            inclusive[name] += count
            if (focus and path.startswith(focus)
                    and not path.startswith(WRAPPERS)):
                focused[name] += count
        leaf[frames[-1][0]] += count
    if not total:
        return {'error': 'no samples (the process was idle)'}

    def best(counter):
        return [[name, round(n / total, 3)]
                for name, n in counter.most_common(top)]

    profile = {'samples': total,
               'inclusive': best(focused if focus else inclusive),
               'leaf': best(leaf)}
    if focus:
        profile['focus'] = focus
    profile['text'] = profile_text(profile)
    return profile


def profile_text(profile):
    """A py-spy profile as lines of text: inclusive, then self time."""
    lines = ['%d samples of CPU' % profile['samples'],
             'inclusive (share of samples on the stack%s):' % (
                 ', frames of %s only, request wrappers left out'
                 % profile['focus']
                 if profile.get('focus') else '')]
    lines += ['  %5.1f%%  %s' % (100 * share, name)
              for name, share in profile['inclusive']]
    lines.append('self (share of samples at the top of the stack):')
    lines += ['  %5.1f%%  %s' % (100 * share, name)
              for name, share in profile['leaf']]
    return '\n'.join(lines)


def ironic_api_pid(server):
    """The Ironic process that answers the API (the busiest of its group)."""
    return busiest(cloud_process.process_group_pids(server.pid)) or server.pid
