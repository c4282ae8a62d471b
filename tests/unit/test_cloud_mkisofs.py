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

"""The cloud's mkisofs: config drives Ironic can read as genisoimage's."""

import os
import subprocess
import sys

import pycdlib

from ironic_multi.testing.cloud import mkisofs

FILES = {
    'openstack/latest/network_data.json': b'{"links": []}',
    'openstack/2012-08-10/meta_data.json': b'{"uuid": "i-1"}',
    'openstack/content/0000': b'injected',
    'ec2/latest/meta-data.json': b'{}',
}


def _source(tmp_path):
    source = tmp_path / 'drive'
    for path, data in FILES.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_bytes(data)
    return source


def _read(iso, **path):
    with iso.open_file_from_iso(**path) as f:
        return f.read()


def test_nova_s_arguments_build_a_drive_ironic_reads(tmp_path):
    output = tmp_path / 'drive.iso'
    # Nova's ConfigDriveBuilder, word for word.
    assert mkisofs.main([
        '-o', str(output), '-ldots', '-allow-lowercase', '-allow-multidot',
        '-l', '-publisher', 'OpenStack Compute 34.0.0', '-quiet', '-J', '-r',
        '-V', 'config-2', str(_source(tmp_path))]) == 0
    iso = pycdlib.PyCdlib()
    iso.open(str(output))
    try:
        # As Ironic's conductor asks (configdrive_utils): ISO 9660 names
        # in full, with a version.
        assert _read(iso, iso_path='/openstack/latest/network_data.json;1'
                     ) == FILES['openstack/latest/network_data.json']
        for path, data in FILES.items():
            assert _read(iso, rr_path='/' + path) == data
            assert _read(iso, joliet_path='/' + path) == data
        assert iso.pvd.volume_identifier.rstrip() == b'config-2'
    finally:
        iso.close()


def test_the_installed_command_runs_with_the_given_python(tmp_path):
    command = mkisofs.install(str(tmp_path), sys.executable)
    assert os.access(command, os.X_OK)
    output = tmp_path / 'drive.iso'
    subprocess.run([command, '-o', str(output), '-J', '-r', '-V',
                    'config-2', str(_source(tmp_path))], check=True,
                   timeout=60)
    iso = pycdlib.PyCdlib()
    iso.open(str(output))
    try:
        assert _read(iso, rr_path='/openstack/content/0000') == b'injected'
    finally:
        iso.close()


def test_installing_again_leaves_the_running_command_alone(tmp_path):
    # Every compute's configuration installs it: a compute added later
    # must not rewrite the file another compute may be running.
    command = mkisofs.install(str(tmp_path), sys.executable)
    before = os.stat(command)
    assert mkisofs.install(str(tmp_path), sys.executable) == command
    assert os.stat(command).st_ino == before.st_ino
    assert os.stat(command).st_mtime_ns == before.st_mtime_ns
    # Another python: replaced whole, never written in place.
    mkisofs.install(str(tmp_path), '/usr/bin/python3')
    assert os.stat(command).st_ino != before.st_ino
    assert not os.path.exists(command + '.new')
