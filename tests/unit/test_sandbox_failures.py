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

"""The sandbox's failures: checked before the start, reported by cause."""

import argparse
import contextlib
import time
import types
from unittest import mock

import fixtures
import pytest

from ironic_multi._sandbox import preflight
from ironic_multi._sandbox import run
from ironic_multi._sandbox import scenario
from ironic_multi.cmd import sandbox


class _Display(object):
    """Display's interface, printing nothing."""

    class _Phase(object):
        def done(self, status=None):
            pass

    def phase(self, description, total=None):
        return self._Phase()

    def say(self, text, *args):
        pass


def _fail(error):
    raise error


def test_a_failing_clean_up_does_not_hide_the_first_cause():
    services = run._Services(_Display())
    # What --coordination-url bogus://x used to do: the group's clean-up
    # failed on the same URL, and its error replaced the cause.
    services.callback(_fail, RuntimeError('the clean-up failed'))
    with pytest.raises(ValueError, match='the cause'):
        with services:
            raise ValueError('the cause')
    assert [str(e) for e in services.cleanup_errors] == [
        'the clean-up failed']


def test_a_failing_clean_up_is_the_failure_when_nothing_else_failed():
    services = run._Services(_Display())
    services.callback(_fail, RuntimeError('the clean-up failed'))
    with pytest.raises(RuntimeError, match='the clean-up failed'):
        with services:
            pass


def test_the_first_cause_of_a_fixture_that_failed_to_start():
    class Broken(fixtures.Fixture):
        def _setUp(self):
            raise ValueError('no tooz driver')

    with pytest.raises(fixtures.MultipleExceptions) as raised:
        Broken().setUp()
    cause = run.first_cause(raised.value)
    assert isinstance(cause, ValueError)
    assert str(cause) == 'no tooz driver'
    plain = KeyError('x')
    assert run.first_cause(plain) is plain


@pytest.mark.parametrize('url, expected', [
    ('bogus://x', 'bogus://x: no tooz driver for "bogus" (installed: '),
    # Nothing listens on port 1; the password is not shown.
    ('redis://:s3cret@127.0.0.1:1',
     'redis://:***@127.0.0.1:1: cannot connect to 127.0.0.1:1: '
     'Connection refused'),
    ('etcd3+http://127.0.0.1:1', 'etcd3+http://127.0.0.1:1: cannot '
     'connect to 127.0.0.1:1: Connection refused'),
])
def test_a_coordination_url_that_cannot_work_is_one_line(url, expected,
                                                         capsys):
    started = time.monotonic()
    with pytest.raises(SystemExit) as exited:
        sandbox.main(['--coordination-url', url])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ''
    assert err.startswith('ironic-multi-sandbox: error: --coordination-url '
                          + expected)
    assert len(err.splitlines()) == 1
    assert 's3cret' not in err
    # Refused or unknown at once: nothing was started, nothing waited.
    assert time.monotonic() - started < preflight.CHECK_TIMEOUT


def test_the_embedded_default_needs_no_check():
    preflight.check_coordination('file')
    preflight.check_coordination(None)


class _Reserver(object):
    """What the ring check reads of a compute service's reserver."""

    def __init__(self, owner, started):
        self.ring = types.SimpleNamespace(owner=lambda shard: owner)
        self.membership = types.SimpleNamespace(started=started)


def _scenario(reservers):
    args = argparse.Namespace(seed=1, timeout=-1,
                              nova_log='/srv/out/nova.log')
    layout = types.SimpleNamespace(shards=['rack-1', 'rack-2'])
    scene = scenario.Scenario(args, layout, _Display(), time.monotonic)
    scene.nova = types.SimpleNamespace(
        computes={host: host for host in reservers},
        driver_of=lambda compute: types.SimpleNamespace(
            reserver=reservers[compute]))
    scene.live = frozenset(reservers)
    scene.results['coordination'] = {
        'url': 'redis://:***@127.0.0.1:6379', 'group': 'sandbox-1234abcd'}
    return scene


def test_a_ring_that_never_agrees_names_the_services_outside_the_group():
    # Each service alone in a ring of its own: two never joined the group
    # (a backend that does not answer them).
    scene = _scenario({'compute1': _Reserver('compute1', True),
                       'compute2': _Reserver('compute2', False),
                       'compute3': _Reserver('compute3', False)})

    with pytest.raises(scenario.SandboxError) as raised:
        scene.stop_compute()

    assert str(raised.value) == (
        'the compute services do not agree on the shard ring: compute2, '
        'compute3 not in coordination group sandbox-1234abcd at '
        'redis://:***@127.0.0.1:6379 (see /srv/out/nova.log)')


def test_a_ring_that_disagrees_within_the_group_names_no_one():
    scene = _scenario({'compute1': _Reserver('compute1', True),
                       'compute2': _Reserver('compute2', True)})

    with pytest.raises(scenario.SandboxError) as raised:
        scene.stop_compute()

    assert str(raised.value) == (
        'the compute services do not agree on the shard ring')


def test_wave_2_waits_for_the_survivors_to_report_what_moved():
    # .ci/run saw wave 2 fail with NoValidHost: posted the moment the
    # adoptions ended, before the survivor reported the moved keys' nodes
    # and traits to placement.
    calls = []
    scene = _scenario({})
    scene.sampler = mock.Mock()
    scene.nova = mock.Mock()
    scene.nova.refresh_capacity.side_effect = (
        lambda hosts: calls.append(('refresh_capacity', hosts)))
    scene.live = frozenset({'compute1'})
    scene.args.sample_period = scene.args.resource_interval = 1
    for step in ('start_ironic', 'enroll', 'start_nova', 'create_flavors',
                 'delete_some', 'settle', 'collect'):
        setattr(scene, step, mock.Mock())
    scene.start_coordination = mock.Mock(return_value=('file://x', 'g'))
    scene.stop_compute = lambda: calls.append('stop_compute')
    scene.boot_wave = lambda index: calls.append(('boot_wave', index))
    with mock.patch.object(scenario.worker_mod, 'Worker'), \
            mock.patch.object(scenario.sampler_mod, 'Sampler'):
        scene.run(contextlib.ExitStack())
    assert calls == [('boot_wave', 0), 'stop_compute',
                     ('refresh_capacity', ['compute1']), ('boot_wave', 1)]


# -- where it runs ------------------------------------------------------------

def _where(argv, missing, monkeypatch, capsys):
    monkeypatch.setattr(preflight, 'cloud_missing', lambda: list(missing))
    args = sandbox.parser().parse_args(argv)
    chosen = sandbox._on_cloud(args, preflight)
    return chosen, capsys.readouterr().err


@pytest.mark.parametrize('argv, missing, cloud', [
    # The cloud when the machine has what it needs.
    ([], [], True),
    (['--db', 'mysql'], [], True),
    # In this process when asked, or when an option only it has is used.
    (['--in-process'], [], False),
    (['--coordination-url', 'redis'], [], False),
    (['--db', 'sqlite'], [], False),
])
def test_the_cloud_is_the_default(argv, missing, cloud, monkeypatch,
                                  capsys):
    chosen, err = _where(argv, missing, monkeypatch, capsys)
    assert chosen is cloud
    assert err == ''


def test_without_what_the_cloud_needs_it_runs_in_process_and_says_so(
        monkeypatch, capsys):
    chosen, err = _where([], ['etcd (Debian package etcd-server)'],
                         monkeypatch, capsys)
    assert chosen is False
    assert 'needs etcd (Debian package etcd-server)' in err
    assert len(err.splitlines()) == 1


def test_cloud_asked_for_without_what_it_needs_is_an_error(monkeypatch,
                                                           capsys):
    with pytest.raises(SystemExit) as exited:
        _where(['--cloud'], ['mariadbd (Debian package mariadb-server)'],
               monkeypatch, capsys)
    assert exited.value.code == 2
    assert '--cloud needs mariadbd' in capsys.readouterr().err


def test_this_machine_has_what_the_cloud_needs():
    # The CI machine runs the cloud tests: nothing may be missing here.
    assert preflight.cloud_missing() == []
