"""Firing: due timers become accepted triggers and slot-ledger rows, a batch per commit.

The core decides each firing (:func:`~cronduit.core.catchup.decide_firing` and its kin:
which slots run, which are missed and why, where the timer moves); this stage reads the due
timers and what pauses hold of them, asks, and writes the answer: the timers moved under
their version guard, then the batch's events and ledger rows in one statement each (unique
delivery ids and slot keys keep that idempotent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cronduit.core.arming import due_of
from cronduit.core.catchup import (
    Firing,
    decide_firing,
    decide_held_firing,
    decide_interval_firing,
    published_payload,
)
from cronduit.core.config.model import Job
from cronduit.core.enums import SlotFate, TriggerKind
from cronduit.core.pausing import UNHELD, holds, is_held
from cronduit.core.payload import EMPTY
from cronduit.core.timespec import IntervalSchedule, Schedule, Slot
from cronduit.engine.outbox import Outbox
from cronduit.engine.plan import BATCH, Plan, Stage
from cronduit.ports import Conflict, NewEvent, SlotRecord, Timer, Transaction

_TIMER = TriggerKind.TIMER

Decided = dict[tuple[object, ...], tuple[Firing, tuple[str, ...]]]
"""Firing decisions shared by jobs of one decision group within a batch, each with the run
labels of the slots it publishes (the jobs of a group share their schedule, so its labels)."""


@dataclass
class _Batch:
    """What a batch of firings writes, gathered to be written in one statement per table."""

    events: list[NewEvent] = field(default_factory=list)
    slots: list[tuple[SlotRecord, int | None]] = field(default_factory=list)
    """Ledger rows, each with the index in ``events`` of the event it links to, if any."""
    moves: list[tuple[Timer, int]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def fire_timers(stage: Stage, tx: Transaction, now: datetime, outbox: Outbox) -> int:
    """Fire up to one batch of due timers, noting their slots' fates in ``outbox``; how many."""
    due = tx.due_timers(now, BATCH)
    held = _holds(tx, due) if due else {}
    batch, decided = _Batch(), Decided()
    for timer in due:
        _fire(stage.plan, tx, timer, now, batch, held.get(timer.job, UNHELD), decided)
    if tx.advance_timers(batch.moves) != len(batch.moves):
        # The timers were read in this same write transaction, so no other firing can
        # have moved one: if one did, the store broke its promise; fire nothing.
        raise Conflict("a timer moved under its own firing; the batch is rolled back")
    seqs = tx.insert_events(batch.events)
    for record, event in batch.slots:
        if event is not None:
            record.event_seq = seqs[event]
    tx.record_slots(records := [record for record, _ in batch.slots])
    outbox.slots.extend((each.job, each.fate, each.reason, each.count) for each in records)
    for line in batch.lines:
        stage.log(line)
    return len(due)


def _holds(tx: Transaction, due: list[Timer]) -> dict[str, datetime | None]:
    """What pauses hold of the due timers' jobs (:func:`~cronduit.core.pausing.holds`). Only
    resumes after the oldest due timer matter, so the read stays small."""
    oldest = min(timer.due_at for timer in due)
    return holds((pause.job, pause.resumed_at) for pause in tx.pauses(resumed_after=oldest))


def _fire(plan: Plan, tx: Transaction, timer: Timer, now: datetime, batch: _Batch,
          held: datetime | None, decided: Decided) -> None:
    """Fire one timer: decide, move it (or delete it: its job is gone, or its schedule
    ended), and gather what it publishes and misses."""
    job = plan.config.jobs.get(timer.job)
    schedule = plan.schedules.get(timer.job)
    if job is None or schedule is None:
        tx.delete_timer(timer.job)
        return
    firing, labels = _decision(plan, job, timer, schedule, now, held, decided)
    if firing.next_slot is None or firing.next_due is None:
        tx.delete_timer(timer.job)
    else:
        moved = Timer(timer.job, timer.timing_key, firing.next_slot.instant,
                      firing.next_slot.name, firing.next_due, firing.last_name)
        batch.moves.append((moved, timer.version))
    _gather(plan, timer.job, firing, labels, now, batch)


def _decision(plan: Plan, job: Job, timer: Timer, schedule: Schedule, now: datetime,
              held: datetime | None, decided: Decided) -> tuple[Firing, tuple[str, ...]]:
    """The core's firing decision, with the labels of the runs it publishes. Jobs that share
    a schedule and its state (every 1m, the same cron line) share one decision: ``decided``
    keeps it for the rest of the batch."""
    if is_held(held, timer.due_at):
        firing = decide_held_firing(schedule, Slot(timer.slot, timer.slot_name),
                                    timer.last_name, now, held, job.catch_up,
                                    due_of(job, schedule))
        return firing, _labels(schedule, firing)
    if job.jitter:  # each job's own offset: its own decision
        firing = _decide(job, timer, schedule, now)
        return firing, _labels(schedule, firing)
    key = (plan.groups[timer.job], timer.slot, timer.slot_name, timer.last_name)
    found = decided.get(key)
    if found is None:
        firing = _decide(job, timer, schedule, now)
        found = decided[key] = (firing, _labels(schedule, firing))
    return found


def _labels(schedule: Schedule, firing: Firing) -> tuple[str, ...]:
    return tuple(schedule.label(published.slot) + (" (late)" if published.late else "")
                 for published in firing.publish)


def _decide(job: Job, timer: Timer, schedule: Schedule, now: datetime) -> Firing:
    if isinstance(schedule, IntervalSchedule):
        return decide_interval_firing(schedule, timer.due_at, now)
    return decide_firing(schedule, Slot(timer.slot, timer.slot_name), timer.last_name, now,
                         job.catch_up, due_of(job, schedule))


def _gather(plan: Plan, name: str, firing: Firing, labels: tuple[str, ...], now: datetime,
            batch: _Batch) -> None:
    """The events and ledger rows of one firing, added to the batch."""
    events = batch.events
    # a serial catch-up's triggers carry their own policy; every other firing's, none
    payload = (published_payload(firing, plan.config.jobs[name].overlap.of(_TIMER))
               if firing.serial else EMPTY)
    for published, label in zip(firing.publish, labels, strict=True):
        slot = published.slot
        events.append(NewEvent(slot.delivery_id(name), name, _TIMER, label, now,
                               slot.instant, published.late, payload))
        batch.slots.append((SlotRecord(name, slot.instant, slot.name, SlotFate.RAN, "", now),
                            len(events) - 1))
        batch.lines.append(f"trigger {name}: {label}")
    for missed in firing.missed:
        batch.slots.append((SlotRecord(name, missed.slot.instant, missed.slot.name,
                                       SlotFate.MISSED, missed.reason, now), None))
    if (count := firing.missed_count) is not None:
        batch.slots.append((SlotRecord(name, count.first, "", SlotFate.MISSED, count.reason, now,
                                       count=count.count, until_slot=count.last), None))
