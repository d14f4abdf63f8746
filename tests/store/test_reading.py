"""The store's reads: reading transactions beside the writer, and the runs listed a page at a
time (``Store.reading``, ``find_runs``), on every backend."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronduit.ports import Run, RunFilter, Store
from cronduit.store.sqlite import SqliteStore
from tests.store.conftest import BACKENDS

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
WRITE_PATIENCE = 10.0
"""Seconds a write beside an open reading transaction may take before it counts as held up."""


@pytest.fixture(params=BACKENDS)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two stores on one state: the daemon's writer and a reader of its own, as the HTTP
    edge opens it."""
    if request.param == "sqlite":
        writer, reader = SqliteStore(tmp_path / "cronduit.db"), SqliteStore(
            tmp_path / "cronduit.db", migrate=False)
        yield writer, reader
        reader.close()
        writer.close()
        return
    from cronduit.store.postgres import PostgresStore  # noqa: PLC0415 - loads psycopg
    from tests.helpers.postgres import fresh_schema, in_schema  # noqa: PLC0415

    with fresh_schema() as schema:
        writer = PostgresStore(in_schema(schema))
        reader = PostgresStore(in_schema(schema), migrate=False)
        yield writer, reader
        reader.close()
        writer.close()


def run(run_id: str, job: str = "report", *, kind: str = "timer", outcome: str | None = None,
        created: datetime = T0) -> Run:
    return Run(id=run_id, job=job, kind=kind, label=kind, state="ended" if outcome else "running",
               created_at=created, exclusive=False, outcome=outcome)


def _write_beside(writer: Store, run_id: str) -> bool:
    """Commit one run from another thread; whether it committed within the patience."""
    done = threading.Event()

    def write() -> None:
        with writer.transaction() as tx:
            tx.insert_run(run(run_id))
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    committed = done.wait(WRITE_PATIENCE)
    thread.join()
    return committed


def test_a_reading_transaction_sees_what_was_committed(pair: tuple[Store, Store]) -> None:
    writer, reader = pair
    with writer.transaction() as tx:
        tx.insert_run(run("r1"))
    with reader.reading() as tx:
        found = tx.get_run("r1")
    assert found is not None
    assert "r1" == found.id


def test_a_reading_transaction_does_not_hold_the_writer_up(pair: tuple[Store, Store]) -> None:
    """The writer commits while a read is open, and the read keeps its one snapshot."""
    writer, reader = pair
    with writer.transaction() as tx:
        tx.insert_run(run("before"))
    with reader.reading() as tx:
        assert tx.get_run("before") is not None
        assert _write_beside(writer, "during")
        assert tx.get_run("during") is None
    with reader.reading() as tx:
        assert tx.get_run("during") is not None


def test_a_reading_transaction_writes_nothing(pair: tuple[Store, Store]) -> None:
    _, reader = pair
    with pytest.raises(Exception, match=r"(?i)read.?only"), reader.reading() as tx:
        tx.insert_run(run("sneaked"))
    with reader.reading() as tx:
        assert tx.get_run("sneaked") is None


def test_a_reading_transaction_inside_another_fails_rather_than_waits(
        pair: tuple[Store, Store]) -> None:
    _, reader = pair
    with (reader.reading(), pytest.raises(Exception, match="transaction"),
          reader.reading()):
        pass


EVERY_RUN = RunFilter()


def _ids(store: Store, where: RunFilter = EVERY_RUN, after: str | None = None,
         limit: int = 100) -> list[str]:
    with store.reading() as tx:
        return [found.id for found in tx.find_runs(where, after, limit)]


def test_runs_are_found_newest_first_by_each_filter(pair: tuple[Store, Store]) -> None:
    writer, reader = pair
    with writer.transaction() as tx:
        tx.insert_run(run("a", outcome="success", created=T0))
        tx.insert_run(run("b", job="backup", kind="manual", outcome="failure",
                          created=T0 + timedelta(minutes=1)))
        tx.insert_run(run("c", created=T0 + timedelta(minutes=2)))
        tx.insert_run(run("d", kind="webhook", outcome="failure",
                          created=T0 + timedelta(minutes=3)))
    assert ["d", "c", "b", "a"] == _ids(reader)
    assert ["d", "c", "a"] == _ids(reader, RunFilter(job="report"))
    assert ["d", "b"] == _ids(reader, RunFilter(outcome="failure"))
    assert ["b"] == _ids(reader, RunFilter(kind="manual"))
    assert ["c", "b"] == _ids(reader, RunFilter(since=T0 + timedelta(minutes=1),
                                                until=T0 + timedelta(minutes=3)))
    assert ["d"] == _ids(reader, RunFilter(job="report", outcome="failure"))
    assert ["d", "c"] == _ids(reader, limit=2)


def test_a_page_goes_on_after_the_run_that_ended_the_last(pair: tuple[Store, Store]) -> None:
    writer, reader = pair
    with writer.transaction() as tx:
        for i in range(5):
            tx.insert_run(run(f"r{i}"))
    assert ["r2", "r1"] == _ids(reader, after="r3", limit=2)
    assert [] == _ids(reader, after="r0")
    assert [] == _ids(reader, after="no-such-run")


def test_pages_stay_stable_when_runs_are_created_between_them(
        pair: tuple[Store, Store]) -> None:
    """Runs created between two page reads are newer than both pages: no run of the older
    ones is seen twice or skipped."""
    writer, reader = pair
    with writer.transaction() as tx:
        for i in range(6):
            tx.insert_run(run(f"r{i}"))
    first = _ids(reader, limit=3)
    with writer.transaction() as tx:
        for i in range(6, 9):
            tx.insert_run(run(f"r{i}"))
    second = _ids(reader, after=first[-1], limit=3)
    assert ["r5", "r4", "r3"] == first
    assert ["r2", "r1", "r0"] == second
