"""Copying an SQLite state into PostgreSQL (``cronduit state copy``): every record arrives as
the PostgreSQL store reads it, seqs go on past the copied ones, and the copy refuses what it
must (a target holding rows, runs in progress) in one transaction that leaves nothing behind.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from cronduit.core.enums import (
    EventState,
    ExecutionState,
    NotificationState,
    RunState,
    SlotFate,
    StepState,
)
from cronduit.core.log_tails import LogTail
from cronduit.core.payload import Payload
from cronduit.ports import (
    AuditEntry,
    Delivery,
    Execution,
    NewEvent,
    Pause,
    Run,
    SlotRecord,
    StepAttempt,
    Store,
    Timer,
)
from cronduit.store.copy import DERIVED, MARKER, CopyFailed, CopyRefused, copy_state
from cronduit.store.postgres import PostgresStore
from cronduit.store.sqlite import SqliteStore
from tests.helpers.postgres import fresh_schema, in_schema
from tests.helpers.store import get_delivery

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
AT = T0 + timedelta(days=1)


@pytest.fixture
def source(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "state" / "cronduit.db")
    yield store
    store.close()


@pytest.fixture
def target() -> Iterator[str]:
    """The URL of an empty schema of its own (the copy makes the tables)."""
    with fresh_schema() as schema:
        yield in_schema(schema)


@pytest.fixture
def filled(source: SqliteStore) -> SqliteStore:
    fill(source)
    return source


def fill(store: Store) -> None:
    """A row in every table, with every kind of value: instants, flags, nulls, counted
    ledger rows, an active and a resumed pause, a delivery with its trigger, an execution
    (whose seq is not 1: one before it was deleted) with its steps and step attempts."""
    with store.transaction() as tx:
        tx.record_delivery(Delivery("gh-1", "github", "push", "push main", '{"ref": "main"}',
                                    T0, 1))
        hook = tx.insert_event(NewEvent("gh-1/report", "report", "github", "push main", T0,
                                        payload=Payload.build(inputs={"A": "1"}),
                                        operator="ann", parent="gh-1"))
        slot = tx.insert_event(NewEvent("slot/report/2026-06-01T09:00:00Z", "report", "timer",
                                        "cron", T0, slot=T0, late=True))
        assert hook is not None
        assert slot is not None
        tx.put_timers([Timer("report", "cron:0 9 * * *", T0 + timedelta(days=1),
                             "2026-06-02 09:00 UTC", T0 + timedelta(days=1),
                             "2026-06-01 09:00 UTC", version=7)])
        tx.record_slots([
            SlotRecord("report", T0, "2026-06-01 09:00 UTC", SlotFate.RAN, "", T0, slot),
            SlotRecord("report", T0 - timedelta(days=9), "2026-05-23 09:00 UTC",
                       SlotFate.MISSED, "daemon down", T0, count=8,
                       until_slot=T0 - timedelta(days=2))])
        tx.insert_run(Run(id="r1", job="report", kind="timer", label="cron (late)",
                          state=RunState.ENDED, created_at=T0, trigger_seq=slot,
                          exclusive=False, outcome="failure", reason="exit 3",
                          started_at=T0, finished_at=T0 + timedelta(seconds=5), attempts=2,
                          exit_status=3, inputs='{"A": "1"}', operator="ann", late=True,
                          deadline_at=T0 + timedelta(hours=1), pid=4242, pid_start=99,
                          attempt_dir="runs/r1", cancel_reason="asked", files_pruned=True,
                          execution_id="e1"))
        tx.set_event_state([slot], EventState.CONSUMED, "r1")
        tx.set_event_state([hook], EventState.WAITING, None)
        tx.insert_run_end("report", "r1", "failed", "failure", T0 + timedelta(seconds=5))
        tx.store_log_tail("r1", 2, LogTail(b"ends \xff\x00 raw\n", 4096, cut=10), T0)
        tx.mark_chained(tx.last_run_end_seq())
        tx.set_meta("seen/report", "2026-05-01T00:00:00Z")
        tx.insert_notification("r1", "slack", '{"text": "report failed"}', T0)
        [queued] = tx.notifications_of_run("r1")
        tx.record_notification_try(queued.seq, NotificationState.FAILED, T0, "HTTP 500", T0)
        tx.insert_pause(Pause("report", "maintenance", "ann", T0 - timedelta(days=3)))
        tx.end_pause("report", T0 - timedelta(days=2), "bob")
        tx.insert_pause(Pause("report", "again", "ann", T0, until=T0 + timedelta(days=7)))
        tx.insert_audit(AuditEntry("pause", "ann", T0, "report", '{"reason": "again"}'))
        for execution_id in ("e0", "e1"):
            tx.insert_execution(Execution(
                execution_id, "report", "sha256:d1", '{"A": "1"}', ExecutionState.FAILED, T0,
                T0 + timedelta(days=7), T0 + timedelta(seconds=5), activations=2, run_id="r1",
                failed_step="build"), ["fetch", "build"])
            tx.insert_step_attempt(StepAttempt(execution_id, "fetch", f"{execution_id}-a1",
                                               f"{execution_id}-r0", 1, T0))
        tx.delete_execution("e0")
        tx.update_step("e1", "fetch", state=StepState.DONE, outputs='{"TAG": "v1"}',
                       attempts=1, done_at=T0 + timedelta(seconds=1), run_id="e1-r0")
        tx.update_step("e1", "build", state=StepState.FAILED, attempts=1, run_id="r1")
        tx.end_step_attempt("e1-r0", 1, T0 + timedelta(seconds=1), 0, "success", "")
        tx.insert_step_attempt(StepAttempt("e1", "build", "e1-a2", "r1", 1,
                                           T0 + timedelta(seconds=2)))
        tx.end_step_attempt("r1", 1, T0 + timedelta(seconds=5), 3, "failure", "exit 3")


def dump(store: Store) -> dict[str, Any]:
    """Every record of :func:`fill`'s, read through the store's seam."""
    with store.transaction() as tx:
        return {
            "timers": tx.timers(),
            "slots": tx.slots("report", None, None),
            "runs": tx.history("report", 10),
            "events": [tx.event_by_delivery("gh-1/report"),
                       tx.event_by_delivery("slot/report/2026-06-01T09:00:00Z")],
            "of_delivery": tx.events_of_delivery("gh-1"),
            "delivery": get_delivery(tx, "gh-1"),
            "run_ends": tx.run_ends_after(None, 0),
            "unchained": tx.unchained_run_ends(10),
            "meta": tx.get_meta("seen/report"),
            "notifications": tx.notifications_of_run("r1"),
            "pauses": tx.pauses(T0 - timedelta(days=30)),
            "active": tx.active_pause("report"),
            "audit": tx.audit(10),
            "log_tail": tx.stored_log_tail("r1"),
            "executions": tx.executions(None, 10),
            "steps": tx.execution_steps("e1"),
            "step_attempts": tx.step_attempts("e1"),
        }


def held(url: str) -> dict[str, int]:
    """Rows per table of the target, of the tables that hold any (the copy's marker left
    out): whatever tables its schema has by now (not its views)."""
    with psycopg.connect(url) as db:
        names = [row[0] for row in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_version'")]
        found = {name: db.execute(sql.SQL("SELECT count(*) FROM {}").format(
            sql.Identifier(name))).fetchone()[0] for name in names}  # type: ignore[index]
        found["meta"] -= db.execute("SELECT count(*) FROM meta WHERE key = %s",
                                    (MARKER,)).fetchone()[0]  # type: ignore[index]
    return {name: count for name, count in sorted(found.items()) if count}


def test_a_copy_holds_every_record_as_the_postgresql_store_reads_it(
        filled: SqliteStore, target: str) -> None:
    """Instants, flags, counts, nulls and seqs cross from text and integers to timestamptz,
    boolean and bigint, and read back through the seam as the SQLite store reads them."""
    copied = copy_state(filled.path, target, at=AT)
    expected = dump(filled)
    assert (1, 2) == (len(expected["runs"]), len(expected["pauses"]))
    assert ([2], "e1", 2) == ([e.seq for e in expected["executions"]],
                              expected["runs"][0].execution_id, len(expected["step_attempts"]))
    pg = PostgresStore(target)
    try:
        assert expected == dump(pg)
    finally:
        pg.close()
    kept = held(target)
    assert (False, {"audit": 1, "deliveries": 1, "events": 2, "execution_steps": 2,
                    "executions": 1, "job_run_facts": 1, "meta": 1, "notifications": 1,
                    "pauses": 2, "run_ends": 1, "run_logs": 1, "runs": 1, "slots": 2,
                    "step_attempts": 2, "timers": 1}) == (copied.already, kept)
    assert {name: count for name, count in kept.items() if name not in DERIVED} == {
        name: count for name, count in sorted(copied.rows.items()) if count}


def test_the_target_counts_each_jobs_facts_from_its_copied_runs(
        tmp_path: Path, target: str) -> None:
    """Each job's run facts are not copied: the target counts them from the runs copied,
    the same rows the source kept (failures, skips after them, a job whose newest runs
    were skipped in a row), and its triggers keep them from then on."""
    source = SqliteStore(tmp_path / "facts.db")
    outcomes = ["failure", "skipped", "skipped", "success", "timeout", "skipped", "skipped",
                "skipped", "cancelled"]
    with source.transaction() as tx:
        for n, outcome in enumerate(outcomes):
            tx.insert_run(Run(id=f"r{n}", job=f"job{n % 2}", kind="timer", label="t",
                              state="ended", created_at=T0, exclusive=False, outcome=outcome,
                              finished_at=T0))
    with closing(sqlite3.connect(source.path)) as db:
        facts = db.execute("SELECT * FROM job_run_facts ORDER BY job").fetchall()
    source.close()
    copied = copy_state(source.path, target, at=AT)
    assert "job_run_facts" not in copied.rows
    with psycopg.connect(target) as db:
        assert facts == db.execute("SELECT * FROM job_run_facts ORDER BY job").fetchall()
        assert facts == db.execute(
            "SELECT * FROM job_run_facts_counted ORDER BY job").fetchall()
    pg = PostgresStore(target)
    try:
        with pg.transaction() as tx:
            tx.insert_run(Run(id="after", job="job1", kind="timer", label="t", state="ended",
                              created_at=T0, exclusive=False, outcome="failure",
                              finished_at=T0))
        with pg.reading() as tx:
            assert {"job1"} == tx.jobs_last_ended(["job0", "job1"], ["failure"])
    finally:
        pg.close()


def test_the_targets_seqs_go_on_past_the_copied_ones(filled: SqliteStore, target: str) -> None:
    """Each identity sequence is set past the highest seq copied, so the next trigger, run
    end, audit entry, execution and step attempt the target numbers follow the copied ones."""
    with filled.transaction() as tx:
        last_event = tx.insert_event(NewEvent("hook/x", "report", "webhook", "w", T0))
        last_audit = tx.insert_audit(AuditEntry("resume", "bob", T0, "report"))
    assert last_event is not None
    copy_state(filled.path, target, at=AT)
    pg = PostgresStore(target)
    try:
        with pg.transaction() as tx:
            assert last_event + 1 == tx.insert_event(NewEvent("hook/y", "report", "webhook",
                                                              "w", AT))
            assert last_audit + 1 == tx.insert_audit(AuditEntry("apply", "ann", AT))
            assert 2 == tx.insert_run_end("report", "r2", "completed", "success", AT)
            tx.insert_execution(Execution("e2", "report", "sha256:d1", "{}",
                                          ExecutionState.RUNNING, AT, AT, AT), ["main"])
            assert [2, 3] == [e.seq for e in reversed(tx.executions(None, 10))]
            tx.insert_step_attempt(StepAttempt("e2", "main", "e2-a1", "e2-r1", 1, AT))
    finally:
        pg.close()
    with psycopg.connect(target) as db:
        assert [(2,), (3,), (4,)] == db.execute("SELECT seq FROM step_attempts ORDER BY seq"
                                                ).fetchall()


def test_a_target_that_holds_rows_is_refused_naming_the_tables(
        filled: SqliteStore, target: str) -> None:
    """A database a daemon already served is not written into: the copy says which tables
    hold rows and leaves them as they were."""
    pg = PostgresStore(target)
    try:
        with pg.transaction() as tx:
            tx.put_timers([Timer("other", "every:60", T0, "n", T0, None)])
            tx.insert_audit(AuditEntry("apply", "ann", T0))
    finally:
        pg.close()
    with pytest.raises(CopyRefused) as refused:
        copy_state(filled.path, target, at=AT)
    assert ("the target is not empty: audit, timers already hold rows; copy into an empty "
            "database or schema") == str(refused.value)
    assert {"audit": 1, "timers": 1} == held(target)


def test_copying_the_same_state_again_does_nothing(filled: SqliteStore, target: str) -> None:
    """A second copy of the unchanged state finds its own copy there (even after a daemon
    on the target has written more) and copies nothing."""
    first = copy_state(filled.path, target, at=AT)
    pg = PostgresStore(target)
    try:
        with pg.transaction() as tx:
            tx.insert_audit(AuditEntry("apply", "ann", AT))
    finally:
        pg.close()
    again = copy_state(filled.path, target, at=AT + timedelta(hours=1))
    assert (True, first.rows, first.fingerprint) == (again.already, again.rows,
                                                    again.fingerprint)
    assert 2 == held(target)["audit"]


def test_the_fingerprint_is_of_the_rows_not_of_the_file(filled: SqliteStore,
                                                        target: str) -> None:
    """A file rewritten page by page (VACUUM, a checkpoint) holds the same state: copying it
    again still does nothing."""
    first = copy_state(filled.path, target, at=AT)
    with sqlite3.connect(filled.path) as db:
        db.execute("VACUUM")
    assert (True, first.fingerprint) == (
        (again := copy_state(filled.path, target, at=AT)).already, again.fingerprint)


def test_a_state_changed_since_its_copy_is_refused(filled: SqliteStore, target: str) -> None:
    """Slots fired on the SQLite state after its copy would be lost: the target, which holds
    the earlier copy, refuses the newer one."""
    copy_state(filled.path, target, at=AT)
    with filled.transaction() as tx:
        tx.insert_audit(AuditEntry("resume", "bob", AT, "report"))
    with pytest.raises(CopyRefused) as refused:
        copy_state(filled.path, target, at=AT)
    assert (f"the target already holds a copy of {filled.path.resolve()} (made "
            "2026-06-02T09:00:00Z) and this state has changed since; copy into an empty "
            "database or schema") == str(refused.value)


def test_another_state_is_refused_by_a_target_that_holds_a_copy(
        filled: SqliteStore, target: str, tmp_path: Path) -> None:
    other = SqliteStore(tmp_path / "other" / "cronduit.db")
    other.close()
    copy_state(filled.path, target, at=AT)
    with pytest.raises(CopyRefused) as refused:
        copy_state(other.path, target, at=AT)
    assert str(refused.value).startswith(
        f"the target already holds a copy of {filled.path.resolve()} (made ")


def test_runs_in_progress_are_refused_by_name_and_nothing_is_written(
        filled: SqliteStore, target: str) -> None:
    """A run's process cannot move hosts: the copy names the runs still going (running, or
    waiting to retry) and leaves the target empty, to be copied once they end."""
    with filled.transaction() as tx:
        tx.insert_run(Run(id="r2", job="report", kind="manual", label="by hand",
                          state=RunState.RUNNING, created_at=T0))
        tx.insert_run(Run(id="r3", job="sync", kind="timer", label="every 1m",
                          state=RunState.BACKOFF, created_at=T0))
    with pytest.raises(CopyRefused) as refused:
        copy_state(filled.path, target, at=AT)
    assert ("runs in progress: report (run r2, running), sync (run r3, backoff); a run's "
            "process cannot move to another host: wait for them to end (cronduit job wait "
            "JOB), then copy") == str(refused.value)
    assert {} == held(target)
    with filled.transaction() as tx:
        tx.update_run("r2", state=RunState.ENDED, outcome="success")
        tx.update_run("r3", state=RunState.ENDED, outcome="failure")
    assert 3 == copy_state(filled.path, target, at=AT).rows["runs"]


def test_columns_either_side_adds_later_are_left_to_the_targets_defaults(
        filled: SqliteStore, target: str) -> None:
    """Only the columns both tables have are copied: a column only the target has gets its
    default, one only the source has stays behind."""
    PostgresStore(target).close()
    with psycopg.connect(target, autocommit=True) as db:
        db.execute("ALTER TABLE runs ADD COLUMN later_here text NOT NULL DEFAULT 'default'")
    with sqlite3.connect(filled.path) as db:
        db.execute("ALTER TABLE runs ADD COLUMN later_there TEXT NOT NULL DEFAULT 'x'")
    assert 1 == copy_state(filled.path, target, at=AT).rows["runs"]
    with psycopg.connect(target) as db:
        assert [("r1", "default")] == db.execute("SELECT id, later_here FROM runs").fetchall()


def test_a_value_the_target_cannot_take_fails_the_whole_copy(
        filled: SqliteStore, target: str) -> None:
    """One transaction: a bad instant in the runs fails the copy, naming the column, and the
    tables copied before it are rolled back with it."""
    with sqlite3.connect(filled.path) as db:
        db.execute("UPDATE runs SET finished_at = 'yesterday'")
    with pytest.raises(CopyFailed) as failed:
        copy_state(filled.path, target, at=AT)
    assert ("runs.finished_at holds 'yesterday', which the target's column cannot take"
            == str(failed.value))
    assert {} == held(target)


def test_a_target_in_use_is_refused_after_the_wait(filled: SqliteStore, target: str) -> None:
    """A daemon writing to the target holds its tables: the copy waits, then says so."""
    PostgresStore(target).close()
    with psycopg.connect(target) as daemon, daemon.transaction():
        daemon.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')")
        with pytest.raises(CopyRefused) as refused:
            copy_state(filled.path, target, at=AT, wait=0.2)
        daemon.execute("DELETE FROM meta")
    assert ("the target's tables are in use (waited 0.2 s): stop the daemons serving it, or "
            "copy into an empty database") == str(refused.value)


def test_a_missing_source_is_refused(tmp_path: Path, target: str) -> None:
    with pytest.raises(CopyRefused) as refused:
        copy_state(tmp_path / "none" / "cronduit.db", target, at=AT)
    assert f"no SQLite state at {tmp_path / 'none' / 'cronduit.db'}: nothing to copy" == str(
        refused.value)
    assert not (tmp_path / "none").exists()


def test_the_marker_names_the_source_and_what_was_copied(filled: SqliteStore,
                                                         target: str) -> None:
    copied = copy_state(filled.path, target, at=AT)
    with psycopg.connect(target) as db:
        row = db.execute("SELECT value FROM meta WHERE key = %s", (MARKER,)).fetchone()
    assert row is not None
    assert {"source": str(filled.path.resolve()), "fingerprint": copied.fingerprint,
            "copied_at": "2026-06-02T09:00:00Z", "rows": dict(copied.rows)} == json.loads(row[0])
