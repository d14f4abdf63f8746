"""Ending: attempts that ended are judged, runs end and are recorded, notifications queued.

The core judges each attempt (:func:`~cronduit.core.lifecycle.judge_attempt`: success,
retry after a backoff, or the outcome it ends the run with) and says when a run in backoff
retries or times out; this stage reads, asks, and writes the run's end, its run-end event
(which chains ``on.after`` jobs), its notifications and its pruning in the transaction that
records the outcome, then starts the work its end freed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from cronduit.core.config.model import Job
from cronduit.core.enums import EventState, Outcome, RunState, SlotFate, TriggerKind
from cronduit.core.lifecycle import (
    RUN_END_EVENTS,
    AttemptReport,
    judge_attempt,
    retry_of,
)
from cronduit.core.notify import RunFacts, message, recipients
from cronduit.core.overlap import on_backoff
from cronduit.core.timespec import format_utc
from cronduit.engine.outbox import Outbox
from cronduit.engine.plan import Stage
from cronduit.engine.step_ends import settle, step_verdict
from cronduit.engine.work import inputs_of, job_state, start_waiting
from cronduit.ports import Event, Run, Transaction

Ended = list[tuple[str, int, AttemptReport]]
"""Attempts' ends as the runner reports them: run id, attempt number, report."""


def collect_ended(stage: Stage, tx: Transaction, ended: Ended, now: datetime,
                  outbox: Outbox) -> None:
    """Settle each reported end, once: a replayed report of a settled attempt is ignored."""
    for run_id, attempt, report in ended:
        run = tx.get_run(run_id)
        stage.stopping.discard(run_id)
        if run is None or run.state != RunState.RUNNING or run.attempts != attempt:
            continue
        attempt_ended(stage, tx, run, attempt, report, now, outbox)


def attempt_ended(stage: Stage, tx: Transaction, run: Run, attempt: int, report: AttemptReport,
                  now: datetime, outbox: Outbox) -> None:
    """Judge an attempt's end: the run sleeps in backoff (and joins the triggers the core
    says it consumes meanwhile), or ends."""
    job = stage.config.jobs.get(run.job)
    if report.log_tail is not None:  # read only where the plan keeps tails
        tx.store_log_tail(run.id, attempt, report.log_tail, now)
    if report.stopped_for is None and run.cancel_reason is not None:
        report = replace(report, stopped_for=run.cancel_reason)
    if run.execution_id is not None and job is not None:
        found = step_verdict(stage, tx, job, run, attempt, report, now, outbox)
        if found is None:  # the step succeeded and the next one goes
            return
        verdict = found
    else:
        retry = retry_of(job.retry if job is not None else None)
        verdict = judge_attempt(report, attempt, retry, now, run.deadline_at or now)
    if verdict.retry_at is not None and job is not None:
        tx.update_run(run.id, state=RunState.BACKOFF, next_attempt_at=verdict.retry_at,
                      exit_status=report.exit_status, reason=verdict.reason, pid=None)
        joined = on_backoff(job_state(stage, tx, job), job.overlap)
        tx.set_event_state([t.seq for t in joined], EventState.CONSUMED, run.id)
        outbox.lines.append(f"run {run.job} {run.id}: attempt {attempt} failed "
                            f"({verdict.reason}); retry at {format_utc(verdict.retry_at)}")
        return
    outcome = verdict.outcome or Outcome.FAILURE
    end_run(stage, tx, run, outcome, verdict.reason, report.exit_status, now, outbox)


def end_run(stage: Stage, tx: Transaction, run: Run, outcome: Outcome, reason: str,
            exit_status: int | None, now: datetime, outbox: Outbox) -> None:
    """Record the run's end with its run-end event, notifications and pruning; then start
    what its end freed."""
    tx.update_run(run.id, state=RunState.ENDED, outcome=outcome, reason=reason,
                  exit_status=exit_status, finished_at=now, next_attempt_at=None)
    stage.triggers.pop(run.id, None)  # a rollback leaves it out: the run reads it again
    failed_step = settle(tx, run, outcome, now)
    tx.insert_run_end(run.job, run.id, RUN_END_EVENTS[outcome], outcome, now)
    # Wall-clock time: a clock stepped back during the run would make it negative.
    took = max(0.0, (now - (run.started_at or now)).total_seconds())
    outbox.ended.append((run.job, outcome, took))
    outbox.lines.append(f"run {run.job} {run.id}: {outcome} after {took:.1f}s"
                        + (f" ({reason})" if reason else ""))
    job = stage.config.jobs.get(run.job)
    if job is None:
        return
    outbox.notified += notify(stage, tx, job, RunFacts(
        job.name, run.id, outcome, run.started_at, now, run.attempts, exit_status, reason,
        execution=run.execution_id, failed_step=failed_step), now)
    # Only this node's runs: another's files are on its host, and two nodes marking each
    # other's rows pruned, each in its own order, would deadlock.
    for old in tx.runs_to_prune(job.name, stage.config.settings.kept_runs, stage.scope):
        tx.update_run(old.id, files_pruned=True)
        if stage.keeps_tails:
            tx.drop_log_tail(old.id)
        outbox.prunes.append(old)
    if stage.dispatch:
        start_waiting(stage, tx, job.name, now, outbox)


def skip(stage: Stage, tx: Transaction, job: Job, event: Event, reason: str, now: datetime,
         outbox: Outbox) -> None:
    """Record a trigger the core skipped as a run that ended ``skipped`` at once."""
    run = Run(id=stage.new_run_id(now), job=job.name, kind=event.kind, label=event.label,
              state=RunState.ENDED, created_at=now, trigger_seq=event.seq, exclusive=False,
              outcome=Outcome.SKIPPED, reason=reason, finished_at=now, late=event.late,
              inputs=inputs_of(event), operator=event.operator)
    tx.insert_run(run)
    tx.set_event_state([event.seq], EventState.CONSUMED, run.id)
    outbox.lines.append(f"run {job.name} {run.id}: skipped ({reason}) [{event.label}]")
    outbox.ended.append((job.name, Outcome.SKIPPED, None))
    if event.kind == TriggerKind.TIMER:  # its slot ran into a skip: the slot's fate
        outbox.slots.append((job.name, SlotFate.SKIPPED, reason, 1))
    outbox.notified += notify(stage, tx, job, RunFacts(job.name, run.id, Outcome.SKIPPED, None,
                                                       now, 0, None, reason), now)


def notify(stage: Stage, tx: Transaction, job: Job, facts: RunFacts, now: datetime) -> int:
    """Queue the run's outcome for every notifier that wants it, in the transaction that
    records the outcome: a crash right after loses no notification. How many."""
    notifiers = stage.config.notifiers
    accepts = {name: notifier.on for name, notifier in notifiers.items()}
    names = recipients(job.notify, accepts, facts.outcome)
    for name in names:
        body = json.dumps(message(facts, notifiers[name].format))
        tx.insert_notification(facts.run, name, body, now)
    return len(names)
