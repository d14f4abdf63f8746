"""The store's reads and simple writes, written once for every SQL backend.

Each is one named query of the backend's ``queries.sql``, bound by name and read back as
the seam's records: the same text on SQLite and PostgreSQL. What differs between them
(binding values, reading rows, batches, the statements each writes its own way) is in each
backend's transaction, which gives this class its four primitives.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from cronduit.core.enums import EventState, NotificationState
from cronduit.core.log_tails import LogTail
from cronduit.ports import (
    AuditEntry,
    Delivery,
    Event,
    JobWork,
    Notification,
    Pause,
    Run,
    RunEnd,
    RunLogTail,
    Timer,
)

R = TypeVar("R")


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

    def waiting_events(self, job: str) -> list[Event]:
        return self._all(Event, "waiting_events", job=job)

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

    def events_of_run(self, run_id: str) -> list[Event]:
        return self._all(Event, "events_of_run", run_id=run_id)

    def due_timers(self, now: datetime, limit: int) -> list[Timer]:
        return self._all(Timer, "due_timers", now=now, limit=limit)

    def timers(self) -> list[Timer]:
        return self._all(Timer, "timers")

    def get_timer(self, job: str) -> Timer | None:
        return self._one(Timer, "get_timer", job=job)

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
