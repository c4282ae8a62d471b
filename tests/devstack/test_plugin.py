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

"""The DevStack plugin (devstack/plugin.sh), sourced with DevStack stubbed.

``run.sh`` sources ``stubs.sh`` (DevStack's globals and functions, each
function logging its call and the INI ones editing real files), then
``devstack/settings``, then ``devstack/plugin.sh`` once per phase, in one
bash process as stack.sh, unstack.sh and clean.sh each do.  The tests read
the log and the files the plugin wrote.  They need bash and nothing else.
"""

import os
import pathlib
import re
import shutil
import subprocess

import pytest

from ironic_multi.conf import coordination as coordination_opts

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUN = HERE / 'run.sh'

STACK = ('stack:install', 'stack:post-config', 'n-cpu', 'stack:extra',
         'stack:test-config')
PHASES = ('stack install', 'stack post-config', 'stack extra',
          'stack test-config', 'unstack', 'clean')

# Nova 34's [filter_scheduler] enabled_filters default, less
# ComputeCapabilitiesFilter.
FILTERS = ('ComputeFilter,ImagePropertiesFilter,'
           'ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter')

# What DevStack's lib/nova_plugins/hypervisor-ironic leaves in nova.conf
# with VIRT_DRIVER=ironic, before the plugin's post-config phase.
IN_TREE_IRONIC_CONF = """\
[DEFAULT]
compute_driver = ironic.IronicDriver
debug = True

[ironic]
auth_type = password
username = admin
password = admin-secret
auth_url = http://192.0.2.10/identity
project_domain_id = default
user_domain_id = default
project_name = demo
api_max_retries = 300

[filter_scheduler]
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,SameHostFilter
"""

pytestmark = pytest.mark.skipif(shutil.which('bash') is None,
                                reason='needs bash')


def read_ini(path):
    """``{section: {option: value}}``, without configparser's DEFAULT."""
    sections = {}
    current = None
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(('#', ';')):
            continue
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1], {})
            continue
        option, sep, value = line.partition('=')
        assert sep and current is not None, line
        assert option.strip() not in current, 'duplicate %s' % line
        current[option.strip()] = value.strip()
    return sections


class Devstack(object):
    """A scratch DevStack host: /etc/nova, /opt/stack and a call log."""

    def __init__(self, root):
        self.root = root
        self.conf_dir = root / 'etc' / 'nova'
        self.nova_conf = self.conf_dir / 'nova.conf'
        self.cpu_conf = self.conf_dir / 'nova-cpu.conf'
        self.state_path = root / 'opt' / 'stack' / 'data' / 'nova'
        self.data_dir = root / 'opt' / 'stack' / 'data'
        self.log_path = root / 'calls.log'
        self.conf_dir.mkdir(parents=True)
        self.nova_conf.write_text(IN_TREE_IRONIC_CONF)

    def run(self, *steps, check=True, **settings):
        env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
               'STUB_ROOT': str(self.root)}
        env.update({k: str(v) for k, v in settings.items()})
        result = subprocess.run(['bash', str(RUN)] + list(steps), env=env,
                                capture_output=True, text=True, timeout=60)
        if check:
            assert result.returncode == 0, result.stderr[-3000:]
        return result

    def stack(self, **settings):
        return self.run(*STACK, **settings)

    def unstack(self, **settings):
        return self.run('unstack', **settings)

    def clean(self, **settings):
        return self.run('clean', **settings)

    @property
    def calls(self):
        """The logged calls, less is_service_enabled (too chatty)."""
        lines = self.log_path.read_text().splitlines()
        return [line for line in lines
                if not line.startswith('is_service_enabled ')]

    def calls_of(self, name):
        return [line for line in self.calls if line.split()[0] == name]

    def phase_calls(self, phase):
        """The calls made while the plugin ran ``phase``."""
        calls = []
        inside = False
        for line in self.calls:
            if line.startswith('== '):
                inside = line[3:] == phase
            elif inside:
                calls.append(line)
        return calls

    def extra_confs(self):
        return sorted(self.conf_dir.glob('nova-cpu-im*.conf'))

    def running(self):
        return sorted(p.name for p in (self.root / 'running').iterdir())


def index_of(calls, prefix):
    for i, line in enumerate(calls):
        if line.startswith(prefix):
            return i
    raise AssertionError('no call starting with %r in %s' % (prefix, calls))


@pytest.fixture
def devstack(tmp_path):
    return Devstack(tmp_path)


# nova.conf
# ---------

def test_post_config_writes_the_driver_options(devstack):
    devstack.stack()

    conf = read_ini(devstack.nova_conf)
    assert conf['DEFAULT']['compute_driver'] == (
        'ironic_multi.IronicMultiDriver')
    assert conf['DEFAULT']['debug'] == 'True'
    assert conf['ironic_multi'] == {
        'coordination_url': 'etcd3+http://192.0.2.10:2379',
        'coordination_group': 'ironic-multi',
        'membership_timeout': '30',
        'node_provider': 'ironic',
        'claim_timeout': '60',
        'fallback_shard_count': '64',
    }
    assert conf['filter_scheduler']['enabled_filters'] == FILTERS
    # DevStack's n-cpu runs with a copy made after post-config.
    assert read_ini(devstack.cpu_conf) == conf


# What the documentation tells operators to set in nova.conf.
NOVA_DOCS = ('install.rst', 'nova-settings.rst')
# Documented values that are the operator's own (their Keystone, their
# coordination backend, the user they chose): the plugin writes DevStack's.
SITE_SPECIFIC = {('ironic', 'auth_url'), ('ironic', 'username'),
                 ('ironic', 'password'),
                 ('ironic_multi', 'coordination_url')}
# Documented settings that DevStack owns; devstack/README.rst says why
# the plugin leaves them alone.
DEVSTACK_OWNS = {('oslo_messaging_rabbit', 'rabbit_quorum_queue')}


def documented_nova_settings():
    """``{(section, option): value}`` the docs tell operators to set.

    Every ``option = value`` under a ``[section]`` line of a literal block
    in :data:`NOVA_DOCS`; the block ends at a line indented less.
    """
    found = {}
    for name in NOVA_DOCS:
        section = indent = None
        for line in (ROOT / 'doc' / 'source' / name).read_text().splitlines():
            stripped = line.strip()
            depth = len(line) - len(line.lstrip())
            header = re.fullmatch(r'\[(\w+)\]', stripped)
            if header and depth:
                section, indent = header.group(1), depth
            elif section and stripped and depth < indent:
                section = None
            elif section and depth == indent and ' = ' in stripped:
                option, value = stripped.split(' = ', 1)
                assert found.get((section, option), value) == value, (
                    'the docs disagree on [%s] %s' % (section, option))
                found[section, option] = value
    return found


def test_post_config_writes_what_the_docs_tell_operators(devstack):
    documented = documented_nova_settings()
    # The parse found the driver, the scheduler's settings, the build
    # timeout and the broker's queues.
    assert {('DEFAULT', 'compute_driver'),
            ('filter_scheduler', 'enabled_filters'),
            ('filter_scheduler', 'build_failure_weight_multiplier'),
            ('filter_scheduler', 'shuffle_best_same_weighed_hosts'),
            ('compute', 'consecutive_build_service_disable_threshold'),
            ('DEFAULT', 'instance_build_timeout'),
            ('oslo_messaging_rabbit', 'rabbit_quorum_queue')} <= set(
                documented)

    devstack.stack()

    # The scheduler and the computes (n-cpu's copy and the extra ones,
    # which read it too) all have them.
    for path in (devstack.nova_conf, devstack.cpu_conf):
        conf = read_ini(path)
        for (section, option), value in sorted(documented.items()):
            written = conf.get(section, {}).get(option)
            if (section, option) in DEVSTACK_OWNS:
                assert written is None, (path, section, option)
            elif (section, option) in SITE_SPECIFIC:
                assert written, (path, section, option)
            else:
                assert written == value, (path, section, option)


def test_what_devstack_owns_is_explained():
    readme = (ROOT / 'devstack' / 'README.rst').read_text()
    left = readme.split('Left to DevStack\n', 1)[1].split('\nSettings\n')[0]
    for section, option in DEVSTACK_OWNS:
        assert '``[%s] %s``' % (section, option) in left


def test_ironic_auth_is_system_scoped_by_default(devstack):
    devstack.stack()

    # The in-tree driver's project scope and ids are gone: keystoneauth
    # refuses a token request with two scopes.
    assert read_ini(devstack.nova_conf)['ironic'] == {
        'auth_type': 'password',
        'auth_url': 'http://192.0.2.10/identity',
        'username': 'admin',
        'password': 'admin-secret',
        'user_domain_name': 'Default',
        'region_name': 'RegionOne',
        'valid_interfaces': 'internal,public',
        'system_scope': 'all',
        'api_max_retries': '300',
    }


def test_ironic_auth_project_scope(devstack):
    devstack.stack(IRONIC_MULTI_AUTH_SCOPE='project')

    ironic = read_ini(devstack.nova_conf)['ironic']
    assert 'system_scope' not in ironic
    assert {k: ironic[k] for k in ('username', 'password', 'project_name',
                                   'project_domain_name',
                                   'user_domain_name')} == {
        'username': 'nova', 'password': 'service-secret',
        'project_name': 'service', 'project_domain_name': 'Default',
        'user_domain_name': 'Default'}
    assert 'project_domain_id' not in ironic


def test_settings_from_local_conf(devstack):
    devstack.stack(IRONIC_MULTI_COORDINATION_URL='redis://192.0.2.20:6379',
                   IRONIC_MULTI_COORDINATION_GROUP='cell1',
                   IRONIC_MULTI_MEMBERSHIP_TIMEOUT=12,
                   IRONIC_MULTI_NODE_PROVIDER='static',
                   IRONIC_MULTI_CLAIM_TIMEOUT=7.5,
                   IRONIC_MULTI_USERNAME='ironic-multi',
                   IRONIC_MULTI_PASSWORD='pw',
                   IRONIC_MULTI_VALID_INTERFACES='public',
                   IRONIC_MULTI_SCHEDULER_FILTERS='ComputeFilter',
                   IRONIC_MULTI_INSTANCE_BUILD_TIMEOUT=0)

    conf = read_ini(devstack.nova_conf)
    assert conf['ironic_multi'] == {
        'coordination_url': 'redis://192.0.2.20:6379',
        'coordination_group': 'cell1',
        'membership_timeout': '12',
        'node_provider': 'static',
        'claim_timeout': '7.5',
        'fallback_shard_count': '64',
    }
    assert conf['ironic']['username'] == 'ironic-multi'
    assert conf['ironic']['password'] == 'pw'
    assert conf['ironic']['valid_interfaces'] == 'public'
    assert conf['filter_scheduler']['enabled_filters'] == 'ComputeFilter'
    assert conf['DEFAULT']['instance_build_timeout'] == '0'
    # Neither etcd3gw (not an etcd3 URL) nor shard keys (static provider).
    assert devstack.calls_of('pip_install_gr') == []
    assert devstack.calls_of('ironic-multi-manage') == []


def test_file_coordination_without_etcd3(devstack):
    devstack.stack(ENABLED_SERVICES='key,n-api,n-cpu,n-sch,ir-api')

    url = read_ini(devstack.nova_conf)['ironic_multi']['coordination_url']
    assert url == 'file://%s/ironic-multi/coordination' % devstack.data_dir
    assert devstack.calls_of('pip_install_gr') == []


def test_filters_are_novas_defaults_without_capabilities():
    scheduler = pytest.importorskip('nova.conf.scheduler')
    [opt] = [o for o in scheduler.filter_scheduler_opts
             if o.name == 'enabled_filters']
    expected = [f for f in opt.default if f != 'ComputeCapabilitiesFilter']
    assert 'ComputeCapabilitiesFilter' in opt.default
    assert FILTERS.split(',') == expected


# K compute services
# ------------------

@pytest.mark.parametrize('computes', [1, 2, 4])
def test_k_computes_get_k_hosts(devstack, computes):
    devstack.stack(IRONIC_MULTI_COMPUTES=computes)

    # DevStack's n-cpu keeps the default host, the hostname.
    assert 'host' not in read_ini(devstack.nova_conf)['DEFAULT']
    hosts = ['stackhost']
    confs = devstack.extra_confs()
    assert [c.name for c in confs] == [
        'nova-cpu-im%d.conf' % i for i in range(2, computes + 1)]
    for conf in confs:
        default = read_ini(conf)['DEFAULT']
        hosts.append(default['host'])
        assert default['state_path'] == str(
            devstack.state_path / default['host'])
        assert (devstack.state_path / default['host']).is_dir()
    assert len(hosts) == len(set(hosts)) == computes

    # K-1 extra services, each with nova-cpu.conf then its own file.
    started = [c for c in devstack.phase_calls('stack extra')
               if c.startswith('run_process ')]
    assert started == [
        'run_process n-cpu-im{i} {bin}/nova-compute --config-file {cpu} '
        '--config-file {conf}'.format(i=i, bin=devstack.root / 'bin',
                                      cpu=devstack.cpu_conf,
                                      conf=devstack.conf_dir /
                                      ('nova-cpu-im%d.conf' % i))
        for i in range(2, computes + 1)]
    assert devstack.running() == sorted(
        ['n-cpu'] + ['n-cpu-im%d' % i for i in range(2, computes + 1)])
    # Each waited for, by its host.
    polled = [c.split('--host ')[1].split()[0]
              for c in devstack.calls_of('openstack')
              if ' compute service list ' in c]
    assert polled == hosts[1:]


def test_extra_computes_need_n_cpu(devstack):
    devstack.stack(ENABLED_SERVICES='key,n-api,n-sch,etcd3,ir-api')

    assert len(devstack.extra_confs()) == 1
    assert devstack.calls_of('run_process') == ['run_process n-cpu %s' % (
        '%s/nova-compute --config-file %s' % (devstack.root / 'bin',
                                              devstack.cpu_conf))]
    assert devstack.running() == []


def test_waits_for_the_extra_computes_to_register(devstack):
    devstack.stack(STUB_COMPUTE_REGISTER_AFTER=3)

    extra = devstack.phase_calls('stack extra')
    polls = [c for c in extra if ' compute service list ' in c]
    assert len(polls) == 4
    assert [c for c in extra if c.startswith('sleep')] == ['sleep 1'] * 3


def test_dies_when_an_extra_compute_never_registers(devstack):
    result = devstack.run(*STACK, check=False,
                          STUB_COMPUTE_REGISTER_AFTER='never',
                          IRONIC_MULTI_COMPUTE_TIMEOUT=5)

    assert result.returncode != 0
    [die] = devstack.calls_of('die')
    assert 'stackhost-im2 did not register within 5s' in die
    # One poll a second until the deadline.  The stub's sleep moves bash's
    # clock on, but real time moves it too: a second that ticks during
    # the polls themselves brings the deadline one sleep earlier.
    sleeps = devstack.calls_of('sleep')
    assert set(sleeps) == {'sleep 1'}
    assert len(sleeps) in (4, 5)
    # The phase stopped there: test-config never ran.
    assert '== stack test-config' not in devstack.calls


def test_restack_with_fewer_computes_drops_stale_files(devstack):
    devstack.stack(IRONIC_MULTI_COMPUTES=3)
    devstack.unstack(IRONIC_MULTI_COMPUTES=3)
    devstack.stack(IRONIC_MULTI_COMPUTES=2)

    assert [c.name for c in devstack.extra_confs()] == ['nova-cpu-im2.conf']
    # unstack.sh with K lowered in local.conf stops what runs all the same.
    devstack.stack(IRONIC_MULTI_COMPUTES=3)
    devstack.unstack(IRONIC_MULTI_COMPUTES=1)
    assert devstack.running() == ['n-cpu']


# Shards and nodes
# ----------------

def test_extra_assigns_shards_with_the_count(devstack):
    devstack.stack()

    assert devstack.calls_of('ironic-multi-manage') == [
        'ironic-multi-manage --config-file %s shards assign --count 64 --yes'
        % devstack.cpu_conf]

    devstack.stack(IRONIC_MULTI_SHARD_COUNT=32)
    assert devstack.calls_of('ironic-multi-manage')[-1].endswith(
        'shards assign --count 32 --yes')
    # The services place unsharded nodes under the same keys.
    conf = read_ini(devstack.nova_conf)
    assert conf['ironic_multi']['fallback_shard_count'] == '32'


def test_the_default_shard_count_follows_the_sizing_guide(devstack):
    # sizing.rst: several keys per service, the default
    # fallback_shard_count of 64.
    default = next(o.default for o in coordination_opts.OPTS
                   if o.name == 'fallback_shard_count')
    sizing = (ROOT / 'doc' / 'source' / 'sizing.rst').read_text()
    assert ('default\n``fallback_shard_count`` of %d' % default) in sizing

    devstack.stack()

    assert devstack.calls_of('ironic-multi-manage')[-1].endswith(
        'shards assign --count %d --yes' % default)
    assert read_ini(devstack.nova_conf)['ironic_multi'][
        'fallback_shard_count'] == str(default)


def test_shard_count_zero_assigns_none(devstack):
    devstack.stack(IRONIC_MULTI_SHARD_COUNT=0)

    assert devstack.calls_of('ironic-multi-manage') == []


def test_no_fake_nodes_by_default(devstack):
    devstack.stack()

    assert not [c for c in devstack.calls_of('openstack')
                if ' baremetal ' in c]


def test_enrolls_fake_hardware_nodes(devstack):
    devstack.stack(IRONIC_MULTI_FAKE_NODES=3,
                   IRONIC_MULTI_RESOURCE_CLASS='gold')

    baremetal = [c.split(' baremetal ', 1)[1]
                 for c in devstack.calls_of('openstack')
                 if ' baremetal ' in c]
    expected = []
    for i in range(1, 4):
        uuid = '00000000-0000-4000-8000-%012d' % i
        expected += [
            'node create --driver fake-hardware --resource-class gold '
            '--name ironic-multi-fake-%d --property cpus=2 '
            '--property memory_mb=4096 --property local_gb=50 '
            '-f value -c uuid' % i,
            'node manage --wait 0 %s' % uuid,
            'node provide --wait 0 %s' % uuid,
            'node power off %s' % uuid,
        ]
    assert baremetal == expected
    for call in devstack.calls_of('openstack'):
        if ' baremetal ' in call:
            assert call.startswith(
                'openstack --os-cloud devstack-system-admin '
                '--os-region-name RegionOne baremetal ')


# Phases
# ------

def test_phases_in_order(devstack):
    devstack.stack(IRONIC_MULTI_FAKE_NODES=1)
    devstack.unstack()
    devstack.clean()

    markers = [c[3:] for c in devstack.calls
               if c.startswith('== ') and c != '== source settings']
    assert markers == [
        'stack install', 'stack post-config', 'devstack start_nova_compute',
        'stack extra', 'stack test-config', 'unstack', 'clean']

    install = devstack.phase_calls('stack install')
    assert install == [
        'echo_summary Installing ironic-multi',
        'git_clone https://opendev.org/x/ironic-multi.git %s master'
        % (devstack.root / 'opt' / 'stack' / 'ironic-multi'),
        'setup_develop %s' % (devstack.root / 'opt' / 'stack' /
                              'ironic-multi'),
        'pip_install_gr etcd3gw',
        'xtrace set +o xtrace',
    ]

    post_config = devstack.phase_calls('stack post-config')
    assert post_config[0] == 'echo_summary Configuring ironic-multi'
    assert {c.split()[0] for c in post_config[1:-1]} == {
        'iniset', 'inidelete'}
    # nova.conf first, then the extra compute's file.
    assert (index_of(post_config, 'iniset %s filter_scheduler'
                     % devstack.nova_conf)
            < index_of(post_config, 'iniset %s DEFAULT host'
                       % (devstack.conf_dir / 'nova-cpu-im2.conf')))
    # Scope first removed, then set: the last word on [ironic] wins.
    assert (index_of(post_config, 'inidelete %s ironic project_domain_id'
                     % devstack.nova_conf)
            < index_of(post_config, 'iniset %s ironic system_scope all'
                       % devstack.nova_conf))

    # Nodes, then shard keys for them, then the computes that use them.
    extra = devstack.phase_calls('stack extra')
    steps = [index_of(extra, p) for p in (
        'echo_summary Enrolling 1 fake nodes',
        'openstack --os-cloud devstack-system-admin --os-region-name '
        'RegionOne baremetal node create',
        'openstack --os-cloud devstack-system-admin --os-region-name '
        'RegionOne baremetal node power off',
        'echo_summary Assigning 64 shard keys',
        'ironic-multi-manage ',
        'echo_summary Starting the extra ironic-multi computes',
        'run_process n-cpu-im2 ',
        'openstack --os-cloud devstack-admin --os-region-name RegionOne '
        'compute service list --service nova-compute --host stackhost-im2',
    )]
    assert steps == sorted(steps)

    assert devstack.phase_calls('stack test-config') == [
        'xtrace set +o xtrace']
    assert devstack.phase_calls('unstack') == [
        'stop_process n-cpu-im2', 'xtrace set +o xtrace']


def test_unstack_stops_and_clean_removes_the_extra_computes(devstack):
    devstack.stack(IRONIC_MULTI_COMPUTES=3,
                   ENABLED_SERVICES='key,n-api,n-cpu,n-sch,ir-api')
    coordination = devstack.data_dir / 'ironic-multi' / 'coordination'
    coordination.mkdir(parents=True)
    (coordination / 'group').write_text('members')
    assert devstack.running() == ['n-cpu', 'n-cpu-im2', 'n-cpu-im3']

    devstack.unstack(IRONIC_MULTI_COMPUTES=3)
    assert devstack.calls_of('stop_process') == [
        'stop_process n-cpu-im2', 'stop_process n-cpu-im3']
    assert devstack.running() == ['n-cpu']  # DevStack's own to stop
    assert len(devstack.extra_confs()) == 2

    devstack.clean(IRONIC_MULTI_COMPUTES=3)
    assert devstack.extra_confs() == []
    assert not (devstack.state_path / 'stackhost-im2').exists()
    assert not (devstack.state_path / 'stackhost-im3').exists()
    assert not (devstack.data_dir / 'ironic-multi').exists()
    # DevStack's own files are DevStack's to remove.
    assert devstack.nova_conf.exists()
    assert devstack.cpu_conf.exists()


def test_clean_leaves_a_coordination_url_from_local_conf(devstack):
    elsewhere = devstack.root / 'shared-coordination'
    elsewhere.mkdir()
    url = 'file://%s' % elsewhere
    devstack.stack(IRONIC_MULTI_COORDINATION_URL=url)
    devstack.unstack(IRONIC_MULTI_COORDINATION_URL=url)
    devstack.clean(IRONIC_MULTI_COORDINATION_URL=url)

    assert elsewhere.is_dir()


def test_disabled_service_does_nothing(devstack):
    devstack.stack(DISABLED_SERVICES='ironic-multi')
    devstack.unstack(DISABLED_SERVICES='ironic-multi')
    devstack.clean(DISABLED_SERVICES='ironic-multi')

    assert devstack.nova_conf.read_text() == IN_TREE_IRONIC_CONF
    for phase in PHASES:
        assert devstack.phase_calls(phase) == ['xtrace set +o xtrace']
    assert devstack.calls_of('run_process') == [
        c for c in devstack.calls_of('run_process')
        if c.startswith('run_process n-cpu ')]


def test_settings_enable_the_service_and_nothing_else(devstack):
    devstack.run()

    assert devstack.calls == [
        '== source settings',
        'define_plugin ironic-multi',
        'plugin_requires ironic-multi ironic',
        'enable_service ironic-multi',
    ]


@pytest.mark.parametrize('name,value', [
    ('IRONIC_MULTI_COMPUTES', 0),
    ('IRONIC_MULTI_COMPUTES', 'two'),
    ('IRONIC_MULTI_SHARD_COUNT', -1),
    ('IRONIC_MULTI_FAKE_NODES', 'x'),
    ('IRONIC_MULTI_INSTANCE_BUILD_TIMEOUT', '1h'),
    ('IRONIC_MULTI_AUTH_SCOPE', 'domain'),
])
def test_bad_settings_die(devstack, name, value):
    result = devstack.run('stack:install', check=False, **{name: value})

    assert result.returncode != 0
    [die] = devstack.calls_of('die')
    assert name in die
    assert devstack.calls_of('git_clone') == []


def test_xtrace_is_restored(devstack):
    # run.sh logs ``set +o | grep xtrace`` after each phase: the plugin
    # turns tracing on for itself and back off when it is done.
    devstack.stack()
    devstack.unstack()
    devstack.clean()

    xtrace = [c for c in devstack.calls if c.startswith('xtrace ')]
    assert xtrace == ['xtrace set +o xtrace'] * len(PHASES)
