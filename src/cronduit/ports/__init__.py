"""The seams between cronduit's engine and the world: the clock, the state store, the runner.

Every edge that decides nothing sits behind one of these protocols, so the engine can run on a
fake clock and either database. The store's seam is :class:`Store` and its
:class:`Transaction`, composed of one protocol per area of the state: timers and the slot
ledger (:mod:`.timers`), events and deliveries (:mod:`.events`), work, runs and run ends
(:mod:`.runs`), pauses and the audit log (:mod:`.pauses`), notifications
(:mod:`.notifications`), the installation's facts (:mod:`.meta`) and durable multi-step
executions (:mod:`.executions`). The records they carry are in :mod:`.records`. Each
method's contract is written on it, and the contract test suite (``tests/contract``) holds
every backend to it; nothing here is particular to one database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

from cronduit.ports.events import EventsAndDeliveries
from cronduit.ports.executions import Executions
from cronduit.ports.meta import InstallationMeta
from cronduit.ports.nodes import (
    Closing,
    HolderGone,
    LeaseLost,
    Membership,
    NodeClaim,
    NodeRecord,
    NodeTaken,
)
from cronduit.ports.notifications import NotificationQueue
from cronduit.ports.pauses import PausesAndAudit
from cronduit.ports.records import (
    AuditEntry,
    Delivery,
    Event,
    Execution,
    ExecutionStep,
    NewEvent,
    Notification,
    Pause,
    Run,
    RunEnd,
    RunLogTail,
    SlotRecord,
    StepAttempt,
    Timer,
)
from cronduit.ports.runs import NO_WORK, JobWork, RunFilter, RunMark, WorkAndRuns
from cronduit.ports.timers import TimersAndLedger

if TYPE_CHECKING:
    from cronduit.core.config.model import Job
    from cronduit.core.lifecycle import AttemptReport
    from cronduit.core.log_tails import LogTail
    from cronduit.core.steps import StepLaunch

__all__ = [
    "NO_WORK",
    "AuditEntry",
    "Clock",
    "Closing",
    "Conflict",
    "Deferred",
    "Delivery",
    "Event",
    "EventsAndDeliveries",
    "Execution",
    "ExecutionStep",
    "Executions",
    "HolderGone",
    "InstallationMeta",
    "JobWork",
    "LaunchResult",
    "LeaseLost",
    "Membership",
    "NewEvent",
    "NodeClaim",
    "NodeRecord",
    "NodeTaken",
    "Notification",
    "NotificationQueue",
    "Pause",
    "PausesAndAudit",
    "Run",
    "RunEnd",
    "RunFilter",
    "RunLogTail",
    "RunMark",
    "Runner",
    "SlotRecord",
    "StepAttempt",
    "Store",
    "Timer",
    "TimersAndLedger",
    "Transaction",
    "WorkAndRuns",
]


class Clock(Protocol):
    """The only source of "now". The daemon uses the system clock; tests use a fake one."""

    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...


class Transaction(TimersAndLedger, EventsAndDeliveries, WorkAndRuns, PausesAndAudit,
                  NotificationQueue, InstallationMeta, Executions, Protocol):
    """One atomic unit of work over every area of the state: everything written inside
    commits together or not at all (see :meth:`Store.transaction`)."""

    def next_due(self, with_timers: bool) -> datetime | None:
        """The soonest of: the timers' due times (when ``with_timers``; a dry run fires
        none), the next attempts of runs in backoff, the deadlines of running runs nobody
        has asked to stop yet, and when active pauses expire; None when nothing is due.
        What the daemon sleeps until; it reads across areas, so it is asked of the whole
        transaction."""
        ...


class Store(Protocol):
    """A state store: SQLite (one file) or PostgreSQL (shared by many daemons)."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """Open a transaction: it commits when the block ends, durably before the block
        returns (an accepted trigger and a firing promise that), and rolls back when the
        block raises, re-raising.

        Concurrency: transactions may run at once, on other threads, processes or hosts;
        each sees its own writes and all that others committed before it began. SQLite runs
        one writing transaction per file at a time, so each is serializable. Correctness
        never rests on that: the at-most-once promises are unique keys and version guards
        in the database (each method says which), so a backend that runs transactions side
        by side keeps them too. A transaction opened inside another on the same store is a
        bug, and fails at once rather than waiting for itself.

        Errors: a write refused by such a key raises :class:`Conflict`; the database's other
        failures (a full or read-only disk, a lost connection) propagate as the driver
        raised them, and :func:`cronduit.faults.reason_of` knows them (each backend names
        its driver's errors there as it loads)."""
        ...

    def reading(self) -> AbstractContextManager[Transaction]:
        """Open a transaction for reads only (the HTTP API's, the CLI's reports): it sees
        what was committed before it began, as one snapshot, and writes nothing (a write
        inside it fails, or is rolled back when the block ends).

        Concurrency: a reading transaction never holds a writer up, on this store or
        another: SQLite reads beside the writer in WAL (``BEGIN DEFERRED`` takes no write
        lock), PostgreSQL in a read-only transaction on a pooled connection of its own.
        Like :meth:`transaction`, it may not be opened inside another on the same store."""
        ...

    def close(self) -> None:
        """Release the store's connections; no transaction may be open."""
        ...


class Conflict(Exception):
    """A write refused by a database constraint: a unique key that backs an at-most-once
    promise, or a state outside its enum (a CHECK, which only a bug can meet)."""


@dataclass(frozen=True)
class Deferred:
    """A launch that could not begin because the state folder cannot be written (a full or
    read-only disk): nothing of the attempt started, and it is launched again later. Not the
    job's failure, so it is never recorded as one."""

    reason: str
    """Why, in one line (``No space left on device``)."""


LaunchResult = tuple[int, int] | Deferred | None
"""What one launch gives: the (pid, process start time) of a started attempt; a
:class:`Deferred` one; or None for one that could not be started (its end comes through
:meth:`Runner.ended`, with the reason)."""


class Runner(Protocol):
    """Runs attempts as processes. It reports facts; the engine decides what they mean."""

    def launch(self, run: Run, job: Job, trigger: Event, attempt: int,
               step: StepLaunch | None = None) -> LaunchResult:
        """Start attempt ``attempt`` of ``run``; its (pid, process start time), a
        :class:`Deferred` launch, or None when the process could not be started: that
        attempt's end then comes through :meth:`ended`, with the reason, like any other.
        With ``step``, the attempt is that step's of a durable execution: it runs the
        step's command, with its variables, into a log of its own, and its report carries
        what it wrote to ``$CRONDUIT_OUTPUT_FILE``."""
        ...

    def launch_many(self, launches: Sequence[tuple[Run, Job, Event, int]],
                    steps: Mapping[str, StepLaunch] | None = None
                    ) -> Sequence[LaunchResult]:
        """:meth:`launch` for several attempts at once (they may start concurrently), in
        order; ``steps``: the step of each launch that is a step attempt, by run id."""
        ...

    def begin_many(self, launches: Sequence[tuple[Run, Job, Event, int]],
                   steps: Mapping[str, StepLaunch] | None = None
                   ) -> Callable[[], Sequence[LaunchResult]]:
        """:meth:`launch_many` in two halves, so the caller can work while the processes
        start: on return the launches are under way, and the call it returns waits for them
        and gives what :meth:`launch_many` gives. That call must be made, once, and soon:
        until it is, the attempts begun are not watched."""
        ...

    def recover(self, run: Run) -> AttemptReport | Literal["running", "not_started"]:
        """After a restart: adopt a live attempt ("running"), report an ended one, or say it
        never started (so it may be launched, once)."""
        ...

    def ended(self) -> list[tuple[str, int, AttemptReport]]:
        """Attempts that ended since the last call: (run id, attempt, report)."""
        ...

    def stop(self, run: Run, why: str) -> None:
        """TERM the attempt's process group, then KILL after a grace period. ``why``
        (``timeout`` or ``cancelled``) comes back as the report's ``stopped_for``."""
        ...

    def prune(self, run: Run) -> None:
        """Delete the run's log and output files (coordination history stays)."""
        ...

    def hold_lease(self, until: float | None) -> None:
        """The node's lease (PostgreSQL state) holds until ``until``, an instant of
        ``time.monotonic()``: by then every attempt of this node is stopped (TERM, then
        KILL), even if the daemon itself is frozen, unless a later call moves ``until``.
        None: no lease, nothing is ever stopped for one (the SQLite state). Attempts
        launched while no lease is held are never stopped for one: call it before the
        first launch."""
        ...

    def log_tail(self, run_id: str, attempt: int | None = None) -> LogTail | None:
        """The end of the run's log as it is now (:mod:`cronduit.core.log_tails`), with how
        much of the log it is; None when the run has no log on this host. With ``attempt``,
        that attempt's own log when it was a step's (a durable run logs each step attempt
        apart). Asked only by an engine whose store keeps tails, after an attempt ended and
        before the next starts."""
        ...
