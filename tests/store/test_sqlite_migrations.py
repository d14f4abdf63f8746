"""Upgrading an SQLite state file in place: what a migration rebuilds keeps every row."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronduit.ports import Conflict, NewEvent
from cronduit.store.sql.migrate import migrations, statements
from cronduit.store.sqlite import SqliteStore

T0 = "2026-06-01T09:00:00.000000Z"
TABLES = ("events", "slots", "runs", "notifications", "deliveries")


def _at_version(path: Path, version: int) -> sqlite3.Connection:
    """A state file migrated up to ``version`` only, as an older cronduit left it."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for number, sql in migrations():
        if number <= version:
            for statement in statements(sql):
                db.execute(statement)
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
    return db


def _fill(db: sqlite3.Connection) -> None:
    """A row in every state of every table the state checks rebuild."""
    db.execute("INSERT INTO deliveries VALUES ('d-1', 'github', 'push', 'push main', '{}', ?, 1)",
               (T0,))
    for seq, state, run_id, parent in ((3, "new", None, None), (5, "waiting", None, "d-1"),
                                       (8, "consumed", "r1", None), (9, "unmatched", None, None)):
        db.execute("INSERT INTO events (seq, delivery_id, job, kind, label, accepted_at, state, "
                   "run_id, parent) VALUES (?, ?, 'report', 'manual', 'm', ?, ?, ?, ?)",
                   (seq, f"manual/{seq}", T0, state, run_id, parent))
    for slot, fate in (("2026-06-01T08:00:00.000000Z", "ran"),
                       ("2026-06-01T09:00:00.000000Z", "missed")):
        db.execute("INSERT INTO slots (job, slot, name, fate, reason, recorded_at) "
                   "VALUES ('report', ?, 'n', ?, '', ?)", (slot, fate, T0))
    for seq, run_id, state in ((1, "r1", "ended"), (4, "r2", "backoff"), (6, "r3", "running")):
        db.execute("INSERT INTO runs (seq, id, job, kind, label, state, exclusive, created_at) "
                   "VALUES (?, ?, 'report', 'manual', 'm', ?, 0, ?)", (seq, run_id, state, T0))
    for seq, state in ((2, "pending"), (7, "sent"), (11, "failed")):
        db.execute("INSERT INTO notifications (seq, run_id, notifier, body, state, next_at, "
                   "created_at, updated_at) VALUES (?, 'r1', 'ops', '{}', ?, ?, ?, ?)",
                   (seq, state, T0, T0, T0))


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(path) as db:
        return {table: db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                for table in TABLES}


def _as_wide_as(before: dict[str, list[tuple[object, ...]]],
               after: dict[str, list[tuple[object, ...]]]) -> dict[str, list[tuple[object, ...]]]:
    """``after``'s rows cut to the columns ``before`` had."""
    return {table: [row[:len(before[table][0])] if before[table] else row for row in rows]
            for table, rows in after.items()}


def test_the_state_checks_keep_every_row_of_an_older_state_file(tmp_path: Path) -> None:
    """Migration 6 rebuilds four tables to add their CHECKs: every row comes through as it
    was, seqs included, and the new constraints hold from then on."""
    path = tmp_path / "cronduit.db"
    db = _at_version(path, 5)
    _fill(db)
    db.close()
    before = _rows(path)
    store = SqliteStore(path)
    try:
        assert 6 <= store.migrate()
        assert before == _as_wide_as(before, _rows(path))  # later migrations add columns
        with store.transaction() as tx:
            assert 10 == tx.insert_event(NewEvent("manual/10", "report", "manual", "m",
                                                  datetime(2026, 6, 1, 10, tzinfo=UTC)))
        with pytest.raises(Conflict), store.transaction() as tx:
            tx.update_run("r3", state="pending")
    finally:
        store.close()
