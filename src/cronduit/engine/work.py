"""Work: what waits for a job's runs, and the runs started from it.

A job's work is its waiting triggers; the core's overlap rules
(:func:`~cronduit.core.overlap.on_run_end`) say which of them start a run, and which run
consumes which triggers. A run is committed (with its deadline and its trigger's inputs)
before its process is launched: the launch is noted in the outbox, carried out after the
commit.
"""

from __future__ import annotations

import json
from datetime import datetime

from cronduit.core.config.model import Job
from cronduit.core.enums import EventState, Outcome, RunState, TriggerKind
from cronduit.core.lifecycle import run_deadline
from cronduit.core.overlap import Batch, JobState, Trigger, on_run_end_of_head, runs_alone
from cronduit.core.steps import is_durable
from cronduit.engine.executions import activation, next_attempt
from cronduit.engine.observer import lateness
from cronduit.engine.outbox import Launch, Outbox
from cronduit.engine.plan import Stage
from cronduit.ports import Event, Run, Transaction


def job_state(stage: Stage, tx: Transaction, job: Job) -> JobState:
    """The job as the core's overlap rules see it: runs going, work waiting, paused."""
    running, backoff = tx.active_count(job.name)
    waiting = tuple(trigger_of(event) for event in tx.waiting_events(job.name))
    return JobState(running=running, waiting=waiting, in_backoff=backoff > 0,
                    paused=job.name in stage.paused)


def arrival_state(stage: Stage, tx: Transaction, job: Job) -> JobState:
    """The job as an arriving trigger meets it. An arrival looks only at whether work
    waits, and checks it is newer than the newest waiting trigger, so only that one is
    read: reading the whole queue for each of a burst of deliveries was quadratic."""
    running, backoff = tx.active_count(job.name)
    newest = tx.newest_waiting_event(job.name)
    waiting = () if newest is None else (trigger_of(newest),)
    return JobState(running=running, waiting=waiting, in_backoff=backoff > 0,
                    paused=job.name in stage.paused)


def start_waiting(stage: Stage, tx: Transaction, name: str, now: datetime,
                  outbox: Outbox) -> bool:
    """Start the runs the job's waiting work is owed now (after a run ended, at start-up);
    False when another node holds the job's work. That node may have read this job's run
    as still going before this transaction ends it, and so leave its trigger waiting with
    no run left to end and start it: the job is then owed a look again (``stage.owed``), at
    a tick soon after. Left to the nodes the job runs on if this one is not among them."""
    job = stage.config.jobs[name]
    if name in stage.excluded:
        return True
    if not tx.claim_job(name):
        stage.contended = True
        stage.owed.add(name)
        return False
    running, backoff = tx.active_count(name)
    waiting = tx.waiting_events(name, HEAD)
    batches = _owed(stage, job, running, backoff, waiting, len(waiting) < HEAD)
    if batches is None:  # the head is not enough to decide: the whole queue
        waiting = tx.waiting_events(name)
        batches = _owed(stage, job, running, backoff, waiting, True)
    events = {event.seq: event for event in waiting}
    for batch in batches or ():
        start_run(stage, tx, job, batch, events, now, outbox)
    return True


HEAD = 64
"""Waiting triggers a run's end reads first: reading a queue of thousands at every run end
made a burst of runs one at a time quadratic (see
:func:`~cronduit.core.overlap.on_run_end_of_head` for when the whole queue is read)."""


def _owed(stage: Stage, job: Job, running: int, backoff: int, waiting: list[Event],
          whole: bool) -> list[Batch] | None:
    state = JobState(running=running, waiting=tuple(trigger_of(e) for e in waiting),
                     in_backoff=backoff > 0, paused=job.name in stage.paused)
    return on_run_end_of_head(state, job.overlap, job.overlap.max_parallel, whole)


def start_run(stage: Stage, tx: Transaction, job: Job, batch: Batch, events: dict[int, Event],
              now: datetime, outbox: Outbox) -> None:
    """Record a run consuming ``batch``'s triggers, and note its first attempt's launch."""
    chosen = events[batch.trigger.seq]
    exclusive = runs_alone(batch.trigger, job.overlap.of(batch.trigger.kind))
    run = Run(id=stage.new_run_id(now), job=job.name, kind=chosen.kind, label=chosen.label,
              state=RunState.RUNNING, created_at=now, trigger_seq=chosen.seq, exclusive=exclusive,
              started_at=now, attempts=1, inputs=inputs_of(chosen), operator=chosen.operator,
              late=chosen.late, deadline_at=run_deadline(now, job.timeout), node=stage.node)
    if is_durable(job):
        run = activation(stage, tx, job, run, chosen, now)
    tx.insert_run(run)
    tx.set_event_state([t.seq for t in batch.triggers], EventState.CONSUMED, run.id)
    if run.state is RunState.ENDED:  # a resume refused since it was accepted
        outbox.lines.append(f"run {job.name} {run.id}: skipped ({run.reason})")
        outbox.ended.append((job.name, Outcome.SKIPPED, None))
        return
    # the activation's first step not done, as attempt 1
    step = next_attempt(stage, tx, job, run, 1, now) if run.execution_id is not None else None
    outbox.launches.append(Launch(run, 1, chosen, step=step))
    if chosen.kind == TriggerKind.TIMER and chosen.slot is not None:
        outbox.late.append((job.name, lateness(stage.plan, job.name, chosen.slot, now)))
    consumed = len(batch.triggers)
    extra = f", consuming {consumed} triggers" if consumed > 1 else ""
    outbox.lines.append(f"run {job.name} {run.id}: started [{chosen.label}]{extra}")


def trigger_of(event: Event) -> Trigger:
    """The trigger as the core's overlap rules take it, with the policy it carries of its
    own (a backfill's, a serial catch-up's), if any."""
    kind = TriggerKind(event.kind)
    own = event.payload.own_policy(kind)
    if own is not None:
        return Trigger(event.delivery_id, kind, event.seq, own.overlap, own.max_parallel)
    return Trigger(event.delivery_id, kind, event.seq)


def inputs_of(event: Event) -> str:
    """The inputs a trigger carries, as the run record keeps them."""
    return json.dumps(event.payload.inputs, sort_keys=True)
