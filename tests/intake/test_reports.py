"""Jobs' statuses read for every job at once say what each job's read alone says, on a real
store: the reads grouped for all jobs and the short first look at a job's history."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronduit.core.config import load_config
from cronduit.engine import Engine
from cronduit.intake import job_statuses
from cronduit.ports import NewEvent
from cronduit.store.sql.transaction import to_text
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeRunner

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = """\
jobs:
  skipping: {run: "true", cron: "0 * * * *"}
  busy: {run: "true"}
  quiet: {run: "true", cron: "0 3 * * *"}
"""


def add_run(db: Path, seq: int, job: str, state: str, outcome: str | None) -> None:
    at = to_text(T0 + timedelta(minutes=seq))
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute(
            "INSERT INTO runs (seq, id, job, kind, label, state, outcome, created_at,"
            " started_at, finished_at, exclusive) VALUES (?, ?, ?, 'manual', 'manual', ?, ?,"
            " ?, ?, ?, 0)", (seq, f"run{seq:04d}", job, state, outcome, at, at,
                             None if state != "ended" else at))


def test_every_jobs_status_is_the_status_of_the_job_read_alone(tmp_path: Path) -> None:
    """A success behind six skips (past the first look at the history), a run going and a
    trigger waiting, a job with neither: listed all at once, each is as read alone."""
    db = tmp_path / "cronduit.db"
    config = load_config(CONFIG, "cronduit.yaml")
    store = SqliteStore(db)
    Engine(config, store, FakeRunner()).apply(config, T0)
    add_run(db, 1, "skipping", "ended", "success")
    for seq in range(2, 8):
        add_run(db, seq, "skipping", "ended", "skipped")
    add_run(db, 8, "busy", "running", None)
    with store.transaction() as tx:
        tx.insert_event(NewEvent("webhook/1", "busy", "webhook", "webhook", T0))
        tx.insert_event(NewEvent("webhook/2", "busy", "webhook", "webhook", T0))
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:  # routed, waiting
        conn.execute("UPDATE events SET state = 'waiting' WHERE job = 'busy'")
    now = T0 + timedelta(hours=1)
    with store.reading() as tx:
        every = job_statuses(tx, config, now, True)
        alone = [job_statuses(tx, config, now, True, only=name)[0] for name in config.jobs]
    store.close()
    assert alone == every
    by_job = {status.job.name: status for status in every}
    skipping, busy = by_job["skipping"], by_job["busy"]
    assert ("run0001", 6) == (skipping.last and skipping.last.id, skipping.skipped_since)
    assert (["run0008"], 2) == ([run.id for run in busy.active], busy.waiting)
