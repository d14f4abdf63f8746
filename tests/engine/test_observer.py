"""What the engine tells its observer (the daemon's metrics): runs ended with their outcome and
duration, timed runs started with their lateness, slots given a fate with the kind of its
reason; each once its transaction committed, and nothing for one rolled back."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronduit.core.config import load_config
from cronduit.core.enums import Outcome, SlotFate
from cronduit.engine import Engine
from cronduit.intake import pausing as control
from cronduit.ports import NewEvent
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner
from tests.engine.conftest import Rig
from tests.helpers.flaky import FlakyStore

MakeRig = Callable[..., Rig]

T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)

EVERY_5M = """
jobs:
  tick:
    run: x
    cron: "*/5 * * * *"
    catch_up: 6h
"""


@dataclass
class Recorder:
    """An observer that keeps what it is told, in order."""

    ended: list[tuple[str, str, float | None]] = field(default_factory=list)
    late: list[tuple[str, float]] = field(default_factory=list)
    slots: Counter[tuple[str, str, str]] = field(default_factory=Counter)

    def run_ended(self, job: str, outcome: Outcome, seconds: float | None) -> None:
        self.ended.append((job, str(outcome), seconds))

    def timed_run_started(self, job: str, lateness: float) -> None:
        self.late.append((job, lateness))

    def slots_fated(self, job: str, fate: SlotFate, kind: str, count: int) -> None:
        self.slots[(job, str(fate), kind)] += count


def observed(rig: Rig) -> Recorder:
    recorder = Recorder()
    rig.engine.stage.observer = recorder
    return recorder


def test_a_timed_run_started_late_and_ended_is_told_with_its_lateness_and_duration(
        make_rig: MakeRig) -> None:
    """The slot due at 00:05 starts at 00:05:20 and ends 30 s later: 20 s late, 30 s long."""
    rig = make_rig(EVERY_5M, T0)
    recorder = observed(rig)
    rig.at(T0 + timedelta(minutes=5, seconds=20))
    assert [("tick", 20.0)] == recorder.late
    assert {("tick", "ran", "none"): 1} == recorder.slots
    assert [] == recorder.ended
    [launched] = rig.runner.launched
    rig.clock.advance(timedelta(seconds=30))
    rig.runner.finish(launched.run.id, 0)
    rig.tick()
    assert [("tick", "success", 30.0)] == recorder.ended


def test_a_failed_manual_run_is_told_with_its_outcome_and_no_lateness(
        make_rig: MakeRig) -> None:
    rig = make_rig("jobs:\n  job:\n    run: x\n", T0)
    recorder = observed(rig)
    rig.accept("manual/1", "job", "manual")
    rig.tick()
    [launched] = rig.runner.launched
    rig.clock.advance(timedelta(seconds=2))
    rig.runner.finish(launched.run.id, 1)
    rig.tick()
    assert ([("job", "failure", 2.0)], [], Counter()) == (
        recorder.ended, recorder.late, recorder.slots)


def test_slots_missed_while_the_daemon_was_down_are_told_by_the_kind_of_their_reason(
        make_rig: MakeRig) -> None:
    """Down from 00:00 to 08:00 (6h window, catch-up latest): the newest slot runs late, the
    slots inside the window are superseded, the older ones outside it."""
    rig = make_rig(EVERY_5M, T0)
    recorder = observed(rig)
    rig.at(T0 + timedelta(hours=8))
    kinds = dict(recorder.slots)
    assert 1 == kinds.pop(("tick", "ran", "none"))
    assert {("tick", "missed", "superseded"), ("tick", "missed", "outside_window")} <= set(kinds)
    assert all(fate == "missed" for _, fate, _ in kinds)
    assert 8 * 12 - 1 == sum(kinds.values())
    [(_, lateness)] = recorder.late
    assert 0.0 == lateness  # the newest slot, 08:00, is due now


def test_a_timed_trigger_skipped_by_the_overlap_policy_is_a_skipped_slot_and_run(
        make_rig: MakeRig) -> None:
    rig = make_rig(EVERY_5M + "    overlap: skip\n", T0)
    recorder = observed(rig)
    rig.at(T0 + timedelta(minutes=5))
    rig.at(T0 + timedelta(minutes=10))  # the first run still goes
    assert [("tick", "skipped", None)] == recorder.ended
    assert {("tick", "ran", "none"): 2, ("tick", "skipped", "overlap"): 1} == recorder.slots


def test_slots_of_a_paused_job_are_missed_for_the_kind_paused(make_rig: MakeRig) -> None:
    rig = make_rig(EVERY_5M, T0)
    recorder = observed(rig)
    with rig.store.transaction() as tx:
        control.pause(tx, "tick", "disk full", "ana", None, rig.clock.now())
    rig.at(T0 + timedelta(minutes=10))
    assert {("tick", "missed", "paused"): 2} == recorder.slots
    assert ([], []) == (recorder.ended, recorder.late)


def test_a_transaction_rolled_back_tells_nothing_and_its_retry_tells_once(
        tmp_path: Path) -> None:
    """The commit of the attempt's end and the firing fails (a full disk): nothing is told;
    the next tick commits both and tells each once."""
    store = FlakyStore(SqliteStore(tmp_path / "cronduit.db"))
    runner, clock, recorder = FakeRunner(), FakeClock(T0), Recorder()
    config = load_config(EVERY_5M, "test.yaml")
    engine = Engine(config, store, runner, observer=recorder)
    engine.apply(config, T0)
    engine.start(T0)
    with store.transaction() as tx:
        tx.insert_event(NewEvent("manual/1", "tick", "manual", "manual", T0))
    engine.tick(T0)
    [launched] = runner.launched
    runner.finish(launched.run.id, 0)
    clock.set(T0 + timedelta(minutes=5))
    store.fail(0)
    with pytest.raises(sqlite3.OperationalError):
        engine.tick(clock.now())
    assert ([], [], Counter()) == (recorder.ended, recorder.late, recorder.slots)
    engine.tick(clock.now())
    assert [("tick", "success", 300.0)] == recorder.ended
    assert {("tick", "ran", "none"): 1} == recorder.slots
    assert [("tick", 0.0)] == recorder.late
    store.close()


def test_the_lateness_of_a_jittered_slot_counts_from_its_due_time(make_rig: MakeRig) -> None:
    """With jitter the slot is due after its instant: a run started when due is on time, and
    one started 7 s after that is 7 s late, whatever its offset."""
    rig = make_rig(EVERY_5M + "    jitter: 2m\n", T0)
    recorder = observed(rig)
    with rig.store.transaction() as tx:
        timer = tx.get_timer("tick")
    assert timer is not None
    assert timer.due_at > timer.slot  # this job's offset, for this slot, is not 0
    rig.at(timer.due_at + timedelta(seconds=7))
    assert [("tick", 7.0)] == recorder.late


def test_a_ledger_row_that_counts_many_slots_tells_them_all(make_rig: MakeRig) -> None:
    """A day paused on a job of every minute: 1000 slots listed and the older 440 counted
    in one row, all 1440 told as missed for the kind paused."""
    rig = make_rig("jobs:\n  tick:\n    run: x\n    cron: '* * * * *'\n", T0)
    recorder = observed(rig)
    with rig.store.transaction() as tx:
        control.pause(tx, "tick", "disk full", "ana", None, rig.clock.now())
    rig.at(T0 + timedelta(days=1))
    assert {("tick", "missed", "paused"): 24 * 60} == recorder.slots
