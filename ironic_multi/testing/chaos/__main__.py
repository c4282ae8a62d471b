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

"""Run chaos on a new multi-process cloud; exit 1 on any violation.

    python -m ironic_multi.testing.chaos [--seed S] [--minutes M]
        [--reduced] [--computes K] [--nodes N] [--output DIR]

Writes ``DIR/chaos-SEED.json`` (the whole history) and
``DIR/chaos-SEED.png`` (the timeline), and prints the report.  Through
tox: ``./tox.sh -e chaos -- --seed 7``.
"""

import argparse
import logging
import random
import signal
import sys

from ironic_multi.testing.chaos import report
from ironic_multi.testing.chaos import run as run_mod


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python -m ironic_multi.testing.chaos',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--seed', type=int,
                        help='seed of the faults and the workload '
                             '(default: a new one, printed)')
    parser.add_argument('--minutes', type=float, default=8.0,
                        help='minutes of faults (default: 8)')
    parser.add_argument('--reduced', action='store_true',
                        help='each fault kind once, no more (CI)')
    parser.add_argument('--computes', type=int, default=3,
                        help='nova-compute processes (default: 3)')
    parser.add_argument('--nodes', type=int, default=36,
                        help='Ironic nodes of the fleet (default: 36)')
    parser.add_argument('--output', default='chaos-results',
                        help='where the history and the timeline go')
    parser.add_argument('--log-dir',
                        help='keep the services\' logs there')
    args = parser.parse_args(argv)
    if args.computes < 3:
        parser.error('--computes must be at least 3: faults hit two at '
                     'once, and one is spared')
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(10 ** 6)
    return args


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format='%(asctime)s %(name)s %(message)s')
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print('Chaos run, seed %d: %.1f minutes of faults%s'
          % (args.seed, args.minutes, ', each kind once' if args.reduced
             else ''), flush=True)
    result = run_mod.ChaosRun(run_mod.Options(
        seed=args.seed, minutes=args.minutes, computes=args.computes,
        nodes=args.nodes, reduced=args.reduced, output=args.output,
        log_dir=args.log_dir)).run()
    report.print_report(result)
    return 0 if result.passed else 1


if __name__ == '__main__':
    sys.exit(main())
