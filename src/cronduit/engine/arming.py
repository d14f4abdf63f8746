"""Arming: a config taken (start-up, ``cronduit apply``, SIGHUP) re-arms the timers.

The core's edit rules (:func:`~cronduit.core.catchup.arm_new`,
:func:`~cronduit.core.catchup.arm_edited`) say when each timer is next due; this stage reads
the stored timers, asks, and writes the answer with the pauses ``paused_on_start`` owes and
whatever the caller records of the apply, in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from cronduit.core.arming import due_of, timing_key
from cronduit.core.catchup import arm_edited, arm_new
from cronduit.core.config.model import Config, Job
from cronduit.core.pausing import starts_paused
from cronduit.core.timespec import Schedule, format_utc
from cronduit.engine.plan import Plan
from cronduit.intake import pausing
from cronduit.ports import Store, Timer, Transaction

STARTS_PAUSED = "paused_on_start: the config starts this job paused"

Record = Callable[[Transaction, list[str]], None]
"""Writes what the caller keeps of an apply, given its changes, in the apply's transaction."""


def arm(store: Store, plan: Plan, now: datetime, *, dispatch: bool,
        record: Record | None) -> list[str]:
    """Take ``plan``'s config: clear the pauses of removed jobs, pause new jobs that start
    paused, remove the timers of jobs no longer timed and (unless a dry run) arm the rest;
    the list of changes, for the operator. All of it commits, or none of it."""
    config, changes = plan.config, []
    with store.transaction() as tx:
        for cleared in pausing.clear_removed(tx, config.jobs.keys(), now):
            changes.append(f"{cleared.job}: pause cleared (removed from the config)")
        stored = {timer.job: timer for timer in tx.timers()}
        changes += _pause_new_jobs(tx, config, stored, now)
        for name in stored:
            if name not in plan.schedules:
                tx.delete_timer(name)
                changes.append(f"{name}: timer removed")
        if dispatch:
            armed: list[Timer] = []
            for name, schedule in plan.schedules.items():
                change = _arm_one(plan, config.jobs[name], schedule, stored.get(name), now,
                                  armed)
                if change:
                    changes.append(f"{name}: {change}")
            tx.put_timers(armed)
        if record is not None:
            record(tx, changes)
    return changes


def _pause_new_jobs(tx: Transaction, config: Config, stored: dict[str, Timer],
                    now: datetime) -> list[str]:
    """Pause, by cronduit, each job the core says starts paused (:func:`starts_paused`);
    remember every ``paused_on_start`` job seen, so it is judged new only once."""
    changes = []
    for job in config.jobs.values():
        if not job.paused_on_start:
            continue  # the reads below are for these jobs alone
        seen = tx.get_meta(f"seen/{job.name}") is not None
        if not seen:
            tx.set_meta(f"seen/{job.name}", format_utc(now))
        known = not seen and (job.name in stored or bool(tx.history(job.name, 1))
                              or tx.active_pause(job.name) is not None)
        if not starts_paused(job.paused_on_start, seen_before=seen, known_before=known):
            continue
        pausing.pause(tx, job.name, STARTS_PAUSED, pausing.ENGINE, None, now)
        changes.append(f"{job.name}: paused (paused_on_start); resume it with cronduit job "
                       f"resume {job.name}")
    return changes


def _arm_one(plan: Plan, job: Job, schedule: Schedule, timer: Timer | None, now: datetime,
             armed: list[Timer]) -> str | None:
    key = timing_key(job)
    if timer is not None and timer.timing_key == key:
        return None  # an unchanged timer is left alone, across restarts too
    due = due_of(job, schedule)
    if timer is None:
        arming = arm_new(schedule, now, due)
    else:
        arming = arm_edited(schedule, timer.last_name, now, job.catch_up, due)
    if arming is None:
        return None
    last_name = None if timer is None else timer.last_name
    armed.append(Timer(job.name, key, arming.slot.instant, arming.slot.name, arming.due,
                       last_name))
    verb = "timer armed" if timer is None else "timing changed, timer re-armed"
    return f"{verb} for {format_utc(arming.due)}"
