"""The SQLite backend: one file in the state directory, WAL, synchronous commits.

WAL lets the CLI read while the daemon writes. ``synchronous=FULL`` makes every commit
durable before it returns, because acceptance (202) and firings promise exactly that; the
engine commits in batches so the cost is paid once per batch, not per trigger.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from cronduit.store.sql.migrate import migrations, statements
from cronduit.store.sql.transaction import SqlTransaction

_WRITERS: dict[Path, threading.RLock] = {}
_WRITERS_GUARD = threading.Lock()


def _writer_lock(path: Path) -> threading.RLock:
    """One lock per database file for this process's connections (the engine's and the
    HTTP acceptor's). SQLite's own busy handler waits for a held write lock by sleeping in
    steps of 1, 2, 5, 10... ms; queueing on a Python lock first hands the file over the moment
    it is free. Other processes (the CLI) still meet SQLite's lock and its busy timeout.
    Re-entrant, so a transaction opened inside another by mistake fails at once in SQLite
    ("cannot start a transaction within a transaction") instead of waiting for itself."""
    with _WRITERS_GUARD:
        return _WRITERS.setdefault(path.resolve(), threading.RLock())


def _is_conflict(error: Exception) -> bool:
    return isinstance(error, sqlite3.IntegrityError)


def _same(sql: str) -> str:
    return sql


CHECKPOINT_EVERY = 1.0
"""Seconds between the background checkpoints."""
WAL_FINISH = 16 * 2**20
"""Bytes of WAL frames since the WAL last started over past which a turn finishes its
checkpoint under the writer lock."""


class SqliteStore:
    """:class:`cronduit.ports.Store` on one SQLite file.

    ``background_checkpoints`` (the daemon's stores): the WAL is copied back into the
    database by a thread of its own instead of inside whichever commit crosses SQLite's
    threshold. Inline, that copy and its fsync ran on the engine's thread about once a
    commit under load, holding up the next firings; a passive checkpoint on another
    connection never blocks a writer.
    """

    def __init__(self, path: Path, *, migrate: bool = True,
                 background_checkpoints: bool = False,
                 checkpoint_every: float = CHECKPOINT_EVERY,
                 wal_finish: int = WAL_FINISH) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._writer = _writer_lock(path)
        self._connection = threading.RLock()
        """This store's one connection, for :meth:`reading` beside :meth:`transaction`."""
        self._db = _connect(path)
        if migrate:
            self.migrate()
        self._checkpoints = background_checkpoints
        if background_checkpoints:
            self._db.execute("PRAGMA wal_autocheckpoint = 0")
            Checkpointer.hold(path, checkpoint_every, wal_finish)

    def migrate(self) -> int:
        """Apply the migrations this file has not seen; the schema version after."""
        with self._immediate() as cursor:
            cursor.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = cursor.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = row[0] or 0
            for version, sql in migrations():
                if version <= current:
                    continue
                for statement in statements(sql):
                    cursor.execute(statement)
                cursor.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
                current = version
        return int(current)

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Cursor]:
        # BEGIN IMMEDIATE takes the write lock up front, so two writers queue on the busy
        # timeout instead of deadlocking when both try to upgrade a read lock.
        with self._writer, self._connection:
            cursor = self._db.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                yield cursor
                cursor.execute("COMMIT")
            except BaseException:
                self._roll_back(cursor)
                raise
            finally:
                cursor.close()

    def _roll_back(self, cursor: sqlite3.Cursor) -> None:
        """End a transaction that failed, keeping the error that failed it.

        A full or read-only disk (``SQLITE_FULL``, ``SQLITE_IOERR``) may already have rolled
        the transaction back inside the failing statement or ``COMMIT``: a ROLLBACK then
        fails with "no transaction is active", which would hide why. One that is still open
        (a ``COMMIT`` that failed without rolling back) must be ended here, or every later
        ``BEGIN`` on this connection would fail, long after the disk has room again.
        """
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                cursor.execute("ROLLBACK")

    @contextmanager
    def transaction(self) -> Iterator[SqlTransaction]:
        with self._immediate() as cursor:
            yield SqlTransaction(cursor, _same, _is_conflict, numbers_events=True)

    @contextmanager
    def reading(self) -> Iterator[SqlTransaction]:
        # BEGIN DEFERRED takes no lock until the first read, and then only WAL's read mark:
        # the writer of this file (the engine, the acceptor) goes on committing meanwhile,
        # and this transaction reads the snapshot its first statement saw. query_only makes
        # a write inside it fail rather than wait for the writer's lock.
        with self._connection:
            cursor = self._db.cursor()
            cursor.execute("PRAGMA query_only = ON")
            try:
                cursor.execute("BEGIN DEFERRED")
                try:
                    yield SqlTransaction(cursor, _same, _is_conflict, numbers_events=True)
                finally:
                    self._roll_back(cursor)
            finally:
                cursor.execute("PRAGMA query_only = OFF")
                cursor.close()

    def close(self) -> None:
        if self._checkpoints:
            self._checkpoints = False
            Checkpointer.release(self.path)
        self._db.close()


CACHE_KIB = 65536
"""Each connection's page cache, in KiB (SQLite's default is 2 MiB). A page of the dashboard
reads a hundred jobs' newest runs, rows scattered over a state of a million runs: with the
default cache every page of theirs came back through a system call at each request, and a
page took half as long again (p99 twice as long) as with the rows' pages kept here. It grows
only as pages are read. Not ``mmap_size``: a disk that fails under a mapped file raises
SIGBUS in the daemon instead of an error it can live through."""


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    return db


class Checkpointer:
    """A thread that checkpoints one database's WAL every second, on its own connection;
    one per database file for all of this process's stores that ask for it.

    Each turn copies what it can while the engine and the HTTP acceptor go on committing.
    Once the WAL holds more than :data:`WAL_FINISH` of frames, a turn also finishes under this
    process's writer lock, holding commits back for the last frames and a sync: a checkpoint
    that always ran beside commits might never catch up, and the WAL, which starts over only
    after a complete one, would grow without end. Finishing at every turn held webhooks'
    commits behind a sync of the database file once a second (p99 from 10 to 90 ms).

    A checkpoint that fails (a full or read-only disk, a lock held) is tried again a second
    later: until then the committed frames stay in the WAL, durable, and readers see them.
    """

    _running: ClassVar[dict[Path, tuple[Checkpointer, int]]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def hold(cls, path: Path, every: float = CHECKPOINT_EVERY,
             finish: int = WAL_FINISH) -> None:
        """Start the file's checkpointer, or count one more store that uses it."""
        key = path.resolve()
        with cls._guard:
            running, users = cls._running.get(key, (None, 0))
            cls._running[key] = (running or cls(key, every, finish), users + 1)

    @classmethod
    def release(cls, path: Path) -> None:
        """One store fewer; the last one stops the thread."""
        key = path.resolve()
        with cls._guard:
            running, users = cls._running.pop(key)
            if users > 1:
                cls._running[key] = (running, users - 1)
                return
        running.stop()

    def __init__(self, path: Path, every: float, finish: int) -> None:
        self._path = path
        self._every = every
        self._writer = _writer_lock(path)
        self._finish = finish
        self._page: int | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cronduit-checkpoints",
                                        daemon=True)
        self._thread.start()

    def _page_size(self, db: sqlite3.Connection) -> int:
        if self._page is None:
            self._page = int(db.execute("PRAGMA page_size").fetchone()[0])
        return self._page

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()

    def _run(self) -> None:
        db: sqlite3.Connection | None = None
        try:
            while not self._stopping.wait(self._every):
                try:
                    db = db or _connect(self._path)
                    _, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if frames * self._page_size(db) > self._finish:
                        with self._writer:
                            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    pass  # tried again at the next turn; the WAL keeps what was committed
        finally:
            if db is not None:
                db.close()
