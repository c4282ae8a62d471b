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

"""One multi-process cloud for the whole session (it takes a minute).

The modules that start a cloud of their own (a sandbox, the in-tree
cloud) run first, before the session's cloud starts: on 2 cores a second
cloud beside the idle one started slower and missed its bounds.

pytest tears it down on failures and on Ctrl-C; the fixture's own safety
net covers SIGTERM, SIGHUP and a killed test runner.  The services' logs
go to ``$IRONIC_MULTI_CLOUD_LOG_DIR`` when it is set (tox sets it), and
stay there after the run.
"""

import os
import shutil

import pytest

from ironic_multi.testing.cloud import Cloud

COMPUTES = 3
NODES = 24


def pytest_collection_modifyitems(items):
    # A stable sort: the tests of the session's cloud keep their order.
    items.sort(key=lambda item: 'cloud' in item.fixturenames)


@pytest.fixture(scope='session')
def cloud(record_testsuite_property):
    log_dir = os.environ.get('IRONIC_MULTI_CLOUD_LOG_DIR')
    if log_dir:
        shutil.rmtree(log_dir, ignore_errors=True)
        os.makedirs(log_dir)
    # Everything the fault tests need: a database of the cloud's own (it
    # can be restarted), the computes' fault proxy to Ironic, and each
    # compute's own link to etcd (a partition cuts one).
    with Cloud(computes=COMPUTES, nodes=NODES, log_dir=log_dir,
               private_database=True, ironic_proxy=True,
               coordination_proxies=True) as cloud:
        rss = cloud.rss()
        print('\ncloud: started in %.1f s (%s), RSS %.0f MiB over %d '
              'process groups (%s)' % (
                  cloud.start_seconds,
                  ', '.join('%s %.1f s' % item
                            for item in cloud.phases.items()),
                  rss / 2 ** 20, len(cloud.pids()),
                  ', '.join('%s %.0f' % (name, size / 2 ** 20) for name, size
                            in sorted(cloud.rss(per_process=True).items()))))
        record_testsuite_property('cloud_start_seconds',
                                  round(cloud.start_seconds, 1))
        record_testsuite_property('cloud_rss_mib', round(rss / 2 ** 20))
        yield cloud
    print('\ncloud: stopped in %.1f s' % (cloud.stop_seconds or 0))


@pytest.fixture
def servers(cloud):
    """Server ids a test created: deleted after it, their nodes cleaned."""
    created = []
    yield created
    admin = cloud.connection()
    for server_id in created:
        admin.compute.delete_server(server_id, ignore_missing=True)
    cloud.wait_for_deleted(created)
    held = cloud.held_nodes()
    leaked = {s: held[s] for s in created if s in held}
    assert not leaked, 'nodes still held by deleted servers: %s' % leaked
    # The next test starts with every freed node cleaned and counted.
    cloud.wait_for_nodes_at_rest()
