"""The store contract for what the daemon's metrics read every few seconds: how many triggers
wait per job, and each job's newest success, for all jobs at once."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from cronduit.core.enums import EventState
from cronduit.ports import NewEvent, Run, Store
from cronduit.store.pg.transaction import queries as pg_queries
from cronduit.store.postgres import PostgresStore
from cronduit.store.sql.transaction import queries
from cronduit.store.sqlite import SqliteStore
from tests.helpers.postgres import fresh_schema, in_schema

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def ended(run_id: str, job: str, outcome: str, finished: datetime) -> Run:
    return Run(id=run_id, job=job, kind="manual", label="manual", state="ended", created_at=T0,
               exclusive=False, outcome=outcome, started_at=T0, finished_at=finished)


def test_waiting_counts_counts_each_jobs_waiting_triggers_only(store: Store) -> None:
    """New and consumed triggers are not waiting; a job with none waiting is left out."""
    with store.transaction() as tx:
        seqs = [tx.insert_event(NewEvent(f"d{n}", job, "manual", "manual", T0))
                for n, job in enumerate(["a", "a", "b", "a", "c", "c"])]
        assert all(seq is not None for seq in seqs)
        a1, a2, b1, a3, c1, _ = (seq for seq in seqs if seq is not None)
        tx.set_event_state([a1, a2, a3, b1], EventState.WAITING, None)
        tx.set_event_state([c1], EventState.CONSUMED, "run-1")
    with store.transaction() as tx:
        assert {"a": 3, "b": 1} == tx.waiting_counts()


def test_last_successes_gives_each_jobs_newest_successful_end(store: Store) -> None:
    """Failures and skips after a success do not move it; a run still going counts nothing;
    a job that never succeeded, or that is not asked for, is left out."""
    with store.transaction() as tx:
        tx.insert_run(ended("r1", "a", "success", T0 + timedelta(minutes=1)))
        tx.insert_run(ended("r2", "a", "success", T0 + timedelta(minutes=3)))
        tx.insert_run(ended("r3", "a", "failure", T0 + timedelta(minutes=5)))
        tx.insert_run(ended("r4", "b", "failure", T0 + timedelta(minutes=2)))
        tx.insert_run(ended("r5", "c", "success", T0 + timedelta(minutes=4)))
        tx.insert_run(Run(id="r6", job="b", kind="manual", label="manual", state="running",
                          created_at=T0, exclusive=False, started_at=T0))
    with store.transaction() as tx:
        assert {"a": T0 + timedelta(minutes=3)} == tx.last_successes(["a", "b", "nobody"])
        assert {"a": T0 + timedelta(minutes=3), "c": T0 + timedelta(minutes=4)} == (
            tx.last_successes(["a", "b", "c"]))
        assert {} == tx.last_successes([])


def test_last_successes_reads_each_jobs_newest_success_from_its_index(tmp_path: Path) -> None:
    """SQLite: one search of ``runs_last_success`` per job, never a scan of the runs, so a
    job with months of failures costs what one with none does."""
    SqliteStore(tmp_path / "cronduit.db").close()
    db = sqlite3.connect(tmp_path / "cronduit.db")
    plan = " | ".join(str(row[-1]) for row in db.execute(
        "EXPLAIN QUERY PLAN " + queries()["last_successes"], {"jobs": '["a", "b"]'}))
    db.close()
    assert "SEARCH r USING INDEX runs_last_success (job=?" in plan
    assert "SCAN r" not in plan


def test_last_successes_reads_the_index_on_postgresql_too() -> None:
    """PostgreSQL: the same look-up per job through ``runs_last_success`` (sequential scans
    switched off, so the plan shows whether the index can serve the query at all)."""
    text = pg_queries()["last_successes"].decode()
    with fresh_schema() as schema:
        PostgresStore(in_schema(schema)).close()
        with psycopg.connect(in_schema(schema), autocommit=True,
                             cursor_factory=psycopg.ClientCursor) as db:
            db.execute("SET enable_seqscan = off")
            rows = db.execute("EXPLAIN " + text, {"jobs": ["a", "b"]}).fetchall()
    plan = " | ".join(str(row[0]) for row in rows)
    assert "runs_last_success" in plan
    assert "Seq Scan on runs" not in plan
