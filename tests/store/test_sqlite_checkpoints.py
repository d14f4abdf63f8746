"""The daemon's SQLite stores checkpoint the WAL on a thread of their own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cronduit.store.sqlite import SqliteStore

BLOB = 64 * 1024
COMMITS = 900
"""Enough that the bound (a third of the load) is far above the longest stretch a loaded
machine leaves the checkpointing thread unscheduled (110 commits seen), and the test still
fails at once if the thread never finishes a checkpoint."""


def _wal(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def _write_under_load(store: SqliteStore, path: Path) -> int:
    """Commit ``COMMITS`` rows of 64 KiB back to back; the largest WAL seen meanwhile."""
    largest = 0
    with store.transaction() as tx:
        tx._cursor.execute("CREATE TABLE load (data BLOB)")
    for _ in range(COMMITS):
        with store.transaction() as tx:
            tx._cursor.execute("INSERT INTO load VALUES (?)", (b"x" * BLOB,))
        largest = max(largest, _wal(path))
    return largest


def test_the_wal_starts_over_under_commits_without_a_pause(tmp_path: Path) -> None:
    """Background checkpoints finish under writes that never stop, so the WAL stays small
    (commits alone, with SQLite's own checkpoints off, would grow it to the whole load)."""
    path = tmp_path / "cronduit.db"
    store = SqliteStore(path, background_checkpoints=True, checkpoint_every=0.02,
                        wal_finish=2 * BLOB)
    try:
        largest = _write_under_load(store, path)
    finally:
        store.close()
    assert largest < COMMITS * BLOB / 3, f"the WAL reached {largest:,} bytes"


@pytest.mark.parametrize(("background", "pages"), [(True, 0), (False, 1000)])
def test_only_the_daemons_stores_leave_checkpoints_to_the_thread(
        tmp_path: Path, background: bool, pages: int) -> None:
    """With background checkpoints a commit never checkpoints inline; the CLI's stores keep
    SQLite's own checkpoints (every 1000 pages)."""
    store = SqliteStore(tmp_path / "cronduit.db", background_checkpoints=background)
    try:
        row = store._db.execute("PRAGMA wal_autocheckpoint").fetchone()
    finally:
        store.close()
    assert row == (pages,)


def test_committed_rows_survive_the_thread_stopping(tmp_path: Path) -> None:
    """What was committed before close is in the database file for a new connection."""
    path = tmp_path / "cronduit.db"
    store = SqliteStore(path, background_checkpoints=True, checkpoint_every=0.01)
    with store.transaction() as tx:
        tx._cursor.execute("CREATE TABLE kept (n INTEGER)")
        tx._cursor.execute("INSERT INTO kept VALUES (7)")
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT n FROM kept").fetchall() == [(7,)]
