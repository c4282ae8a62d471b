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

"""The cloud's ``mkisofs_cmd``: config drives named as genisoimage names them.

Nova builds a config drive with ``genisoimage -l -allow-lowercase
-allow-multidot -J -r``: full ISO 9660 names with a version
(``network_data.json;1``), Rock Ridge and Joliet.  Ironic's conductor
reads ``/openstack/latest/network_data.json;1`` to check the drive's
network data.  pycdlib's own work-alike ignores ``-l``: it names that file
``NETWORK_.JSO;1`` (or, at ISO level 4, without the version), so Ironic
found no network data, logged an ERROR and checked nothing.

:func:`install` writes the command a compute's ``mkisofs_cmd`` names.
"""

import argparse
import contextlib
import os
import sys

# Nova's flags that change nothing here: the names are always as above.
_FLAGS = ('-ldots', '-allow-lowercase', '-allow-multidot', '-l', '-quiet',
          '-J', '-r')


def build(output, source, volume_id):
    """Write the ISO image of directory ``source`` to ``output``."""
    import pycdlib  # the cloud venv's; not a requirement of the package

    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=4, rock_ridge='1.09', joliet=3,
            vol_ident=volume_id)
    for directory, subdirectories, files in os.walk(source):
        subdirectories.sort()
        relative = os.path.relpath(directory, source)
        parent = '' if relative == '.' else '/' + relative.replace(os.sep,
                                                                   '/')
        for name in subdirectories:
            path = '%s/%s' % (parent, name)
            iso.add_directory(path, rr_name=name, joliet_path=path)
        for name in sorted(files):
            path = '%s/%s' % (parent, name)
            iso.add_file(os.path.join(directory, name), path + ';1',
                         rr_name=name, joliet_path=path)
    iso.write(output)
    iso.close()


def install(directory, python):
    """Write ``mkisofs`` for the cloud's ``python`` there; its path."""
    path = os.path.join(directory, 'mkisofs')
    script = ('#!%s\n'
              'import sys\n'
              'from ironic_multi.testing.cloud import mkisofs\n'
              'sys.exit(mkisofs.main())\n' % python)
    with contextlib.suppress(FileNotFoundError), open(path) as f:
        if f.read() == script:
            # Each compute's configuration asks; a compute added later
            # must not rewrite it under another's running build.
            return path
    # Whole or not at all: a compute may run the old one meanwhile.
    partial = path + '.new'
    with open(partial, 'w') as f:
        f.write(script)
    os.chmod(partial, 0o755)
    os.replace(partial, path)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(prog='mkisofs', allow_abbrev=False)
    parser.add_argument('-o', dest='output', required=True)
    parser.add_argument('-V', dest='volume_id', default='')
    parser.add_argument('-publisher', default=None)
    for flag in _FLAGS:
        parser.add_argument(flag, action='store_true')
    parser.add_argument('source')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    build(args.output, args.source, args.volume_id)
    return 0


if __name__ == '__main__':
    sys.exit(main())
