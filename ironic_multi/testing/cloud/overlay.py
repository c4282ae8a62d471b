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

"""The code under test, for the cloud's processes.

The cloud venv has Nova and ironic-multi's requirements but not
ironic-multi: a venv built once would keep an old copy while the driver
changes.  Instead every process of the cloud gets, first on its
``PYTHONPATH``, a directory holding

- ``ironic_multi``: a link to the package this test process imported
  (the working tree's code, or the wheel tox just built from it);
- ``ironic_multi-<version>.dist-info``: its ``METADATA`` and
  ``entry_points.txt``, so that stevedore finds the node providers and
  the manage commands.

The venv's ``nova/virt/ironic_multi.py`` shim (see
:mod:`ironic_multi.testing.venvs`) imports the driver from there.
"""

from importlib import metadata
import os

import ironic_multi

DISTRIBUTION = 'ironic-multi'


def make(directory):
    """Fill ``directory`` (made if missing); return it."""
    os.makedirs(directory, exist_ok=True)
    package = os.path.dirname(os.path.abspath(ironic_multi.__file__))
    link = os.path.join(directory, 'ironic_multi')
    if not os.path.islink(link):
        os.symlink(package, link)
    dist = metadata.distribution(DISTRIBUTION)
    info = os.path.join(directory, '%s-%s.dist-info' % (
        DISTRIBUTION.replace('-', '_'), dist.version))
    os.makedirs(info, exist_ok=True)
    # An egg-info (a source tree pbr built in) says PKG-INFO.
    files = {'METADATA': dist.read_text('METADATA')
             or dist.read_text('PKG-INFO'),
             'entry_points.txt': dist.read_text('entry_points.txt')}
    for name, text in files.items():
        if text is not None:
            with open(os.path.join(info, name), 'w') as f:
                f.write(text)
    return directory


def package_path():
    """Where the code under test lives."""
    return os.path.dirname(os.path.abspath(ironic_multi.__file__))
