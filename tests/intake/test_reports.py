"""Jobs' statuses read for every job at once say what each job's read alone says, on a real
store: the reads grouped for all jobs and the short first look at a job's history."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from itertools import product
from pathlib import Path

import pytest

from cronduit.core.arming import timing_key
from cronduit.core.config import load_config
from cronduit.core.config.model import Config
from cronduit.core.status import FAILED, judge, next_elapse
from cronduit.engine import Engine
from cronduit.intake import job_statuses, reports
from cronduit.ports import NewEvent, Pause, Run, Store, Timer
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


JUDGED = """\
jobs:
  fine: {run: "true", cron: "0 3 * * *"}
  failed: {run: "true", cron: "0 3 * * *"}
  timed-out-then-skipped: {run: "true"}
  skipping: {run: "true"}
  skipping-paused: {run: "true"}
  failed-paused: {run: "true"}
  unarmed: {run: "true", cron: "0 3 * * *"}
  unarmed-paused: {run: "true", every: 5m}
  overdue: {run: "true", every: 5m}
  overdue-paused: {run: "true", cron: "0 3 * * *"}
  just-due: {run: "true", cron: "0 3 * * *"}
  manual: {run: "true"}
  going: {run: "true"}
  skips-then-going: {run: "true"}
  failed-then-going: {run: "true"}
"""


def judged_store(store: Store) -> tuple[Config, datetime]:
    """A store where each job of :data:`JUDGED` is what its name says; the instant to judge
    it at."""
    config = load_config(JUDGED, "cronduit.yaml")
    now = T0 + timedelta(hours=2)
    runs = [("fine", "failure"), ("fine", "success"), ("failed", "success"),
            ("failed", "failure"), ("timed-out-then-skipped", "timeout"),
            *[("timed-out-then-skipped", "skipped")] * 4, *[("skipping", "skipped")] * 3,
            *[("skipping-paused", "skipped")] * 3, ("failed-paused", "failure"),
            ("going", "failure"), ("going", "success"), ("going", None),
            *[("skips-then-going", "skipped")] * 3, ("skips-then-going", None),
            ("failed-then-going", "timeout"), ("failed-then-going", None)]
    due = {"fine": now + timedelta(hours=1), "failed": now, "overdue": now - timedelta(minutes=2),
           "overdue-paused": now - timedelta(hours=1), "just-due": now - timedelta(seconds=59)}
    with store.transaction() as tx:
        for seq, (job, outcome) in enumerate(runs):
            at = T0 + timedelta(minutes=seq)
            tx.insert_run(Run(id=f"run{seq:03d}", job=job, kind="timer", label="timer",
                              state="running" if outcome is None else "ended", created_at=at,
                              exclusive=False, outcome=outcome, started_at=at,
                              finished_at=None if outcome is None else at))
        tx.put_timers([Timer(job, timing_key(config.jobs[job]), at, "", at, None)
                       for job, at in due.items()])
        for job in ("skipping-paused", "failed-paused", "unarmed-paused", "overdue-paused"):
            tx.insert_pause(Pause(job, "maintenance", "ana", T0))
    return config, now


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("expected", [True, False])
def test_the_jobs_found_diverging_or_failing_are_those_their_statuses_say(
        tmp_path: Path, backend: str, expected: bool) -> None:
    """Every kind of divergence, paused and not, and its near misses: the jobs found at once
    from the store's facts are exactly those whose judged status has a divergence (or
    whose last counted run failed), with timers expected or not (a dry run)."""
    with open_store(tmp_path, backend) as store:
        config, now = judged_store(store)
        names = list(config.jobs)
        with store.reading() as tx:
            statuses = job_statuses(tx, config, now, expected)
            diverging = reports.diverging_jobs(tx, config, names, now, expected)
            failing = reports.failing_jobs(tx, names)
            some = reports.diverging_jobs(tx, config, ["fine", "overdue", "failed"], now,
                                          expected)
    assert [s.job.name for s in statuses if s.divergences] == diverging
    assert [s.job.name for s in statuses if s.last is not None
            and s.last.outcome in FAILED] == failing
    assert ["failed", "timed-out-then-skipped", "failed-paused", "failed-then-going"
            ] == failing
    assert ["failed", "timed-out-then-skipped", "skipping", "failed-paused"] + (
        ["unarmed", "overdue"] if expected else []) + ["failed-then-going"] == diverging
    assert (["overdue", "failed"] if expected else ["failed"]) == some


@contextmanager
def open_store(tmp_path: Path, backend: str) -> Iterator[Store]:
    if backend == "sqlite":
        store = SqliteStore(tmp_path / "cronduit.db")
        try:
            yield store
        finally:
            store.close()
        return
    from tests.helpers.postgres import postgres_store  # noqa: PLC0415 - loads psycopg

    with postgres_store() as pg:
        yield pg


RUN_KINDS = {"S": ("ended", "success"), "F": ("ended", "failure"), "T": ("ended", "timeout"),
             "K": ("ended", "skipped"), "R": ("running", None), "B": ("backoff", None)}
"""The letters of a history in :func:`test_statuses_judge_each_job_by_its_whole_history`."""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_statuses_judge_each_job_by_its_whole_history(tmp_path: Path, backend: str) -> None:
    """Every history of up to four runs (oldest first) of a success, a failure, a timeout, a
    skip, a run going and one in backoff, and longer ones whose last counted run lies past
    each further look (behind 3, 10, 20 and 70 runs going or skipped): the statuses of all
    of them read at once, most from their newest run alone, are each job judged from its
    whole history."""
    histories = ["".join(runs) for count in range(5) for runs in product(RUN_KINDS, repeat=count)]
    histories += ["SKKK", "FKRKRKRKRKR", "S" + "K" * 10 + "R" * 10, "T" + "K" * 70, "K" * 20]
    names = [f"h{index}" for index in range(len(histories))]
    config = load_config("jobs:\n" + "".join(f"  {name}: {{run: 'true'}}\n" for name in names),
                         "cronduit.yaml")
    now = T0 + timedelta(days=1)
    with open_store(tmp_path, backend) as store:
        with store.transaction() as tx:
            for name, history in zip(names, histories, strict=True):
                for index, letter in enumerate(history):
                    state, outcome = RUN_KINDS[letter]
                    at = T0 + timedelta(minutes=index)
                    tx.insert_run(Run(id=f"{name}-{index}", job=name, kind="manual",
                                      label="manual", state=state, created_at=at,
                                      exclusive=False, outcome=outcome, started_at=at,
                                      finished_at=at if state == "ended" else None))
        with store.reading() as tx:
            statuses = reports.statuses_of(tx, config, names, now, True)
            whole = [judge(config.jobs[name], next_elapse(config.jobs[name], None, now),
                           tx.history(name, 100), tx.active_runs(name), 0, True, None, now)
                     for name in names]
    assert whole == statuses
    by_history = dict(zip(histories, statuses, strict=True))
    assert by_history[""].last is None
    skips = by_history["SKKK"]
    assert ("success", 3, ("the newest 3 runs were all skipped",)) == (
        skips.last and skips.last.outcome, skips.skipped_since, skips.divergences)
    deep = by_history["T" + "K" * 70]
    assert ("timeout", 70) == (deep.last and deep.last.outcome, deep.skipped_since)
