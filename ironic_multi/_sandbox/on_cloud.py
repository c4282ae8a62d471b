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

"""The sandbox's scenario on the multi-process cloud (``--cloud``).

The same phases, report and chart as the in-process sandbox, over
:class:`ironic_multi.testing.cloud.Cloud`: every service a process of
its own, driven through its REST APIs with openstacksdk.  What differs
is behind :class:`CloudNova`, which answers the few calls the scenario
makes of Nova's in-process services; the ring comes from
``ironic-multi-manage ring show``, and a compute is stopped with SIGTERM
as an operator's service manager does.
"""

import time

from nova.tests.functional.api import client as api_client

from ironic_multi._sandbox import scenario as scenario_mod
from ironic_multi.testing import checks
from ironic_multi.testing.cloud import cloud as cloud_mod
from ironic_multi.testing.cloud import nova as cloud_nova
from ironic_multi.testing import ironic_nodes
from ironic_multi.testing import nova_services

COMPUTE_MICROVERSION = '2.95'
# --db: auto, a MariaDB of the cloud's own; mysql, the machine's MariaDB;
# postgresql, the machine's PostgreSQL for Keystone and Ironic (the others
# stay on MariaDB: Neutron's migrations support no other).
CLOUD_DB_KINDS = {'auto': None, 'mysql': 'mysql', 'postgresql': 'postgresql'}
# PUT /os-services/{id} with forced_down.
FORCE_DOWN_MICROVERSION = '2.53'


class _NotFound(api_client.OpenStackApiNotFoundException):
    def __init__(self, message):
        Exception.__init__(self, message)


class _Api(object):
    """The calls of Nova's test API client the scenario makes, over REST."""

    def __init__(self, connection):
        self._compute = connection.compute

    def _get(self, path):
        answer = self._compute.get(path, microversion=COMPUTE_MICROVERSION)
        if answer.status_code == 404:
            raise _NotFound(path)
        answer.raise_for_status()
        return answer.json()

    def get_server(self, server_id):
        return self._get('/servers/%s' % server_id)['server']

    def delete_server(self, server_id):
        self._compute.delete('/servers/%s' % server_id,
                             microversion=COMPUTE_MICROVERSION)

    def get_instance_actions(self, server_id):
        return self._get('/servers/%s/os-instance-actions'
                         % server_id)['instanceActions']

    def get_instance_action_details(self, server_id, request_id):
        return self._get('/servers/%s/os-instance-actions/%s' % (
            server_id, request_id))['instanceAction']


class CloudNova(object):
    """What the scenario asks of Nova, answered by the real cloud."""

    def __init__(self, cloud, shared=True):
        self.cloud = cloud
        admin = cloud.connection(shared=shared)
        self.api = _Api(admin)
        self._demo = cloud.connection(cloud_mod.DEMO_CLOUD,
                                      shared=shared).compute
        self._placement = admin.placement
        self.start_seconds = cloud.start_seconds

    # Nova's own periodic tasks run in the computes: nothing to drive.
    def update_available_resource(self, host):
        pass

    def wait_for_servers(self, servers, timeout=None):
        pass

    def refresh_capacity(self, hosts=None):
        # Two reports of every compute: the first publishes, the second
        # reads every member's counts.
        time.sleep(2 * self.cloud.update_resources_interval + 1)

    def post_servers(self, count, flavor_id, name, image_uuid):
        body = {'server': {'name': name, 'flavorRef': flavor_id,
                           'imageRef': image_uuid, 'networks': 'none'}}
        answers = []
        for _ in range(count):
            answer = self._demo.post('/servers', json=body,
                                     microversion=COMPUTE_MICROVERSION)
            answer.raise_for_status()
            answers.append(answer.json()['server'])
        return answers

    build_attempts = nova_services.NovaServicesCase.build_attempts

    def stop_compute(self, host):
        self.cloud.stop(self.cloud.compute_service(host))

    def force_down(self, host):
        compute = self.cloud.connection().compute
        (service,) = compute.get(
            '/os-services?host=%s&binary=nova-compute' % host,
            microversion=FORCE_DOWN_MICROVERSION).json()['services']
        compute.put('/os-services/%s' % service['id'],
                    json={'forced_down': True},
                    microversion=FORCE_DOWN_MICROVERSION).raise_for_status()

    # -- placement ---------------------------------------------------

    def _placement_get(self, path):
        answer = self._placement.get(path)
        answer.raise_for_status()
        return answer.json()

    def _get_provider_uuid_by_host(self, host):
        (provider,) = self._placement_get(
            '/resource_providers?name=%s' % host)['resource_providers']
        return provider['uuid']

    def _get_provider_inventory(self, provider):
        return self._placement_get('/resource_providers/%s/inventories'
                                   % provider)['inventories']

    def _get_provider_usages(self, provider):
        return self._placement_get('/resource_providers/%s/usages'
                                   % provider)['usages']

    def server_allocation(self, server_id):
        allocations = self._placement_get('/allocations/%s'
                                          % server_id)['allocations']
        return {rp: a['resources'] for rp, a in allocations.items()}


class CloudScenario(scenario_mod.Scenario):
    """:class:`~.scenario.Scenario` on a multi-process cloud."""

    SERVICES = 'the cloud\'s processes'
    VICTIM = 'compute-2'

    def __init__(self, args, layout, display, clock):
        super().__init__(args, layout, display, clock)
        self.logs = args.cloud_log_dir
        self.cloud = self._sampler_nova = None

    def run(self, stack):
        self.start_cloud(stack)
        self.sampler = stack.enter_context(scenario_mod.sampler_mod.Sampler(
            self.read_sample, self.args.sample_period, self.clock))
        self.boot_wave(0)
        self.stop_compute()
        self.boot_wave(1)
        self.delete_some()
        self.settle()
        self.collect()

    def start_cloud(self, stack):
        computes = self.layout.computes
        phase = self.display.phase('A cloud of processes, %d computes'
                                   % computes)
        cloud = self.cloud = stack.enter_context(cloud_mod.Cloud(
            computes=computes, layout=self.layout,
            db_kind=CLOUD_DB_KINDS[self.args.db],
            private_database=self.args.db == 'auto',
            log_dir=self.args.cloud_log_dir))
        self.processes = cloud.pids()
        self.server = cloud.ironic_server
        self.ironic = cloud.ironic
        self.nova = CloudNova(cloud)
        self.flavor_ids = dict(cloud.flavors)
        self.image = cloud.image_id
        self.results['ironic'] = {
            'endpoint': self.server.endpoint, 'pid': self.server.pid,
            'database': self.server.db_kind,
            'config_path': self.server.config_path,
            'start_seconds': round(self.server.start_seconds, 1)}
        self.results['nova'] = {'start_seconds': round(cloud.start_seconds,
                                                       1),
                                'log': cloud.log_dir}
        self.results['coordination'] = {'url': cloud.coordination_url,
                                        'group': cloud.coordination_group}
        self.results['cloud'] = {
            'start_seconds': round(cloud.start_seconds, 1),
            'phases': dict(cloud.phases),
            'rss_mib': round(cloud.rss() / 2 ** 20),
            'clouds_yaml': cloud.clouds_yaml, 'logs': cloud.log_dir}
        self.providers = {host: self.nova._get_provider_uuid_by_host(host)
                          for host in cloud.computes}
        self.live = frozenset(self.providers)
        self.project_id = cloud.connection(
            cloud_mod.DEMO_CLOUD).current_project_id
        phase.done('%s in %.1f s, %.0f MiB' % (
            ', '.join(sorted(self.live)), cloud.start_seconds,
            self.results['cloud']['rss_mib']))
        self.display.say(
            'Keystone, Placement, Nova (API, conductor, scheduler, %d '
            'computes with compute_driver = %s), Glance, Neutron, Ironic, '
            'RabbitMQ and etcd, each a process; logs in %s', computes,
            cloud_nova.COMPUTE_DRIVER, cloud.log_dir)

    # -- the ring, as the operator CLI sees it ------------------------

    def _owners(self, hosts):
        rows = self.cloud.manage('ring', 'show', host=sorted(hosts)[0])
        owners = {shard: row['Host'] for row in rows
                  for shard in row['Shard Keys']}
        if set(owners) != set(self.layout.shards):
            return None
        return owners

    def _ring_left(self, victim, survivors, owners):
        return victim not in owners.values()

    def _why_apart(self):
        return ' (see the computes\' logs in %s)' % self.cloud.log_dir

    def _stop_computes(self):
        # The cloud stops its processes, computes first.
        pass

    def _choose_victim(self, owners):
        victim = super()._choose_victim(owners)
        if victim not in self.live:
            raise scenario_mod.SandboxError('no compute to stop')
        return victim

    def read_sample(self):
        # The sampler's thread has clients of its own.
        if self._sampler_nova is None:
            self._sampler_nodes = ironic_nodes.admin_nodes(self.server)
            self._sampler_nova = CloudNova(self.cloud, shared=False)
        truth = checks.ironic_truth(self.read_ironic(self._sampler_nodes))
        return {'ironic': truth,
                'placement': self.read_placement(self._sampler_nova)}

    # -- a kept cloud (--keep) ----------------------------------------

    def manage_options(self):
        cloud = self.cloud
        return {'ironic': cloud.keystone.ironic_options('system'),
                'ironic_multi': {
                    'coordination_url': cloud.coordination_url,
                    'coordination_group': cloud.coordination_group,
                    'membership_timeout': cloud.membership_timeout,
                    'pool_refresh_interval': cloud.pool_refresh_interval}}

    def describe_cloud(self):
        cloud = self.cloud
        return [
            'The cloud stays up: every service a process (logs in %s), '
            'compute services %s up.  Use it with the openstack client, '
            'from another terminal:' % (cloud.log_dir,
                                        ', '.join(sorted(self.live))),
            '    export OS_CLIENT_CONFIG_FILE=%s OS_CLOUD=%s' % (
                cloud.clouds_yaml, cloud_mod.DEMO_CLOUD),
            '    export PATH=%s/bin:$PATH' % cloud.venv,
            '    openstack server create --flavor %s --image cirros '
            '--nic none --wait s1' % self._roomiest_flavor()]

    def _roomiest_flavor(self):
        """The flavor with the most free nodes now: its boot will work."""
        nodes = [n for n in self.read_ironic()
                 if not n.get('instance_uuid') and not n.get('owner')
                 and n.get('provision_state') == 'available'
                 and not n.get('maintenance')]
        return max(self.layout.flavors, key=lambda f: (
            sum(1 for n in nodes if f.matches(n)), f.name == 'gold')).name
