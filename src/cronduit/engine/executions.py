"""Executions: a durable job's run walks its steps, one attempt per step attempt (SPEC §8).

A run of a job with steps (or ``durable:``) is an activation of an execution: a new one,
or, for a resume trigger, the failed execution it names. Each step attempt is the run's next
attempt, so the run's deadline, backoff, adoption and stopping carry the steps; which step
an attempt is, and with which ids, is the store's step-attempt row, written in the
transaction that commits the attempt, before its process is launched. The core decides
(:mod:`cronduit.core.steps`: which step is next, what it is given, whether its outputs are
valid, whether a resume may go); this stage reads and writes. A step is done only in the
transaction that records its attempt's exit and saves its outputs
(:mod:`cronduit.engine.step_ends`, where the execution also ends with its run).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from cronduit.core.config.model import Durable, Job, Step
from cronduit.core.enums import ExecutionState, Outcome, RunState, StepState
from cronduit.core.lifecycle import run_deadline
from cronduit.core.steps import (
    StepLaunch,
    definition_hash,
    job_steps,
    next_step,
    resume_refusal,
    step_of,
    step_variables,
)
from cronduit.engine.plan import Stage
from cronduit.ports import Event, Execution, ExecutionStep, Run, StepAttempt, Transaction


def activation(stage: Stage, tx: Transaction, job: Job, run: Run, chosen: Event,
               now: datetime) -> Run:
    """The run a durable job's trigger starts, as an activation of a new execution, or of
    the failed one the trigger resumes (which keeps its inputs). A resume refused by now
    (the CLI and the API check before they accept one; a config applied since may change
    the answer) gives the run ended ``skipped``, with the reason."""
    wanted = chosen.payload.resume
    if wanted is None:
        execution = _created(stage, job, run, now)
        tx.insert_execution(execution, [step.id for step in job_steps(job)])
        return replace(run, execution_id=execution.id)
    found = tx.get_execution(wanted)
    refusal = _refusal(found, job, now)
    if found is None or refusal is not None:
        return replace(run, state=RunState.ENDED, outcome=Outcome.SKIPPED, finished_at=now,
                       started_at=None, attempts=0,
                       reason=f"resume of execution {wanted} refused: {refusal}")
    tx.update_execution(found.id, state=ExecutionState.RUNNING, run_id=run.id,
                        activations=found.activations + 1, failed_step=None, updated_at=now)
    return replace(run, execution_id=found.id, inputs=found.inputs)


def _created(stage: Stage, job: Job, run: Run, now: datetime) -> Execution:
    retention = (job.durable or Durable()).retention
    return Execution(id=stage.new_run_id(now), job=job.name, definition=definition_hash(job),
                     inputs=run.inputs, state=ExecutionState.RUNNING, created_at=now,
                     expires_at=now + timedelta(seconds=retention), updated_at=now,
                     activations=1, run_id=run.id)


def _refusal(found: Execution | None, job: Job, now: datetime) -> str | None:
    if found is None or found.job != job.name:
        return "no such execution of this job"
    return resume_refusal(found, definition_hash(job), now)


def next_attempt(stage: Stage, tx: Transaction, job: Job, run: Run, attempt: int,
                 now: datetime) -> StepLaunch | None:
    """Write attempt ``attempt`` of ``run`` as an attempt of the execution's first step not
    done; its launch, or None when every step is done."""
    assert run.execution_id is not None
    steps = job_steps(job)
    rows = {row.step_id: row for row in tx.execution_steps(run.execution_id)}
    step = next_step(steps, {name: row.state for name, row in rows.items()})
    if step is None:
        return None
    attempt_id = stage.new_run_id(now)
    tx.insert_step_attempt(StepAttempt(run.execution_id, step.id, attempt_id, run.id, attempt,
                                       now))
    _bound_attempt(tx, job, run, step, now)
    known = rows.get(step.id)
    tx.update_step(run.execution_id, step.id, state=StepState.RUNNING, run_id=run.id,
                   attempts=(known.attempts if known else 0) + 1)
    return StepLaunch(step, run.execution_id, attempt_id,
                      step_variables(step, _saved(rows.values())))


def run_trigger(tx: Transaction, run: Run) -> Event | None:
    """The trigger that started ``run`` (None if it is gone): what a later attempt's launch
    is given again."""
    return next((event for event in tx.events_of_run(run.id) if event.seq == run.trigger_seq),
                None)


def whole_deadline(job: Job, run: Run, now: datetime) -> datetime:
    """The activation's deadline: the job's ``timeout`` from the run's start, for every step
    and backoff together."""
    return run_deadline(run.started_at or now, job.timeout)


def _bound_attempt(tx: Transaction, job: Job, run: Run, step: Step, now: datetime) -> None:
    """The run's deadline while this step attempt goes: the step's own ``timeout`` from now
    when it has one, never past the activation's (the daemon stops the attempt at it, as
    it stops any run at its deadline)."""
    whole = whole_deadline(job, run, now)
    bound = whole if step.timeout is None else min(whole, now + timedelta(seconds=step.timeout))
    if bound != run.deadline_at:
        tx.update_run(run.id, deadline_at=bound)


def launch_of(tx: Transaction, job: Job, run: Run, attempt: int) -> StepLaunch | None:
    """The launch of a step attempt already written (a launch a restart finds not begun)."""
    if run.execution_id is None:
        return None
    written = tx.step_attempt(run.id, attempt)
    step = step_of(job, written.step_id) if written is not None else None
    if written is None or step is None:
        return None
    saved = _saved(tx.execution_steps(run.execution_id))
    return StepLaunch(step, run.execution_id, written.attempt_id, step_variables(step, saved))


def _saved(rows: Iterable[ExecutionStep]) -> dict[str, dict[str, str]]:
    """The saved outputs of the steps done, by step id: what later steps take as inputs."""
    return {row.step_id: json.loads(row.outputs) for row in rows
            if row.state is StepState.DONE and row.outputs is not None}
