"""What the read surfaces say of jobs and runs: the CLI's ``--json`` (``status``, ``schedule
list``, ``job history``) and the HTTP API's ``GET /v1/jobs`` and ``/v1/runs``.

One function per fact, each read inside the caller's transaction, so the command line and
the API can never say two different things about one job or run. The judgement is the
core's (:mod:`cronduit.core.status`); this module fetches its inputs and spells its answer:
instants as ``2026-03-29T01:00:00Z``, ``None`` for "none". Nothing here reads a secret, and
no answer holds one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from cronduit.core.backfill import trigger_policy
from cronduit.core.config.model import Config, Job
from cronduit.core.durations import format_duration
from cronduit.core.enums import EventState, SlotFate, TriggerKind
from cronduit.core.explain import explain
from cronduit.core.slot_ledger import ledger_fate
from cronduit.core.status import (
    FAILED,
    OVERDUE_AFTER,
    SKIPS_IN_A_ROW,
    JobStatus,
    TimerState,
    diverges,
    judge,
    last_counted,
    next_elapse,
    timer_state,
    upcoming_slots,
)
from cronduit.core.timespec import Slot, format_utc
from cronduit.ports import AuditEntry, Pause, Run, SlotRecord, Timer, Transaction

__all__ = ["NEXT_SLOTS", "SlotView", "audit_facts", "diverging_jobs", "duration_s",
           "failing_jobs", "job_facts", "job_statuses", "per_config", "run_record",
           "slot_facts", "slot_view", "statuses_of", "timing_of", "utc"]

T = TypeVar("T")

NEXT_SLOTS = 5
"""How many slots to come each job's facts list."""


def utc(instant: datetime | None) -> str | None:
    """An instant as ``2026-03-29T01:00:00Z``; ``None`` stays ``None`` (JSON ``null``)."""
    return None if instant is None else format_utc(instant)


def duration_s(run: Run) -> float | None:
    """Seconds from the run's start to its end (all attempts and backoffs); None if either
    is missing (a run going, a skipped run that never started)."""
    if run.started_at is None or run.finished_at is None:
        return None
    return round((run.finished_at - run.started_at).total_seconds(), 3)


def timing_of(job: Job) -> str:
    """What makes the job run, in config words: ``cron 0 9 * * 1-5 Europe/London, webhook``."""
    parts = []
    zone = "" if job.time_zone == "UTC" else f" {job.time_zone}"
    if job.cron is not None:
        parts.append(f"cron {job.cron}{zone}")
    elif job.at is not None:
        times = ",".join(f"{m // 60:02d}:{m % 60:02d}" for m in job.at)
        parts.append(f"at {times}{zone}")
    elif job.every is not None:
        parts.append(f"every {format_duration(job.every)}")
    if parts and job.jitter:
        parts[0] += f" (jitter {format_duration(job.jitter)})"
    if job.on is not None and job.on.events:
        parts.append("on " + ",".join(job.on.events))
    if job.on is not None and job.on.after is not None:
        parts.append(f"after {job.on.after.job}")
    if job.webhook:
        parts.append("webhook")
    return ", ".join(parts) or "manual"


# -- jobs ---------------------------------------------------------------------------------


def _newest_runs(tx: Transaction, job: str, read: int) -> list[Run]:
    """The job's newest runs, down to the one its status counts as its last, once its
    newest ``read`` runs were read without it (all going or skipped): each look reads four
    times as many as the one before."""
    limit = read
    while True:
        limit *= 4
        runs = tx.history(job, limit)
        if len(runs) < limit or last_counted(runs) is not None:
            return runs


def job_statuses(tx: Transaction, config: Config, now: datetime, timers_expected: bool,
                 only: str | None = None) -> list[JobStatus[Run, Pause]]:
    """Every configured job's status (or ``only`` that one's), judged by the core from what
    ``tx`` reads. ``timers_expected``: False while the daemon serving runs in dry run."""
    names = list(config.jobs) if only is None else [only] if only in config.jobs else []
    return statuses_of(tx, config, names, now, timers_expected)


def statuses_of(tx: Transaction, config: Config, names: Sequence[str], now: datetime,
                timers_expected: bool) -> list[JobStatus[Run, Pause]]:
    """:func:`job_statuses` of the named jobs, in the order given, read in a few statements
    however many jobs (a page of the dashboard or of ``/v1/jobs``: with 10,000 jobs,
    statements per job were most of the answer's time): every pause, the timers, the runs
    going, the waiting counts, and each job's newest runs (:func:`_judged_runs`)."""
    pauses = {pause.job: pause for pause in tx.pauses()}
    timers, active, waiting = _going(tx, names)
    newest = _judged_runs(tx, names)
    found = []
    for name in names:
        job, pause = config.jobs[name], pauses.get(name)
        elapse = next_elapse(job, timers.get(name), now, paused=pause is not None)
        found.append(judge(job, elapse, newest.get(name, []), active.get(name, []),
                           waiting.get(name, 0), timers_expected, pause, now))
    return found


def _judged_runs(tx: Transaction, names: Sequence[str]) -> dict[str, list[Run]]:
    """What :func:`~cronduit.core.status.judge` needs of each named job's runs, newest
    first: its newest runs down to the one its status counts as its last, and at least its
    newest :data:`~cronduit.core.status.SKIPS_IN_A_ROW` unless its newest run is that one
    (then no skips are in a row, and nothing older changes the judgement).

    Most jobs' newest run is the one (ended, not skipped), so every job's newest run is read
    at once, whole; only for the others (a run going, a skip) are their newest few read, at
    once again; and only a job whose newest few were all going or skipped is read further,
    by itself (:func:`_newest_runs`). A page of 100 jobs reads 100 whole runs, not the 400
    that reading each job's newest few read, which were most of its statuses' time."""
    found = tx.recent_runs(names, 1)
    further = [name for name, runs in found.items() if last_counted(runs) is None]
    if further:
        limit = SKIPS_IN_A_ROW + 1
        found.update(tx.recent_runs(further, limit))
        for name in further:
            if len(found[name]) == limit and last_counted(found[name]) is None:
                found[name] = _newest_runs(tx, name, limit)
    return found


def _going(tx: Transaction, names: Sequence[str]
           ) -> tuple[Mapping[str, Timer], dict[str, list[Run]], Mapping[str, int]]:
    """The named jobs' timers, runs going and counts of waiting triggers: for one job its
    own rows, for more every job's at once."""
    if len(names) == 1:
        [name] = names
        timer = tx.get_timer(name)
        return ({} if timer is None else {name: timer}, {name: tx.active_runs(name)},
                {name: len(tx.waiting_events(name))})
    active: dict[str, list[Run]] = {}
    for run in tx.active_runs():
        active.setdefault(run.job, []).append(run)
    return tx.timers_of(names), active, tx.waiting_counts()


def failing_jobs(tx: Transaction, names: Sequence[str]) -> list[str]:
    """Those of the named jobs whose last counted run failed or timed out (the first of
    their divergences, :data:`~cronduit.core.status.FAILED`), in the order given, none
    judged whole: the store keeps each job's last counted outcome as its runs end."""
    failed = tx.jobs_last_ended(names, FAILED)
    return [name for name in names if name in failed]


def diverging_jobs(tx: Transaction, config: Config, names: Sequence[str], now: datetime,
                   timers_expected: bool) -> list[str]:
    """Those of the named jobs that :func:`job_statuses` finds any divergence in, in the
    order given, without judging each whole: the facts divergence rests on are read for
    every job at once (the pauses, which jobs are armed and which overdue, which failed and
    which keep being skipped, the last two from facts the store keeps per job as its runs
    are written: a few statements however many jobs and runs) and weighed by the core
    (:func:`~cronduit.core.status.diverges`). A job outside all of those sets, with a timer
    not overdue or without a timing, cannot diverge (the core's rule, which weighing every
    job would find too), so only the others are weighed."""
    paused = {pause.job for pause in tx.pauses()}
    armed = tx.armed_jobs()
    overdue = tx.armed_jobs(now - OVERDUE_AFTER)
    failed = tx.jobs_last_ended(names, FAILED)
    skipping = tx.jobs_skipped_in_a_row(names, SKIPS_IN_A_ROW)
    unarmed = _timed(config).intersection(names).difference(armed)
    weighed = (failed | skipping | overdue).intersection(names) | unarmed
    found = {name for name in weighed if diverges(
        name in failed, name in paused, name in skipping,
        timer_state(config.jobs[name], name in armed, name in paused), name in overdue,
        timers_expected)}
    return [name for name in names if name in found]


def per_config(work: Callable[[Config], T]) -> Callable[[Config], T]:
    """``work`` of a config, worked out once per config: an apply makes a new one, so its
    identity says when to work it out again. For what a large config's every request would
    otherwise rebuild (which of 10,000 jobs are timed, each job's place)."""
    known: list[tuple[Config, T]] = []

    def of(config: Config) -> T:
        if not known or known[0][0] is not config:
            known[:] = [(config, work(config))]
        return known[0][1]

    return of


@per_config
def _timed(config: Config) -> frozenset[str]:
    """The jobs of ``config`` that have a timing, hence a timer when armed."""
    return frozenset(name for name, job in config.jobs.items()
                     if timer_state(job, armed=False, paused=False) is TimerState.UNARMED)


def job_facts(status: JobStatus[Run, Pause], now: datetime) -> dict[str, object]:
    """One job as ``status --json``, ``schedule list --json`` and ``GET /v1/jobs`` give it:
    its timing (in config words, and a cron expression in English), its timer and next
    elapse, the slots to come with their jittered due times, its last counted run, the runs
    going, its pause and its divergences."""
    last, job = status.last, status.job
    return {
        "job": job.name,
        "timing": timing_of(job),
        "described": explain(job.cron) if job.cron is not None else None,
        "timer": str(status.elapse.timer),
        "next_elapse": utc(status.elapse.due),
        "next_slot": status.elapse.slot_name,
        "next_slots": [] if status.pause is not None else [
            {"slot": format_utc(one.slot), "name": one.name, "due": format_utc(one.due)}
            for one in upcoming_slots(job, now, NEXT_SLOTS)],
        "last": None if last is None else {
            "run": last.id, "outcome": last.outcome, "reason": last.reason,
            "started_at": utc(last.started_at), "finished_at": utc(last.finished_at),
            "duration_s": duration_s(last), "attempts": last.attempts,
            "exit_status": last.exit_status,
        },
        "skipped_since": status.skipped_since,
        "in_progress": [
            {"run": run.id, "state": str(run.state), "attempt": run.attempts,
             "started_at": utc(run.started_at), "retry_at": utc(run.next_attempt_at)}
            for run in status.active
        ],
        "waiting": status.waiting,
        "divergences": list(status.divergences),
        "paused": None if status.pause is None else {
            "by": status.pause.operator, "since": utc(status.pause.paused_at),
            "reason": status.pause.reason, "until": utc(status.pause.until),
        },
        "reminder": status.reminder,
    }


# -- runs ---------------------------------------------------------------------------------


def run_record(tx: Transaction, run: Run, folder: Path | None = None) -> dict[str, object]:
    """The run record of SPEC §5, exactly its keys; ``execution`` and ``steps`` (each step
    attempt of the run, in order) when the run is a durable execution's activation;
    ``workspace`` when the run worked in one (what it was told about the checkout, read
    from the run's ``folder`` on this host); ``backfill: true`` with the ``slot`` it ran for
    when a backfill trigger started it; and ``notifications`` when the run's outcome was
    sent anywhere (SPEC §7: a failed delivery is recorded on the run)."""
    events = tx.events_of_run(run.id)
    record: dict[str, object] = {
        "run": run.id,
        "job": run.job,
        "trigger": run.kind,
        "label": run.label,
        "triggers": [event.delivery_id for event in events],
        "started_at": utc(run.started_at),
        "finished_at": utc(run.finished_at),
        "duration_s": duration_s(run),
        "attempts": run.attempts,
        "exit_status": run.exit_status,
        "outcome": run.outcome,
        "reason": run.reason,
        "inputs": json.loads(run.inputs or "{}"),
        "operator": run.operator,
    }
    if folder is not None:
        with contextlib.suppress(OSError):  # pruned with the run's files, or never written
            record["workspace"] = (folder / "workspace").read_text().strip()
    trigger = next((event for event in events if event.seq == run.trigger_seq), None)
    if trigger is not None and trigger.kind == TriggerKind.MANUAL and (
            trigger_policy(trigger.payload.fields) is not None):
        record["backfill"] = True
        record["slot"] = utc(trigger.slot)
    if run.execution_id is not None:
        record["execution"] = run.execution_id
        record["steps"] = [
            {"step": a.step_id, "attempt": a.attempt, "attempt_id": a.attempt_id,
             "outcome": a.outcome, "exit_status": a.exit_status, "reason": a.reason}
            for a in tx.step_attempts(run.execution_id) if a.run_id == run.id]
    notifications = tx.notifications_of_run(run.id)
    if notifications:
        record["notifications"] = [
            {"notifier": n.notifier, "state": str(n.state), "attempts": n.attempts,
             "error": n.error or None} for n in notifications]
    return record


# -- the slot ledger ----------------------------------------------------------------------


@dataclass(frozen=True)
class SlotView:
    """A ledger row with the fate of its run folded in (by the core)."""

    record: SlotRecord
    fate: SlotFate
    reason: str
    run: str | None


def slot_view(tx: Transaction, record: SlotRecord) -> SlotView:
    """The ledger row with the trigger it fired and the run that trigger became."""
    event = run = None
    if record.fate == SlotFate.RAN:
        event = tx.event_by_delivery(Slot(record.slot, record.name).delivery_id(record.job))
    if event is not None and event.state == EventState.CONSUMED and event.run_id is not None:
        run = tx.get_run(event.run_id)
    shown = ledger_fate(record.fate, record.reason, event, run)
    return SlotView(record, shown.fate, shown.reason, shown.run)


def slot_facts(view: SlotView) -> dict[str, object]:
    """One slot of the ledger as ``schedule slots --json`` and ``GET /v1/jobs/{job}/slots``
    give it."""
    record = view.record
    return {"slot": format_utc(record.slot), "name": record.name or None,
            "fate": str(view.fate), "reason": view.reason, "run": view.run,
            "count": record.count, "until": utc(record.until_slot)}


# -- the audit log ------------------------------------------------------------------------


def audit_facts(entry: AuditEntry) -> dict[str, object]:
    """One entry of the audit log as ``audit --json`` and ``GET /v1/audit`` give it."""
    return {"seq": entry.seq, "at": format_utc(entry.at), "operator": entry.operator,
            "action": entry.action, "job": entry.job, "detail": json.loads(entry.detail)}
