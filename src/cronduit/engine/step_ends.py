"""Step ends: a durable run's attempt ended, so one attempt of one step did (SPEC §8).

The step's own ``retry`` (else the job's) judges it, counted over the step's attempts in
this activation. A step succeeds only when its exit status is 0 and its outputs are valid;
its attempt's end and its outputs are then saved in this one transaction, with the next
step's attempt, so a crash never leaves a step done without its outputs, nor the next step
unwritten. An output file the rules refuse fails the step like a failed exit, naming the
rule (never the values). A step's own ``timeout`` that stops its attempt fails that attempt,
retried as one, within the activation's deadline. The execution ends with its run
(:func:`settle`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from cronduit.core.config.model import Job
from cronduit.core.durations import format_duration
from cronduit.core.enums import ExecutionState, Outcome, StepState
from cronduit.core.lifecycle import AttemptReport, Verdict, judge_attempt, judge_failure, retry_of
from cronduit.core.steps import OutputProblem, Outputs, parse_outputs, step_of
from cronduit.engine.executions import next_attempt, run_trigger, whole_deadline
from cronduit.engine.outbox import Launch, Outbox
from cronduit.engine.plan import Stage
from cronduit.ports import Run, Transaction

GONE = "no longer in the config: the execution cannot go on with it"


def step_verdict(stage: Stage, tx: Transaction, job: Job, run: Run, attempt: int,
                 report: AttemptReport, now: datetime, outbox: Outbox) -> Verdict | None:
    """The verdict on the run an ended step attempt leaves, or None when the step succeeded
    and the next step's attempt was written and noted for launch (the run goes on)."""
    assert run.execution_id is not None
    # One read of the execution's attempts gives both which step this attempt was and how
    # many times this activation has tried it.
    attempts = [a for a in tx.step_attempts(run.execution_id) if a.run_id == run.id]
    written = next((a for a in attempts if a.attempt == attempt), None)
    step_id = "?" if written is None else written.step_id
    step = step_of(job, step_id)
    if step is None:
        tx.end_step_attempt(run.id, attempt, now, report.exit_status, "failure", GONE)
        return Verdict(Outcome.FAILURE, f"step {step_id} {GONE}")
    tries = sum(1 for a in attempts if a.step_id == step.id)
    retry = retry_of(job.retry_for(step))
    deadline = whole_deadline(job, run, now)
    if report.stopped_for == "timeout" and now < deadline and step.timeout is not None:
        # The step's own timeout, not the activation's: a failed attempt, retried as one.
        why = f"timed out after {format_duration(step.timeout)} (the step's timeout)"
        verdict = judge_failure(why, report, tries, retry, now, deadline)
    else:
        verdict = judge_attempt(report, tries, retry, now, deadline)
    if run.deadline_at != deadline or run.cancel_reason == "timeout":
        # Back to the activation's deadline for a backoff and what follows; a stop for the
        # step's timeout is over with its attempt.
        tx.update_run(run.id, deadline_at=deadline,
                      cancel_reason=None if run.cancel_reason == "timeout" else
                      run.cancel_reason)
    outputs: Outputs | None = None
    if verdict.outcome is Outcome.SUCCESS:
        try:
            outputs = _outputs(step.outputs, report)
        except OutputProblem as problem:
            verdict = judge_failure(str(problem), report, tries, retry, now, deadline)
    outcome = "failure" if verdict.outcome is None else str(verdict.outcome)
    tx.end_step_attempt(run.id, attempt, now, report.exit_status, outcome, verdict.reason)
    if outputs is None:
        return replace(verdict, reason=f"step {step.id}: {verdict.reason}")
    tx.update_step(run.execution_id, step.id, state=StepState.DONE, outputs=outputs.text,
                   done_at=now, run_id=run.id)
    launch = next_attempt(stage, tx, job, run, attempt + 1, now)
    if launch is None:
        return verdict  # the last step: the run, and so the execution, succeeded
    tx.update_run(run.id, attempts=attempt + 1, exit_status=report.exit_status, pid=None)
    # The trigger the run was launched with, else read here, in this transaction, so the
    # launch reads nothing more.
    trigger = stage.triggers.get(run.id) or run_trigger(tx, run)
    outbox.launches.append(Launch(replace(run, attempts=attempt + 1), attempt + 1, trigger,
                                  step=launch))
    outbox.lines.append(f"run {run.job} {run.id}: step {step.id} done; step "
                        f"{launch.step.id} next")
    return None


def _outputs(declared: tuple[str, ...], report: AttemptReport) -> Outputs:
    if report.outputs_unreadable is not None:
        raise OutputProblem(report.outputs_unreadable)
    return parse_outputs(declared, report.outputs)


def settle(tx: Transaction, run: Run, outcome: Outcome, now: datetime) -> str | None:
    """The run ended: its execution ends with it, succeeded, or failed at the step that was
    going (resumable; a skipped resume leaves the execution as it was). The failed step."""
    if run.execution_id is None or outcome is Outcome.SKIPPED:
        return None
    if outcome is Outcome.SUCCESS:
        tx.update_execution(run.execution_id, state=ExecutionState.SUCCEEDED, updated_at=now)
        return None
    going = next((row.step_id for row in tx.execution_steps(run.execution_id)
                  if row.state is StepState.RUNNING), None)
    if going is not None:
        tx.update_step(run.execution_id, going, state=StepState.FAILED)
    tx.update_execution(run.execution_id, state=ExecutionState.FAILED, failed_step=going,
                        updated_at=now)
    return going
