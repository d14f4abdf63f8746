"""Durable multi-step executions through the real engine and store, on simulated time
(SPEC §8): steps walked in order with outputs flowing as inputs, retries per step, the
deadline across steps, resume where it failed, and timers that start new executions."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core.config import load_config
from cronduit.core.config.model import Config, Job
from cronduit.core.enums import ExecutionState, RunState, StepState
from cronduit.core.steps import StepLaunch
from cronduit.intake.executions import abandon, accept_resume
from cronduit.intake.refusals import RequestRefused
from cronduit.ports import Event, Execution, LaunchResult, Run, Transaction
from cronduit.testing import Launched
from tests.engine.conftest import Rig

MakeRig = Callable[..., Rig]
T0 = datetime(2026, 6, 1, 4, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
ETL = """
jobs:
  etl:
    timeout: 1h
    retry: {attempts: 2, backoff: 1m}
    steps:
      - {id: sync, run: ./sync, outputs: [SNAPSHOT]}
      - {id: index, run: ./index, outputs: [COUNT], inputs: {FROM: sync.SNAPSHOT}}
      - {id: publish, run: ./publish, inputs: {N: index.COUNT, FROM: sync.SNAPSHOT}}
"""


def out(**values: str) -> bytes:
    return json.dumps(values).encode()


def live(rig: Rig) -> Launched:
    """The one attempt going, checked to be a step attempt."""
    [running] = rig.runner.running()
    found = [x for x in rig.runner.launched if x.run.id == running][-1]
    assert found.step is not None
    return found


def execution_of(rig: Rig, run_id: str) -> Execution:
    with rig.store.transaction() as tx:
        run = tx.get_run(run_id)
        found = None if run is None or run.execution_id is None else tx.get_execution(
            run.execution_id)
    assert found is not None
    return found


def step_states(rig: Rig, execution_id: str) -> dict[str, StepState]:
    with rig.store.transaction() as tx:
        return {row.step_id: row.state for row in tx.execution_steps(execution_id)}


def manual(rig: Rig, name: str = "etl") -> None:
    rig.accept(f"manual/{name}/{len(rig.runner.launched)}", name, "manual")
    rig.tick()


def test_steps_run_in_order_with_outputs_flowing_as_inputs(make_rig: MakeRig) -> None:
    """sync -> index -> publish in one run, one attempt each; each gets the execution and
    step ids, a fresh attempt id and its inputs from the saved outputs."""
    rig = make_rig(ETL, T0)
    manual(rig)
    sync = live(rig)
    assert sync.step is not None
    assert ("sync", {}) == (sync.step.step.id, dict(sync.step.variables))
    rig.runner.finish(sync.run.id, 0, outputs=out(SNAPSHOT="s-1"))
    rig.tick()
    index = live(rig)
    assert index.step is not None
    assert (sync.run.id, 2, "index", {"FROM": "s-1"}) == (
        index.run.id, index.attempt, index.step.step.id, dict(index.step.variables))
    rig.runner.finish(index.run.id, 0, outputs=out(COUNT="12"))
    rig.tick()
    publish = live(rig)
    assert publish.step is not None
    assert {"N": "12", "FROM": "s-1"} == dict(publish.step.variables)
    ids = {x.step.attempt_id for x in (sync, index, publish) if x.step}
    assert 3 == len(ids)
    assert {sync.step.execution_id} == {x.step.execution_id for x in (index, publish) if x.step}
    rig.runner.finish(publish.run.id, 0)
    rig.tick()
    [run] = rig.history("etl")
    assert ("success", 3) == (run.outcome, run.attempts)
    execution = execution_of(rig, run.id)
    assert (ExecutionState.SUCCEEDED, 1) == (execution.state, execution.activations)
    assert {"sync": StepState.DONE, "index": StepState.DONE, "publish": StepState.DONE} == (
        step_states(rig, execution.id))


def test_the_next_step_launches_as_soon_as_the_commit_that_ended_its_predecessor(
        make_rig: MakeRig, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tick that records a step's end launches the next step's attempt right after that
    commit, and the routing transaction runs while its process starts; its trigger is read
    in the commit itself, and nothing more is read after: two transactions in all."""
    rig = make_rig(ETL, T0)
    manual(rig)
    sync = live(rig)
    rig.runner.finish(sync.run.id, 0, outputs=out(SNAPSHOT="s-1"))
    seen: list[str] = []
    transaction, begin_many = rig.store.transaction, rig.runner.begin_many

    @contextmanager
    def noted() -> Iterator[Transaction]:
        seen.append("transaction")
        with transaction() as tx:
            yield tx
        seen.append("committed")

    def launching(launches: Sequence[tuple[Run, Job, Event, int]],
                  steps: Mapping[str, StepLaunch] | None = None
                  ) -> Callable[[], list[LaunchResult]]:
        seen.append("launch")
        collect = begin_many(launches, steps)

        def collected() -> list[LaunchResult]:
            seen.append("collected")
            return collect()

        return collected

    monkeypatch.setattr(rig.store, "transaction", noted)
    monkeypatch.setattr(rig.runner, "begin_many", launching)
    rig.tick()
    assert ["transaction", "committed", "launch", "transaction", "committed",
            "collected"] == seen
    index = live(rig)
    assert index.step is not None
    assert ("index", sync.trigger.delivery_id) == (index.step.step.id,
                                                   index.trigger.delivery_id)


def test_a_step_failing_its_retries_fails_the_run_and_a_resume_skips_what_was_done(
        make_rig: MakeRig) -> None:
    """index fails twice (retry: 2 attempts): the run fails at index and the execution can
    be resumed; the resume is a new run that starts at index with sync's saved outputs,
    never runs sync again, and keeps the execution's ids."""
    rig = make_rig(ETL, T0)
    manual(rig)
    first = live(rig)
    rig.runner.finish(first.run.id, 0, outputs=out(SNAPSHOT="s-1"))
    rig.tick()
    rig.runner.finish(first.run.id, 4)
    rig.tick()
    rig.at(T0 + MINUTE)
    again = live(rig)
    assert again.step is not None
    assert ("index", 3) == (again.step.step.id, again.attempt)
    rig.runner.finish(first.run.id, 4)
    rig.tick()
    [failed] = rig.history("etl")
    assert ("failure", "step index: exit status 4") == (failed.outcome, failed.reason)
    execution = execution_of(rig, failed.id)
    assert (ExecutionState.FAILED, "index") == (execution.state, execution.failed_step)
    with rig.store.transaction() as tx:
        accept_resume(tx, rig.engine.config, execution.id, operator="ana", now=rig.clock.now())
    rig.tick()
    resumed = live(rig)
    assert resumed.step is not None
    assert resumed.run.id != failed.id
    assert ("index", 1, {"FROM": "s-1"}, execution.id) == (
        resumed.step.step.id, resumed.attempt, dict(resumed.step.variables),
        resumed.step.execution_id)
    rig.runner.finish(resumed.run.id, 0, outputs=out(COUNT="7"))
    rig.tick()
    publish = live(rig)
    rig.runner.finish(publish.run.id, 0)
    rig.tick()
    steps_run = [x.step.step.id for x in rig.runner.launched if x.step is not None]
    assert ["sync", "index", "index", "index", "publish"] == steps_run
    done = execution_of(rig, resumed.run.id)
    assert (ExecutionState.SUCCEEDED, 2, resumed.run.id) == (
        done.state, done.activations, done.run_id)


def test_steps_inherit_the_jobs_retry_unless_they_declare_their_own(make_rig: MakeRig) -> None:
    """index declares one attempt: its failure fails the run at once; sync inherits two."""
    text = ETL.replace("outputs: [COUNT], inputs", "outputs: [COUNT], retry: {attempts: 1}, "
                                                   "inputs")
    rig = make_rig(text, T0)
    manual(rig)
    sync = live(rig)
    rig.runner.finish(sync.run.id, 1)
    assert rig.tick() == T0 + MINUTE  # sync inherits the job's retry: back off a minute
    rig.at(T0 + MINUTE)
    rig.runner.finish(sync.run.id, 0, outputs=out(SNAPSHOT="s"))
    rig.tick()
    rig.runner.finish(sync.run.id, 1)
    rig.tick()
    [run] = rig.history("etl")
    assert ("failure", "step index: exit status 1", 3) == (run.outcome, run.reason, run.attempts)


def test_invalid_outputs_fail_the_step_by_their_rule(make_rig: MakeRig) -> None:
    """Exit 0 with an output file that lacks a declared key is a failed attempt, retried."""
    rig = make_rig(ETL, T0)
    manual(rig)
    sync = live(rig)
    rig.runner.finish(sync.run.id, 0, outputs=out(OTHER="hunter2"))
    assert T0 + MINUTE == rig.tick()
    execution = execution_of(rig, sync.run.id)
    with rig.store.transaction() as tx:
        attempts = tx.step_attempts(execution.id)
    assert [("sync", "failure", "the output file lacks the declared output(s) SNAPSHOT")] == [
        (a.step_id, a.outcome, a.reason) for a in attempts]


def test_the_deadline_holds_across_steps_and_backoff(make_rig: MakeRig) -> None:
    """timeout 10m, backoffs of 2m (6m at worst for the three steps, which check allows):
    sync takes 9m, index fails, and a 2m backoff would end past the deadline, so the run
    fails without another attempt, the execution failed at index."""
    text = ETL.replace("timeout: 1h", "timeout: 10m").replace("backoff: 1m", "backoff: 2m")
    rig = make_rig(text, T0)
    manual(rig)
    sync = live(rig)
    rig.clock.set(T0 + 9 * MINUTE)
    rig.runner.finish(sync.run.id, 0, outputs=out(SNAPSHOT="s"))
    rig.tick()
    rig.runner.finish(sync.run.id, 2)
    rig.tick()
    [run] = rig.history("etl")
    assert "failure" == run.outcome
    assert "no time left before the deadline" in run.reason
    assert ExecutionState.FAILED == execution_of(rig, run.id).state


def test_timers_start_new_executions_while_a_failed_one_waits_for_resume(
        make_rig: MakeRig) -> None:
    """every 1h: the first execution fails; the next slot starts a new execution (it never
    resumes the failed one), which stays resumable."""
    text = ETL.replace("timeout: 1h", "every: 1h\n    timeout: 10m").replace(
        "retry: {attempts: 2, backoff: 1m}", "retry: {attempts: 1}")
    rig = make_rig(text, T0)
    rig.tick()
    first = live(rig)
    rig.runner.finish(first.run.id, 9)
    rig.tick()
    rig.at(T0 + timedelta(hours=1))
    second = live(rig)
    assert first.step is not None
    assert second.step is not None
    assert ("sync", False) == (second.step.step.id,
                               second.step.execution_id == first.step.execution_id)
    assert second.trigger.payload.resume is None
    assert ExecutionState.FAILED == execution_of(rig, first.run.id).state


def test_resume_and_abandon_are_refused_with_their_reasons(make_rig: MakeRig) -> None:
    """Running: neither; failed: abandon, then resume is refused as abandoned; an edited
    step: resume refused as changed."""
    rig = make_rig(ETL, T0)
    manual(rig)
    run = live(rig).run
    execution = execution_of(rig, run.id)
    now = rig.clock.now()
    with rig.store.transaction() as tx, pytest.raises(RequestRefused, match="it is running"):
        abandon(tx, execution.id, operator=None, now=now)
    rig.runner.finish(run.id, 9)
    rig.tick()
    rig.at(T0 + MINUTE)
    rig.runner.finish(run.id, 9)
    rig.tick()
    edited: Config = load_config(ETL.replace("./sync", "./sync2"), "t.yaml")
    with rig.store.transaction() as tx, pytest.raises(RequestRefused, match="steps changed"):
        accept_resume(tx, edited, execution.id, operator=None, now=now)
    with rig.store.transaction() as tx:
        abandon(tx, execution.id, operator="ana", now=now)
    with rig.store.transaction() as tx, pytest.raises(RequestRefused, match="was abandoned"):
        accept_resume(tx, rig.engine.config, execution.id, operator=None, now=now)
    with rig.store.transaction() as tx, pytest.raises(RequestRefused, match="no execution"):
        accept_resume(tx, rig.engine.config, "nope", operator=None, now=now)


def test_a_failed_activation_notifies_with_the_execution_and_the_failed_step(
        make_rig: MakeRig) -> None:
    """The notification of a run of an execution carries its id and the step that failed."""
    text = ("notifiers:\n  ops: {url: 'https://hooks.example/ops', on: [failure]}\n"
            + ETL.replace("retry: {attempts: 2, backoff: 1m}",
                          "retry: {attempts: 1}\n    notify: [failure]"))
    rig = make_rig(text, T0)
    manual(rig)
    sync = live(rig)
    rig.runner.finish(sync.run.id, 0, outputs=out(SNAPSHOT="s"))
    rig.tick()
    rig.runner.finish(sync.run.id, 5)
    rig.tick()
    with rig.store.transaction() as tx:
        [sent] = tx.notifications_of_run(sync.run.id)
    body = json.loads(sent.body)
    assert sync.step is not None
    assert (sync.step.execution_id, "index", "failure", "step index: exit status 5") == (
        body["execution"], body["failed_step"], body["outcome"], body["reason"])


def test_retention_deletes_executions_past_it_that_are_not_running(make_rig: MakeRig) -> None:
    """durable: retention 1h: a failed execution is deleted once its hour since it began is
    over (its run stays in the history); one still running is kept however old."""
    text = ETL.replace("retry: {attempts: 2, backoff: 1m}",
                       "retry: {attempts: 1}\n    durable: {retention: 1h}")
    rig = make_rig(text, T0)
    manual(rig)
    failed = live(rig).run
    rig.runner.finish(failed.id, 7)
    rig.tick()
    manual(rig)
    going = live(rig).run
    execution = execution_of(rig, failed.id)
    assert 0 == rig.engine.prune_executions(T0 + timedelta(minutes=59))
    assert 1 == rig.engine.prune_executions(T0 + timedelta(hours=1))
    with rig.store.transaction() as tx:
        assert tx.get_execution(execution.id) is None
        assert [] == tx.step_attempts(execution.id)
    assert [failed.id, going.id] == [run.id for run in rig.history("etl")]
    assert 0 == rig.engine.prune_executions(T0 + timedelta(days=2))
    assert ExecutionState.RUNNING == execution_of(rig, going.id).state


def test_a_steps_own_timeout_stops_its_attempt_which_is_retried(make_rig: MakeRig) -> None:
    """index: timeout 5m, the job's 1h: at 5m the attempt is stopped and fails with the
    reason, the step is retried after its backoff with the activation's deadline again, and
    its next attempt may take another 5m."""
    text = ETL.replace("outputs: [COUNT], inputs", "outputs: [COUNT], timeout: 5m, inputs")
    rig = make_rig(text, T0)
    manual(rig)
    sync = live(rig)
    rig.runner.finish(sync.run.id, 0, outputs=out(SNAPSHOT="s"))
    rig.tick()
    rig.at(T0 + 5 * MINUTE)
    assert [(sync.run.id, "timeout")] == rig.runner.stopped
    rig.tick()
    [run] = rig.history("etl")
    assert (RunState.BACKOFF, T0 + timedelta(hours=1)) == (run.state, run.deadline_at)
    execution = execution_of(rig, run.id)
    with rig.store.transaction() as tx:
        tries = [a for a in tx.step_attempts(execution.id) if a.step_id == "index"]
    assert [("failure", "timed out after 5m (the step's timeout)")] == [
        (a.outcome, a.reason) for a in tries]
    rig.at(T0 + 6 * MINUTE)
    again = live(rig)
    assert again.step is not None
    assert ("index", 3) == (again.step.step.id, again.attempt)
    [run] = rig.history("etl")
    assert (T0 + 11 * MINUTE, None) == (run.deadline_at, run.cancel_reason)
    rig.runner.finish(run.id, 0, outputs=out(COUNT="1"))
    rig.tick()
    rig.runner.finish(run.id, 0)
    rig.tick()
    assert "success" == rig.history("etl")[0].outcome
