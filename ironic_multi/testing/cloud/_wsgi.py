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

"""Serve an OpenStack WSGI application under waitress.

    python _wsgi.py MODULE:ATTRIBUTE PORT THREADS [ARG...]

Run by the cloud venv's python.  waitress is a multi-threaded production
WSGI server (pure Python, one process), as deployments run these
applications under uWSGI, mod_wsgi or gunicorn.  ``waitress-serve`` itself
cannot be used: the applications parse ``sys.argv`` when they load
(Neutron's does), and would choke on waitress's options; here the
arguments are removed first.  Each application finds its configuration
through its own environment variables (``OS_NOVA_CONFIG_DIR``...), or
from the ``ARG`` s, which become its command line (Cinder's
``--config-file``).
"""

import importlib
import sys

# Not this script's directory: its modules (placement.py...) would hide
# the services' packages.
del sys.path[0]


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    target, port, threads = argv[1], int(argv[2]), int(argv[3])
    module_name, attribute = target.split(':')
    sys.argv[1:] = argv[4:]
    application = getattr(importlib.import_module(module_name), attribute)
    import waitress
    waitress.serve(application, host='127.0.0.1', port=port, threads=threads,
                   ident=module_name)


if __name__ == '__main__':
    main(sys.argv)
