"""The store contract for what a page of the dashboard reads at once: each job's newest runs
and the timers of a page of jobs, read from each job's rows only (never a whole table)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from cronduit.ports import Run, RunMark, Store
from cronduit.store.pg.transaction import queries as pg_queries
from cronduit.store.postgres import PostgresStore
from cronduit.store.sql.transaction import queries
from cronduit.store.sqlite import SqliteStore
from tests.helpers.postgres import fresh_schema, in_schema

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def run(run_id: str, job: str, minute: int, outcome: str | None = "success") -> Run:
    at = T0 + timedelta(minutes=minute)
    if outcome is None:
        return Run(id=run_id, job=job, kind="timer", label="timer", state="running",
                   created_at=at, exclusive=False, started_at=at)
    return Run(id=run_id, job=job, kind="timer", label="timer", state="ended", created_at=at,
               exclusive=False, outcome=outcome, started_at=at, finished_at=at)


def test_recent_runs_gives_each_jobs_newest_runs_newest_first(store: Store) -> None:
    """At most ``per_job`` runs a job, in the order ``history`` gives them, a run still going
    included; a job with no runs, or not asked for, is left out."""
    with store.transaction() as tx:
        for n in range(25):
            tx.insert_run(run(f"a{n:02d}", "a", n, "failure" if n % 2 else "success"))
        tx.insert_run(run("b0", "b", 1, "timeout"))
        tx.insert_run(run("b1", "b", 2, None))
        tx.insert_run(run("c0", "c", 3))
    with store.transaction() as tx:
        found = tx.recent_runs(["a", "b", "nobody"], 20)
        assert {"a", "b"} == set(found)
        assert [r.id for r in tx.history("a", 20)] == [r.id for r in found["a"]]
        assert [f"a{n:02d}" for n in range(24, 4, -1)] == [r.id for r in found["a"]]
        assert ["b1", "b0"] == [r.id for r in found["b"]]
        assert found["b"][0].outcome is None
        assert found["b"][1].outcome == "timeout"
        assert ["c0"] == [r.id for r in tx.recent_runs(["c"], 3)["c"]]
        assert {} == tx.recent_runs([], 20)


def test_run_marks_are_the_recent_runs_few_fields(store: Store) -> None:
    """The same runs as :meth:`recent_runs`, in its order, each with its id, kind, state,
    outcome and reason."""
    with store.transaction() as tx:
        for n in range(6):
            tx.insert_run(run(f"a{n}", "a", n, "failure" if n % 2 else "success"))
        tx.insert_run(run("b0", "b", 1, None))
    with store.transaction() as tx:
        marks = tx.run_marks(["a", "b", "nobody"], 4)
        recent = tx.recent_runs(["a", "b", "nobody"], 4)
        assert {job: [RunMark(r.id, r.job, r.kind, str(r.state), r.outcome, r.reason)
                      for r in runs] for job, runs in recent.items()} == marks
        assert ["a5", "a4", "a3", "a2"] == [mark.id for mark in marks["a"]]
        assert [("running", None)] == [(m.state, m.outcome) for m in marks["b"]]
        assert {} == tx.run_marks([], 4)


@pytest.mark.parametrize("query", ["recent_runs", "run_marks"])
def test_recent_runs_searches_each_jobs_runs_from_the_newest(tmp_path: Path,
                                                             query: str) -> None:
    """SQLite: one search of ``runs_by_job`` per job asked for, each run's row found by its
    key, never a scan of the runs."""
    SqliteStore(tmp_path / "cronduit.db").close()
    db = sqlite3.connect(tmp_path / "cronduit.db")
    plan = " | ".join(str(row[-1]) for row in db.execute(
        "EXPLAIN QUERY PLAN " + queries()[query], {"jobs": '["a", "b"]', "per_job": 20}))
    db.close()
    assert "INDEX runs_by_job (job=?" in plan
    assert "SEARCH r USING INTEGER PRIMARY KEY (rowid=?)" in plan
    assert "SCAN r " not in plan + " "
    assert "SCAN n " not in plan + " "


@pytest.mark.parametrize("query", ["recent_runs", "run_marks"])
def test_recent_runs_reads_the_index_on_postgresql_too(query: str) -> None:
    """PostgreSQL: an index scan of ``runs_by_job`` per job (sequential scans off, so the
    plan shows whether the index can serve the query at all)."""
    text = pg_queries()[query].decode()
    with fresh_schema() as schema:
        PostgresStore(in_schema(schema)).close()
        with psycopg.connect(in_schema(schema), autocommit=True,
                             cursor_factory=psycopg.ClientCursor) as db:
            db.execute("SET enable_seqscan = off")
            rows = db.execute("EXPLAIN " + text, {"jobs": ["a", "b"], "per_job": 20}).fetchall()
    plan = " | ".join(str(row[0]) for row in rows)
    assert "runs_by_job" in plan
    assert "Seq Scan on runs" not in plan


def test_timers_of_gives_the_timers_of_the_jobs_asked_for(store: Store) -> None:
    """By job; a job without a timer, or not asked for, is left out."""
    from cronduit.ports import Timer  # noqa: PLC0415

    timers = [Timer(job, "cron 0 * * * *", T0, "", T0 + timedelta(hours=n), None)
              for n, job in enumerate(["a", "b", "c"])]
    with store.transaction() as tx:
        tx.put_timers(timers)
    with store.transaction() as tx:
        found = tx.timers_of(["a", "c", "nobody"])
        assert {"a": tx.get_timer("a"), "c": tx.get_timer("c")} == found
        assert T0 + timedelta(hours=2) == found["c"].due_at
        assert {} == tx.timers_of([])


def skipped(run_id: str, job: str, minute: int) -> Run:
    at = T0 + timedelta(minutes=minute)
    return Run(id=run_id, job=job, kind="timer", label="timer", state="ended", created_at=at,
               exclusive=False, outcome="skipped", reason="overlap: skip", finished_at=at)


def test_jobs_last_ended_finds_the_jobs_whose_last_counted_run_failed(store: Store) -> None:
    """A job's last counted run is its newest that ended and was not skipped: skips after a
    failure leave it failing, a run going leaves its last as it was, a success clears it."""
    with store.transaction() as tx:
        tx.insert_run(run("a0", "a", 0, "failure"))
        tx.insert_run(run("b0", "b", 1, "success"))
        tx.insert_run(run("b1", "b", 2, "timeout"))
        tx.insert_run(run("c0", "c", 0, "failure"))
        for n in range(1, 6):  # five skips after its failure: still failing
            tx.insert_run(skipped(f"c{n}", "c", 10 + n))
        tx.insert_run(run("d0", "d", 3, "failure"))
        tx.insert_run(run("d1", "d", 4, "success"))
        tx.insert_run(run("e0", "e", 5, "failure"))
        tx.insert_run(run("e1", "e", 6, None))  # going: its last is still the failure
        tx.insert_run(skipped("f0", "f", 7))  # skipped only: no last run at all
        tx.insert_run(run("g0", "g", 8, "cancelled"))
    with store.transaction() as tx:
        everyone = ["a", "b", "c", "d", "e", "f", "g", "nobody"]
        assert {"a", "b", "c", "e"} == tx.jobs_last_ended(everyone, ["failure", "timeout"])
        assert {"b"} == tx.jobs_last_ended(everyone, ["timeout"])
        assert {"g"} == tx.jobs_last_ended(everyone, ["cancelled"])
        assert {"a"} == tx.jobs_last_ended(["a", "d"], ["failure"])
        assert set() == tx.jobs_last_ended([], ["failure"])
        assert set() == tx.jobs_last_ended(everyone, [])


def test_jobs_skipped_in_a_row_finds_the_jobs_whose_newest_runs_were_all_skipped(
        store: Store) -> None:
    """All of the newest ``count``: a run going or one that ran among them, or fewer runs
    than that, and the job is left out."""
    with store.transaction() as tx:
        tx.insert_run(run("a0", "a", 0, "failure"))
        for n in range(1, 4):
            tx.insert_run(skipped(f"a{n}", "a", n))
        for n in range(3):
            tx.insert_run(skipped(f"b{n}", "b", n))
        tx.insert_run(run("b3", "b", 3, None))  # a run going is the newest
        for n in range(2):
            tx.insert_run(skipped(f"c{n}", "c", n))  # two skips only
        tx.insert_run(skipped("d0", "d", 0))
        tx.insert_run(run("d1", "d", 1, "success"))
        tx.insert_run(skipped("d2", "d", 2))
        tx.insert_run(skipped("d3", "d", 3))
    with store.transaction() as tx:
        everyone = ["a", "b", "c", "d", "nobody"]
        assert {"a"} == tx.jobs_skipped_in_a_row(everyone, 3)
        assert {"a", "c", "d"} == tx.jobs_skipped_in_a_row(everyone, 2)
        assert {"a", "c", "d"} == tx.jobs_skipped_in_a_row(everyone, 1)
        assert set() == tx.jobs_skipped_in_a_row([], 3)


def test_armed_jobs_names_the_jobs_with_a_timer_and_those_due_before_an_instant(
        store: Store) -> None:
    """Due strictly before the instant; none, with no timers."""
    from cronduit.ports import Timer  # noqa: PLC0415

    with store.transaction() as tx:
        assert set() == tx.armed_jobs()
        tx.put_timers([Timer(job, "cron 0 * * * *", T0, "", T0 + timedelta(hours=n), None)
                       for n, job in enumerate(["a", "b", "c"])])
    with store.transaction() as tx:
        assert {"a", "b", "c"} == tx.armed_jobs()
        assert {"a", "b"} == tx.armed_jobs(T0 + timedelta(hours=2))
        assert set() == tx.armed_jobs(T0)


def test_the_failing_and_skipping_reads_read_the_qualifying_jobs_facts_only(
        tmp_path: Path) -> None:
    """SQLite: the failing jobs are a search of the facts' index by outcome, the skipping
    ones a scan of the partial index of jobs whose newest run was skipped: never the runs,
    nor every job's row; and the waiting counts read the index by state, not every event."""
    SqliteStore(tmp_path / "cronduit.db").close()
    db = sqlite3.connect(tmp_path / "cronduit.db")
    values = {"outcomes": '["failure"]', "count": 3}
    plans = {name: " | ".join(str(row[-1]) for row in db.execute(
        "EXPLAIN QUERY PLAN " + queries()[name], values))
        for name in ("jobs_last_ended", "jobs_skipped_in_a_row", "waiting_counts")}
    db.close()
    assert "COVERING INDEX job_run_facts_by_last_outcome (last_outcome=?)" in plans[
        "jobs_last_ended"], plans
    assert "SCAN job_run_facts USING INDEX job_run_facts_skipping" == plans[
        "jobs_skipped_in_a_row"], plans
    assert "runs" not in plans["jobs_last_ended"] + plans["jobs_skipped_in_a_row"], plans
    assert "events_by_state (state=?)" in plans["waiting_counts"], plans


def test_the_failing_and_skipping_reads_use_the_facts_indexes_on_postgresql_too() -> None:
    """PostgreSQL: index scans of the facts' indexes (sequential scans off), never runs."""
    with fresh_schema() as schema:
        PostgresStore(in_schema(schema)).close()
        with psycopg.connect(in_schema(schema), autocommit=True,
                             cursor_factory=psycopg.ClientCursor) as db:
            db.execute("SET enable_seqscan = off")
            plans = {name: " | ".join(str(row[0]) for row in db.execute(
                "EXPLAIN " + pg_queries()[name].decode(),
                {"outcomes": ["failure"], "count": 3}).fetchall())
                for name in ("jobs_last_ended", "jobs_skipped_in_a_row")}
    assert "job_run_facts_by_last_outcome" in plans["jobs_last_ended"], plans
    assert "job_run_facts_skipping" in plans["jobs_skipped_in_a_row"], plans
    assert "runs" not in " ".join(plans.values()).replace("job_run_facts", ""), plans


def test_a_page_of_runs_reads_from_the_cursor_down_by_key_or_the_jobs_index(
        tmp_path: Path) -> None:
    """SQLite: a page of every job's runs is a range of the primary key below the cursor's
    run (never a scan of the newer runs); a page of one job's runs reads runs_by_job."""
    SqliteStore(tmp_path / "cronduit.db").close()
    db = sqlite3.connect(tmp_path / "cronduit.db")
    values = {"job": "a", "outcome": None, "kind": None, "since": None, "until": None,
              "after": "r1", "limit": 20}
    plans = {name: " | ".join(str(row[-1]) for row in db.execute(
        "EXPLAIN QUERY PLAN " + queries()[name], values))
        for name in ("find_runs", "find_runs_of_job")}
    db.close()
    assert "SEARCH runs USING INTEGER PRIMARY KEY (rowid<?)" in plans["find_runs"], plans
    assert "INDEX runs_by_job (job=? AND seq<?)" in plans["find_runs_of_job"], plans
    assert "SCAN runs" not in " ".join(plans.values()), plans
