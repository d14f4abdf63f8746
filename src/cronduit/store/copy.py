"""Copying an SQLite state into an empty PostgreSQL database: one host's state, moved to where
many daemons can share it (``cronduit state copy``, SPEC §10).

Every table both schemas have is copied, and of each table the columns both have: a column
only the PostgreSQL schema has gets its default, so either side may add columns later
without breaking the copy. Values change type on the way (SQLite's text instants become
``timestamptz``, its 0/1 flags ``boolean``, its integers ``bigint``), by the target column's
type. Seqs are kept as they were, so every reference between rows (a trigger's run, a slot's
event, a notification's run) still holds, and each identity sequence is then set past the
highest seq copied. Each job's run facts (``job_run_facts``) are not copied: the target
counts them from the runs copied, at once, its triggers on runs held off meanwhile. All of
it is one PostgreSQL transaction: a copy that fails leaves the target as it was.

A timer keeps its armed slot and version and the slot ledger its rows, so a daemon serving
the copy continues every timer where the last daemon on the SQLite file stopped: a slot that
ran there is in the ledger and never runs again; one that came due since is caught up under
the job's ``catch_up``.

Refused, with one line naming why (:class:`CopyRefused`):

* a target whose tables already hold rows (named), unless they are this very copy: the
  copy leaves a marker in the target's ``meta`` with the source file's path and a
  fingerprint of the rows it copied, so that copying the same state again does nothing
  (:attr:`Copied.already`), while another state, or this one changed since, is refused;
* a source with runs in progress (named): a run's process cannot move to another host, and
  a daemon serving the copy would take it for lost.

The caller makes sure no daemon serves the SQLite file meanwhile (the CLI holds its daemon
lock for the copy); the source is read in one read transaction, so it is copied as it was
at one instant whatever else reads it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg import sql

from cronduit.core.enums import RunState
from cronduit.core.timespec import format_utc
from cronduit.store.conninfo import redacted
from cronduit.store.postgres import PostgresStore, connect
from cronduit.store.sqlite import SqliteStore

T = TypeVar("T")

MARKER = "copied_from"
"""The target's ``meta`` key that says which state was copied into it."""
BOOKKEEPING = "schema_version"
"""Each schema's own migration count: never copied."""
DERIVED = frozenset({"job_run_facts", "job_run_facts_changes"})
"""Tables the target makes from the rows copied (each job's run facts, from its runs):
never copied, nor part of the fingerprint."""
LOCK_WAIT = 10.0
"""Seconds the copy waits for the target's tables, which a daemon serving it may hold."""
IN_PROGRESS_SHOWN = 10
"""Runs in progress named in a refusal; the rest are counted."""


class CopyRefused(Exception):
    """The copy was not made, and why, in one line: the target holds rows, or the source has
    runs in progress."""


class CopyFailed(ValueError):
    """A value of the source that the target cannot take (an instant that does not parse),
    named by table and column."""


@dataclass(frozen=True)
class Copied:
    """What a copy did."""

    source: str
    """The SQLite file, resolved."""
    target: str
    """The target's location, without its password."""
    rows: Mapping[str, int]
    """Rows copied per table, in the order copied (those of the first copy when
    ``already``)."""
    fingerprint: str
    already: bool = False
    """The target already held this copy of this state: nothing was done."""


@dataclass(frozen=True)
class _Table:
    """One table to copy: the source's columns (all read, for the fingerprint), the columns
    both schemas have with each one's conversion, and the target's identity columns."""

    name: str
    source_columns: tuple[str, ...]
    order: tuple[str, ...]
    shared: tuple[str, ...]
    converters: tuple[Callable[[Any], Any] | None, ...]
    identities: tuple[str, ...]


def copy_state(source: Path, target: str, *, at: datetime, password: str | None = None,
               wait: float = LOCK_WAIT) -> Copied:
    """Copy the SQLite state in the file ``source`` into the empty PostgreSQL database (its
    first ``search_path`` schema) that ``target`` names, creating its tables; ``at``: now,
    for the marker; ``wait``: seconds to wait for the target's tables. :class:`CopyRefused`
    for a target that holds other rows or is in use, or a source with runs in progress;
    the driver's errors when either cannot be reached."""
    if not source.is_file():
        raise CopyRefused(f"no SQLite state at {source}: nothing to copy")
    SqliteStore(source).close()  # an older cronduit's file brought up to date, as any command does
    PostgresStore(target, password=password, pool_size=1).close()  # the target's tables made
    resolved = str(source.resolve())
    with _snapshot(source) as db, closing(connect(target, password)) as pg, pg.transaction():
        tables = _plan(db, pg)
        _lock(pg, wait)
        marker = _marker(pg)
        if marker is not None:
            return _recopied(db, tables, marker, resolved, redacted(target))
        _refuse_rows(pg)
        _refuse_runs_in_progress(db)
        rows, fingerprint = _with_facts_counted_after(pg, lambda: _copy(db, pg, tables))
        _reset_identities(pg, tables)
        pg.execute("INSERT INTO meta (key, value) VALUES (%s, %s)",
                   (MARKER, json.dumps({"source": resolved, "fingerprint": fingerprint,
                                        "copied_at": format_utc(at), "rows": rows})))
    return Copied(resolved, redacted(target), rows, fingerprint)


@contextmanager
def _snapshot(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the file inside one read transaction: every table read
    through it is read as of the same instant."""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        db.execute("BEGIN")
        yield db
        db.execute("ROLLBACK")
    finally:
        db.close()


# -- the plan: which tables and columns, in which order -----------------------------------


def _plan(db: sqlite3.Connection, pg: psycopg.Connection[Any]) -> list[_Table]:
    """The tables to copy, each after the tables its foreign keys name. A source table the
    target lacks is refused if it holds rows (they would be lost); an empty one is left."""
    source = _sqlite_tables(db)
    target = _pg_columns(pg)
    lost = [name for name in sorted(source) if name not in target and _has_rows_sqlite(db, name)]
    if lost:
        raise CopyRefused(f"the target has no table for the source's {', '.join(lost)}: "
                          "copy with the cronduit that made the target's schema")
    tables = []
    for name in _dependency_order(pg, [name for name in target if name in source]):
        columns, order = source[name]
        shared = tuple(column for column in target[name] if column in columns)
        tables.append(_Table(
            name, columns, order, shared,
            tuple(_converter(target[name][column][0]) for column in shared),
            tuple(column for column, (_, identity) in target[name].items() if identity)))
    return tables


def _sqlite_tables(db: sqlite3.Connection) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each source table's columns and the key its rows are read in order of."""
    names = [row[0] for row in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]
    found = {}
    for name in names:
        if name == BOOKKEEPING or name in DERIVED:
            continue
        info = db.execute(f"PRAGMA table_info({_quoted(name)})").fetchall()
        columns = tuple(row[1] for row in info)
        key = tuple(row[1] for row in sorted(info, key=lambda row: row[5]) if row[5])
        found[name] = (columns, key or ("rowid",))
    return found


def _pg_columns(pg: psycopg.Connection[Any]) -> dict[str, dict[str, tuple[str, bool]]]:
    """Each target table's columns in order, with their type and whether each is an
    identity column."""
    found: dict[str, dict[str, tuple[str, bool]]] = {}
    for table, column, kind, identity in pg.execute(
            "SELECT c.table_name, c.column_name, c.data_type, c.is_identity "
            "FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_schema, table_name) WHERE c.table_schema = current_schema() "
            "AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position"):
        if table != BOOKKEEPING and table not in DERIVED:
            found.setdefault(table, {})[column] = (kind, identity == "YES")
    return found


def _dependency_order(pg: psycopg.Connection[Any], names: list[str]) -> list[str]:
    """``names`` with every table after those its foreign keys reference (deliveries before
    the events derived from them)."""
    needs: dict[str, set[str]] = {name: set() for name in sorted(names)}
    for child, parent in pg.execute(
            "SELECT c.relname, p.relname FROM pg_constraint k "
            "JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid "
            "JOIN pg_namespace n ON n.oid = k.connamespace "
            "WHERE k.contype = 'f' AND n.nspname = current_schema()"):
        if child in needs and parent in needs and child != parent:
            needs[child].add(parent)
    return list(TopologicalSorter(needs).static_order())


def _converter(kind: str) -> Callable[[Any], Any] | None:
    """How an SQLite value becomes a value of the target column's type (None: as it is)."""
    return {"timestamp with time zone": _instant, "boolean": _flag, "bigint": _integer,
            "integer": _integer, "smallint": _integer}.get(kind)


def _instant(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)  # the SQLite store's "...Z" reads as UTC
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(int(value))


def _integer(value: Any) -> int | None:
    return None if value is None else int(value)


# -- refusals -----------------------------------------------------------------------------


def _lock(pg: psycopg.Connection[Any], wait: float) -> None:
    """Hold every target table against writers until the copy commits, so that a daemon
    started on the target meanwhile waits, then finds the copy (reads go on). A daemon that
    already holds them makes the copy give up after ``wait`` seconds."""
    names = [row[0] for row in pg.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = "
        "current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name")]
    pg.execute("SELECT set_config('lock_timeout', %s, true)", (f"{round(wait * 1000)}ms",))
    try:
        pg.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(
            sql.SQL(", ").join(sql.Identifier(name) for name in names)))
    except psycopg.errors.LockNotAvailable:
        raise CopyRefused(f"the target's tables are in use (waited {wait:g} s): stop the "
                          "daemons serving it, or copy into an empty database") from None


def _marker(pg: psycopg.Connection[Any]) -> dict[str, Any] | None:
    row = pg.execute("SELECT value FROM meta WHERE key = %s", (MARKER,)).fetchone()
    return None if row is None else dict(json.loads(row[0]))


def _refuse_rows(pg: psycopg.Connection[Any]) -> None:
    names = _pg_columns(pg)
    holding = [name for name in names if pg.execute(
        sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(name))
    ).fetchone() == (True,)]
    if holding:
        raise CopyRefused(f"the target is not empty: {', '.join(sorted(holding))} already "
                          "hold rows; copy into an empty database or schema")


def _refuse_runs_in_progress(db: sqlite3.Connection) -> None:
    going = db.execute("SELECT job, id, state FROM runs WHERE state <> ? ORDER BY seq",
                       (RunState.ENDED.value,)).fetchall()
    if not going:
        return
    named = ", ".join(f"{job} (run {run}, {state})" for job, run, state in
                      going[:IN_PROGRESS_SHOWN])
    more = len(going) - IN_PROGRESS_SHOWN
    raise CopyRefused(
        f"runs in progress: {named}{f' and {more} more' if more > 0 else ''}; a run's "
        "process cannot move to another host: wait for them to end (cronduit job wait JOB), "
        "then copy")


def _recopied(db: sqlite3.Connection, tables: list[_Table], marker: Mapping[str, Any],
              source: str, target: str) -> Copied:
    """The target holds a copy: of this state as it is now (nothing to do), or refused."""
    fingerprint = _fingerprint(db, tables)
    if marker.get("source") == source and marker.get("fingerprint") == fingerprint:
        return Copied(source, target, dict(marker.get("rows", {})), fingerprint, already=True)
    since = (" and this state has changed since" if marker.get("source") == source else "")
    raise CopyRefused(f"the target already holds a copy of {marker.get('source')} (made "
                      f"{marker.get('copied_at')}){since}; copy into an empty database or "
                      "schema")


# -- the copy -----------------------------------------------------------------------------


def _rows(db: sqlite3.Connection, table: _Table, digest: Any) -> Iterator[tuple[Any, ...]]:
    """The table's rows, every column, in the order of its key (so that a fingerprint of
    them does not depend on how SQLite laid out its pages), each added to ``digest``."""
    query = (f"SELECT {', '.join(_quoted(c) for c in table.source_columns)} "
             f"FROM {_quoted(table.name)} ORDER BY {', '.join(map(_quoted, table.order))}")
    for row in db.execute(query):
        digest.update(repr(row).encode())
        yield row


def _digest(table: _Table) -> Any:
    return hashlib.sha256(repr((table.name, table.source_columns)).encode())


def _combined(parts: Mapping[str, str]) -> str:
    """The fingerprint of a state from its tables' digests, whatever order they were read in."""
    text = "".join(f"{name}:{digest}\n" for name, digest in sorted(parts.items()))
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()}"


def _fingerprint(db: sqlite3.Connection, tables: list[_Table]) -> str:
    """A digest of every row of the tables a copy takes, as they are now."""
    parts = {}
    for table in tables:
        digest = _digest(table)
        for _ in _rows(db, table, digest):
            pass
        parts[table.name] = digest.hexdigest()
    return _combined(parts)


def _copy(db: sqlite3.Connection, pg: psycopg.Connection[Any],
          tables: list[_Table]) -> tuple[dict[str, int], str]:
    """Every table's rows into the target, each table streamed through one COPY, in
    dependency order; the rows copied per table and the fingerprint of what was copied."""
    rows = {table.name: 0 for table in tables}
    parts = {}
    for table in tables:
        picked = [table.source_columns.index(column) for column in table.shared]
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, table.shared)))
        digest = _digest(table)
        with pg.cursor() as cursor, cursor.copy(statement) as stream:
            for row in _rows(db, table, digest):
                stream.write_row(_converted(table, row, picked))
                rows[table.name] += 1
        parts[table.name] = digest.hexdigest()
    return rows, _combined(parts)


def _converted(table: _Table, row: tuple[Any, ...], picked: list[int]) -> list[Any]:
    values = []
    for column, index, convert in zip(table.shared, picked, table.converters, strict=True):
        value = row[index]
        try:
            values.append(value if convert is None else convert(value))
        except (TypeError, ValueError):
            raise CopyFailed(f"{table.name}.{column} holds {value!r}, which the target's "
                             "column cannot take") from None
    return values


def _reset_identities(pg: psycopg.Connection[Any], tables: list[_Table]) -> None:
    """Each identity sequence past the highest seq copied, so the next row the target numbers
    follows the copied ones (a table left empty keeps its sequence at its start)."""
    for table in tables:
        for column in table.identities:
            pg.execute(sql.SQL(
                "SELECT setval(pg_get_serial_sequence(%s, %s), MAX({})) FROM {} "
                "HAVING MAX({}) IS NOT NULL").format(
                    sql.Identifier(column), sql.Identifier(table.name), sql.Identifier(column)),
                (sql.Identifier(table.name).as_string(pg), column))


def _with_facts_counted_after(pg: psycopg.Connection[Any], copy: Callable[[], T]) -> T:
    """``copy``, with the triggers that keep each job's run facts held off, and the facts
    then counted from the runs copied, in one statement: a trigger per run copied would
    take a lock per job in this one transaction (advisory locks fill PostgreSQL's lock
    table past some thousands of jobs), and cost more than counting once."""
    pg.execute("ALTER TABLE runs DISABLE TRIGGER USER")
    done = copy()
    pg.execute("INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted")
    pg.execute("ALTER TABLE runs ENABLE TRIGGER USER")
    return done


def _has_rows_sqlite(db: sqlite3.Connection, name: str) -> bool:
    return bool(db.execute(f"SELECT EXISTS (SELECT 1 FROM {_quoted(name)})").fetchone()[0])


def _quoted(name: str) -> str:
    """An SQLite identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'
