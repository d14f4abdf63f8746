"""Runs that must move on without an attempt ending: a retry whose backoff is over, a
deadline passed, a stop another node asked for.

The core says when a run in backoff retries or times out
(:func:`~cronduit.core.lifecycle.backoff_step`); this stage asks each tick, and notes the
attempts to launch and the processes to stop in the outbox. A durable run's retry is its
failed step's next attempt (:func:`~cronduit.engine.executions.next_attempt`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from cronduit.core.enums import Outcome, RunState
from cronduit.core.lifecycle import backoff_step
from cronduit.engine.ending import end_run
from cronduit.engine.executions import next_attempt
from cronduit.engine.outbox import Launch, Outbox
from cronduit.engine.plan import Stage
from cronduit.ports import Transaction


def retry_due(stage: Stage, tx: Transaction, now: datetime, outbox: Outbox) -> None:
    """Runs in backoff whose time came: the next attempt, or the end their deadline owes."""
    for run in tx.due_backoffs(now, stage.scope, stage.excluded):
        step = backoff_step(now, run.deadline_at, run.next_attempt_at)
        if step == "timeout":
            end_run(stage, tx, run, Outcome.TIMEOUT, "deadline passed during backoff",
                    run.exit_status, now, outbox)
        elif step == "retry":
            attempt = run.attempts + 1
            tx.update_run(run.id, state=RunState.RUNNING, attempts=attempt, next_attempt_at=None,
                          node=stage.node)
            again = replace(run, attempts=attempt, node=stage.node)
            job = stage.config.jobs.get(run.job)
            launch = (next_attempt(stage, tx, job, again, attempt, now)
                      if run.execution_id is not None and job is not None else None)
            outbox.launches.append(Launch(again, attempt, step=launch))


def enforce_deadlines(stage: Stage, tx: Transaction, now: datetime, outbox: Outbox) -> None:
    """Runs of this node going past their deadline are asked to stop; each ends when its
    process does."""
    for run in tx.overdue_runs(now, stage.scope):
        tx.update_run(run.id, cancel_reason="timeout")
        outbox.stops.append((run, "timeout"))


def stop_cancelled(stage: Stage, tx: Transaction, outbox: Outbox) -> None:
    """Runs of this node that another node asked to stop (a replace): stopped here, where
    their processes are, once each."""
    for run in tx.cancelled_runs(stage.node):
        if run.id not in stage.stopping and run.cancel_reason is not None:
            stage.stopping.add(run.id)
            outbox.stops.append((run, run.cancel_reason))
