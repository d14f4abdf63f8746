"""The PostgreSQL backend: the state in one database (a schema of it), shared by many daemons.

Connections come from a pool (psycopg_pool), one per transaction while it runs, so the
engine, the HTTP acceptor and the CLI's reads each hold their own. Transactions run at the
default isolation (READ COMMITTED): every at-most-once promise is a unique key or a version
guard in the statement itself, and the reads that claim work lock the rows they return and
skip those another transaction holds (``FOR UPDATE SKIP LOCKED``). Commits are durable before
they return (``synchronous_commit`` as the server has it, ``on`` by default).

Which schema: the connection's ``search_path``, as libpq sets it; in a URL,
``?options=-csearch_path%3Dcronduit``. The tables go into its first schema, which must exist.
The session's time zone is UTC, so instants read back in UTC as from SQLite.

Loading this module makes psycopg's errors known to :mod:`cronduit.faults`: a refused or lost
connection, a server shutting down, a full disk (``OperationalError``, raised also when the
pool cannot give a connection in time) and a connection used after it broke
(``InterfaceError``) are outages of the state store; a constraint refusing a write is
:class:`~cronduit.ports.Conflict`'s. All of psycopg's errors join the drivers' errors the CLI
catches when a store cannot be opened (:mod:`cronduit.store.errors`).

The password: in the URL, or given apart (``password``, from the secret that
``settings.state_password`` names), when it is passed to libpq as its own connection
parameter and never written into a conninfo text; without either, libpq's ``PGPASSWORD``,
``~/.pgpass`` and service files work as usual. An error raised while connecting is raised
again without any password in its text (:func:`cronduit.store.conninfo.scrubbed`): libpq
quotes what it cannot parse of a URL, a password with a bad percent-encoding included.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from cronduit.faults import count_database_errors
from cronduit.store.conninfo import scrubbed
from cronduit.store.errors import add_driver_errors
from cronduit.store.pg.listener import CHANNEL, Listener
from cronduit.store.pg.membership import PgMembership, check_fence
from cronduit.store.pg.transaction import PgTransaction
from cronduit.store.sql.migrate import migrations

count_database_errors(psycopg.OperationalError, psycopg.IntegrityError)
count_database_errors(psycopg.InterfaceError, psycopg.IntegrityError)
add_driver_errors(psycopg.Error)
# psycopg_pool warns of each connection attempt that fails, and with no handler of the
# program's own, logging writes each warning to stderr: a line per attempt in the daemon's
# log during an outage, beside the one line per state change the daemon writes itself
# (cronduit.core.outage). What failed reaches the daemon as the error raised.
logging.getLogger("psycopg").addHandler(logging.NullHandler())

PACKAGE = "cronduit.store.pg"
"""Where the PostgreSQL schema, queries and numbered migrations live."""
_MIGRATING = 0x63726F6E64756974  # "cronduit": the advisory lock migrations queue on
POOL_SIZE = 8
"""Connections at most: the engine's, the acceptor's, the CLI's and the API's reads."""
CONNECT_TIMEOUT = 10.0
"""Seconds a transaction waits for a connection before the pool gives up."""
ANSWER_WAIT = 2.0
"""Seconds the HTTP acceptor's transactions wait for a connection: a webhook that comes
while the database is away gets its 503 in this, well within a sender's own timeout."""
IDLE_IN_TRANSACTION = "5s"
"""How long the server lets a pooled session sit inside a transaction with no statement
from it before it ends the session. A daemon frozen (SIGSTOP, a stalled machine) or cut
off while a transaction is open would otherwise hold its locks for as long as the server
keeps the session: its node's row, read by the fence, keeps the sweep of its lost node
from ever claiming it, and the timers it claimed from firing elsewhere. Far above the
pauses between a live transaction's statements; with it, a lost node is swept within
lease + 10 s whatever it held. A transaction so ended fails, and is retried as a fault."""


LATEST = migrations(PACKAGE)[-1][0]
WAKE = f"NOTIFY {CHANNEL}"


def _configure(connection: psycopg.Connection[Any]) -> None:
    """Every pooled connection reads instants in UTC, and is ended by the server if it
    stalls inside a transaction (:data:`IDLE_IN_TRANSACTION`)."""
    connection.autocommit = True
    connection.execute("SET TIME ZONE 'UTC'")
    connection.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION}'")
    connection.autocommit = False


def _password_kwargs(password: str | None) -> dict[str, Any]:
    """libpq's ``password`` parameter, when one is given apart from the URL (it wins over
    the URL's); none otherwise, so that libpq looks where it always does."""
    return {} if password is None else {"password": password}


def raise_scrubbed(error: psycopg.Error, conninfo: str, password: str | None) -> NoReturn:
    """Raise ``error`` again, of its own class, with no password in its text (as it is when
    none was in it)."""
    text = scrubbed(str(error), conninfo, password)
    if text == str(error):
        raise error
    raise type(error)(text) from None


def connect(conninfo: str, password: str | None = None,
            **options: Any) -> psycopg.Connection[Any]:
    """A connection of its own to ``conninfo``, its errors scrubbed of the password."""
    try:
        return psycopg.connect(conninfo, **options, **_password_kwargs(password))
    except psycopg.Error as error:
        raise_scrubbed(error, conninfo, password)


class PostgresStore:
    """:class:`cronduit.ports.Store` on a PostgreSQL database.

    ``conninfo``: a libpq URL or key=value string; the tables are in the first schema of
    its ``search_path``. ``password``: libpq's password, given apart from ``conninfo``."""

    def __init__(self, conninfo: str, *, password: str | None = None, migrate: bool = True,
                 pool_size: int = POOL_SIZE, wait: float = CONNECT_TIMEOUT) -> None:
        self._conninfo = conninfo
        self._password = password
        self._inside = threading.local()
        self._fence: tuple[str, int] | None = None
        """The node lease every transaction checks first, once the daemon holds one."""
        try:  # parsed here, so that the pool's own log never quotes a URL it cannot read
            conninfo_to_dict(conninfo)
        except psycopg.Error as error:
            raise_scrubbed(error, conninfo, password)
        if migrate:
            self.migrate()
        self._pool = ConnectionPool(conninfo, kwargs=_password_kwargs(password), min_size=1,
                                    max_size=pool_size, timeout=wait,
                                    configure=_configure, open=True, name="cronduit")

    def migrate(self) -> int:
        """Apply the migrations this database has not seen, on a connection of its own (so
        a server that cannot be reached says why, not that the pool timed out); the schema
        version after. Daemons starting at once queue on an advisory lock."""
        with connect(self._conninfo, self._password) as db, db.transaction():
            if db.execute("SELECT current_schema()").fetchone() == (None,):
                raise psycopg.OperationalError("the search_path names no schema that exists: "
                                               "create it first")
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATING,))
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
            row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = int(row[0] or 0) if row else 0
            for version, text in migrations(PACKAGE):
                if version > current:
                    db.execute(text.encode())  # several statements, no parameters
                    db.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
                    current = version
        return current

    @contextmanager
    def transaction(self) -> Iterator[PgTransaction]:
        # Each transaction takes a connection of its own from the pool, so one opened inside
        # another on this thread would not fail by itself: it would commit apart from its
        # outer one. Refused here instead, at once.
        if getattr(self._inside, "open", False):
            raise RuntimeError("a transaction opened inside another on the same store")
        self._inside.open = True
        try:
            with self._pool.connection() as connection, connection.cursor() as cursor:
                if self._fence is not None:
                    check_fence(cursor, self._fence)
                tx = PgTransaction(cursor)
                yield tx
                # Other daemons are woken, at the commit that follows, by triggers accepted
                # outside an engine (which routes what it fires itself) and by a stop only a
                # run's own node can carry out.
                if tx.asked_stop or (tx.accepted and self._fence is None):
                    cursor.execute(WAKE)
        finally:
            self._inside.open = False

    @contextmanager
    def reading(self) -> Iterator[PgTransaction]:
        # REPEATABLE READ: one snapshot for the whole read, as SQLite's; a read-only
        # transaction at that level never fails to serialize, and takes no lock a writer
        # waits for. Ended by a rollback: it has nothing to commit.
        if getattr(self._inside, "open", False):
            raise RuntimeError("a transaction opened inside another on the same store")
        self._inside.open = True
        try:
            with self._pool.connection() as connection, connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                try:
                    yield PgTransaction(cursor)
                finally:
                    connection.rollback()
        finally:
            self._inside.open = False

    @property
    def membership(self) -> PgMembership:
        """The node leases of this database (:class:`cronduit.ports.Membership`)."""
        return PgMembership(self._pool.connection, self._set_fence,
                            lambda wake: Listener(self._conninfo, wake, self._password))

    def _set_fence(self, fence: tuple[str, int] | None) -> None:
        self._fence = fence

    def close(self) -> None:
        self._pool.close()
