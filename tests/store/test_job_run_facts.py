"""The store contract for each job's run facts (``job_run_facts``, kept by triggers on runs):
whatever writes runs, in whatever order, the reads built on them answer exactly what the
reads over every job's newest runs answered before them (their SQL is kept here as the
oracle), what the core's rules say of each job's history, and what counting the facts
again from runs (``job_run_facts_counted``) gives."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronduit.core.status import FAILED, SKIPS_IN_A_ROW, last_counted, skipped_in_a_row
from cronduit.intake import reports
from cronduit.ports import Run, Store, Transaction
from cronduit.store.postgres import PACKAGE as PG_PACKAGE
from cronduit.store.postgres import PostgresStore
from cronduit.store.sql.migrate import migrations, statements
from cronduit.store.sqlite import SqliteStore
from tests.helpers.postgres import fresh_schema, in_schema, postgres_store

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

# -- the oracle: the reads as they were before the facts were kept (each job's newest runs) --

OLD_SQLITE = {
    "newest_ended_outcomes": """
        SELECT job, outcome FROM (
            SELECT j.value AS job, (SELECT r.outcome FROM runs AS r INDEXED BY runs_by_job
                                    WHERE r.job = j.value AND r.state = 'ended'
                                    ORDER BY r.seq DESC LIMIT 1) AS outcome
            FROM json_each(:jobs) AS j)
        WHERE outcome IN (SELECT value FROM json_each(:outcomes))""",
    "jobs_last_ended": """
        SELECT j.value FROM json_each(:jobs) AS j
        WHERE (SELECT r.outcome FROM runs AS r INDEXED BY runs_by_job
               WHERE r.job = j.value AND r.state = 'ended' AND r.outcome IS NOT 'skipped'
               ORDER BY r.seq DESC LIMIT 1) IN (SELECT value FROM json_each(:outcomes))""",
    "jobs_skipped_in_a_row": """
        SELECT j.value FROM json_each(:jobs) AS j
        WHERE (SELECT r.outcome FROM runs AS r INDEXED BY runs_by_job WHERE r.job = j.value
               ORDER BY r.seq DESC LIMIT 1) = 'skipped'
            AND (SELECT COUNT(*) FROM (SELECT r.outcome FROM runs AS r INDEXED BY runs_by_job
                                       WHERE r.job = j.value ORDER BY r.seq DESC
                                       LIMIT :count) AS n
                 WHERE n.outcome = 'skipped') = :count""",
}
OLD_POSTGRES = {
    "newest_ended_outcomes": """
        SELECT job, outcome FROM (
            SELECT j.job, (SELECT r.outcome FROM runs AS r
                           WHERE r.job = j.job AND r.state = 'ended'
                           ORDER BY r.seq DESC LIMIT 1) AS outcome
            FROM unnest(%(jobs)s::text[]) AS j(job)) AS newest
        WHERE outcome = ANY(%(outcomes)s::text[])""",
    "jobs_last_ended": """
        SELECT j.job FROM unnest(%(jobs)s::text[]) AS j(job)
        WHERE (SELECT r.outcome FROM runs AS r
               WHERE r.job = j.job AND r.state = 'ended'
                   AND r.outcome IS DISTINCT FROM 'skipped'
               ORDER BY r.seq DESC LIMIT 1) = ANY(%(outcomes)s::text[])""",
    "jobs_skipped_in_a_row": """
        SELECT j.job FROM unnest(%(jobs)s::text[]) AS j(job)
        WHERE (SELECT r.outcome FROM runs AS r WHERE r.job = j.job
               ORDER BY r.seq DESC LIMIT 1) = 'skipped'
            AND (SELECT COUNT(*) FROM (SELECT r.outcome FROM runs AS r WHERE r.job = j.job
                                       ORDER BY r.seq DESC LIMIT %(count)s) AS n
                 WHERE n.outcome = 'skipped') = %(count)s""",
}


@dataclass
class Raw:
    """Statements on the store's database beside the seam, each committed at once: the
    writes no method of the store makes (a run given its seq, deleted, moved) and the old
    reads. ``sql`` is SQLite's text; PostgreSQL's placeholders are made from it."""

    execute: Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]
    old: dict[str, str]
    array: Callable[[list[str]], Any]

    def run(self, sql: str, **values: Any) -> list[tuple[Any, ...]]:
        return self.execute(sql, values)

    def old_read(self, name: str, **values: Any) -> list[tuple[Any, ...]]:
        return self.execute(self.old[name], {key: self.array(value) if isinstance(value, list)
                                             else value for key, value in values.items()})


@contextmanager
def raw(store: Store) -> Iterator[Raw]:
    """A connection of its own to ``store``'s database."""
    if isinstance(store, SqliteStore):
        import json  # noqa: PLC0415

        with closing(sqlite3.connect(store.path, isolation_level=None)) as db:
            yield Raw(lambda sql, values: db.execute(sql, values).fetchall(), OLD_SQLITE,
                      json.dumps)
        return
    assert isinstance(store, PostgresStore)
    with psycopg.connect(store._conninfo, autocommit=True) as pg:
        def execute(sql: str, values: dict[str, Any]) -> list[tuple[Any, ...]]:
            if "%(" not in sql:
                for key in sorted(values, key=len, reverse=True):
                    sql = sql.replace(f":{key}", f"%({key})s")
            cursor = pg.execute(sql.encode(), values)
            return cursor.fetchall() if cursor.description else []
        yield Raw(execute, OLD_POSTGRES, list)


def insert(db: Raw, seq: int, job: str, state: str, outcome: str | None) -> None:
    at = (T0 + timedelta(seconds=seq)).isoformat()
    db.run("INSERT INTO runs (seq, id, job, kind, label, state, exclusive, outcome, created_at)"
           " VALUES (:seq, :id, :job, 'timer', 'timer', :state, false, :outcome, :at)",
           seq=seq, id=f"run{seq}", job=job, state=state, outcome=outcome, at=at)


def facts(db: Raw, jobs: Sequence[str], view: str = "job_run_facts") -> list[tuple[Any, ...]]:
    """The rows of ``view`` (the facts kept, or counted again) of ``jobs``, by job."""
    return [tuple(row) for row in db.run(
        f"SELECT * FROM {view} WHERE job IN ({', '.join(repr(job) for job in jobs)}) "
        "ORDER BY job")]


OUTCOME_SETS = [sorted(FAILED), ["cancelled"], ["success", "timeout"], ["skipped"]]


def assert_reads_as_before(store: Store, db: Raw, jobs: list[str],
                           kept: str = "job_run_facts") -> None:
    """The new reads are the old ones for every outcome set and every count, and the facts
    ``kept`` are the facts counted again."""
    with store.reading() as tx:
        for outcomes in OUTCOME_SETS:
            old = {row[0] for row in db.old_read("jobs_last_ended", jobs=jobs,
                                                   outcomes=outcomes)}
            assert old == tx.jobs_last_ended(jobs, outcomes), outcomes
        for count in range(1, SKIPS_IN_A_ROW + 1):
            old = {row[0] for row in db.old_read("jobs_skipped_in_a_row", jobs=jobs,
                                                   count=count)}
            assert old == tx.jobs_skipped_in_a_row(jobs, count), count
    assert facts(db, jobs, "job_run_facts_counted") == facts(db, jobs, kept)


def assert_as_the_core_judges(tx: Transaction, jobs: list[str]) -> None:
    """What the reads say is what the core's rules say of each job's whole history."""
    histories = {job: tx.history(job, 1000) for job in jobs}
    for outcomes in OUTCOME_SETS:
        judged = {job for job, runs in histories.items()
                  if (last := last_counted(runs)) is not None and last.outcome in outcomes}
        assert judged == tx.jobs_last_ended(jobs, outcomes)
    assert {job for job, runs in histories.items() if skipped_in_a_row(runs)} == (
        tx.jobs_skipped_in_a_row(jobs, SKIPS_IN_A_ROW))


def old_divergence_facts(db: Raw, jobs: list[str]) -> tuple[set[str], set[str]]:
    """Which jobs failed and which kept being skipped, as ``intake.reports`` found them
    before: each job's newest ended run first, the last counted run and skips in a row of
    only those whose newest ended run was skipped."""
    newest = dict(db.old_read("newest_ended_outcomes", jobs=jobs,
                              outcomes=[*FAILED, "skipped"]))
    skipped = [job for job, outcome in newest.items() if outcome == "skipped"]
    failed = {job for job, outcome in newest.items() if outcome != "skipped"}
    failed |= {row[0] for row in db.old_read("jobs_last_ended", jobs=skipped,
                                               outcomes=sorted(FAILED))}
    return failed, {row[0] for row in db.old_read("jobs_skipped_in_a_row", jobs=skipped,
                                                    count=SKIPS_IN_A_ROW)}


# -- examples ------------------------------------------------------------------------------


def test_runs_ending_out_of_order_leave_the_newest_counted_run_last(store: Store) -> None:
    """Two runs going at once: the newer ends first (failure), the older after (success):
    the job's last counted run is still the newer one, so it is failing; the other way
    round it is not."""
    with store.transaction() as tx:
        for job in ("a", "b"):
            for n in (1, 2):
                tx.insert_run(Run(id=f"{job}{n}", job=job, kind="timer", label="t",
                                  state="running", created_at=T0, exclusive=False))
    with store.transaction() as tx:
        tx.update_run("a2", state="ended", outcome="failure", finished_at=T0)
        tx.update_run("a1", state="ended", outcome="success", finished_at=T0)
        tx.update_run("b2", state="ended", outcome="success", finished_at=T0)
        tx.update_run("b1", state="ended", outcome="failure", finished_at=T0)
    with store.reading() as tx:
        assert {"a"} == tx.jobs_last_ended(["a", "b"], FAILED)
        assert_as_the_core_judges(tx, ["a", "b"])
    with raw(store) as db:
        assert_reads_as_before(store, db, ["a", "b"])


def test_skips_keep_a_failure_and_three_in_a_row_are_skipping(store: Store) -> None:
    """Skips after a failure leave it the last counted run; the third skip in a row makes
    the job skipping, and a run that starts after them ends that."""
    with store.transaction() as tx:
        tx.insert_run(Run(id="f", job="a", kind="timer", label="t", state="ended",
                          created_at=T0, exclusive=False, outcome="failure"))
        for n in range(3):
            tx.insert_run(Run(id=f"s{n}", job="a", kind="timer", label="t", state="ended",
                              created_at=T0, exclusive=False, outcome="skipped"))
    with store.reading() as tx:
        assert ({"a"}, {"a"}) == (tx.jobs_last_ended(["a"], FAILED),
                                  tx.jobs_skipped_in_a_row(["a"], SKIPS_IN_A_ROW))
    with store.transaction() as tx:
        tx.insert_run(Run(id="g", job="a", kind="timer", label="t", state="running",
                          created_at=T0, exclusive=False))
    with store.reading() as tx:
        assert ({"a"}, set()) == (tx.jobs_last_ended(["a"], FAILED),
                                  tx.jobs_skipped_in_a_row(["a"], SKIPS_IN_A_ROW))
        assert_as_the_core_judges(tx, ["a"])


def test_pruning_a_runs_files_changes_no_fact(store: Store) -> None:
    """Retention marks old runs' files pruned (the runs stay): the facts stay as they were."""
    with store.transaction() as tx:
        for n, outcome in enumerate(["success", "failure", "skipped", "skipped", "skipped"]):
            tx.insert_run(Run(id=f"r{n}", job="a", kind="timer", label="t", state="ended",
                              created_at=T0, exclusive=False, outcome=outcome))
    with raw(store) as db:
        before = facts(db, ["a"])
        with store.transaction() as tx:
            for run in tx.runs_to_prune("a", 1):
                tx.update_run(run.id, files_pruned=True)
        assert before == facts(db, ["a"])
        assert_reads_as_before(store, db, ["a"])


def test_skips_in_a_row_are_kept_up_to_the_rules_count_only(store: Store) -> None:
    """Asking for more skips in a row than the rule counts (or none) is refused, not
    answered wrong."""
    with store.reading() as tx:
        for count in (0, SKIPS_IN_A_ROW + 1):
            with pytest.raises(ValueError, match="skips in a row"):
                tx.jobs_skipped_in_a_row(["a"], count)


def test_a_run_that_held_a_fact_and_no_longer_qualifies_is_counted_again(
        store: Store) -> None:
    """A job's last counted run rewritten as skipped gives back the failure before it; its
    newest run not skipped ending skipped, over two skips, makes three in a row."""
    with raw(store) as db:
        for seq, (state, outcome) in enumerate([("ended", "failure"), ("ended", "success"),
                                                ("ended", "skipped"), ("running", None)], 1):
            insert(db, seq, "a", state, outcome)
        db.run("UPDATE runs SET outcome = 'skipped' WHERE seq = 2")
        assert_reads_as_before(store, db, ["a"])
        db.run("UPDATE runs SET state = 'ended', outcome = 'skipped' WHERE seq = 4")
        assert [("a", 4, 3, 2, 1, 1, "failure")] == facts(db, ["a"])
        assert_reads_as_before(store, db, ["a"])
        with store.reading() as tx:
            assert ({"a"}, {"a"}) == (tx.jobs_last_ended(["a"], FAILED),
                                      tx.jobs_skipped_in_a_row(["a"], SKIPS_IN_A_ROW))


def test_a_run_deleted_or_moved_to_another_job_is_counted_again(store: Store) -> None:
    """cronduit deletes no run and moves none, but a hand-edited database may: the facts of
    both jobs are counted again from their runs."""
    with raw(store) as db:
        for seq, (job, outcome) in enumerate([("a", "failure"), ("a", "skipped"),
                                              ("a", "success"), ("b", "skipped")], 1):
            insert(db, seq, job, "ended", outcome)
        db.run("DELETE FROM runs WHERE seq = 3")  # the last counted run
        assert_reads_as_before(store, db, ["a", "b"])
        insert(db, 5, "c", "ended", "skipped")
        insert(db, 6, "c", "running", None)
        for seq in (7, 8, 9):
            insert(db, seq, "c", "ended", "skipped")
        db.run("DELETE FROM runs WHERE seq = 6")  # the newest not skipped, under 3 skips
        assert_reads_as_before(store, db, ["c"])
        db.run("UPDATE runs SET job = 'b' WHERE seq = 1")
        assert_reads_as_before(store, db, ["a", "b"])
        db.run("DELETE FROM runs WHERE job = 'a'")
        assert [] == facts(db, ["a"])
        assert_reads_as_before(store, db, ["a", "b"])


# -- any history ---------------------------------------------------------------------------

STATES = [("running", None), ("running", None), ("backoff", None),
          *[("ended", o) for o in ("success", "failure", "timeout", "cancelled")],
          *[("ended", "skipped")] * 4]
"""A run's state and outcome as cronduit writes them (skips and runs going weighted up, so
that runs of skips come often, with a run going below them)."""
ODD = [("ended", None), ("running", "skipped"), ("backoff", "failure")]
"""Rows cronduit never writes (an outcome only on an ended run), which the reads must still
answer as before."""
JOBS = 2
EXAMPLES = itertools.count(1)
"""Each example's own jobs and seqs, in the one store of the test."""


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, int, int, str, str | None]]:
    """Writes to runs: (what, run, job, state, outcome). A run is inserted with a seq drawn
    from a shuffled range, so runs arrive out of seq order (PostgreSQL's daemons commit
    them so); then runs end or change, have their files pruned, are deleted or moved."""
    count = draw(st.integers(1, 14))
    seqs = draw(st.permutations(range(count)))
    writes = []
    for seq in seqs:
        state, outcome = draw(st.sampled_from(STATES + ODD if draw(st.integers(0, 9)) == 0
                                              else STATES))
        writes.append(("insert", seq, draw(st.integers(0, JOBS - 1)), state, outcome))
    for _ in range(draw(st.integers(0, 10))):
        what = draw(st.sampled_from(["end", "end", "prune", "delete", "delete", "move"]))
        state, outcome = draw(st.sampled_from(STATES))
        # mostly the newest runs, those that hold the facts, once they are inserted
        run = draw(st.one_of(st.integers(max(0, count - 5), count - 1), st.sampled_from(seqs)))
        inserted = next(n for n, write in enumerate(writes) if write[:2] == ("insert", run))
        writes.insert(draw(st.integers(inserted + 1, len(writes))),
                      (what, run, draw(st.integers(0, JOBS - 1)), state, outcome))
    return writes


def apply(db: Raw, base: int, jobs: list[str],
          writes: list[tuple[str, int, int, str, str | None]]) -> bool:
    """Carry ``writes`` out on runs (seqs from ``base``); whether every run is as cronduit
    writes them (outcome only once ended)."""
    for what, run, job, state, outcome in writes:
        seq = base + run
        if what == "insert":
            insert(db, seq, jobs[job], state, outcome)
        elif what == "end":
            db.run("UPDATE runs SET state = :state, outcome = :outcome WHERE seq = :seq",
                   state=state, outcome=outcome, seq=seq)
        elif what == "prune":
            db.run("UPDATE runs SET files_pruned = true WHERE seq = :seq", seq=seq)
        elif what == "delete":
            db.run("DELETE FROM runs WHERE seq = :seq", seq=seq)
        else:
            db.run("UPDATE runs SET job = :job WHERE seq = :seq", job=jobs[job], seq=seq)
    odd = db.run("SELECT COUNT(*) FROM runs WHERE (state = 'ended') <> (outcome IS NOT NULL)")
    return odd == [(0,)]


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=histories())
def test_whatever_writes_runs_in_whatever_order_the_reads_answer_as_before(
        store: Store, writes: list[tuple[str, int, int, str, str | None]]) -> None:
    """Any history (runs inserted out of seq order, ended in any order, skipped, their files
    pruned, deleted, moved): the failing and skipping reads equal the old reads and the
    core's rules, the facts kept equal the facts counted again, and where every run is as
    cronduit writes them, the dashboard's filters find what they found before."""
    example = next(EXAMPLES)
    jobs = [f"e{example}j{n}" for n in range(JOBS)]
    with raw(store) as db:
        valid = apply(db, example * 100, jobs, writes)
        asked = [*jobs, f"e{example}none"]
        assert_reads_as_before(store, db, asked)
        with store.reading() as tx:
            assert_as_the_core_judges(tx, asked)
            failing = reports.failing_jobs(tx, asked)
            skipping = tx.jobs_skipped_in_a_row(asked, SKIPS_IN_A_ROW)
        failed_before, skipping_before = old_divergence_facts(db, asked)
    assert [job for job in asked if job in failed_before] == failing
    if valid:
        assert skipping_before == skipping


# -- PostgreSQL: daemons writing one job's runs at once --------------------------------------


def test_two_writers_of_one_jobs_runs_at_once_never_wait_for_each_other() -> None:
    """PostgreSQL: one transaction inserts a run of a job and holds it; another inserts an
    older run of the job (seq below it, as a daemon whose insert committed later would) and
    ends a third meanwhile, without waiting: its changes wait to be folded in, the reads
    fold them in meanwhile, and the job's next writer folds them into its row."""
    with postgres_store() as store, raw(store) as db:
        insert(db, 1, "a", "running", None)
        with psycopg.connect(store._conninfo) as first, psycopg.connect(
                store._conninfo, autocommit=True) as second:
            first.execute("INSERT INTO runs (seq, id, job, kind, label, state, exclusive, "
                          "outcome, created_at) VALUES (20, 'run20', 'a', 't', 't', 'ended', "
                          "false, 'skipped', now())")
            with second.transaction():
                second.execute("INSERT INTO runs (seq, id, job, kind, label, state, exclusive, "
                               "outcome, created_at) VALUES (10, 'run10', 'a', 't', 't', "
                               "'ended', false, 'success', now())")
                second.execute("UPDATE runs SET state = 'ended', outcome = 'failure' "
                               "WHERE seq = 1")
            first.commit()
        folded = [("a", 20, 10, 1, 10, 10, "success")]
        assert folded == facts(db, ["a"], "job_run_facts_now")
        assert folded == facts(db, ["a"], "job_run_facts_counted")
        assert [(2,)] == db.run("SELECT COUNT(*) FROM job_run_facts_changes")
        assert_reads_as_before(store, db, ["a"], "job_run_facts_now")
        with store.reading() as tx:
            assert_as_the_core_judges(tx, ["a"])
        insert(db, 21, "a", "ended", "skipped")
        assert [(0,)] == db.run("SELECT COUNT(*) FROM job_run_facts_changes")
        assert_reads_as_before(store, db, ["a"])


# -- the migration: the facts filled from the runs an older store holds --------------------

OLDER = [("a", "ended", "failure"), ("a", "ended", "skipped"), ("b", "running", None),
         ("b", "ended", "success"), ("a", "ended", "skipped"), ("c", "ended", "skipped"),
         ("a", "ended", "skipped"), ("c", "ended", "timeout"), ("d", "backoff", None),
         ("c", "ended", "skipped"), ("b", "ended", "skipped")]
"""Runs as an older cronduit left them: a failure under three skips, a run going under a
success, a job that never ended a run."""


@contextmanager
def older_store(backend: str, tmp: Path) -> Iterator[Callable[[], Store]]:
    """A store migrated up to the version before the facts, holding :data:`OLDER`; what it
    yields opens it with this cronduit (which migrates it)."""
    if backend == "sqlite":
        path = tmp / "cronduit.db"
        with closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            for number, text in migrations():
                if number < FACTS_SQLITE:
                    for statement in statements(text):
                        db.execute(statement)
                    db.execute("INSERT INTO schema_version VALUES (?)", (number,))
            _older_runs(db.execute)
        yield lambda: SqliteStore(path)
        return
    with fresh_schema() as schema, psycopg.connect(in_schema(schema), autocommit=True) as db:
        db.execute("CREATE TABLE schema_version (version integer NOT NULL)")
        for number, text in migrations(PG_PACKAGE):
            if number < FACTS_POSTGRES:
                db.execute(text.encode())
                db.execute("INSERT INTO schema_version VALUES (%s)", (number,))
        _older_runs(lambda sql, values: db.execute(
            sql.replace(":seq", "%(seq)s").replace(":job", "%(job)s")
            .replace(":state", "%(state)s").replace(":outcome", "%(outcome)s"), values))
        db.execute("SELECT setval(pg_get_serial_sequence('runs', 'seq'), %s)", (len(OLDER),))
        yield lambda: PostgresStore(in_schema(schema))


def _older_runs(execute: Callable[[str, dict[str, Any]], object]) -> None:
    for seq, (job, state, outcome) in enumerate(OLDER, 1):
        execute("INSERT INTO runs (seq, id, job, kind, label, state, exclusive, outcome, "
                "created_at) VALUES (:seq, 'run' || :seq, :job, 'timer', 'timer', :state, "
                "false, :outcome, '2026-06-01T09:00:00Z')",
                {"seq": seq, "job": job, "state": state, "outcome": outcome})


FACTS_SQLITE = 12
FACTS_POSTGRES = 6
"""The migrations that add the facts."""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_migration_fills_each_jobs_facts_from_its_runs(backend: str, tmp_path: Path
                                                           ) -> None:
    """Upgrading a store with runs gives each job with runs its row, the facts counted from
    them, and the reads their old answers; runs written after it keep them so."""
    with older_store(backend, tmp_path) as opened:
        store = opened()
        try:
            with raw(store) as db:
                assert [("a", 7, 5, 2, 1, 1, "failure"), ("b", 11, 4, 3, 4, 4, "success"),
                        ("c", 10, 8, 6, 8, 8, "timeout"), ("d", 9, 0, 0, 9, 0, None)] == (
                    facts(db, ["a", "b", "c", "d"]))
                assert_reads_as_before(store, db, ["a", "b", "c", "d", "e"])
                with store.transaction() as tx:
                    tx.update_run("run3", state="ended", outcome="skipped")
                    for n in range(2):
                        tx.insert_run(Run(id=f"new{n}", job="b", kind="timer", label="t",
                                          state="ended", created_at=T0, exclusive=False,
                                          outcome="skipped"))
                assert_reads_as_before(store, db, ["a", "b", "c", "d"])
                with store.reading() as tx:
                    assert {"a", "b"} == tx.jobs_skipped_in_a_row(["a", "b", "c"], 3)
        finally:
            store.close()
