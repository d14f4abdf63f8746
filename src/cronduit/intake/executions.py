"""Resuming and abandoning durable executions (``cronduit execution resume|abandon``, the
API's ``POST /v1/executions/{id}/resume|abandon``; SPEC §8).

A resume is a trigger like a manual run's: accepted durably here, with the execution it
names, and started by the daemon under the job's overlap policy as its own run (never merged
with another trigger). The rules are checked here, so a refusal comes back at once with its
reason (409), and again when the run starts, where a config applied meanwhile may refuse it
still (the run is then recorded skipped, with the reason). Its delivery id counts the
activation it asks for, so asking twice before the first has started is one resume.
Abandoning ends resumability at once. Both are written to the audit log.
"""

from __future__ import annotations

import json
from datetime import datetime

from cronduit.core.config.model import Config
from cronduit.core.enums import ExecutionState, StepState, TriggerKind
from cronduit.core.payload import Payload
from cronduit.core.steps import (
    abandon_refusal,
    definition_hash,
    is_durable,
    resume_refusal,
)
from cronduit.core.text import clean
from cronduit.core.timespec import format_utc
from cronduit.intake.audit import record
from cronduit.intake.refusals import Accepted, RequestRefused, checked_operator, insert
from cronduit.ports import Execution, ExecutionStep, NewEvent, StepAttempt, Transaction


def known_execution(tx: Transaction, execution_id: str) -> Execution:
    """The execution, or a 404 naming it (cleaned: it comes from outside)."""
    found = tx.get_execution(execution_id)
    if found is None:
        raise RequestRefused(404, f"no execution {clean(execution_id, 80)}")
    return found


def resume_refusal_of(config: Config, execution: Execution, now: datetime) -> str | None:
    """Why ``execution`` cannot be resumed under ``config`` now, or None."""
    job = config.jobs.get(execution.job)
    definition = definition_hash(job) if job is not None and is_durable(job) else None
    return resume_refusal(execution, definition, now)


def accept_resume(tx: Transaction, config: Config, execution_id: str, *,
                  operator: str | None, now: datetime) -> Accepted:
    """A resume request: refused (404, 409 with the reason) or accepted as a trigger."""
    operator = checked_operator(operator)
    execution = known_execution(tx, execution_id)
    refusal = resume_refusal_of(config, execution, now)
    if refusal is not None:
        raise RequestRefused(409, f"execution {execution.id} cannot be resumed: {refusal}")
    label = "resume" if operator is None else f"resume by {clean(operator)}"
    delivery_id = f"resume/{execution.id}/{execution.activations + 1}"
    accepted = insert(tx, NewEvent(delivery_id, execution.job, TriggerKind.MANUAL, label, now,
                                    payload=Payload.build(resume=execution.id),
                                    operator=operator))
    record(tx, "execution resume", operator, now, execution.job, execution=execution.id,
           delivery_id=delivery_id)
    return accepted


def abandon(tx: Transaction, execution_id: str, *, operator: str | None,
            now: datetime) -> Execution:
    """End the execution's resumability: refused (404, 409 with the reason) while it runs,
    and when it succeeded or was abandoned already."""
    operator = checked_operator(operator)
    execution = known_execution(tx, execution_id)
    refusal = abandon_refusal(execution)
    if refusal is not None:
        raise RequestRefused(409, f"execution {execution.id} cannot be abandoned: {refusal}")
    tx.update_execution(execution.id, state=ExecutionState.ABANDONED, updated_at=now)
    record(tx, "execution abandon", operator, now, execution.job, execution=execution.id)
    return execution


def execution_summary(execution: Execution, steps: list[ExecutionStep]) -> dict[str, object]:
    """An execution as listed (the CLI's ``execution list --json``, ``GET /v1/executions``)."""
    done = sum(1 for step in steps if step.state is StepState.DONE)
    return {"execution": execution.id, "job": execution.job, "state": str(execution.state),
            "steps_done": done, "steps": len(steps), "activations": execution.activations,
            "failed_step": execution.failed_step, "run": execution.run_id,
            "created_at": format_utc(execution.created_at),
            "expires_at": format_utc(execution.expires_at)}


def execution_detail(tx: Transaction, config: Config, execution: Execution,
                     now: datetime) -> dict[str, object]:
    """Everything ``execution inspect`` and ``GET /v1/executions/{id}`` say: the original
    inputs, each step with its state, saved outputs and attempts (the run and attempt each
    was, and its log's place in the state folder of the host that ran it: ``job logs
    --run RUN --attempt N`` prints it), and whether it can be resumed now, or why not."""
    steps = tx.execution_steps(execution.id)
    attempts = tx.step_attempts(execution.id)
    refusal = resume_refusal_of(config, execution, now)

    def tried(a: StepAttempt) -> dict[str, object]:
        return {"run": a.run_id, "attempt": a.attempt, "attempt_id": a.attempt_id,
                "started_at": format_utc(a.started_at),
                "ended_at": None if a.ended_at is None else format_utc(a.ended_at),
                "exit_status": a.exit_status, "outcome": a.outcome, "reason": a.reason,
                "log": f"runs/{a.run_id}/attempt-{a.attempt}.log"}

    details = [{"step": step.step_id, "state": str(step.state), "attempts": step.attempts,
                "done_at": None if step.done_at is None else format_utc(step.done_at),
                "outputs": None if step.outputs is None else json.loads(step.outputs),
                "tries": [tried(a) for a in attempts if a.step_id == step.step_id]}
               for step in steps]
    return {**execution_summary(execution, steps), "inputs": json.loads(execution.inputs or "{}"),
            "updated_at": format_utc(execution.updated_at), "resumable": refusal is None,
            "why_not": refusal, "step_details": details}
