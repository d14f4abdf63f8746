"""The chaos checker on small stores made by hand: it sees each kind of fault it counts."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from cronduit.store.sqlite import SqliteStore
from tests.chaos.checker import Findings, check
from tests.chaos.load import Accepted

AT = "2026-06-01T12:00:00.000000Z"
VANISHED = "process vanished while cronduit was down"


@dataclass
class Scene:
    """A store, the jobs' output lines and a daemon log, as a chaos run leaves them."""

    folder: Path

    @property
    def database(self) -> Path:
        return self.folder / "state" / "cronduit.db"

    def event(self, delivery: str, run: str | None, state: str = "consumed",
              kind: str = "webhook", slot: str | None = None) -> None:
        self._sql("INSERT INTO events (delivery_id, job, kind, label, slot, accepted_at, state,"
                  " run_id) VALUES (?, 'job', ?, 'label', ?, ?, ?, ?)",
                  (delivery, kind, slot, AT, state, run))

    def run(self, run: str, outcome: str, exit_status: int | None, attempts: int = 1,
            reason: str = "", state: str = "ended") -> None:
        self._sql("INSERT INTO runs (id, job, kind, label, state, outcome, reason, created_at,"
                  " attempts, exit_status) VALUES (?, 'job', 'webhook', 'label', ?, ?, ?, ?, ?,"
                  " ?)", (run, state, outcome, reason, AT, attempts, exit_status))

    def slot(self, slot: str) -> None:
        self._sql("INSERT INTO slots (job, slot, name, fate, reason, recorded_at) VALUES"
                  " ('job', ?, 'name', 'ran', '', ?)", (slot, AT))

    def lines(self, *lines: str) -> None:
        with (self.folder / "out" / "job.lines").open("a") as out:
            out.writelines(f"{line}\n" for line in lines)

    def check(self, accepted: Accepted | None = None,
              unknowable: set[tuple[str, int]] | None = None) -> Findings:
        return check(self.database, self.folder / "out", self.folder / "logs",
                     accepted or Accepted(), unknowable or set())

    def _sql(self, sql: str, values: tuple[object, ...]) -> None:
        with closing(sqlite3.connect(self.database)) as db, db:
            db.execute(sql, values)


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    for folder in ("out", "logs"):
        (tmp_path / folder).mkdir()
    SqliteStore(tmp_path / "state" / "cronduit.db").close()
    made = Scene(tmp_path)
    made.event("webhook/job/1", "r1")
    made.run("r1", "success", 0)
    made.lines("start r1 1 100 webhook/job/1", "end r1 1 0")
    return made


def counts(found: Findings) -> tuple[int, int, int, int, int]:
    return (len(found.lost), len(found.doubled), len(found.relaunched), len(found.misrecorded),
            len(found.unknowable))


def test_a_run_that_went_as_recorded_counts_nothing(scene: Scene) -> None:
    """One trigger, one run, the exit status its job wrote: all counts are zero."""
    found = scene.check()
    assert ((0, 0, 0, 0, 0), 1, "ok") == (counts(found), found.accepted, found.integrity)


def test_an_accepted_trigger_missing_from_the_store_is_lost(scene: Scene) -> None:
    """A delivery id a daemon answered 202 for, which the store does not hold."""
    accepted = Accepted()
    accepted.add("webhook/job/2", "keyed webhook")
    found = scene.check(accepted)
    assert ((1, 0, 0, 0, 0), 2) == (counts(found), found.accepted)


def test_a_trigger_still_waiting_after_the_drain_is_lost(scene: Scene) -> None:
    """Accepted but never consumed by an ended run."""
    scene.event("manual/job/3", None, state="waiting", kind="manual")
    assert (1, 0, 0, 0, 0) == counts(scene.check())


def test_one_delivery_run_by_two_runs_is_doubled(scene: Scene) -> None:
    """The same delivery id in the start lines of two different runs."""
    scene.run("r2", "success", 0)
    scene.lines("start r2 1 101 webhook/job/1", "end r2 1 0")
    assert (0, 1, 0, 0, 0) == counts(scene.check())


def test_two_timer_events_for_one_slot_are_doubled(scene: Scene) -> None:
    """A slot fired twice under two delivery ids still counts as doubled."""
    for n, delivery in enumerate(("slot/job/a", "slot/job/b"), start=2):
        scene.event(delivery, f"r{n}", kind="timer", slot=AT)
        scene.run(f"r{n}", "success", 0)
        scene.lines(f"start r{n} 1 10{n} {delivery}", f"end r{n} 1 0")
    scene.slot(AT)
    assert (0, 1, 0, 0, 0) == counts(scene.check())


def test_an_attempt_started_twice_is_relaunched(scene: Scene) -> None:
    """Two start lines for run r1 attempt 1."""
    scene.lines("start r1 1 102 webhook/job/1")
    assert (0, 0, 1, 0, 0) == counts(scene.check())


def test_a_recorded_status_other_than_the_jobs_is_misrecorded(scene: Scene) -> None:
    """The job said it exits 3; the record says 0."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "success", 0)
    scene.lines("start r2 1 103 webhook/job/2", "end r2 1 3")
    assert (0, 0, 0, 1, 0) == counts(scene.check())


def test_a_vanished_run_whose_job_exited_is_misrecorded(scene: Scene) -> None:
    """The signature of a supervisor lost by accident: the job wrote 0, no status recorded."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "failure", None, reason=VANISHED)
    scene.lines("start r2 1 104 webhook/job/2", "end r2 1 0")
    assert (0, 0, 0, 1, 0) == counts(scene.check())


def test_a_vanished_run_whose_supervisor_the_harness_killed_is_unknowable(scene: Scene) -> None:
    """The same record, for an attempt its killed supervisor held: counted apart."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "failure", None, reason=VANISHED)
    scene.lines("start r2 1 104 webhook/job/2", "end r2 1 0")
    assert (0, 0, 0, 0, 1) == counts(scene.check(unknowable={("r2", 1)}))


def test_a_job_stopped_by_its_deadline_before_it_could_say_is_fine(scene: Scene) -> None:
    """TERM before the job's trap was set: no end line, 143 and timeout recorded."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "timeout", 143, reason="deadline passed during attempt 1")
    scene.lines("start r2 1 105 webhook/job/2")
    assert (0, 0, 0, 0, 0) == counts(scene.check())


def test_a_timed_out_run_without_a_status_or_a_line_is_misrecorded(scene: Scene) -> None:
    """Its job was started (its deadline passed during it), so a status was owed."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "timeout", None, reason="deadline passed during attempt 1")
    assert (0, 0, 0, 1, 0) == counts(scene.check())


def test_a_run_whose_deadline_passed_before_its_process_started_is_fine(scene: Scene) -> None:
    """No process, no lines, no status: as recorded."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "timeout", None, reason="deadline passed before the process started")
    assert (0, 0, 0, 0, 0) == counts(scene.check())


def test_a_retried_run_whose_first_attempt_succeeded_is_misrecorded(scene: Scene) -> None:
    """A retry after an attempt that exited 0."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "success", 0, attempts=2)
    scene.lines("start r2 1 106 webhook/job/2", "end r2 1 0",
                "start r2 2 107 webhook/job/2", "end r2 2 0")
    assert (0, 0, 0, 1, 0) == counts(scene.check())


def test_a_skipped_run_that_ran_is_misrecorded(scene: Scene) -> None:
    """A skipped run has no process: start lines for it are a fault."""
    scene.event("webhook/job/2", "r2")
    scene.run("r2", "skipped", None, attempts=0)
    scene.lines("start r2 1 108 webhook/job/2", "end r2 1 0")
    assert (0, 0, 0, 1, 0) == counts(scene.check())


def test_a_traceback_in_a_daemon_log_is_reported(scene: Scene) -> None:
    """Any ``Traceback`` in a daemon's log."""
    (scene.folder / "logs" / "daemon-0000.log").write_text("Traceback (most recent call last)")
    assert ["daemon-0000.log: Traceback"] == scene.check().tracebacks
