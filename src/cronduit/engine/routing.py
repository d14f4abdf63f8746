"""Routing: each accepted trigger meets its job's state, and the core says what it does.

The core's overlap rules (:func:`~cronduit.core.overlap.on_arrival`) decide: start a run,
wait in the job's work, join the run sleeping in backoff, be skipped, or replace the runs
going. This stage reads the trigger and the job's state, asks, and writes the answer. It also
turns the ends of runs into the ``on.after`` triggers of the jobs chained to them
(:func:`~cronduit.core.chaining.follow_ups`).
"""

from __future__ import annotations

from datetime import datetime

from cronduit.core.chaining import follow_ups
from cronduit.core.config.model import Job
from cronduit.core.enums import EventState, Outcome, RunState, TriggerKind
from cronduit.core.overlap import Arrival, Decision, dispatched, on_arrival, replaced_at_once
from cronduit.engine.arrivals import Arrivals
from cronduit.engine.ending import end_run, skip
from cronduit.engine.outbox import Outbox
from cronduit.engine.plan import BATCH, Stage
from cronduit.engine.work import start_run, trigger_of
from cronduit.ports import Event, NewEvent, Transaction


def route(stage: Stage, tx: Transaction, now: datetime, outbox: Outbox) -> int:
    """Route up to one batch of accepted triggers; how many were routed. The batch reads its
    jobs' work at once and carries each job's state from one trigger to the next while only
    this routing changed it (:class:`~cronduit.engine.arrivals.Arrivals`), so a burst reads
    the store a few times per batch, not per trigger."""
    events = tx.new_events(BATCH, stage.excluded)
    if not events:
        return 0
    tx.claim_jobs({event.job for event in events})  # one round trip; each is asked below
    arrivals = Arrivals.read(stage, tx, events)
    for event in events:
        _route_one(stage, tx, event, now, outbox, arrivals)
    arrivals.flush()
    return len(events)


def _route_one(stage: Stage, tx: Transaction, event: Event, now: datetime, outbox: Outbox,
               arrivals: Arrivals) -> None:
    job = stage.config.jobs.get(event.job)
    if job is None:
        arrivals.unmatched(event)
        outbox.lines.append(f"unmatched {event.job}: {event.label} (no such job)")
        return
    if not tx.claim_job(job.name):  # another daemon decides this job's work now
        stage.contended = True
        return
    # Another daemon's router may hold an older trigger of this job (new_events skipped its
    # locked row) without having claimed the job yet: this one waits for it, since a job's
    # triggers meet its work in the order they were accepted.
    if arrivals.waits_for_another_router(event):
        stage.contended = True
        return
    state = arrivals.state(job)
    trigger = trigger_of(event)
    arrival = on_arrival(state, trigger, job.overlap.of(trigger.kind), job.overlap.max_parallel)
    decision = dispatched(arrival.decision, stage.dispatch)
    if decision is Decision.WAIT:
        arrivals.waits(job, event, trigger)
    elif decision is Decision.JOIN:
        arrivals.joins(job, event)
    elif decision is Decision.SKIP:
        arrivals.flush()
        skip(stage, tx, job, event, arrival.reason or "", now, outbox)
    else:
        arrivals.changed(job)
        _carry(stage, tx, job, event, decision, arrival, now, outbox)


def _carry(stage: Stage, tx: Transaction, job: Job, event: Event, decision: Decision,
           arrival: Arrival, now: datetime, outbox: Outbox) -> None:
    """Write what the core decided for one trigger that starts a run or replaces the runs
    going (a wait, a join or a skip is written by :func:`_route_one`)."""
    if decision is Decision.START:
        assert arrival.batch is not None
        start_run(stage, tx, job, arrival.batch, {event.seq: event}, now, outbox)
        return
    # REPLACE: the trigger waits for the runs going to end
    tx.set_event_state([event.seq], EventState.WAITING, None)
    for run in tx.active_runs(job.name):
        if replaced_at_once(run.state == RunState.BACKOFF):
            end_run(stage, tx, run, Outcome.CANCELLED, arrival.reason or "",
                    run.exit_status, now, outbox)
        else:
            tx.update_run(run.id, cancel_reason="cancelled")
            if run.node is None or run.node == stage.node:
                outbox.stops.append((run, "cancelled"))
            # else its own node stops it when it sees the reason (cancelled_runs)


def chain(stage: Stage, tx: Transaction, now: datetime) -> None:
    """Accept the ``on.after`` triggers that run ends owe, one batch of ends at a time."""
    for ended in tx.unchained_run_ends(BATCH):
        owed = follow_ups(stage.plan.followers, ended.job, Outcome(ended.outcome),
                          ended.run_id)
        for follow in owed:
            tx.insert_event(NewEvent(follow.delivery_id, follow.job, TriggerKind.AFTER,
                                     follow.label, now))
            stage.log(f"trigger {follow.job}: {follow.label}")
        tx.mark_chained(ended.seq)
