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

"""ironic-multi-manage tells what it read, and what it waits for."""

import time
import uuid

import pytest

from ironic_multi._manage import sources
from ironic_multi.cmd import manage


def _run(capsys, *argv):
    capsys.readouterr()
    code = manage.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_without_a_configuration_file_it_says_where_it_looked(
        capsys, monkeypatch, tmp_path):
    # A project name no file on this machine has: the real search finds
    # nothing.
    monkeypatch.setattr(sources, 'PROJECT', 'nova-%s' % uuid.uuid4().hex)
    monkeypatch.setenv('HOME', str(tmp_path))

    code, out, err = _run(capsys, 'ring show')

    assert code == 1 and out == ''
    assert len(err.splitlines()) == 1, err
    assert err.startswith('No configuration file found: looked for ')
    for directory in ('%s/.%s/' % (tmp_path, sources.PROJECT),
                      '%s/' % tmp_path, '/etc/%s/' % sources.PROJECT,
                      '/etc/'):
        assert directory in err
    assert 'Pass the file nova-compute runs with: --config-file' in err


def test_missing_ironic_credentials_name_the_files_read(capsys, tmp_path):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[ironic_multi]\ncoordination_group = g\n')

    code, _out, err = _run(capsys, '--config-file', str(conf),
                           'reservations list')

    assert code == 1
    assert err.strip() == (
        'No [ironic] auth_type in %s: set the [ironic] options nova-compute '
        'uses (auth_type = password, auth_url and credentials), or '
        'auth_type = none and endpoint_override for an Ironic without '
        'Keystone' % conf)


def test_a_bad_option_is_refused_in_one_line_as_by_nova_compute(
        capsys, tmp_path):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[ironic_multi]\nhousekeeping_interval = 5\n')

    code, _out, err = _run(capsys, '--config-file', str(conf),
                           'reservations list')

    assert code == 1
    assert err == ('Invalid configuration: [ironic_multi] '
                   'housekeeping_interval must be at least 10 (in %s)\n'
                   % conf)


def test_shards_assign_is_refused_with_an_in_tree_shard(capsys, tmp_path):
    # Keys for the nodes without one would not bring them in.
    conf = tmp_path / 'nova.conf'
    conf.write_text('[ironic]\nshard = s1\n')

    code, _out, err = _run(capsys, '--config-file', str(conf),
                           'shards assign', '--dry-run')

    assert code == 1
    assert err.startswith('The services serve only the nodes of [ironic] '
                          'shard s1: ')
    assert len(err.splitlines()) == 1


def test_verbose_says_what_it_read(capsys, tmp_path):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[ironic_multi]\ncoordination_group = g\n')

    _code, _out, err = _run(capsys, '-v', '--config-file', str(conf),
                            'reservations list')

    assert 'Read the configuration from %s' % conf in err


@pytest.mark.parametrize('wait, attempts', [('5', 3), ('1.5', 1)])
def test_an_unreachable_ironic_is_waited_for_within_wait(
        capsys, tmp_path, wait, attempts):
    # Nothing listens on port 1: each attempt is refused at once, and the
    # retries (every 2 s) stop at the bound instead of after 60 of them.
    conf = tmp_path / 'nova.conf'
    conf.write_text('[ironic]\nauth_type = none\n'
                    'endpoint_override = http://127.0.0.1:1\n')

    started = time.monotonic()
    code, _out, err = _run(capsys, '--wait', wait, '--config-file',
                           str(conf), 'reservations list')
    elapsed = time.monotonic() - started

    assert code == 1
    lines = err.strip().splitlines()
    error = lines.pop()
    assert error.startswith('Ironic is unavailable: GET / failed after '
                            '%d attempt(s)' % attempts)
    assert error.endswith('(waited %s s for Ironic at http://127.0.0.1:1; '
                          '--wait raises the bound)' % wait)
    # A wait of more than 2 s says what it waits for, while it waits.
    announced = ['Warning: Waiting up to %s s for Ironic at '
                 'http://127.0.0.1:1 (--wait raises the bound)' % wait]
    assert lines == (announced if float(wait) > 2 else [])
    # Bounded by --wait, not by 60 retries of 2 s (about 2 minutes).
    assert elapsed < 60


def test_the_default_wait_is_short():
    assert sources.DEFAULT_WAIT <= 15
    assert manage.app.ManageApp().build_option_parser(
        'd', '1').parse_args([]).wait == sources.DEFAULT_WAIT
