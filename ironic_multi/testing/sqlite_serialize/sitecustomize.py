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

"""Serialize SQLite writers in an Ironic test server instead of failing.

Only the functional-test fixture puts this directory on the PYTHONPATH of
the Ironic processes it starts on SQLite.

oslo.db already applies SQLAlchemy's pysqlite recipe (pysqlite's own
transaction handling off, BEGIN emitted on the engine's "begin" event), but
with a deferred BEGIN: a transaction that reads and then writes must upgrade
its lock, and SQLite answers that with "database is locked" at once rather
than waiting, which Ironic turns into HTTP 500.  BEGIN IMMEDIATE takes the
write lock up front, so concurrent transactions queue on the busy timeout.
"""

import sqlite3

from sqlalchemy import engine
from sqlalchemy import event

BUSY_TIMEOUT_MS = 60000


@event.listens_for(engine.Engine, 'connect')
def _set_busy_timeout(dbapi_connection, connection_record):
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute('PRAGMA busy_timeout = %d' % BUSY_TIMEOUT_MS)


@event.listens_for(engine.Engine, 'before_cursor_execute', retval=True)
def _begin_immediate(conn, cursor, statement, parameters, context,
                     executemany):
    if conn.dialect.name == 'sqlite' and statement.strip().upper() == 'BEGIN':
        statement = 'BEGIN IMMEDIATE'
    return statement, parameters
