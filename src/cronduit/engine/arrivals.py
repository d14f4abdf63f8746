"""Arrivals: what a routing batch knows of its jobs, and the event states it has yet to write.

A batch of triggers is routed in one transaction. Asking the store about each trigger's job
(its runs going, its newest waiting trigger, the run in backoff a trigger joins, whether
another router holds an older trigger) cost five round trips per trigger: on PostgreSQL the
router then did about a thousand triggers a second whatever the batch. So the batch reads its
jobs' work in a few statements (:meth:`~cronduit.ports.WorkAndRuns.jobs_work`,
:meth:`~cronduit.ports.EventsAndDeliveries.held_elsewhere`) and keeps each job's state while
only its own decisions change it. The two commonest decisions, wait and join, are written
together when the batch ends, or before any other decision writes: those read and write what
the deferred ones touch (a start consumes the waiting triggers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cronduit.core.config.model import Job
from cronduit.core.enums import EventState, RunState
from cronduit.core.overlap import JobState, Trigger
from cronduit.engine.plan import Stage
from cronduit.engine.work import arrival_state, trigger_of
from cronduit.ports import NO_WORK, Event, JobWork, Transaction


@dataclass
class Arrivals:
    """One routing batch's view of its jobs' work."""

    stage: Stage
    tx: Transaction
    work: dict[str, JobWork]
    """Each job's work as read when the batch began; valid until a decision other than wait,
    join or skip changes it (:meth:`changed`)."""
    held: dict[str, int]
    """Each job's oldest trigger another router holds (PostgreSQL with many daemons)."""
    states: dict[str, JobState] = field(default_factory=dict)
    stale: set[str] = field(default_factory=set)
    pending: list[tuple[int, EventState, str | None]] = field(default_factory=list)

    @classmethod
    def read(cls, stage: Stage, tx: Transaction, events: list[Event]) -> Arrivals:
        """The work of the jobs ``events`` are for, in a few statements."""
        jobs = {event.job for event in events if event.job in stage.config.jobs}
        held = tx.held_elsewhere(jobs, [event.seq for event in events]) if stage.shared else {}
        return cls(stage, tx, tx.jobs_work(jobs), held)

    def waits_for_another_router(self, event: Event) -> bool:
        """Whether another router holds an older trigger of this event's job: it meets the
        job's work first, so this one waits for a later batch."""
        older = self.held.get(event.job)
        return older is not None and older < event.seq

    def state(self, job: Job) -> JobState:
        """The job as the next trigger for it meets it."""
        known = self.states.get(job.name)
        if known is not None:
            return known
        if job.name in self.stale:  # a start or replace changed it: read it again
            self.flush()
            state = arrival_state(self.stage, self.tx, job)
        else:
            work = self.work.get(job.name, NO_WORK)
            newest = work.newest_waiting
            state = JobState(running=work.running,
                             waiting=() if newest is None else (trigger_of(newest),),
                             in_backoff=work.backoff > 0, paused=job.name in self.stage.paused)
        self.states[job.name] = state
        return state

    def waits(self, job: Job, event: Event, trigger: Trigger) -> None:
        """The trigger waits in the job's work, which it now ends."""
        self.states[job.name] = replace(self.state(job), waiting=(trigger,))
        self.pending.append((event.seq, EventState.WAITING, None))

    def joins(self, job: Job, event: Event) -> None:
        """The trigger is consumed by the run sleeping in backoff: the job's state is as it was."""
        self.pending.append((event.seq, EventState.CONSUMED, self._sleeping(job)))

    def unmatched(self, event: Event) -> None:
        self.pending.append((event.seq, EventState.UNMATCHED, None))

    def changed(self, job: Job) -> None:
        """A decision is about to write more than this trigger's state (a start, a skip, a
        replace): what is deferred is written first, and the job is read again next time."""
        self.flush()
        self.states.pop(job.name, None)
        self.stale.add(job.name)

    def flush(self) -> None:
        if self.pending:
            self.tx.set_event_states(self.pending)
            self.pending = []

    def _sleeping(self, job: Job) -> str:
        if job.name not in self.stale:
            sleeping = self.work.get(job.name, NO_WORK).sleeping
            if sleeping is not None:
                return sleeping
        self.flush()
        return next(run.id for run in self.tx.active_runs(job.name)
                    if run.state == RunState.BACKOFF)
