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

"""The end-to-end sandbox on embedded defaults.

Usage: sandbox.py [--keep]

Starts a real Ironic (fake hardware; the local PostgreSQL if one listens,
else SQLite), enrolls a small mixed fleet through its API, and runs two
reservation participants (``sandbox-1`` and ``sandbox-2``) in threads of
this process on ``file://`` coordination.  It shows how they share the
shard keys, what their ready pools and the cluster hold, claims nodes for
a few instances (one of which nothing can serve), deploys one of them
through Ironic, releases everything and checks that Ironic is exactly as
it started.  The last line is ``sandbox OK``; any failure exits non-zero.

``--keep`` leaves Ironic running afterwards, until Ctrl-C.
"""

import argparse
import concurrent.futures
import sys
import tempfile
import threading
import time
import traceback
import uuid
import warnings

# futurist imports eventlet, which warns on import; nothing here uses it.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from keystoneauth1 import session as ks_session  # noqa: E402

from ironic_multi.conf import CONF  # noqa: E402
from ironic_multi import exception  # noqa: E402
from ironic_multi.ironic import client  # noqa: E402
from ironic_multi.reservation.backends import ironic as backend_mod  # noqa
from ironic_multi.reservation import requirements as reqs  # noqa: E402
from ironic_multi.reservation import reserver as reserver_mod  # noqa: E402
from ironic_multi.testing import ironic_nodes  # noqa: E402
from ironic_multi.testing import ironic_server  # noqa: E402

HOSTS = ('sandbox-1', 'sandbox-2')
# Two shard keys that the ring gives one to each host, so that both the
# own pool and the other host's shards get used.
RACKS = ('rack-a', 'rack-b')
GPU = 'CUSTOM_GPU'
# (name prefix, resource class, traits) per rack.
FLEET = (('gold', 'gold', (GPU,)), ('gold', 'gold', ()),
         ('gold', 'gold', ()), ('silver', 'silver', ()),
         ('silver', 'silver', ()))
IMAGE = 'http://images.example.com/sandbox/ubuntu-24.04.qcow2'
DEPLOY_TIMEOUT = 60


def flavor(resource_class, *traits):
    specs = {'resources:CUSTOM_%s' % resource_class.upper(): '1'}
    specs.update(('trait:%s' % t, 'required') for t in traits)
    return {'extra_specs': specs}


# (instance, participant, flavor): in this order, one at a time.  The
# second GPU instance finds the own GPU node taken and gets the other
# host's; the last one cannot be served anywhere.
CLAIMS = (
    ('vm-gpu-1', 'sandbox-1', flavor('gold', GPU)),
    ('vm-gold-1', 'sandbox-1', flavor('gold')),
    ('vm-gold-2', 'sandbox-2', flavor('gold')),
    ('vm-silver-1', 'sandbox-2', flavor('silver')),
    ('vm-gpu-2', 'sandbox-1', flavor('gold', GPU)),
    ('vm-silver-gpu', 'sandbox-2', flavor('silver', GPU)),
)


class SandboxError(Exception):
    """Something is not as it must be."""


def section(title):
    print('\n== %s ==' % title, flush=True)


def table(headers, rows, indent='  '):
    rows = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows))
              for i, h in enumerate(headers)]
    for row in [headers] + rows:
        print(indent + '  '.join(str(cell).ljust(width) for cell, width
                                 in zip(row, widths)).rstrip())
    print(end='', flush=True)


def _request(requirements):
    """``gold +CUSTOM_GPU``: the class and the required traits."""
    resource_class = requirements.resource_class or 'any class'
    if resource_class.startswith(reqs.CUSTOM):
        resource_class = resource_class[len(reqs.CUSTOM):].lower()
    return ' '.join([resource_class] + ['+' + t for t in sorted(
        requirements.required_traits)])


def _capacity(capacity):
    return ', '.join('%s %d free of %d' % (rc, c['free'], c['total'])
                     for rc, c in sorted(capacity.items())) or 'nothing'


class Sandbox(object):

    def __init__(self, server, coordination_dir):
        self.server = server
        self.ironic = ironic_nodes.IronicNodes(server)
        self.coordination_dir = coordination_dir
        self.names = {}       # node UUID -> name
        self.instances = {}   # instance UUID -> instance name
        self.reservers = {}   # host -> Reserver
        self.claimed = {}     # instance name -> node UUID

    # -- fleet and participants -------------------------------------------

    def enroll(self):
        section('Fleet, enrolled through the Ironic API')
        for rack in RACKS:
            for prefix, resource_class, traits in FLEET:
                node, = self.ironic.enroll_nodes(
                    1, resource_class=resource_class, traits=traits,
                    shard=rack, name_prefix='%s-%s' % (prefix, rack[-1]))
                self.names[node] = None
        nodes = self.ironic.list_nodes(
            fields=('uuid', 'name', 'resource_class', 'shard', 'traits',
                    'provision_state', 'power_state'))
        for node in nodes:
            self.names[node['uuid']] = node['name']
        table(('node', 'class', 'shard', 'traits', 'state', 'power'),
              [(n['name'], n['resource_class'], n['shard'],
                ','.join(n['traits']) or '-', n['provision_state'],
                n['power_state'])
               for n in sorted(nodes, key=lambda n: n['name'])])
        return self.ironic.snapshot()

    def start_participants(self):
        section('Participants')
        CONF.set_override('coordination_url',
                          'file://' + self.coordination_dir,
                          group='ironic_multi')
        CONF.set_override('coordination_group', 'sandbox',
                          group='ironic_multi')
        for host in HOSTS:
            api = client.IronicAPI(CONF, session=ks_session.Session(),
                                   endpoint=self.server.endpoint)
            backend = backend_mod.IronicBackend(CONF, api=api)
            self.reservers[host] = reserver_mod.Reserver(
                CONF, host=host, backend=backend)
        # Each joins and refreshes its pool in the background, as a
        # compute service would.
        with concurrent.futures.ThreadPoolExecutor(len(HOSTS)) as pool:
            list(pool.map(lambda r: r.start(), self.reservers.values()))
        # The first to start saw itself alone: everyone reads the ring
        # again now that all have joined.
        self.refresh()
        for host, reserver in self.reservers.items():
            print('  %s  member %s, sees %s' % (
                host, reserver.membership.member_id,
                ', '.join(sorted(reserver.ring.hosts))))
        print('  coordination  %s' % CONF.ironic_multi.coordination_url)

    def refresh(self):
        for reserver in self.reservers.values():
            reserver.refresh()

    # -- what the participants see ------------------------------------------

    def show_ring(self):
        section('Shard ring (who owns which shard key)')
        owners = {}
        for host, reserver in self.reservers.items():
            for shard in reserver.owned_shards():
                owners.setdefault(shard, []).append(host)
        rows = []
        for shard in RACKS:
            hosts = owners.get(shard, [])
            if len(hosts) != 1:
                raise SandboxError('shard %s is owned by %s, not by one '
                                   'host' % (shard, hosts or 'nobody'))
            rows.append((shard, hosts[0]))
        table(('shard', 'owner'), rows)

    def show_pools(self):
        section('Ready pools (pool debug)')
        rows = []
        for host, reserver in self.reservers.items():
            pool = reserver.backend.pool.describe()
            rows.append((host, ','.join(pool['shards']) or '-',
                         pool['nodes'], pool['ready'],
                         _capacity(pool['capacity'])))
        table(('participant', 'shards', 'nodes', 'ready', 'capacity'), rows)

    def show_capacity(self, when):
        views = {host: r.cluster_capacity()
                 for host, r in self.reservers.items()}
        first = views[HOSTS[0]]
        if any(view != first for view in views.values()):
            raise SandboxError('participants disagree on the cluster '
                               'capacity: %s' % views)
        print('  cluster capacity %s: %s' % (when, _capacity(first)))

    # -- claims, deploy, release ----------------------------------------------

    def claim_all(self):
        section('Claims')
        rows, failed = [], []
        for name, host, request in CLAIMS:
            instance = str(uuid.uuid4())
            self.instances[instance] = name
            reserver = self.reservers[host]
            requirements = reqs.Requirements.from_request(request)
            started = time.monotonic()
            try:
                reservation = reserver.claim(instance, requirements)
            except exception.NoNodeAvailable as e:
                rows.append((name, host, _request(requirements), '-', '-',
                             type(e).__name__))
                failed.append((name, e))
                continue
            seconds = time.monotonic() - started
            self._check_claim(instance, reservation)
            self.claimed[name] = reservation.node_uuid
            owner = reserver.ring.owner(reservation.shard)
            where = 'own' if owner == host else '%s\'s' % owner
            rows.append((name, host, _request(requirements),
                         self.names[reservation.node_uuid],
                         '%s (%s)' % (reservation.shard, where),
                         'claimed, %.2f s' % seconds))
        table(('instance', 'via', 'request', 'node', 'shard', 'result'),
              rows)
        if [name for name, _e in failed] != [CLAIMS[-1][0]]:
            raise SandboxError('expected only %s to fail, failed: %s'
                               % (CLAIMS[-1][0], failed or 'none'))
        name, error = failed[0]
        print('\n  %s gets the typed error on which Nova reschedules:\n'
              '    %s: %s' % (name, type(error).__name__, error))
        nodes = list(self.claimed.values())
        if len(set(nodes)) != len(nodes):
            raise SandboxError('a node was given twice: %s' % self.claimed)

    def _check_claim(self, instance, reservation):
        node = self.ironic.get_node(reservation.node_uuid,
                                    fields=('instance_uuid',))
        if node['instance_uuid'] != instance:
            raise SandboxError(
                'node %s was claimed for %s, but Ironic shows instance %s'
                % (reservation.node_uuid, instance, node['instance_uuid']))

    def show_nodes(self, title):
        section(title)
        nodes = self.ironic.list_nodes(
            fields=('uuid', 'name', 'shard', 'provision_state',
                    'instance_uuid'))
        table(('node', 'shard', 'state', 'instance_uuid', 'instance'),
              [(n['name'], n['shard'], n['provision_state'],
                n['instance_uuid'] or '-',
                self.instances.get(n['instance_uuid'], '-'))
               for n in sorted(nodes, key=lambda n: n['name'])])

    def deploy(self, name):
        node = self.claimed[name]
        api = self.reservers[HOSTS[0]].api
        section('Deploy %s on %s through Ironic' % (name, self.names[node]))
        api.patch_node(node, [{'op': 'add', 'path': '/instance_info',
                               'value': {'image_source': IMAGE}}])
        print('  instance_info image_source = %s' % IMAGE)
        self._provision(api, node, 'active', 'active')
        self._provision(api, node, 'deleted', 'available')
        after = self.ironic.get_node(node, fields=('instance_uuid',))
        print('  instance_uuid after undeploy: %s'
              % (after['instance_uuid'] or '- (Ironic cleared it)'))

    def _provision(self, api, node, target, expected):
        started = time.monotonic()
        api.set_provision_state(node, target)
        self.ironic.wait_for_node(node, timeout=DEPLOY_TIMEOUT,
                                  provision_state=expected,
                                  target_provision_state=None)
        print('  provision %-8s -> %-9s in %.1f s'
              % (target, expected, time.monotonic() - started))

    def release_all(self):
        section('Release')
        hosts = dict((name, host) for name, host, _flavor in CLAIMS)
        rows = []
        for instance, name in self.instances.items():
            released = self.reservers[hosts[name]].release(instance)
            rows.append((name, hosts[name],
                         self.names.get(released.node_uuid, '-')
                         if released else 'nothing held'))
            # Idempotent: a second release finds nothing.
            if self.reservers[hosts[name]].release(instance) is not None:
                raise SandboxError('releasing %s twice released twice'
                                   % name)
        table(('instance', 'via', 'released node'), rows)

    def stop(self):
        for reserver in self.reservers.values():
            reserver.stop()


def compare(before, after):
    if before == after:
        print('  Ironic is as it started: %d nodes (state, power, '
              'instance_uuid, allocation, maintenance), %d allocations'
              % (len(after['nodes']), len(after['allocations'])))
        return
    for key in before:
        old = {i['uuid']: i for i in before[key]}
        new = {i['uuid']: i for i in after[key]}
        for item in sorted(set(old) | set(new)):
            if old.get(item) != new.get(item):
                print('  %s %s: %s -> %s' % (key, item, old.get(item),
                                             new.get(item)))
    raise SandboxError('Ironic is not as it started')


def run(args):
    started = time.monotonic()
    section('Ironic')
    with ironic_server.IronicServer() as server, \
            tempfile.TemporaryDirectory(prefix='sandbox-coord-') as coord:
        print('  Ironic API %s at %s, database %s, fake hardware '
              '(started in %.1f s)' % (ironic_server.API_VERSION,
                                       server.endpoint, server.db_kind,
                                       server.start_seconds))
        sandbox = Sandbox(server, coord)
        try:
            before = sandbox.enroll()
            sandbox.start_participants()
            sandbox.show_ring()
            sandbox.show_pools()
            section('Cluster capacity (published by every member)')
            sandbox.show_capacity('before the claims')
            sandbox.claim_all()
            sandbox.refresh()
            sandbox.show_capacity('after the claims')
            sandbox.show_nodes('Nodes in Ironic')
            sandbox.deploy('vm-gpu-1')
            sandbox.release_all()
            section('Check')
            compare(before, sandbox.ironic.snapshot())
        finally:
            sandbox.stop()
        print('\nsandbox OK (%.1f s)' % (time.monotonic() - started),
              flush=True)
        if args.keep:
            keep(server)


def keep(server):
    print('\nIronic keeps running at %s (noauth); Ctrl-C stops it.\n'
          '  curl -H "X-OpenStack-Ironic-API-Version: %s" %s/v1/nodes'
          % (server.endpoint, ironic_server.API_VERSION, server.endpoint),
          flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print('\nStopping Ironic.')


def main(argv=None):
    parser = argparse.ArgumentParser(
        description='End-to-end sandbox: a real Ironic with fake hardware, '
                    'nodes claimed and released by two participants.')
    parser.add_argument('--keep', action='store_true',
                        help='leave Ironic running until Ctrl-C')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    CONF([], project='ironic-multi', default_config_files=[],
         default_config_dirs=[])
    try:
        run(args)
    except (SandboxError, exception.IronicMultiError,
            ironic_server.IronicServerError,
            ironic_nodes.IronicRequestError, AssertionError) as e:
        print('\nsandbox FAILED: %s: %s' % (type(e).__name__, e),
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('\nsandbox interrupted', file=sys.stderr)
        return 130
    except Exception as e:
        # Not one of ours: the traceback is what a bug report needs.
        traceback.print_exc()
        print('\nsandbox FAILED: %s: %s' % (type(e).__name__, e),
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
