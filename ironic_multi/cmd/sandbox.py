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


"""``ironic-multi-sandbox``: the end-to-end sandbox (see ``--help``).

A real Ironic with fake hardware, Nova's in-process services with K
compute services loading this driver, M servers booted at once, one
compute service stopped half way, some servers deleted; then a report,
a JSON file and a chart.  The scenario lives in
:mod:`ironic_multi._sandbox`.
"""

import argparse
import os
import sys

from ironic_multi import _argtypes

DB_KINDS = ('auto', 'sqlite', 'postgresql', 'mysql')
# Where the outputs go when --output is not given.
OUTPUT_ENV = 'IRONIC_MULTI_SANDBOX_OUTPUT'
DEFAULT_OUTPUT = 'sandbox-results'

DESCRIPTION = """\
End-to-end sandbox: a real Ironic (fake hardware) with N nodes in three
resource classes (traits, capabilities, a few nodes owned by another
project), and Nova with K compute services loading compute_driver =
ironic_multi.IronicMultiDriver: by default a cloud of processes
(Keystone, Placement, Nova's API, conductor, scheduler and computes,
Glance, Neutron, Ironic, RabbitMQ, etcd, MariaDB), else Nova's services
in this process (--in-process).  It boots M servers at once through Nova's
API (one class oversubscribed: reschedules and clean ERRORs), stops one
compute service half way (its shard keys and its instances move to the
others), boots more, deletes some, and checks that no node was given
twice and that placement's free counts equal Ironic's.  Prints a report,
writes sandbox.json and sandbox.png to --output; the last line is
"sandbox OK", else it exits non-zero and says why.  Everything it starts
stops at the end, on Ctrl-C and on SIGTERM; with --keep, the cloud stays
up (for the openstack client and ironic-multi-manage) until Ctrl-C."""


def parser():
    parser = argparse.ArgumentParser(
        prog='ironic-multi-sandbox', description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--nodes', '-N', type=_argtypes.at_least(8),
                        default=24, metavar='N',
                        help='Ironic nodes (default: 24)')
    parser.add_argument('--computes', '-K', type=_argtypes.at_least(2),
                        default=3, metavar='K',
                        help='Nova compute services (default: 3)')
    parser.add_argument('--servers', '-M', type=_argtypes.at_least(4),
                        default=20, metavar='M',
                        help='servers booted (default: 20)')
    parser.add_argument(
        '--db', choices=DB_KINDS, default=os.environ.get(
            'IRONIC_MULTI_TEST_DB', 'auto'),
        help='Ironic\'s database; auto: the local PostgreSQL when one '
             'answers on 127.0.0.1:5432, then MariaDB on 3306, else SQLite '
             '(default: $IRONIC_MULTI_TEST_DB or auto)')
    parser.add_argument(
        '--coordination-url', metavar='URL', default='file',
        help='tooz coordination: "file" (a temporary directory, the '
             'default), "redis" (the local Redis on 127.0.0.1:6379), '
             '"etcd" (an etcd of its own, Debian package etcd-server) or '
             'any tooz URL')
    parser.add_argument(
        '--output', metavar='DIR',
        default=os.environ.get(OUTPUT_ENV, DEFAULT_OUTPUT),
        help='where sandbox.png and sandbox.json go (default: $%s or '
             './%s)' % (OUTPUT_ENV, DEFAULT_OUTPUT))
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        '--cloud', action='store_true',
        help='run on a cloud of processes (the default when this machine '
             'has rabbitmq-server, etcd and mariadbd): Keystone, '
             'Placement, Nova (API, conductor, scheduler, K computes), '
             'Glance, Neutron, Ironic, and a RabbitMQ, an etcd and a '
             'MariaDB of its own, driven through their APIs; with --keep, '
             'the openstack client works on it.  --db mysql or postgresql '
             'puts its databases on the machine\'s servers instead')
    where.add_argument(
        '--in-process', action='store_true',
        help='run Nova\'s services in this process, with Ironic and '
             'coordination as --db and --coordination-url say (the '
             'default when the cloud cannot run, or when either option '
             'asks for what only this mode does)')
    parser.add_argument('--no-chart', action='store_true',
                        help='skip the PNG (and matplotlib)')
    parser.add_argument(
        '--keep', action='store_true',
        help='once the scenario has run to its end, keep the cloud up '
             'for ironic-multi-manage: print the report, write '
             'ironic-multi-manage.conf to --output, print the command '
             'line to paste, and stop everything on Ctrl-C or SIGTERM '
             '(exit code: the report\'s)')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the order servers are posted and of '
                             'the choice of deleted ones (default: 0)')
    parser.add_argument('--sample-period', type=_argtypes.positive_seconds,
                        default=0.5, metavar='SECONDS',
                        help='seconds between two samples of placement\'s '
                             'and Ironic\'s free counts (default: 0.5)')
    parser.add_argument('--resource-interval',
                        type=_argtypes.positive_seconds, default=5,
                        metavar='SECONDS',
                        help='seconds between two runs of each compute '
                             'service\'s resource periodic, which reports '
                             'the inventory to placement (Nova\'s '
                             '[DEFAULT] update_resources_interval, 60 s by '
                             'default; default here: 5)')
    parser.add_argument('--timeout', type=_argtypes.positive_seconds,
                        default=300, metavar='SECONDS',
                        help='how long each wait may take (default: 300)')
    return parser


def main(argv=None):
    """Run the sandbox; returns the exit code."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    # The layout and the coordination URL are checked before anything
    # starts (and before Nova's services are imported, which takes
    # seconds).
    from ironic_multi.testing import fleet
    try:
        layout = fleet.make_layout(args.nodes, args.computes, args.servers,
                                   args.seed)
    except fleet.LayoutError as e:
        parser().error(str(e))
    from ironic_multi._sandbox import preflight
    if args.cloud and args.coordination_url != 'file':
        parser().error('--cloud runs an etcd of its own: --coordination-url '
                       'does not apply')
    if args.cloud and args.db == 'sqlite':
        parser().error('--cloud needs a database server: --db mysql, '
                       'postgresql or auto')
    args.cloud = _on_cloud(args, preflight)
    try:
        preflight.check_coordination(args.coordination_url)
    except preflight.PreflightError as e:
        parser().exit(2, '%s: error: --coordination-url %s\n' % (
            parser().prog, e))
    try:
        from ironic_multi._sandbox import run
    except ImportError as e:
        sys.exit('ironic-multi-sandbox needs Nova and the test requirements '
                 '(pip install -r test-requirements.txt, or ./tox.sh -e '
                 'sandbox): %s' % e)
    return run.run(args, layout)


def _on_cloud(args, preflight):
    """Whether the run is on the multi-process cloud (the default)."""
    if args.in_process or (not args.cloud and (
            args.coordination_url != 'file' or args.db == 'sqlite')):
        return False
    missing = preflight.cloud_missing()
    if missing and args.cloud:
        parser().exit(2, '%s: error: --cloud needs %s\n' % (
            parser().prog, ', '.join(missing)))
    if missing:
        print('ironic-multi-sandbox: running Nova\'s services in this '
              'process: the multi-process cloud needs %s (./tox.sh installs '
              'them on Debian)' % ', '.join(missing), file=sys.stderr)
        return False
    return True


if __name__ == '__main__':
    sys.exit(main())
