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

"""Keystone for the tests, run by the Keystone venv's python.

    python _keystone_app.py setup CONFIG_FILE PUBLIC_URL REGION
    python _keystone_app.py serve PORT

``setup`` runs ``keystone-manage`` db_sync, fernet_setup, credential_setup
and bootstrap (admin password from ``OS_BOOTSTRAP_PASSWORD``), as devstack
does, but in one process: importing Keystone takes seconds, so four
``keystone-manage`` runs would take four times that.

``serve`` imports Keystone's WSGI application (``keystone.wsgi.api``, which
reads ``OS_KEYSTONE_CONFIG_DIR`` and ``OS_KEYSTONE_CONFIG_FILES``) and runs
it under waitress on 127.0.0.1:PORT.  It imports what it can at once, then
waits for a line ``go`` on standard input before building the application
(which needs the keys that ``setup`` writes): the two processes import in
parallel.  End of input instead of ``go`` makes it exit.
"""

import grp
import os
import pwd
import sys


def setup(config_file, public_url, region):
    from keystone.cmd import cli
    from keystone.conf import CONF

    owner = ['--keystone-user', pwd.getpwuid(os.getuid()).pw_name,
             '--keystone-group', grp.getgrgid(os.getgid()).gr_name]
    for args in (['db_sync'],
                 ['fernet_setup'] + owner,
                 ['credential_setup'] + owner,
                 ['bootstrap', '--bootstrap-region-id', region,
                  '--bootstrap-public-url', public_url,
                  '--bootstrap-internal-url', public_url]):
        # cli.main parses the command line into the global CONF; clearing
        # it lets the next command parse its own.
        CONF.clear()
        cli.main(['keystone-manage', '--config-file', config_file] + args)


def serve(port):
    # oslo.config parses sys.argv when Keystone configures itself.
    del sys.argv[1:]
    from keystone.server.flask import application  # noqa: F401
    import keystone.server.wsgi  # noqa: F401
    import waitress

    if sys.stdin.readline().strip() != 'go':
        sys.exit('setup failed or was interrupted; not serving')
    from keystone.wsgi import api
    waitress.serve(api.application, host='127.0.0.1', port=port, threads=4)


def main(argv):
    if argv[1] == 'setup':
        setup(*argv[2:])
    elif argv[1] == 'serve':
        serve(int(argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
