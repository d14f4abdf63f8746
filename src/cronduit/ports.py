"""The seams between cronduit's engine and the world: the clock and the state store.

Every edge that decides nothing sits behind one of these protocols, so the engine can run on a
fake clock and either database. The store's contract is written on each method; the contract
test suite (``tests/contract``) holds every backend to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from cronduit.core.config.model import Job
    from cronduit.core.lifecycle import AttemptReport


class Clock(Protocol):
    """The only source of "now". The daemon uses the system clock; tests use a fake one."""

    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...


# Not frozen, unlike the other records: a frozen dataclass sets each field through
# ``object.__setattr__`` on construction, three times the cost of a plain one, and the firing
# path builds three of these per firing (this, Timer and SlotRecord: a tenth of its time).
# Treat them as values all the same.
@dataclass(slots=True)
class NewEvent:
    """A trigger to accept. ``delivery_id`` makes acceptance idempotent."""

    delivery_id: str
    job: str
    kind: str
    label: str
    accepted_at: datetime
    slot: datetime | None = None
    late: bool = False
    payload: str = "{}"
    """JSON: inputs, delivery fields or the webhook body."""
    operator: str | None = None
    parent: str | None = None
    """The code-host delivery (:class:`Delivery`) this trigger was derived from."""


@dataclass(frozen=True, slots=True)
class Event:
    """An accepted trigger, as stored."""

    seq: int
    delivery_id: str
    job: str
    kind: str
    label: str
    slot: datetime | None
    late: bool
    payload: str
    operator: str | None
    accepted_at: datetime
    state: str
    """``new`` (not routed yet), ``waiting``, ``consumed`` (by ``run_id``) or ``unmatched``."""
    run_id: str | None
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """A code-host delivery as recorded: once per delivery id, the parent of its triggers."""

    delivery_id: str
    source: str
    """``github``."""
    event: str
    label: str
    facts: str
    """JSON: what the delivery said, as each of its triggers' files shows it."""
    received_at: datetime
    triggers: int
    """How many jobs it triggered."""


# Not frozen: see NewEvent.
@dataclass(slots=True)
class Timer:
    """A timed job's durable timer: the slot it is armed for and when it elapses."""

    job: str
    timing_key: str
    slot: datetime
    slot_name: str
    due_at: datetime
    last_name: str | None
    version: int = 0
    """Bumped by every firing; a firing commits only against the version it read."""


# Not frozen: see NewEvent.
@dataclass(slots=True)
class SlotRecord:
    """A slot's fate in the ledger."""

    job: str
    slot: datetime
    name: str
    fate: str
    reason: str
    recorded_at: datetime
    event_seq: int | None = None
    count: int = 1
    until_slot: datetime | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """A run and its record. Runs are a job's history; coordination fields are never deleted."""

    id: str
    job: str
    kind: str
    label: str
    state: str
    """``running``, ``backoff`` or ``ended``."""
    created_at: datetime
    trigger_seq: int | None = None
    exclusive: bool = True
    outcome: str | None = None
    reason: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    attempts: int = 0
    exit_status: int | None = None
    inputs: str = "{}"
    operator: str | None = None
    late: bool = False
    deadline_at: datetime | None = None
    next_attempt_at: datetime | None = None
    pid: int | None = None
    pid_start: int | None = None
    attempt_dir: str | None = None
    cancel_reason: str | None = None
    files_pruned: bool = False


@dataclass(frozen=True, slots=True)
class Notification:
    """A run's outcome to deliver to one notifier: pending, sent, or failed with the reason."""

    seq: int
    run_id: str
    notifier: str
    body: str
    """The JSON body POSTed (never a secret: the notifier's URL is not in it)."""
    state: str
    attempts: int
    next_at: datetime
    error: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class RunEnd:
    """A run-ended event on a job: what ``job wait`` and ``on.after`` read."""

    seq: int
    job: str
    run_id: str
    event: str
    """``completed``, ``failed``, ``timed_out`` or ``cancelled``."""
    outcome: str
    ended_at: datetime
    chained: bool = False


@dataclass(frozen=True, slots=True)
class Pause:
    """A pause of a job (``cronduit job pause``): active until ``resumed_at`` is set."""

    job: str
    reason: str
    operator: str
    paused_at: datetime
    until: datetime | None = None
    """When the pause expires by itself (the engine resumes it, as operator ``cronduit``)."""
    resumed_at: datetime | None = None
    resumed_by: str | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the audit log: who did what to which job, and when."""

    action: str
    """``pause``, ``resume``, ``run`` (a manual run accepted), ``backfill`` or ``apply``."""
    operator: str
    at: datetime
    job: str | None = None
    detail: str = "{}"
    """JSON: the action's particulars (reason, inputs, changes); never a secret's value."""
    seq: int = 0
    """Given by the store on insert; newer entries have higher ones."""


class Transaction(Protocol):
    """One atomic unit of work. Everything written inside commits together or not at all."""

    # events
    def insert_event(self, event: NewEvent) -> int | None:
        """Accept ``event``; its seq, or None when the delivery id was accepted before."""
        ...

    def insert_events(self, events: Sequence[NewEvent]) -> list[int]:
        """Accept many events in one statement; already-accepted delivery ids are skipped.
        The seq of each delivery id's event, in order (the earlier one's for a skipped id)."""
        ...

    def record_delivery(self, delivery: Delivery) -> bool:
        """Record a code-host delivery; False when its id was recorded before."""
        ...

    def get_delivery(self, delivery_id: str) -> Delivery | None: ...

    def events_of_delivery(self, delivery_id: str) -> list[Event]:
        """The triggers derived from a delivery, oldest first."""
        ...

    def event_by_delivery(self, delivery_id: str) -> Event | None: ...

    def new_events(self, limit: int) -> list[Event]:
        """Accepted events not yet routed, oldest first."""
        ...

    def waiting_events(self, job: str) -> list[Event]:
        """Events routed to ``job``'s work and not yet consumed, oldest first."""
        ...

    def newest_waiting_event(self, job: str) -> Event | None:
        """The newest of :meth:`waiting_events`, read without reading them all."""
        ...

    def jobs_with_waiting(self) -> list[str]:
        """Jobs that have triggers waiting in their work."""
        ...

    def set_event_state(self, seqs: Sequence[int], state: str, run_id: str | None) -> None: ...

    def events_of_run(self, run_id: str) -> list[Event]: ...

    # timers and the slot ledger
    def due_timers(self, now: datetime, limit: int) -> list[Timer]:
        """Timers whose ``due_at`` is at or before ``now``, soonest first."""
        ...

    def timers(self) -> list[Timer]: ...

    def get_timer(self, job: str) -> Timer | None: ...

    def put_timer(self, timer: Timer) -> None:
        """Create or replace ``timer.job``'s timer (config apply and start-up)."""
        ...

    def put_timers(self, timers: Sequence[Timer]) -> None:
        """:meth:`put_timer` for many timers in one statement (start-up of large configs)."""
        ...

    def advance_timer(self, timer: Timer, expected_version: int) -> bool:
        """Write ``timer`` only if the stored version is ``expected_version`` (replay guard)."""
        ...

    def advance_timers(self, moves: Sequence[tuple[Timer, int]]) -> int:
        """:meth:`advance_timer` for many timers in one statement; how many were written. A
        count short of ``len(moves)`` means some firing was replayed: roll the batch back."""
        ...

    def delete_timer(self, job: str) -> None: ...

    def record_slot(self, record: SlotRecord) -> bool:
        """Add a slot's fate; False when the slot already has one (a slot fires once)."""
        ...

    def record_slots(self, records: Sequence[SlotRecord]) -> None:
        """Add many slot fates in one statement, each linked to its ``event_seq``; slots that
        have a fate already are skipped."""
        ...

    def slots(self, job: str, start: datetime | None, end: datetime | None) -> list[SlotRecord]:
        """The job's slot ledger between ``start`` and ``end`` (inclusive), oldest first."""
        ...

    # runs
    def insert_run(self, run: Run) -> None:
        """Add a run; raises :class:`Conflict` if an exclusive run of the job is not ended."""
        ...

    def update_run(self, run_id: str, **values: object) -> None: ...

    def record_starts(self, starts: Sequence[tuple[str, int, int]]) -> None:
        """Record the process (pid, start time) of each run id: one statement for the
        launches of a tick."""
        ...

    def get_run(self, run_id: str) -> Run | None: ...

    def active_runs(self, job: str | None = None) -> list[Run]:
        """Runs not ended (of ``job``, or of every job), oldest first."""
        ...

    def due_backoffs(self, now: datetime) -> list[Run]:
        """Runs in backoff whose next attempt or deadline has come, oldest first."""
        ...

    def overdue_runs(self, now: datetime) -> list[Run]:
        """Running runs past their deadline that nobody has stopped yet, oldest first."""
        ...

    def active_count(self, job: str) -> tuple[int, int]:
        """(runs not ended, of which in backoff) for ``job``: the overlap policy's input."""
        ...

    def history(self, job: str, limit: int) -> list[Run]:
        """The job's runs, newest first."""
        ...

    def runs_to_prune(self, job: str, keep: int) -> list[Run]:
        """Ended runs of ``job`` older than its newest ``keep`` whose files are still kept."""
        ...

    def insert_notification(self, run_id: str, notifier: str, body: str,
                            now: datetime) -> None:
        """Queue a notification, due at once."""
        ...

    def due_notifications(self, now: datetime, limit: int) -> list[Notification]: ...

    def record_notification_try(self, seq: int, state: str, next_at: datetime, error: str,
                                now: datetime) -> None:
        """One more try made: ``sent``, ``failed`` (given up) or still ``pending``."""
        ...

    def notifications_of_run(self, run_id: str) -> list[Notification]: ...

    def failed_notifications(self, limit: int) -> list[Notification]:
        """The newest deliveries that were given up on."""
        ...

    def insert_run_end(self, job: str, run_id: str, event: str, outcome: str,
                       ended_at: datetime) -> int:
        """Record a run-ended event; its seq."""
        ...

    def run_ends_after(self, job: str | None, seq: int) -> list[RunEnd]: ...

    def unchained_run_ends(self, limit: int) -> list[RunEnd]: ...

    def mark_chained(self, seq: int) -> None: ...

    def last_run_end_seq(self) -> int: ...

    def next_due(self, with_timers: bool) -> datetime | None:
        """The soonest of: timers' due times (when ``with_timers``), backoffs' next attempts,
        running runs' deadlines and active pauses' expiry; None when nothing is due."""
        ...

    # pauses and the audit log
    def insert_pause(self, pause: Pause) -> None:
        """Add an active pause; raises :class:`Conflict` when the job already has one."""
        ...

    def active_pause(self, job: str) -> Pause | None: ...

    def pauses(self, resumed_after: datetime | None = None) -> list[Pause]:
        """Active pauses, and, when ``resumed_after`` is given, pauses resumed after that
        instant (what a firing of a timer overdue since then must know), by job."""
        ...

    def end_pause(self, job: str, at: datetime, by: str) -> Pause | None:
        """Resume the job's active pause at ``at`` by ``by``; the ended pause, or None when
        the job was not paused (nothing is written)."""
        ...

    def insert_audit(self, entry: AuditEntry) -> int:
        """Append an entry (its ``seq`` is ignored); its seq. Entries are never changed."""
        ...

    def audit(self, limit: int) -> list[AuditEntry]:
        """The newest ``limit`` entries, newest first."""
        ...

    # meta
    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


class Store(Protocol):
    """A state store: SQLite (one file) or PostgreSQL (shared by many daemons)."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """Open a transaction; it commits when the block ends and rolls back on an exception."""
        ...

    def close(self) -> None: ...


class Conflict(Exception):
    """A write refused by a database constraint that backs an at-most-once promise."""


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

    def launch(self, run: Run, job: Job, trigger: Event, attempt: int) -> LaunchResult:
        """Start attempt ``attempt`` of ``run``; its (pid, process start time), a
        :class:`Deferred` launch, or None when the process could not be started: that
        attempt's end then comes through :meth:`ended`, with the reason, like any other."""
        ...

    def launch_many(self, launches: Sequence[tuple[Run, Job, Event, int]]
                    ) -> Sequence[LaunchResult]:
        """:meth:`launch` for several attempts at once (they may start concurrently), in
        order."""
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
