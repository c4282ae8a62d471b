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

"""Virtualenvs of the servers the tests start (Ironic, Keystone, a cloud).

Each server runs from a virtualenv of its own: its oslo.config options
collide with Nova's in one process, and its pins need not agree with
Nova's.  A venv is created once; a marker file holds the requirement list
it was built from, so a changed pin rebuilds it.

The ``cloud`` venv holds the OpenStack services of
:mod:`ironic_multi.testing.cloud` (Nova, Placement, Glance, Neutron, the
``openstack`` client, tempest) and ironic-multi's own requirements.  It
does not hold ironic-multi itself: the cloud's compute processes import
the code under test from the test's own environment (see
:mod:`ironic_multi.testing.cloud.overlay`), so a change to the driver
needs no rebuild.  Nova loads drivers from ``nova.virt`` only, so the
build adds the one-line shim ``nova/virt/ironic_multi.py``, and noVNC's
web client for nova-novncproxy (see :func:`novnc_web`).

Usage: ``python -m ironic_multi.testing.venvs KIND DIR`` builds the venv
of ``KIND`` (``ironic``, ``keystone`` or ``cloud``) in ``DIR`` and prints
the path of its server executable (pip's output goes to standard error).
"""

import fcntl
import glob
from importlib import metadata
import os
import shutil
import subprocess
import sys
import tempfile
import venv

# What each server venv holds, and the executable that proves it is built.
SERVERS = {
    'ironic': (('ironic==39.0.0', 'psycopg2-binary', 'PyMySQL'), 'ironic'),
    # Keystone ships no server of its own any more: its WSGI application
    # runs under waitress (pure Python, one process, threads).
    'keystone': (('keystone==30.0.0', 'waitress==3.0.2', 'psycopg2-binary',
                  'PyMySQL'), 'keystone-manage'),
    # These resolve together for Python 3.11 (shared/notes).  Keystone and
    # Ironic keep venvs of their own (the fixtures above build them).
    'cloud': (('nova==34.0.0', 'neutron==29.0.0', 'glance==33.0.0',
               'openstack-placement==16.0.0', 'cinder==29.0.0',
               'python-openstackclient',
               'osc-placement', 'networking-baremetal', 'tempest==47.0.0',
               'waitress==3.0.2', 'etcd3gw', 'SQLAlchemy<2.1',
               'psycopg2-binary', 'PyMySQL',
               # Nova's config drives (ironic_multi.testing.cloud.mkisofs).
               'pycdlib',
               # oslo.cache's stevedore loads every backend of its own at
               # a service's first request, and logs an ERROR for this
               # one's missing module.
               'python-memcached'), 'nova-compute'),
}
# What ``nova/virt/ironic_multi.py`` says in the cloud venv: the shim that
# ironic-multi's own package installs (see setup.cfg).
NOVA_SHIM = (
    '# Installed by ironic_multi.testing.venvs: nova.conf may say\n'
    '# compute_driver = ironic_multi.IronicMultiDriver.\n'
    'from ironic_multi._virt.driver import IronicMultiDriver  # noqa\n')
# Where the venvs live unless the environment says otherwise (tox points
# IRONIC_MULTI_<KIND>_VENV into its work directory).
DEFAULT_ROOT = os.path.join(
    os.environ.get('XDG_CACHE_HOME', os.path.expanduser('~/.cache')),
    'ironic-multi')
MARKER = 'ironic-multi-requirements.txt'
# noVNC's web client, which nova-novncproxy serves: no release of it is on
# PyPI, so Debian's package, as devstack installs it on Debian.
NOVNC_PACKAGE = 'novnc'


def default_path(kind):
    """``$IRONIC_MULTI_<KIND>_VENV``, or a directory in the user's cache."""
    return os.environ.get('IRONIC_MULTI_%s_VENV' % kind.upper(),
                          os.path.join(DEFAULT_ROOT, '%s-server' % kind))


def ensure_venv(kind, path=None):
    """Build the venv of ``kind`` unless it is current; return its server.

    Safe to call from parallel test runners: builds are serialized by a
    lock file next to the venv.
    """
    requirements, executable = SERVERS[kind]
    if kind == 'cloud':
        requirements = requirements + own_requirements()
    path = os.path.abspath(path or default_path(kind))
    server = os.path.join(path, 'bin', executable)
    marker = os.path.join(path, MARKER)
    wanted = '\n'.join(requirements) + '\n'
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(server) and _read(marker) == wanted:
            if kind == 'cloud' and novnc_web(path) is None:
                _install_novnc(path)
            return server
        print('Building the %s server venv in %s' % (kind, path),
              file=sys.stderr)
        _build(path, requirements)
        if kind == 'cloud':
            _install_nova_shim(path)
            _install_novnc(path)
        with open(marker, 'w') as f:
            f.write(wanted)
    return server


def _build(path, requirements):
    # The installer must see this venv only, not the caller's import path.
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    python = os.path.join(path, 'bin', 'python')
    uv = _uv()
    if uv is None:
        venv.EnvBuilder(clear=True, with_pip=True).create(path)
        command = [python, '-m', 'pip', 'install', '--quiet']
    else:
        # Seconds instead of a minute, when the test requirements have it.
        subprocess.run([uv, 'venv', '--quiet', '--clear', '--python',
                        sys.executable, path], env=env, check=True)
        # Compiled now, or every server start compiles the modules again
        # (PYTHONDONTWRITEBYTECODE, as tox sets it, keeps them uncached):
        # Keystone's imports took 3.5 s instead of 1.5 s.  pip compiles
        # by default.
        command = [uv, 'pip', 'install', '--quiet', '--compile-bytecode',
                   '--python', python]
    subprocess.run(command + list(requirements), stdout=sys.stderr, env=env,
                   check=True)


def own_requirements():
    """ironic-multi's requirements (without extras), from its metadata."""
    wanted = []
    for requirement in metadata.requires('ironic-multi') or ():
        if 'extra ==' not in requirement.replace('extra==', 'extra =='):
            wanted.append(requirement)
    return tuple(sorted(wanted))


def _install_nova_shim(path):
    python = os.path.join(path, 'bin', 'python')
    virt = subprocess.run(
        [python, '-c', 'import nova.virt, os; '
         'print(os.path.dirname(nova.virt.__file__))'],
        capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(virt, 'ironic_multi.py'), 'w') as f:
        f.write(NOVA_SHIM)


def novnc_web(path):
    """The noVNC web client's directory in the cloud venv, or None."""
    web = os.path.join(path, 'share', 'novnc')
    return web if os.path.exists(os.path.join(web, 'vnc_lite.html')) else None


def _install_novnc(path):
    """Unpack Debian's noVNC into the venv; without apt, say so."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(['apt-get', 'download', NOVNC_PACKAGE], cwd=tmp,
                           stdout=sys.stderr, stderr=subprocess.STDOUT,
                           check=True)
            (deb,) = glob.glob(os.path.join(tmp, '*.deb'))
            subprocess.run(['dpkg-deb', '-x', deb, tmp], check=True)
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            print('noVNC is not installed (%s): the cloud runs no '
                  'nova-novncproxy' % e, file=sys.stderr)
            return
        web = os.path.join(path, 'share', 'novnc')
        shutil.rmtree(web, ignore_errors=True)
        shutil.copytree(os.path.join(tmp, 'usr', 'share', 'novnc'), web,
                        symlinks=True)


def _uv():
    try:
        import uv
    except ImportError:
        return None
    return uv.find_uv_bin()


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2) or argv[0] not in SERVERS:
        sys.exit('usage: python -m ironic_multi.testing.venvs {%s} [DIR]'
                 % ','.join(sorted(SERVERS)))
    print(ensure_venv(*argv))


if __name__ == '__main__':
    main()
