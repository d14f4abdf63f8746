"""The engine when the state folder cannot be written: commits that fail (a full disk) and
launches the runner defers lose nothing, and everything goes on once the disk has room."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronduit.core.config import load_config
from cronduit.engine import RECORD_PIDS_WITHIN, Engine
from cronduit.ports import NewEvent, Run
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner, Launched
from tests.helpers.flaky import FlakyStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class Rig:
    """An engine on a flaky store, a fake runner and a fake clock."""

    def __init__(self, folder: Path, text: str) -> None:
        self.store = FlakyStore(SqliteStore(folder / "cronduit.db"))
        self.runner = FakeRunner()
        self.clock = FakeClock(T0)
        config = load_config(text, "test.yaml")
        self.engine = Engine(config, self.store, self.runner)
        self.engine.apply(config, T0)
        self.engine.start(T0)

    def accept(self, delivery: str) -> None:
        with self.store.transaction() as tx:
            tx.insert_event(NewEvent(delivery, "j", "manual", "manual", self.clock.now()))

    def tick(self) -> datetime | None:
        return self.engine.tick(self.clock.now())

    def restart(self) -> None:
        """A new engine on the same store, as a restarted daemon has."""
        config = self.engine.config
        self.engine = Engine(config, self.store, self.runner)
        self.engine.apply(config, self.clock.now())
        self.engine.start(self.clock.now())

    def failing_tick(self) -> None:
        """A tick one of whose commits fails: it raises what the store raised."""
        with pytest.raises(sqlite3.OperationalError):
            self.tick()

    def history(self) -> list[Run]:
        with self.store.inner.transaction() as tx:
            return list(reversed(tx.history("j", 100)))


@pytest.fixture
def rig_of(tmp_path: Path) -> Iterator[Callable[[str], Rig]]:
    made: list[Rig] = []

    def build(text: str) -> Rig:
        made.append(Rig(tmp_path, text))
        return made[-1]

    yield build
    for rig in made:
        rig.store.close()


JOB = "jobs:\n  j:\n    run: 'true'\n"


def test_a_deferred_launch_waits_and_starts_once_the_state_folder_has_room(
        rig_of: Callable[[str], Rig]) -> None:
    """The runner cannot write the run's folder: the run is not failed, the engine says why
    its launches wait, and the next tick after the disk has room launches it, once."""
    rig = rig_of(JOB)
    rig.accept("manual/1")
    rig.runner.deferring = "No space left on device"
    rig.tick()
    assert "No space left on device" == rig.engine.launch_fault
    rig.tick()
    [run] = rig.history()
    assert ("running", None, []) == (run.state, run.outcome, rig.runner.launched)
    rig.runner.deferring = None
    rig.tick()
    assert rig.engine.launch_fault is None
    assert [run.id] == [launched.run.id for launched in rig.runner.launched]
    rig.tick()
    assert 1 == len(rig.runner.launched)


def test_pids_a_failed_commit_did_not_record_are_recorded_at_the_next_tick(
        rig_of: Callable[[str], Rig]) -> None:
    """The process started; its pid is recorded by the next tick's first commit, which the
    tick asks for soon. When that commit fails, the run is not launched again, and its
    pid is in the store once a commit succeeds."""
    rig = rig_of(JOB)
    rig.accept("manual/1")
    assert rig.clock.now() + RECORD_PIDS_WITHIN == rig.tick()  # launched: soon, for the pid
    [launched] = rig.runner.launched
    assert rig.history()[0].pid is None
    rig.store.fail(0)  # the next tick's first transaction, which records the pid, fails
    rig.failing_tick()
    assert rig.history()[0].pid is None
    rig.tick()
    assert [launched.pid] == [run.pid for run in rig.history()]
    assert 1 == len(rig.runner.launched)


def test_a_run_the_first_commit_started_is_launched_though_the_second_commit_failed(
        rig_of: Callable[[str], Rig]) -> None:
    """A run ends and the tick's first commit starts the trigger that waited for it; the
    tick's second commit fails. The started run is launched at the next tick, once, and
    the first commit's lines are logged (they were dropped with the failed tick, and the
    run stayed running with no process until a restart)."""
    rig = rig_of(JOB)
    lines: list[str] = []
    rig.engine.stage.log = lines.append
    rig.accept("manual/1")
    rig.tick()
    rig.accept("manual/2")
    rig.tick()
    [first] = rig.runner.launched
    rig.runner.finish(first.run.id, 0)
    rig.store.fail(1)  # the first commit records the end and the start; the second fails
    rig.failing_tick()
    rig.tick()
    rig.tick()
    [_, second] = rig.history()
    assert [first.run.id, second.id] == [launched.run.id for launched in rig.runner.launched]
    assert {f"run j {first.run.id}: success after 0.0s",
            f"run j {second.id}: started [manual]"} <= set(lines), lines


def in_backoff(rig_of: Callable[[str], Rig]) -> tuple[Rig, Launched]:
    """A rig whose one run's first attempt failed and waits 30 s to be retried; that
    attempt's launch."""
    rig = rig_of(JOB + "    retry: {attempts: 2, backoff: 30s}\n")
    rig.accept("manual/1")
    rig.tick()
    [first] = rig.runner.launched
    rig.runner.finish(first.run.id, 1)
    rig.tick()  # attempt 1 failed: backoff
    return rig, first


def test_a_retry_whose_trigger_cannot_be_read_is_launched_at_the_next_tick(
        rig_of: Callable[[str], Rig]) -> None:
    """A retry whose run's trigger the engine does not hold (a restart came between) reads
    it before it launches; a commit that fails there leaves the attempt waiting, not
    forgotten."""
    rig, _ = in_backoff(rig_of)
    rig.restart()
    rig.clock.advance(timedelta(seconds=30))
    rig.store.fail(2)  # after the tick's two: the launch's read of the retry's trigger
    rig.failing_tick()
    assert 1 == len(rig.runner.launched)
    rig.tick()
    assert [1, 2] == [launched.attempt for launched in rig.runner.launched]


def test_the_pid_of_an_attempt_that_ended_before_it_was_recorded_is_not_written(
        rig_of: Callable[[str], Rig]) -> None:
    """A pid is kept to adopt an attempt still running after a restart: the tick that
    records an attempt's end writes no pid for it (a durable run's next step would clear
    it in the same transaction), and a commit that fails keeps both for the next tick."""
    rig = rig_of(JOB)
    rig.accept("manual/1")
    rig.tick()
    [launched] = rig.runner.launched
    rig.runner.finish(launched.run.id, 0)
    rig.store.fail(0)
    rig.failing_tick()
    rig.tick()
    assert [("success", None)] == [(run.outcome, run.pid) for run in rig.history()]


def test_a_retry_is_launched_with_its_runs_trigger_reading_nothing_more(
        rig_of: Callable[[str], Rig]) -> None:
    """The engine that launched a run holds its trigger: the retry's tick is its two
    transactions, and a third would fail."""
    rig, first = in_backoff(rig_of)
    rig.clock.advance(timedelta(seconds=30))
    rig.store.fail(2)
    rig.tick()
    assert [(1, first.trigger), (2, first.trigger)] == [
        (launched.attempt, launched.trigger) for launched in rig.runner.launched]


def test_an_apply_whose_commit_fails_leaves_the_running_config(
        rig_of: Callable[[str], Rig]) -> None:
    """Nothing of an apply that could not commit is in force: the engine keeps the config
    (and the timers) it had, and the apply can be tried again."""
    rig = rig_of(JOB)
    edited = load_config(JOB + "  k:\n    run: 'true'\n    every: 1m\n", "test.yaml")
    rig.store.fail(0)
    with pytest.raises(sqlite3.OperationalError):
        rig.engine.apply(edited, T0)
    assert ["j"] == list(rig.engine.config.jobs)
    assert ["k: timer armed for 2026-06-01T12:00:00Z"] == rig.engine.apply(edited, T0)


def test_the_engine_takes_a_new_config_only_once_its_apply_has_committed(
        rig_of: Callable[[str], Rig]) -> None:
    """The HTTP edge and the notifier read the engine's config while an apply is written on
    the engine's thread: they see the old one until the apply, and what the caller records
    with it in the same transaction, have committed."""
    rig = rig_of(JOB)
    before = rig.engine.config
    edited = load_config(JOB + "  k:\n    run: 'true'\n    every: 1m\n", "test.yaml")
    seen: list[object] = []
    rig.engine.apply(edited, T0, lambda tx, lines: seen.append((rig.engine.config, lines)))
    assert [(before, ["k: timer armed for 2026-06-01T12:00:00Z"])] == seen
    assert edited is rig.engine.config


def test_ended_attempts_a_failed_commit_did_not_record_are_recorded_after_it(
        rig_of: Callable[[str], Rig]) -> None:
    """An attempt that ended while commits failed is kept in memory and recorded by the
    first tick that commits: its exit status is not lost."""
    rig = rig_of(JOB)
    rig.accept("manual/1")
    rig.tick()
    [launched] = rig.runner.launched
    rig.runner.finish(launched.run.id, 3)
    rig.store.fail(0, 1)
    rig.failing_tick()
    rig.failing_tick()
    rig.tick()
    assert [("failure", 3)] == [(run.outcome, run.exit_status) for run in rig.history()]


def test_a_started_attempt_whose_file_lost_its_writes_is_not_launched_again(
        rig_of: Callable[[str], Rig]) -> None:
    """The store recorded the attempt's pid but after a restart its file reads as never
    started (the disk lost the writes): the next daemon records it vanished, once."""
    rig = rig_of(JOB)
    rig.accept("manual/1")
    rig.tick()
    rig.tick()  # records the pid
    [launched] = rig.runner.launched
    assert launched.pid == rig.history()[0].pid
    rig.runner.recovered[launched.run.id] = "not_started"
    rig.engine = Engine(rig.engine.config, rig.store, rig.runner)
    rig.engine.start(rig.clock.now())
    assert 1 == len(rig.runner.launched)
    assert [("failure", "process vanished while cronduit was down")] == [
        (run.outcome, run.reason) for run in rig.history()]
