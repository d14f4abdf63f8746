"""The store's reads and simple writes, written once for every SQL backend.

Each is one named query of the backend's ``queries.sql``, bound by name and read back as
the seam's records: the same text on SQLite and PostgreSQL. What differs between them
(binding values, reading rows, batches, the statements each writes its own way) is in each
backend's transaction, which gives this class its four primitives.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import fields
from datetime import datetime
from itertools import groupby
from operator import attrgetter
from typing import Any, Protocol, TypeVar

from cronduit.core.enums import EventState, NotificationState
from cronduit.core.log_tails import LogTail
from cronduit.core.status import SKIPS_IN_A_ROW
from cronduit.ports import (
    AuditEntry,
    Conflict,
    Delivery,
    Event,
    Execution,
    ExecutionStep,
    JobWork,
    Notification,
    Pause,
    Run,
    RunEnd,
    RunFilter,
    RunLogTail,
    RunMark,
    StepAttempt,
    Timer,
)

R = TypeVar("R")

UPDATABLE: dict[type, tuple[str, str, tuple[str, ...]]] = {
    Run: ("run", "runs", ("id",)),
    Execution: ("execution", "executions", ("id",)),
    ExecutionStep: ("execution step", "execution_steps", ("execution_id", "step_id")),
}
"""The records updated by field name (``update_run``...): what each is called in an error,
its table, and the fields that pick its row (which no update changes). Both backends'."""


def checked_update(kind: type, names: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The table and key of an update of these fields of ``kind``, whose names each backend
    writes into the statement's text: refused (ValueError) for a name that is not a field of
    the record, so only its own columns ever get there, and for its key and seq."""
    noun, table, key = UPDATABLE[kind]
    unknown = set(names) - {field.name for field in fields(kind)}
    if unknown:
        raise ValueError(f"unknown {noun} fields: {sorted(unknown)}")
    fixed = set(names) & {*key, "seq"}
    if fixed:
        raise ValueError(f"{noun} fields that pick its row cannot be set: {sorted(fixed)}")
    return table, key


class Rows(Protocol):
    """What a backend's cursor answers after a statement."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class NamedQueries(ABC):
    """The queries both backends run alike, over the primitives each one gives."""

    @abstractmethod
    def _run(self, query: str, /, **values: Any) -> Rows:
        """Run the named query with ``values`` bound by name."""

    @abstractmethod
    def _many(self, query: str, rows: Sequence[dict[str, Any]]) -> int:
        """Run the named query once per row; how many rows changed."""

    @abstractmethod
    def _all(self, kind: type[R], query: str, /, **values: Any) -> list[R]:
        """The named query's rows as ``kind`` records."""

    def _array(self, values: list[Any]) -> Any:
        """A list bound as one value (an array on PostgreSQL; SQLite takes JSON text)."""
        return values

    @abstractmethod
    def _fields(self, record: object) -> dict[str, Any]:
        """A record's fields as this backend binds them."""

    @staticmethod
    def _names(rows: Rows) -> set[str]:
        """The first column of every row, as a set of names."""
        return {str(row[0]) for row in rows.fetchall()}

    def _one(self, kind: type[R], query: str, /, **values: Any) -> R | None:
        found = self._all(kind, query, **values)
        return found[0] if found else None

    def record_delivery(self, delivery: Delivery) -> bool:
        return self._run("record_delivery", **self._fields(delivery)).rowcount == 1

    def events_of_delivery(self, delivery_id: str) -> list[Event]:
        return self._all(Event, "events_of_delivery", parent=delivery_id)

    def event_by_delivery(self, delivery_id: str) -> Event | None:
        return self._one(Event, "event_by_delivery", delivery_id=delivery_id)

    def new_events(self, limit: int, excluded: Sequence[str] = ()) -> list[Event]:
        return self._all(Event, "new_events", limit=limit, excluded=list(excluded))

    def held_elsewhere(self, jobs: Collection[str], routing: Sequence[int]) -> dict[str, int]:
        if not jobs:
            return {}
        rows = self._run("held_elsewhere", jobs=self._array(list(jobs)),
                         routing=self._array(list(routing))).fetchall()
        return {str(job): int(seq) for job, seq in rows}

    def set_event_states(self, changes: Sequence[tuple[int, EventState, str | None]]) -> None:
        self._many("set_one_event_state", [{"state": str(state), "run_id": run_id, "seq": seq}
                                           for seq, state, run_id in changes])

    def due_backoffs(self, now: datetime, node: str | None = None,
                     excluded: Sequence[str] = ()) -> list[Run]:
        return self._all(Run, "due_backoffs", now=now, node=node, excluded=list(excluded))

    def active_runs_of_node(self, node: str) -> list[Run]:
        return self._all(Run, "active_runs_of_node", node=node)

    def cancelled_runs(self, node: str | None) -> list[Run]:
        return self._all(Run, "cancelled_runs", node=node)

    def waiting_events(self, job: str, limit: int | None = None) -> list[Event]:
        if limit is None:
            return self._all(Event, "waiting_events", job=job)
        return self._all(Event, "waiting_events_head", job=job, limit=limit)

    def newest_waiting_event(self, job: str) -> Event | None:
        return self._one(Event, "newest_waiting_event", job=job)

    def jobs_work(self, jobs: Collection[str]) -> dict[str, JobWork]:
        if not jobs:
            return {}
        listed = self._array(list(jobs))
        running = {str(job): (int(going), int(backoff), None if sleeping is None else str(sleeping))
                   for job, going, backoff, sleeping
                   in self._run("jobs_running", jobs=listed).fetchall()}
        waiting = {event.job: event for event in self._all(Event, "jobs_newest_waiting",
                                                           jobs=listed)}
        return {job: JobWork(*running.get(job, (0, 0, None)), newest_waiting=waiting.get(job))
                for job in running.keys() | waiting.keys()}

    def jobs_with_waiting(self) -> list[str]:
        return [str(row[0]) for row in self._run("jobs_with_waiting").fetchall()]

    def waiting_counts(self) -> dict[str, int]:
        return {str(job): int(count) for job, count in self._run("waiting_counts").fetchall()}

    def events_of_run(self, run_id: str) -> list[Event]:
        return self._all(Event, "events_of_run", run_id=run_id)

    def due_timers(self, now: datetime, limit: int) -> list[Timer]:
        return self._all(Timer, "due_timers", now=now, limit=limit)

    def timers(self) -> list[Timer]:
        return self._all(Timer, "timers")

    def get_timer(self, job: str) -> Timer | None:
        return self._one(Timer, "get_timer", job=job)

    def timers_of(self, jobs: Collection[str]) -> dict[str, Timer]:
        if not jobs:
            return {}
        return {timer.job: timer
                for timer in self._all(Timer, "timers_of", jobs=self._array(list(jobs)))}

    def armed_jobs(self, due_before: datetime | None = None) -> set[str]:
        if due_before is None:
            return self._names(self._run("armed_jobs"))
        return self._names(self._run("armed_jobs_due_before", due_before=due_before))

    def put_timers(self, timers: Sequence[Timer]) -> None:
        self._many("put_timer", [self._fields(timer) for timer in timers])

    def delete_timer(self, job: str) -> None:
        self._run("delete_timer", job=job)

    def get_run(self, run_id: str) -> Run | None:
        return self._one(Run, "get_run", id=run_id)

    def active_runs(self, job: str | None = None) -> list[Run]:
        if job is None:
            return self._all(Run, "active_runs")
        return self._all(Run, "active_runs_of_job", job=job)

    def overdue_runs(self, now: datetime, node: str | None = None) -> list[Run]:
        return self._all(Run, "overdue_runs", now=now, node=node)

    def history(self, job: str, limit: int) -> list[Run]:
        return self._all(Run, "history", job=job, limit=limit)

    def recent_runs(self, jobs: Collection[str], per_job: int) -> dict[str, list[Run]]:
        if not jobs:
            return {}
        found: dict[str, list[Run]] = {}
        for run in self._all(Run, "recent_runs", jobs=self._array(list(jobs)),
                             per_job=per_job):
            found.setdefault(run.job, []).append(run)
        return found

    def run_marks(self, jobs: Collection[str], per_job: int) -> dict[str, list[RunMark]]:
        if not jobs:
            return {}
        # Each row is a mark as it is (the query's columns are RunMark's fields, in order),
        # and the rows come by job: no record built field by field, no look-up per mark.
        rows = self._run("run_marks", jobs=self._array(list(jobs)), per_job=per_job)
        return {job: list(marks) for job, marks
                in groupby(map(RunMark._make, rows.fetchall()), attrgetter("job"))}

    def jobs_last_ended(self, jobs: Collection[str], outcomes: Collection[str]) -> set[str]:
        if not jobs or not outcomes:
            return set()
        found = self._names(self._run("jobs_last_ended",
                                      outcomes=self._array([str(o) for o in outcomes])))
        return found.intersection(jobs)

    def jobs_skipped_in_a_row(self, jobs: Collection[str], count: int) -> set[str]:
        if not 1 <= count <= SKIPS_IN_A_ROW:
            raise ValueError(f"skips in a row are kept up to {SKIPS_IN_A_ROW}, not {count}")
        if not jobs:
            return set()
        return self._names(self._run("jobs_skipped_in_a_row", count=count)).intersection(jobs)

    def find_runs(self, where: RunFilter, after: str | None, limit: int) -> list[Run]:
        if where.job is None:
            return self._all(Run, "find_runs", outcome=where.outcome, kind=where.kind,
                             since=where.since, until=where.until, after=after, limit=limit)
        return self._all(Run, "find_runs_of_job", job=where.job, outcome=where.outcome,
                         kind=where.kind, since=where.since, until=where.until, after=after,
                         limit=limit)

    def runs_to_prune(self, job: str, keep: int, node: str | None = None) -> list[Run]:
        return self._all(Run, "runs_to_prune", job=job, keep=keep, node=node)

    def store_log_tail(self, run_id: str, attempt: int, tail: LogTail, at: datetime) -> None:
        self._run("store_log_tail", run_id=run_id, attempt=attempt, tail=tail.data,
                  size=tail.size, cut=tail.cut, stored_at=at)

    def stored_log_tail(self, run_id: str) -> RunLogTail | None:
        return self._one(RunLogTail, "stored_log_tail", run_id=run_id)

    def drop_log_tail(self, run_id: str) -> None:
        self._run("drop_log_tail", run_id=run_id)

    def insert_notification(self, run_id: str, notifier: str, body: str,
                            now: datetime) -> None:
        self._run("insert_notification", run_id=run_id, notifier=notifier, body=body,
                  next_at=now, created_at=now)

    def due_notifications(self, now: datetime, limit: int) -> list[Notification]:
        return self._all(Notification, "due_notifications", now=now, limit=limit)

    def record_notification_try(self, seq: int, state: NotificationState, next_at: datetime,
                                error: str, now: datetime) -> None:
        self._run("record_notification_try", seq=seq, state=state, next_at=next_at,
                  error=error, now=now)

    def notifications_of_run(self, run_id: str) -> list[Notification]:
        return self._all(Notification, "notifications_of_run", run_id=run_id)

    def failed_notifications(self, limit: int) -> list[Notification]:
        return self._all(Notification, "failed_notifications", limit=limit)

    def run_ends_after(self, job: str | None, seq: int) -> list[RunEnd]:
        if job is None:
            return self._all(RunEnd, "run_ends_after", seq=seq)
        return self._all(RunEnd, "run_ends_of_job_after", job=job, seq=seq)

    def unchained_run_ends(self, limit: int) -> list[RunEnd]:
        return self._all(RunEnd, "unchained_run_ends", limit=limit)

    def mark_chained(self, seq: int) -> None:
        self._run("mark_chained", seq=seq)

    def active_pause(self, job: str) -> Pause | None:
        return self._one(Pause, "active_pause", job=job)

    def pauses(self, resumed_after: datetime | None = None) -> list[Pause]:
        if resumed_after is None:
            return self._all(Pause, "active_pauses")
        return self._all(Pause, "pauses_resumed_after", after=resumed_after)

    def end_pause(self, job: str, at: datetime, by: str) -> Pause | None:
        # One statement finds and ends it: of two resumes at once, one gets the pause.
        return self._one(Pause, "end_pause", job=job, at=at, by=by)

    def audit(self, limit: int) -> list[AuditEntry]:
        return self._all(AuditEntry, "audit", limit=limit)

    def set_meta(self, key: str, value: str) -> None:
        self._run("set_meta", key=key, value=value)

    # durable executions ------------------------------------------------------------------

    def insert_execution(self, execution: Execution, steps: Sequence[str]) -> None:
        if len(set(steps)) != len(steps):  # refused before anything is written
            raise ValueError(f"execution {execution.id}: a step id repeats in {list(steps)}")
        if self._run("insert_execution", **self._fields(execution)).rowcount != 1:
            raise Conflict(f"execution {execution.id} of {execution.job}: its id was used "
                           "before")
        self._many("insert_execution_step", [
            {"execution_id": execution.id, "step_id": step_id, "position": position}
            for position, step_id in enumerate(steps)])

    def get_execution(self, execution_id: str) -> Execution | None:
        return self._one(Execution, "get_execution", id=execution_id)

    def executions(self, job: str | None, limit: int) -> list[Execution]:
        if job is None:
            return self._all(Execution, "executions", limit=limit)
        return self._all(Execution, "executions_of_job", job=job, limit=limit)

    def execution_steps(self, execution_id: str) -> list[ExecutionStep]:
        return self._all(ExecutionStep, "execution_steps", execution_id=execution_id)

    def insert_step_attempt(self, attempt: StepAttempt) -> None:
        if self._run("insert_step_attempt", **self._fields(attempt)).rowcount != 1:
            raise Conflict(f"step attempt {attempt.attempt_id} (attempt {attempt.attempt} of "
                           f"run {attempt.run_id}): recorded before")

    def end_step_attempt(self, run_id: str, attempt: int, ended_at: datetime,
                         exit_status: int | None, outcome: str, reason: str) -> None:
        self._run("end_step_attempt", run_id=run_id, attempt=attempt, ended_at=ended_at,
                  exit_status=exit_status, outcome=outcome, reason=reason)

    def step_attempts(self, execution_id: str) -> list[StepAttempt]:
        return self._all(StepAttempt, "step_attempts", execution_id=execution_id)

    def step_attempt(self, run_id: str, attempt: int) -> StepAttempt | None:
        return self._one(StepAttempt, "step_attempt", run_id=run_id, attempt=attempt)

    def expired_executions(self, now: datetime, limit: int) -> list[Execution]:
        return self._all(Execution, "expired_executions", now=now, limit=limit)

    def delete_execution(self, execution_id: str) -> None:
        self._run("delete_execution", id=execution_id)
