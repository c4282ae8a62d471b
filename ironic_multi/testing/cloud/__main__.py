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

"""Start the multi-process cloud by hand and keep it until Ctrl-C.

    python -m ironic_multi.testing.cloud [--computes K] [--nodes N]
        [--private-database]

Prints the lines to paste into another shell to use it with the
``openstack`` client.  Through tox (its venvs, the code of the working
tree): ``./tox.sh exec -e cloud -- python -m ironic_multi.testing.cloud``.
"""

import argparse
import logging
import signal
import sys

from ironic_multi.testing.cloud import cloud as cloud_mod


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m ironic_multi.testing.cloud',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--computes', type=int, default=3,
                        help='nova-compute processes (default: 3)')
    parser.add_argument('--nodes', type=int, default=24,
                        help='Ironic nodes of the sandbox fleet (default: 24)')
    parser.add_argument('--log-dir',
                        help='keep the services\' logs there')
    parser.add_argument('--debug', action='store_true',
                        help='debug = true in every service')
    parser.add_argument('--private-database', action='store_true',
                        help='a MariaDB server of the cloud\'s own, which '
                             'can be restarted, instead of the machine\'s')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format='%(asctime)s %(message)s')
    # Ctrl-C stops the cloud even when started in the background of a
    # shell, which makes its children ignore SIGINT; SIGTERM and SIGHUP
    # stop it too (ironic_multi.testing._process).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    cloud = cloud_mod.Cloud(computes=args.computes, nodes=args.nodes,
                            log_dir=args.log_dir, debug=args.debug,
                            private_database=args.private_database)
    with cloud:
        print('\nThe cloud is up (%.0f s, %.0f MiB). In another shell:\n\n'
              '    export OS_CLIENT_CONFIG_FILE=%s OS_CLOUD=%s\n'
              '    export PATH=%s/bin:$PATH\n'
              '    openstack server create --flavor gold --image cirros '
              '--nic none --wait s1\n\n'
              'Clouds: %s (project admin), %s (project demo), %s (system '
              'scope, for "openstack baremetal"). Logs: %s\n'
              'Ctrl-C stops it.' % (
                  cloud.start_seconds, cloud.rss() / 2 ** 20,
                  cloud.clouds_yaml, cloud_mod.DEMO_CLOUD, cloud.venv,
                  cloud_mod.ADMIN_CLOUD, cloud_mod.DEMO_CLOUD,
                  cloud_mod.SYSTEM_CLOUD, cloud.log_dir), flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            print('Stopping the cloud...', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
