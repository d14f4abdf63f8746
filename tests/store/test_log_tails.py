"""The store contract for log tails: what the end of each attempt keeps of a run's log, so
that a host without the log file can show it (a state shared by many hosts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronduit.core.log_tails import TAIL_BYTES, LogTail
from cronduit.ports import RunLogTail, Store

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
RAW = bytes(range(256)) * (TAIL_BYTES // 256)
"""A full-size tail of every byte value: NULs, invalid UTF-8, terminal escapes."""


def test_a_stored_tail_reads_back_with_its_bytes_intact(store: Store) -> None:
    """A whole mebibyte of raw bytes, the log's size and what max_log cut, as stored."""
    with store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(RAW, 3 * TAIL_BYTES, 12_288), T0)
    with store.transaction() as tx:
        assert RunLogTail("r1", 1, RAW, 3 * TAIL_BYTES, 12_288, T0) == tx.stored_log_tail("r1")
        assert tx.stored_log_tail("r2") is None


def test_a_later_attempts_tail_replaces_the_earlier_one_and_never_the_reverse(
        store: Store) -> None:
    """One row per run: each attempt's end stores the newest tail of the run's one log; an
    earlier attempt's end replayed afterwards leaves the later tail in place."""
    later = T0 + timedelta(minutes=5)
    with store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(b"first attempt\n", 14), T0)
        tx.store_log_tail("r1", 2, LogTail(b"second attempt\n", 29), later)
    with store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(b"first attempt\n", 14), later)
    with store.transaction() as tx:
        assert RunLogTail("r1", 2, b"second attempt\n", 29, 0, later) == (
            tx.stored_log_tail("r1"))


def test_an_empty_log_is_stored_as_an_empty_tail(store: Store) -> None:
    """A job that printed nothing has a log of no bytes: stored, and told apart from none."""
    with store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(b"", 0), T0)
    with store.transaction() as tx:
        assert RunLogTail("r1", 1, b"", 0, 0, T0) == tx.stored_log_tail("r1")


def test_dropping_a_runs_tail_deletes_it_and_only_it(store: Store) -> None:
    """Retention prunes a run's files and its tail; another run's stays, and dropping a run
    without one changes nothing."""
    with store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(b"one\n", 4), T0)
        tx.store_log_tail("r2", 1, LogTail(b"two\n", 4), T0)
    with store.transaction() as tx:
        tx.drop_log_tail("r1")
        tx.drop_log_tail("r3")
    with store.transaction() as tx:
        assert (None, b"two\n") == (tx.stored_log_tail("r1"),
                                   getattr(tx.stored_log_tail("r2"), "tail", None))
