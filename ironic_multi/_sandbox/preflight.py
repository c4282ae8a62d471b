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


"""What the sandbox checks before it starts anything.

A wrong ``--coordination-url`` used to start Ironic, enroll nodes and
boot Nova's services before it failed (minutes, on a server that does
not answer), with an error that did not name the URL.  It is checked
here first: one line naming the URL (without its password) and the
cause.
"""

import shutil

from ironic_multi.testing import nova_threads

# Seconds the coordination backend gets to answer the check.
CHECK_TIMEOUT = 5


class PreflightError(Exception):
    """A setting that cannot work; its text is the one line to print."""


def cloud_missing():
    """What the multi-process cloud needs and this machine lacks.

    ``[what (Debian package)]``, empty when the cloud can run: the broker,
    etcd and MariaDB's server (the cloud runs each of its own).
    """
    from ironic_multi.testing.cloud import database
    from ironic_multi.testing.cloud import rabbitmq

    missing = []
    for what, found in (
            ('rabbitmq-server (Debian package rabbitmq-server)',
             _found(rabbitmq.server_path)),
            ('etcd (Debian package etcd-server)',
             shutil.which('etcd') is not None),
            ('mariadbd (Debian package mariadb-server)',
             _found(lambda: (database.server_path(),
                             database.installer_path())))):
        if not found:
            missing.append(what)
    return missing


def _found(lookup):
    try:
        lookup()
    except Exception:
        return False
    return True


def check_coordination(wanted, timeout=CHECK_TIMEOUT):
    """Check ``--coordination-url``; raise PreflightError if it cannot work.

    ``file`` (the default) needs nothing; ``etcd`` needs the etcd binary;
    ``redis`` is the local Redis; anything else is a tooz URL whose
    backend must answer within ``timeout`` seconds.
    """
    if wanted in (None, '', 'file'):
        return
    if wanted == 'etcd':
        if shutil.which('etcd') is None:
            raise PreflightError('etcd: etcd is not installed (Debian '
                                 'package etcd-server)')
        return
    # tooz imports eventlet: Nova must choose its threads first.
    nova_threads.choose()
    from ironic_multi._reservation import membership
    from ironic_multi import exception
    from ironic_multi.testing import coordination

    url = coordination.REDIS_URL if wanted == 'redis' else wanted
    try:
        membership.check_backend(url, timeout)
    except exception.ConfigInvalid as e:
        raise PreflightError('%s: %s' % (e.url, e.cause))
    except exception.CoordinationUnavailable as e:
        raise PreflightError('%s: %s' % (e.url, e.reason))
