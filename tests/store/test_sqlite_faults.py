"""The SQLite store on a real file system that fills up: errors say why, and it recovers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cronduit.store.sqlite import SqliteStore
from tests.helpers.mounts import fill, free, small_tmpfs

BIG = "x" * 3000


def test_a_transaction_that_spills_onto_a_full_disk_fails_saying_the_disk_is_full(
        tmp_path: Path) -> None:
    """A transaction too big for the page cache writes to the disk before its commit; on a
    full disk SQLite rolls it back there, and the error still says the disk is full (not
    that there was no transaction left to roll back); once space is back, it commits."""
    with small_tmpfs(tmp_path / "state") as state:
        store = SqliteStore(state / "cronduit.db")
        try:
            store._db.execute("PRAGMA cache_size = 10")  # spill after ten pages
            filler = fill(state)
            with pytest.raises(sqlite3.OperationalError) as failed:
                _write(store, 200)
            assert "database or disk is full" == str(failed.value)
            free(filler)
            with store.transaction() as tx:
                tx.set_meta("after", "ok")
            with store.transaction() as tx:
                assert ("ok", None) == (tx.get_meta("after"), tx.get_meta("big/0"))
        finally:
            store.close()


def test_a_commit_on_a_full_disk_fails_and_the_next_one_succeeds_once_space_is_back(
        tmp_path: Path) -> None:
    """The usual case: the commit itself cannot grow the write-ahead log; it fails with the
    reason, nothing of it is kept, and the connection is fit for the next transaction."""
    with small_tmpfs(tmp_path / "state") as state:
        store = SqliteStore(state / "cronduit.db")
        try:
            filler = fill(state)
            with pytest.raises(sqlite3.OperationalError) as failed:
                _commit_until_it_fails(store)
            assert "database or disk is full" == str(failed.value)
            free(filler)
            with store.transaction() as tx:
                tx.set_meta("after", "ok")
            with store.transaction() as tx:
                assert "ok" == tx.get_meta("after")
        finally:
            store.close()


def _write(store: SqliteStore, values: int) -> None:
    """One transaction of ``values`` big values."""
    with store.transaction() as tx:
        for n in range(values):
            tx.set_meta(f"big/{n}", BIG)


def _commit_until_it_fails(store: SqliteStore) -> None:
    """Commit one big value at a time until the write-ahead log's free pages are used up."""
    for n in range(1000):
        with store.transaction() as tx:
            tx.set_meta(f"small/{n}", BIG)
