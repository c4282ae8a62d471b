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

"""A bad configuration stops nova-compute in one line, with exit status 2.

``tests/functional/test_config_compat.py`` runs a real nova-compute.
"""

import logging
import sys

import pytest

from ironic_multi._virt import driver
from ironic_multi._virt import startup
from ironic_multi import exception
from tests.unit.virt import fakes


def refusal(capsys, function, *args):
    with pytest.raises(SystemExit) as info:
        function(*args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return err


def test_the_constructor_refuses_contradicting_options(conf, capsys):
    # Before the service registers: nova-compute makes the driver first.
    conf.config(conductor_group='rack-1', group='ironic')
    conf.config(conductor_group='rack-2', group='ironic_multi')
    err = refusal(capsys, driver.IronicMultiDriver, None)
    assert err == (
        "ironic-multi cannot start: Invalid configuration: [ironic] "
        "conductor_group ('rack-1') and [ironic_multi] conductor_group "
        "('rack-2') disagree: set one of them, they mean the same here\n")


def test_the_constructor_honours_the_in_tree_conductor_group(conf):
    conf.config(conductor_group='rack-1', group='ironic')
    driver.IronicMultiDriver(None, reserver=fakes.FakeReserver())
    assert conf.conf.ironic_multi.conductor_group == 'rack-1'


@pytest.mark.parametrize('error', [
    exception.ConfigInvalid(reason='the coordination URL is refused'),
    exception.ProviderNotFound(name='nope', known='ironic, static'),
])
def test_init_host_refuses_what_the_reservation_layer_finds(capsys, error):
    reserver = fakes.FakeReserver()
    reserver.errors['start'] = error
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    err = refusal(capsys, drv.init_host, fakes.HOST)
    assert err == 'ironic-multi cannot start: %s\n' % error


def test_other_errors_of_init_host_are_not_configuration(capsys):
    reserver = fakes.FakeReserver()
    reserver.errors['start'] = exception.IronicUnavailable(reason='down')
    drv = driver.IronicMultiDriver(None, reserver=reserver)
    with pytest.raises(exception.IronicUnavailable):
        drv.init_host(fakes.HOST)


def test_the_line_is_written_once_where_the_log_is_stderr(capsys):
    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        err = refusal(capsys, startup.refuse,
                      exception.ConfigInvalid(reason='bad'))
    finally:
        root.removeHandler(handler)
    assert err == 'ironic-multi cannot start: Invalid configuration: bad\n'
