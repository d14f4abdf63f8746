"""The store's durable executions (:class:`cronduit.ports.Executions`): each promise of the
protocol, with a test, on every backend."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core.enums import ExecutionState, RunState, StepState
from cronduit.ports import (
    Conflict,
    Execution,
    ExecutionStep,
    Run,
    StepAttempt,
    Store,
    Transaction,
)

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
STEPS = ("fetch", "build", "ship")
"""Not in the order of their ids: steps come back in their positions' order."""


def execution(execution_id: str, job: str = "deploy", created: datetime = T0,
              state: ExecutionState = ExecutionState.RUNNING, retention: timedelta = 7 * DAY,
              run_id: str | None = None) -> Execution:
    return Execution(id=execution_id, job=job, definition="sha256:d1", inputs='{"ENV": "prod"}',
                     state=state, created_at=created, expires_at=created + retention,
                     updated_at=created, run_id=run_id)


def attempt(execution_id: str, step_id: str, run_id: str, number: int,
            attempt_id: str | None = None, started: datetime = T0) -> StepAttempt:
    return StepAttempt(execution_id=execution_id, step_id=step_id,
                       attempt_id=attempt_id or f"{run_id}.{number}", run_id=run_id,
                       attempt=number, started_at=started)


def stored(tx: Transaction, execution_id: str) -> Execution:
    found = tx.get_execution(execution_id)
    assert found is not None, execution_id
    return found


def ended(tx: Transaction, run_id: str, number: int) -> StepAttempt:
    found = tx.step_attempt(run_id, number)
    assert found is not None, (run_id, number)
    return found


def activation(run_id: str, execution_id: str | None, job: str = "deploy") -> Run:
    return Run(id=run_id, job=job, kind="manual", label="by hand", state=RunState.ENDED,
               created_at=T0, exclusive=False, execution_id=execution_id)


def test_an_execution_reads_back_with_every_field(store: Store) -> None:
    """What goes in comes back, instants to the microsecond and states as their enum; the
    seq given is ignored and the store's own rises with each insert."""
    made = Execution(id="e1", job="deploy", definition="sha256:d1", inputs='{"ENV": "prod"}',
                     state=ExecutionState.FAILED, created_at=T0 + timedelta(microseconds=7),
                     expires_at=T0 + 7 * DAY, updated_at=T0 + timedelta(hours=1),
                     activations=3, run_id="r3", failed_step="build", seq=99)
    with store.transaction() as tx:
        tx.insert_execution(made, STEPS)
        tx.insert_execution(execution("e2"), ["main"])
    with store.transaction() as tx:
        got, second = stored(tx, "e1"), stored(tx, "e2")
        assert tx.get_execution("e3") is None
    assert replace(made, seq=got.seq) == got
    assert got.seq != 99
    assert got.seq < second.seq
    assert type(got.state) is ExecutionState
    assert type(got.created_at) is datetime


def test_steps_come_pending_in_the_order_given(store: Store) -> None:
    """One pending step row per id, its position its place in the list given."""
    with store.transaction() as tx:
        tx.insert_execution(execution("e1"), STEPS)
        tx.insert_execution(execution("e2"), ["main"])
    with store.transaction() as tx:
        steps = tx.execution_steps("e1")
        assert [] == tx.execution_steps("none")
    assert [ExecutionStep("e1", step_id, position, StepState.PENDING)
            for position, step_id in enumerate(STEPS)] == steps
    assert all(type(step.state) is StepState for step in steps)


def test_a_duplicate_id_is_a_conflict_and_writes_nothing(store: Store) -> None:
    """A second execution of an id is refused: the first keeps its fields and its steps, no
    step of the second is written, and the transaction goes on (on both backends)."""
    with store.transaction() as tx:
        tx.insert_execution(execution("e1"), STEPS)
    with store.transaction() as tx:
        with pytest.raises(Conflict):
            tx.insert_execution(execution("e1", job="other"), ["other", "fetch"])
        assert "deploy" == stored(tx, "e1").job
        assert list(STEPS) == [step.step_id for step in tx.execution_steps("e1")]
        assert [] == tx.executions("other", 10)
        tx.insert_execution(execution("e2"), ["main"])
    with store.transaction() as tx:
        assert ["e2", "e1"] == [found.id for found in tx.executions(None, 10)]


def test_a_step_id_given_twice_is_refused_before_anything_is_written(store: Store) -> None:
    with store.transaction() as tx:
        with pytest.raises(ValueError, match="a step id repeats"):
            tx.insert_execution(execution("e1"), ["fetch", "build", "fetch"])
        assert tx.get_execution("e1") is None
        assert [] == tx.execution_steps("e1")


def test_executions_are_listed_newest_first_by_job_and_up_to_the_limit(store: Store) -> None:
    """Newest first by insertion (seq), whatever their instants say."""
    with store.transaction() as tx:
        for number, job in enumerate(["deploy", "backup", "deploy", "deploy", "backup"]):
            tx.insert_execution(execution(f"e{number}", job=job, created=T0 - number * DAY),
                                ["main"])
    with store.transaction() as tx:
        assert ["e4", "e3", "e2", "e1", "e0"] == [e.id for e in tx.executions(None, 10)]
        assert ["e4", "e3"] == [e.id for e in tx.executions(None, 2)]
        assert ["e3", "e2", "e0"] == [e.id for e in tx.executions("deploy", 10)]
        assert ["e3", "e2"] == [e.id for e in tx.executions("deploy", 2)]
        assert ["e4"] == [e.id for e in tx.executions("backup", 1)]
        assert [] == tx.executions("nothing", 10)


def test_updates_set_the_named_fields_and_refuse_unknown_ones(store: Store) -> None:
    """update_execution and update_step write the fields named; a name that is not a field
    of the record (or is its key) is refused; an unknown id changes nothing."""
    with store.transaction() as tx:
        tx.insert_execution(execution("e1", run_id="r1"), STEPS)
        tx.insert_execution(execution("e2"), STEPS)
        tx.update_execution("e1", state=ExecutionState.FAILED, run_id="r2", activations=2,
                            failed_step="build", updated_at=T0 + timedelta(hours=2))
        tx.update_step("e1", "fetch", state=StepState.DONE, outputs='{"TAG": "v1"}',
                       attempts=2, done_at=T0 + timedelta(minutes=5), run_id="r1")
        tx.update_step("e1", "build", state=StepState.FAILED)
        tx.update_execution("none", state=ExecutionState.ABANDONED)
        tx.update_step("e1", "none", state=StepState.DONE)
        tx.update_execution("e1")
        tx.update_step("e1", "ship")
        with pytest.raises(ValueError, match="unknown execution fields: \\['colour'\\]"):
            tx.update_execution("e1", colour="red")
        with pytest.raises(ValueError, match="unknown execution step fields: \\['colour'\\]"):
            tx.update_step("e1", "fetch", state=StepState.DONE, colour="red")
        with pytest.raises(ValueError, match="pick its row"):
            tx.update_execution("e1", id="e9")
        with pytest.raises(ValueError, match="pick its row"):
            tx.update_execution("e1", seq=9)
    with store.transaction() as tx:
        got = stored(tx, "e1")
        assert replace(execution("e1"), state=ExecutionState.FAILED, run_id="r2",
                       activations=2, failed_step="build", updated_at=T0 + timedelta(hours=2),
                       seq=got.seq) == got
        assert [ExecutionStep("e1", "fetch", 0, StepState.DONE, '{"TAG": "v1"}', 2,
                              T0 + timedelta(minutes=5), "r1"),
                ExecutionStep("e1", "build", 1, StepState.FAILED),
                ExecutionStep("e1", "ship", 2, StepState.PENDING)] == tx.execution_steps("e1")
        assert tx.get_execution("none") is None
        assert ExecutionState.RUNNING == stored(tx, "e2").state
        assert {StepState.PENDING} == {step.state for step in tx.execution_steps("e2")}


def test_a_state_outside_its_enum_is_refused(store: Store) -> None:
    """The schema's CHECKs hold an execution's, a step's and an attempt's outcome to their
    values (only a bug writes another)."""
    with store.transaction() as tx:
        tx.insert_execution(execution("e1"), ["main"])
        tx.insert_step_attempt(attempt("e1", "main", "r1", 1))
    for write in (lambda tx: tx.update_execution("e1", state="paused"),
                  lambda tx: tx.update_step("e1", "main", state="skipped"),
                  lambda tx: tx.update_execution("e1", activations=0),
                  lambda tx: tx.end_step_attempt("r1", 1, T0, 0, "skipped", "")):
        with pytest.raises(Conflict), store.transaction() as tx:
            write(tx)


def test_step_attempts_are_appended_in_the_order_they_started(store: Store) -> None:
    """Every attempt of the execution's steps, in insertion order (across activations), with
    every field; another execution's attempts apart."""
    first = replace(attempt("e1", "fetch", "r1", 1), started_at=T0 + timedelta(minutes=9))
    with store.transaction() as tx:
        tx.insert_execution(execution("e1"), STEPS)
        tx.insert_execution(execution("e2"), ["main"])
        tx.insert_step_attempt(first)
        tx.insert_step_attempt(attempt("e2", "main", "x1", 1))
        tx.insert_step_attempt(attempt("e1", "build", "r1", 2, started=T0))
        tx.insert_step_attempt(attempt("e1", "build", "r2", 1, started=T0 - DAY))
    with store.transaction() as tx:
        listed = tx.step_attempts("e1")
        assert [attempt("e2", "main", "x1", 1)] == tx.step_attempts("e2")
        assert [] == tx.step_attempts("none")
    assert [first, attempt("e1", "build", "r1", 2), attempt("e1", "build", "r2", 1,
                                                            started=T0 - DAY)] == listed


def test_a_second_attempt_of_the_same_run_and_number_or_id_is_refused(store: Store) -> None:
    """(run, attempt number) and the attempt id are each unique: a refused attempt writes
    nothing, and on either backend the transaction goes on."""
    with store.transaction() as tx:
        tx.insert_execution(execution("e1"), STEPS)
        tx.insert_step_attempt(attempt("e1", "fetch", "r1", 1, attempt_id="a-1"))
    with store.transaction() as tx:
        with pytest.raises(Conflict):
            tx.insert_step_attempt(attempt("e1", "build", "r1", 1, attempt_id="a-2"))
        with pytest.raises(Conflict):
            tx.insert_step_attempt(attempt("e1", "build", "r2", 1, attempt_id="a-1"))
        tx.insert_step_attempt(attempt("e1", "build", "r1", 2, attempt_id="a-3"))
    with store.transaction() as tx:
        assert [("fetch", "a-1"), ("build", "a-3")] == [
            (found.step_id, found.attempt_id) for found in tx.step_attempts("e1")]


def test_end_step_attempt_records_how_it_ended_and_nothing_else(store: Store) -> None:
    """The end's four fields, on that attempt of that run only; step_attempt reads one."""
    started = attempt("e1", "build", "r1", 2)
    with store.transaction() as tx:
        tx.insert_execution(execution("e1"), STEPS)
        tx.insert_step_attempt(attempt("e1", "fetch", "r1", 1))
        tx.insert_step_attempt(started)
        tx.insert_step_attempt(attempt("e1", "build", "r2", 2))
        assert started == tx.step_attempt("r1", 2)
        tx.end_step_attempt("r1", 2, T0 + timedelta(minutes=3), 3, "failure", "exit 3")
        tx.end_step_attempt("r1", 9, T0, 0, "success", "")  # no such attempt: nothing
    with store.transaction() as tx:
        assert replace(started, ended_at=T0 + timedelta(minutes=3), exit_status=3,
                       outcome="failure", reason="exit 3") == tx.step_attempt("r1", 2)
        assert attempt("e1", "fetch", "r1", 1) == tx.step_attempt("r1", 1)
        assert attempt("e1", "build", "r2", 2) == tx.step_attempt("r2", 2)
        assert tx.step_attempt("r1", 9) is None
        tx.end_step_attempt("r2", 2, T0, None, "timeout", "deadline")
        assert (T0, None, "timeout", "deadline") == (
            ended(tx, "r2", 2).ended_at, ended(tx, "r2", 2).exit_status,
            ended(tx, "r2", 2).outcome, ended(tx, "r2", 2).reason)


def test_expired_executions_are_those_past_their_time_and_not_running(store: Store) -> None:
    """At or before ``now``, not running, soonest expired first, up to the limit."""
    now = T0 + 10 * DAY
    with store.transaction() as tx:
        for execution_id, created, state in (
                ("done-late", T0 + 2 * DAY, ExecutionState.SUCCEEDED),
                ("running", T0, ExecutionState.RUNNING),
                ("failed-early", T0, ExecutionState.FAILED),
                ("abandoned", T0 + DAY, ExecutionState.ABANDONED),
                ("at-now", T0 + 3 * DAY, ExecutionState.FAILED),
                ("not-yet", T0 + 3 * DAY + timedelta(microseconds=1),
                 ExecutionState.SUCCEEDED)):
            tx.insert_execution(execution(execution_id, created=created, state=state), ["main"])
    with store.transaction() as tx:
        assert ["failed-early", "abandoned", "done-late", "at-now"] == [
            e.id for e in tx.expired_executions(now, 10)]
        assert ["failed-early", "abandoned"] == [e.id for e in tx.expired_executions(now, 2)]
        assert [] == tx.expired_executions(T0, 10)


def test_delete_execution_takes_its_steps_and_attempts_and_nothing_else(store: Store) -> None:
    with store.transaction() as tx:
        for execution_id in ("e1", "e2"):
            tx.insert_execution(execution(execution_id), STEPS)
            tx.insert_step_attempt(attempt(execution_id, "fetch", f"{execution_id}.r1", 1))
            tx.insert_step_attempt(attempt(execution_id, "build", f"{execution_id}.r1", 2))
        tx.insert_run(activation("e1.r1", "e1"))
    with store.transaction() as tx:
        tx.delete_execution("e1")
        tx.delete_execution("none")
    with store.transaction() as tx:
        assert (None, [], [], None) == (tx.get_execution("e1"), tx.execution_steps("e1"),
                                        tx.step_attempts("e1"), tx.step_attempt("e1.r1", 1))
        assert tx.get_run("e1.r1") is not None  # runs are a job's history: kept
        assert "e2" == stored(tx, "e2").id
        assert 3 == len(tx.execution_steps("e2"))
        assert ["e2.r1"] * 2 == [found.run_id for found in tx.step_attempts("e2")]


def test_a_runs_execution_id_round_trips(store: Store) -> None:
    """Run.execution_id is written by insert_run and read back by get_run and history."""
    with store.transaction() as tx:
        tx.insert_run(activation("r1", "e1"))
        tx.insert_run(activation("r2", None))
        tx.update_run("r2", execution_id="e2")
        tx.insert_run(activation("r3", None))
    with store.transaction() as tx:
        got = tx.get_run("r1")
        assert got is not None
        assert "e1" == got.execution_id
        assert [("r3", None), ("r2", "e2"), ("r1", "e1")] == [
            (run.id, run.execution_id) for run in tx.history("deploy", 10)]
