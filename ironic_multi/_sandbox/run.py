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


"""Run the sandbox: the scenario, the report, the chart, the exit code.

Importing this module starts Nova's machinery (native threads, Nova's
options): :mod:`ironic_multi.cmd.sandbox` imports it only once the
command line has been read.
"""

# First: decides Nova's concurrency mode and registers Nova's options.
from ironic_multi.testing import nova_services  # noqa: I100

import contextlib  # noqa: E402,I100
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import fixtures  # noqa: E402
from rich import console as rich_console  # noqa: E402

from ironic_multi._reservation import membership  # noqa: E402
from ironic_multi._sandbox import display as display_mod  # noqa: E402
from ironic_multi._sandbox import keep  # noqa: E402
from ironic_multi._sandbox import report  # noqa: E402
from ironic_multi._sandbox import scenario as scenario_mod  # noqa: E402
from ironic_multi import exception  # noqa: E402
from ironic_multi.testing import ironic_nodes  # noqa: E402
from ironic_multi.testing import ironic_server  # noqa: E402

# Nova's services are imported above; keep flake8 from calling it unused.
assert nova_services.IRONIC_MULTI_DRIVER

LOG = logging.getLogger(__name__)

CHART = 'sandbox.png'
REPORT = 'sandbox.json'
# The sandbox's own log, and Nova's services' (kept in memory while they
# run).
LOG_FILE = 'sandbox.log'
NOVA_LOG_FILE = 'nova.log'
# The logs of the cloud's processes (--cloud).
CLOUD_LOGS = 'cloud-logs'
LOG_FORMAT = '%(asctime)s %(levelname)s [%(name)s] %(message)s'
# Wide enough for the tables when the output is not a terminal.
PIPE_WIDTH = 120
# What ends a run early: the scenario's own errors and those of the
# servers it starts (the rest is a bug: traceback).
EXPECTED_ERRORS = (scenario_mod.SandboxError, exception.IronicMultiError,
                   ironic_server.IronicServerError,
                   ironic_nodes.IronicRequestError, AssertionError)


@contextlib.contextmanager
def _signals(note, ignore=None):
    """SIGINT, SIGTERM and SIGHUP unwind the main thread as Ctrl-C does.

    Each is first passed to ``note``: the exception raised here can be
    lost in the code the main thread runs, the note cannot.  Only the
    first one raises: under tox a Ctrl-C comes twice (the terminal's, then
    tox's own), and a second exception would cut the clean-up short.
    While ``ignore()`` is true (the services stop anyway) they do nothing.
    Installed before Ironic starts: its fixture's safety net, installed
    next, stops Ironic first and then hands SIGTERM and SIGHUP on to this.
    """
    raised = []

    def handler(signum, frame):
        if ignore is not None and ignore():
            return
        note(signum)
        if raised:
            return
        raised.append(signum)
        raise scenario_mod.Interrupted(signum)

    previous = {signum: signal.signal(signum, handler)
                for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class _Services(contextlib.ExitStack):
    """What the scenario starts; stopped in reverse on any way out.

    While it stops, another Ctrl-C only says to wait (Ironic is released
    at exit and dies with this process in any case).  When the run is
    already failing, an error of the clean-up does not replace the
    failure: it is logged and kept in :attr:`cleanup_errors`.
    """

    def __init__(self, display, what=scenario_mod.Scenario.SERVICES):
        super().__init__()
        self.display = display
        #: What stops, in messages.
        self.what = what
        self.stop_seconds = None
        self.cleanup_errors = []
        #: Set once the services are about to stop: signals then only
        #: say to wait.
        self.stopping = False

    def stop_soon(self):
        """The services stop next (a kept cloud's Ctrl-C came)."""
        self.stopping = True

    def __exit__(self, *exc_info):
        self.stopping = True

        def wait(signum, frame):
            self.display.say('Stopping the services, please wait')

        previous = signal.signal(signal.SIGINT, wait)
        phase = self.display.phase('Stop %s' % self.what)
        started = time.monotonic()
        try:
            return super().__exit__(*exc_info)
        except Exception as e:
            if exc_info[1] is None:
                raise
            # The first cause goes on; this one is a consequence.
            LOG.error('While stopping the services after %s: %s',
                      _describe(exc_info[1]), _describe(e), exc_info=True)
            self.cleanup_errors.append(e)
            return False
        finally:
            self.stop_seconds = time.monotonic() - started
            phase.done('%.1f s' % self.stop_seconds)
            signal.signal(signal.SIGINT, previous)


def first_cause(error):
    """The error that started it all, out of a fixture's bundle of them.

    A fixture whose setUp fails raises MultipleExceptions: the failure,
    then the SetupError that reports it.
    """
    while isinstance(error, fixtures.MultipleExceptions) and error.args:
        error = error.args[0][1]
    return error


def _describe(error):
    return '%s: %s' % (type(error).__name__, error)


@contextlib.contextmanager
def _logging_to(path):
    """Log records at INFO and above go to ``path``, not the console.

    The file starts empty: it holds this run's log only.
    """
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = logging.FileHandler(path, mode='w')
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        handler.close()


def _alive(pid):
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not running: Ironic's fixture reaps its process, but be
    # sure.
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def run(args, layout):
    """Run the sandbox; returns the exit code.

    What an earlier run left in the output directory goes first: a run
    that fails or is interrupted before it writes its chart must not
    leave the last run's chart there looking like its own.
    """
    output = os.path.abspath(args.output)
    os.makedirs(output, exist_ok=True)
    for name in (CHART, REPORT, NOVA_LOG_FILE):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(output, name))
    args.nova_log = os.path.join(output, NOVA_LOG_FILE)
    args.cloud_log_dir = os.path.join(output, CLOUD_LOGS)
    shutil.rmtree(args.cloud_log_dir, ignore_errors=True)
    with _logging_to(os.path.join(output, LOG_FILE)):
        return _run(args, layout, output)


def _run(args, layout, output):
    started = time.monotonic()

    def clock():
        return time.monotonic() - started

    console = rich_console.Console(highlight=False)
    if not console.is_terminal:
        console = rich_console.Console(highlight=False, width=PIPE_WIDTH)
    display = display_mod.Display(clock, console)
    if getattr(args, 'cloud', False):
        from ironic_multi._sandbox import on_cloud
        scenario = on_cloud.CloudScenario(args, layout, display, clock)
        logs = args.cloud_log_dir
    else:
        scenario = scenario_mod.Scenario(args, layout, display, clock)
        logs = args.nova_log
    results = scenario.results
    results['settings'] = {
        'nodes': args.nodes, 'computes': args.computes,
        'servers': args.servers, 'seed': args.seed, 'db': args.db,
        'coordination_url': membership.redact(
            args.coordination_url or 'file'),
        'output': output}
    results['report'] = os.path.join(output, REPORT)
    results['logs'] = [os.path.join(output, LOG_FILE), logs]
    interrupted = failure = None
    # The exit code of a scenario whose cloud was kept up (--keep).
    kept = None
    services = _Services(display, scenario.SERVICES)
    with _signals(scenario.interrupt, ignore=lambda: services.stopping):
        try:
            with display:
                display.say('ironic-multi sandbox: %d nodes, %d compute '
                            'services, %d servers (seed %d)', args.nodes,
                            args.computes, args.servers, args.seed)
                with services:
                    scenario.run(services)
                    if args.keep:
                        # The chart waits for the end: matplotlib cannot
                        # load under Nova's test fixtures (warnings are
                        # errors there).
                        kept = _report(console, args, layout, output,
                                       scenario, services, None, clock,
                                       chart=False)
                        _keep(console, scenario, services, output)
        except KeyboardInterrupt as e:
            interrupted = e
        except Exception as e:
            cause = first_cause(e)
            failure = _describe(cause)
            if not isinstance(cause, EXPECTED_ERRORS):
                # A bug: its traceback goes to the log, not the console.
                LOG.error('The sandbox failed', exc_info=cause)
                failure += ' (traceback in %s)' % os.path.join(output,
                                                               LOG_FILE)
    if interrupted is None and scenario.signalled is not None:
        # Its exception was lost after the scenario's last pause.
        interrupted = scenario_mod.Interrupted(scenario.signalled)
    left = sorted(name for name, pid in scenario.processes.items()
                  if _alive(pid))
    results['cleanup'] = {
        'what': scenario.SERVICES,
        'seconds': services.stop_seconds,
        'left_running': left,
        'threads_left': sorted(
            t.name for t in getattr(scenario.nova, 'leftover_threads', ())
            or ())}
    if left:
        scenario.results['problems'].append(
            '%s still running after the clean-up' % ', '.join(
                '%s (pid %d)' % (n, scenario.processes[n]) for n in left))

    if interrupted is not None:
        signum = getattr(interrupted, 'signum', signal.SIGINT)
        console.print('\nsandbox interrupted (%s): %s stopped%s' % (
            signal.Signals(signum).name, scenario.SERVICES,
            ' - but %s still running!' % ', '.join(left) if left else ''))
        return 128 + signum
    if kept is None or failure:
        return _report(console, args, layout, output, scenario, services,
                       failure, clock)
    # The report came before the cloud was kept; now its clean-up and
    # its chart.
    console.print('%s stopped in %.1f s; %s' % (
        scenario.SERVICES, services.stop_seconds or 0,
        report.left_running(left)))
    if not args.no_chart and results.get('timeline', {}).get('samples'):
        results['chart'] = _chart(output, results, layout)
        console.print('Chart: %s' % results['chart'])
    _write_report(results)
    return 1 if results['problems'] else kept


def _report(console, args, layout, output, scenario, services, failure,
            clock, chart=True):
    """Summarize, write the report and the chart, print; the exit code."""
    results = scenario.results
    servers = sorted(scenario.servers.values(), key=lambda r: r['name'])
    results['hosts'] = sorted(scenario.providers)
    results['servers'] = servers
    report.summarize(results, servers)
    if failure:
        results['problems'].append(failure)
        results['problems'].extend('while stopping the services: %s'
                                   % _describe(e)
                                   for e in services.cleanup_errors)
    if scenario.sampler is not None:
        results['timeline'] = {'period': scenario.sampler.period,
                               'samples': list(scenario.sampler.samples),
                               'events': list(scenario.sampler.events),
                               'failed_reads': scenario.sampler.failed_reads}
        if chart and not args.no_chart and scenario.sampler.samples:
            results['chart'] = _chart(output, results, layout)
    results['wall_seconds'] = round(clock(), 1)
    _write_report(results)
    if 'capacity' in results:
        console.print()
        report.render(console, results, servers, layout)
    if results['problems']:
        console.print('\n[bold red]sandbox FAILED[/bold red]:')
        for text in results['problems']:
            console.print('  - %s' % text, markup=False)
        sys.stdout.flush()
        return 1
    console.print('sandbox OK (%.1f s)' % results['wall_seconds'])
    return 0


def _write_report(results):
    with open(results['report'], 'w') as f:
        json.dump(results, f, indent=1, sort_keys=True, default=str)


def _keep(console, scenario, services, output):
    """Keep the cloud up until Ctrl-C or SIGTERM (``--keep``)."""
    path = keep.write_manage_conf(os.path.join(output, keep.MANAGE_CONF),
                                  scenario.manage_options())
    scenario.results['kept'] = {'manage_conf': path}

    def write(line):
        # Whole lines, never wrapped: they are there to be pasted.
        console.print(line, soft_wrap=True, markup=False, highlight=False)

    lines = ([''] + scenario.describe_cloud() + keep.paste_lines(path)
             + ['Ctrl-C (or SIGTERM) stops it.'])
    signum = keep.hold(write, lines, on_signal=services.stop_soon)
    scenario.display.say('%s: stopping the kept cloud',
                         signal.Signals(signum).name)


def _chart(output, results, layout):
    from ironic_multi._sandbox import chart
    from ironic_multi.testing import checks

    path = os.path.join(output, CHART)
    boots = {}
    ring = results.get('ring') or {}
    for host, counts in results['computes'].items():
        notes = []
        if host == ring.get('victim'):
            notes.append('stopped')
        if counts.get('adopted'):
            notes.append('adopted %d' % counts['adopted'])
        boots[host] = dict(counts, note=', '.join(notes))
    chart.draw(
        path, results['timeline']['samples'], results['timeline']['events'],
        boots, [(rc, checks.placement_class(rc))
                for rc in layout.resource_classes()],
        title='ironic-multi sandbox: %d nodes, %d compute services, %d '
              'servers' % (layout.nodes, layout.computes, layout.servers),
        failed='; '.join(results['problems']) or None)
    return path
