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

"""Database chores of the Ironic test server, run by the Ironic venv's python.

That venv always has SQLAlchemy and the PostgreSQL and MySQL drivers the
server itself uses, and pycdlib (Ironic builds ISO images with it); the
test venv need not.  Keystone's venv runs the database chores too.

    python _ironic_db.py create ADMIN_URL NAME
    python _ironic_db.py drop ADMIN_URL NAME
    python _ironic_db.py databases ADMIN_URL LIKE_PATTERN
    python _ironic_db.py connections ADMIN_URL MINIMUM
    python _ironic_db.py clone URL TEMPLATE_UUID < copies.json
    python _ironic_db.py wipe URL
    python _ironic_db.py provision URL NODE_UUID STATE
    python _ironic_db.py configdrive-file URL NODE_UUID PATH

``copies.json`` is a list of dicts, one per copy: column values for the new
``nodes`` row (at least ``uuid``; times as ISO 8601 text), and optionally
``traits``, the list that replaces the template's traits.
"""

import base64
import datetime
import gzip
import io
import json
import sys

import sqlalchemy as sa

# Columns binding the template node to something; a copy starts unbound.
_CLEARED = ('instance_uuid', 'allocation_id', 'reservation', 'updated_at')
# ironic.objects.trait.Trait.VERSION, what Ironic 39 writes in node_traits.
_TRAIT_VERSION = '1.1'


def create(admin_url, name):
    engine = _admin_engine(admin_url)
    options = ' CHARACTER SET utf8mb4' if engine.name == 'mysql' else ''
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s%s' % (name, options))


def drop(admin_url, name):
    engine = _admin_engine(admin_url)
    # Ironic may still hold a connection when a test run is torn down hard.
    force = ' WITH (FORCE)' if engine.name == 'postgresql' else ''
    with engine.connect() as conn:
        conn.exec_driver_sql('DROP DATABASE IF EXISTS %s%s' % (name, force))


def databases(admin_url, pattern):
    """Print the names of the databases that match ``pattern`` (LIKE)."""
    engine = _admin_engine(admin_url)
    if engine.name == 'postgresql':
        query = sa.text('SELECT datname FROM pg_database '
                        'WHERE datname LIKE :pattern')
    else:
        query = sa.text('SHOW DATABASES LIKE :pattern')
    with engine.connect() as conn:
        names = sorted(row[0] for row in conn.execute(
            query, {'pattern': pattern}))
    print('\n'.join(names))


def connections(admin_url, minimum):
    """Raise a MariaDB server's ``max_connections`` to ``minimum``.

    Prints the limit before and after.  A cloud's services open pools
    of their own against one server: Debian's default of 151 was seen
    exhausted in a burst.  Nothing on PostgreSQL (it needs a restart).
    """
    engine = _admin_engine(admin_url)
    if engine.name != 'mysql':
        return
    with engine.connect() as conn:
        before = conn.exec_driver_sql(
            'SELECT @@GLOBAL.max_connections').scalar()
        if before < int(minimum):
            conn.exec_driver_sql('SET GLOBAL max_connections = %d'
                                 % int(minimum))
        after = conn.exec_driver_sql(
            'SELECT @@GLOBAL.max_connections').scalar()
    print(before, after)


def clone(url, template_uuid):
    copies = json.load(sys.stdin)
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine, only=('nodes', 'node_traits'))
    nodes, traits = meta.tables['nodes'], meta.tables['node_traits']
    # Read first, then write in a transaction that starts with a write:
    # on SQLite a read-then-write transaction fails instead of waiting.
    with engine.connect() as conn:
        template = conn.execute(
            nodes.select().where(nodes.c.uuid == template_uuid)).one()
        template_traits = conn.execute(
            sa.select(traits.c.trait)
            .where(traits.c.node_id == template.id)).all()
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    row = dict(template._mapping, created_at=now, **dict.fromkeys(_CLEARED))
    del row['id']
    node_rows = [dict(row, **{k: _column_value(nodes.c[k], v)
                              for k, v in copy.items() if k != 'traits'})
                 for copy in copies]
    default_traits = [t.trait for t in template_traits]
    with engine.begin() as conn:
        conn.execute(nodes.insert(), node_rows)
        ids = _ids_by_uuid(conn, nodes, [r['uuid'] for r in node_rows])
        trait_rows = [{'node_id': ids[copy['uuid']], 'trait': name,
                       'version': _TRAIT_VERSION, 'created_at': now}
                      for copy in copies
                      for name in copy.get('traits', default_traits)]
        if trait_rows:
            conn.execute(traits.insert(), trait_rows)


def _column_value(column, value):
    # JSON carries times as text; SQLite's driver takes datetimes only.
    if isinstance(column.type, sa.DateTime) and isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


def wipe(url):
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine)
    nodes = meta.tables['nodes']
    # Every table with a node_id column holds rows that belong to nodes
    # (allocations included); children go before their parents.
    owned = [t for t in reversed(meta.sorted_tables) if 'node_id' in t.c]
    with engine.begin() as conn:
        conn.execute(nodes.update().values(allocation_id=None))
        for table in owned:
            conn.execute(table.delete())
        conn.execute(nodes.delete())


def provision(url, node_uuid, state):
    """Put a node in provision ``state`` as Ironic's conductor would.

    For states fake hardware cannot reach (a failed tear down, a failed
    rescue): the state, no target, and a new ``provision_updated_at``.
    """
    engine = sa.create_engine(url)
    nodes = sa.Table('nodes', sa.MetaData(), autoload_with=engine)
    with engine.begin() as conn:
        changed = conn.execute(nodes.update().where(
            nodes.c.uuid == node_uuid).values(
            provision_state=state, target_provision_state=None,
            provision_updated_at=datetime.datetime.utcnow())).rowcount
    if changed != 1:
        raise SystemExit('no node %s' % node_uuid)


def configdrive_file(url, node_uuid, path):
    """Print a file of the config drive Ironic stored for the node.

    Ironic's API masks ``instance_info/configdrive``; the drive is the
    gzipped, base64-encoded ISO 9660 image the driver sent, read with
    pycdlib (which Ironic's venv has) by its Rock Ridge ``path``.
    """
    engine = sa.create_engine(url)
    nodes = sa.Table('nodes', sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        info = conn.execute(sa.select(nodes.c.instance_info).where(
            nodes.c.uuid == node_uuid)).scalar()
    drive = json.loads(info or '{}').get('configdrive')
    if not isinstance(drive, str):
        raise SystemExit('node %s has no config drive image' % node_uuid)
    sys.stdout.write(config_drive_file(drive, path).decode())


def config_drive_file(drive, path):
    """The file at Rock Ridge ``path`` of a config drive, as bytes.

    ``drive`` is what Ironic keeps in ``instance_info/configdrive``: a
    gzipped, base64-encoded ISO 9660 image.
    """
    # Here, not at the top: Keystone's venv runs this file too, without it.
    import pycdlib
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(gzip.decompress(base64.b64decode(drive))))
    out = io.BytesIO()
    iso.get_file_from_iso_fp(out, rr_path=path)
    return out.getvalue()


def _ids_by_uuid(conn, nodes, uuids, chunk=500):
    ids = {}
    for start in range(0, len(uuids), chunk):
        query = sa.select(nodes.c.uuid, nodes.c.id).where(
            nodes.c.uuid.in_(uuids[start:start + chunk]))
        ids.update(conn.execute(query).all())
    return ids


def _admin_engine(admin_url):
    return sa.create_engine(admin_url, isolation_level='AUTOCOMMIT')


def main(argv):
    commands = {'create': create, 'drop': drop, 'databases': databases,
                'connections': connections, 'clone': clone, 'wipe': wipe,
                'provision': provision, 'configdrive-file': configdrive_file}
    commands[argv[1]](*argv[2:])


if __name__ == '__main__':
    main(sys.argv)
