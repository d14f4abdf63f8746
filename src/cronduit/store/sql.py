"""The SQL store's transaction, shared by the SQLite and PostgreSQL backends.

All SQL lives in ``queries.sql`` (named queries) and ``migrations/`` (numbered). This module
only binds values, converts rows into the records of :mod:`cronduit.ports`, and turns
constraint violations into :class:`~cronduit.ports.Conflict`. A backend supplies a DB-API
cursor and its parameter style.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any, Protocol, TypeVar

from cronduit.ports import Conflict, Event, NewEvent, Run, RunEnd, SlotRecord, Timer

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_LOW = "0000-01-01T00:00:00.000000Z"
_HIGH = "9999-12-31T23:59:59.999999Z"


def to_text(instant: datetime | None) -> str | None:
    """An instant in the store's one fixed-width UTC text form (sorts as it compares)."""
    if instant is None:
        return None
    if instant.utcoffset():
        instant = instant.astimezone(UTC)
    return instant.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_text(text: str | None) -> datetime | None:
    if text is None:
        return None
    return datetime.fromisoformat(text)  # the "Z" suffix reads as UTC


@cache
def queries() -> dict[str, str]:
    """The named queries, parsed once."""
    text = resources.files("cronduit.store").joinpath("queries.sql").read_text()
    parts = _NAME.split(text)
    return {parts[i]: parts[i + 1].strip().rstrip(";") for i in range(1, len(parts), 2)}


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses."""

    def execute(self, sql: str, parameters: Mapping[str, Any] = ...) -> Any: ...
    def executemany(self, sql: str, parameters: Sequence[Mapping[str, Any]]) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    @property
    def rowcount(self) -> int: ...
    @property
    def description(self) -> Any: ...


R = TypeVar("R")
_TIME_FIELDS = frozenset({
    "slot", "accepted_at", "due_at", "recorded_at", "until_slot", "created_at", "started_at",
    "finished_at", "deadline_at", "next_attempt_at", "ended_at",
})
_BOOL_FIELDS = frozenset({"late", "exclusive", "files_pruned", "chained"})


def _record(kind: type[R], columns: Sequence[str], row: Sequence[Any]) -> R:
    wanted = _field_names(kind)
    values: dict[str, Any] = {}
    for name, raw in zip(columns, row, strict=True):
        if name in _TIME_FIELDS:
            values[name] = from_text(raw)
        elif name in _BOOL_FIELDS:
            values[name] = bool(raw)
        elif name in wanted:
            values[name] = raw
    return kind(**{name: value for name, value in values.items() if name in wanted})


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
    return names


def _values(record: object) -> dict[str, Any]:
    """A record's fields, shallow: ``dataclasses.asdict`` deep-copies every value, which
    made it the most expensive step of a firing."""
    return {name: getattr(record, name) for name in _field_names(type(record))}


def _params(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _param(value) for name, value in values.items()}


def _param(value: Any) -> Any:
    if isinstance(value, datetime):
        return to_text(value)
    if isinstance(value, bool):
        return int(value)
    return value


class SqlTransaction:
    """:class:`cronduit.ports.Transaction` over one DB-API cursor inside a transaction."""

    def __init__(self, cursor: Cursor, translate: Callable[[str], str],
                 is_conflict: Callable[[Exception], bool]) -> None:
        self._cursor = cursor
        self._translate = translate
        self._is_conflict = is_conflict

    def _run(self, query: str, /, **values: Any) -> Cursor:
        sql = self._translate(queries()[query])
        try:
            self._cursor.execute(sql, _params(values))
        except Exception as error:
            if self._is_conflict(error):
                raise Conflict(str(error)) from error
            raise
        return self._cursor

    def _many(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """One statement for many rows: the group commit's cheapest form."""
        if not rows:
            return
        sql = self._translate(queries()[query])
        try:
            self._cursor.executemany(sql, [_params(row) for row in rows])
        except Exception as error:
            if self._is_conflict(error):
                raise Conflict(str(error)) from error
            raise

    def _all(self, kind: type[R], query: str, /, **values: Any) -> list[R]:
        cursor = self._run(query, **values)
        columns = [column[0] for column in cursor.description]
        return [_record(kind, columns, row) for row in cursor.fetchall()]

    def _one(self, kind: type[R], query: str, /, **values: Any) -> R | None:
        found = self._all(kind, query, **values)
        return found[0] if found else None

    # events ------------------------------------------------------------------------------

    def insert_event(self, event: NewEvent) -> int | None:
        row = self._run("insert_event", **_values(event)).fetchone()
        return None if row is None else int(row[0])

    def insert_events(self, events: Sequence[NewEvent]) -> None:
        self._many("insert_events", [_values(event) for event in events])

    def event_by_delivery(self, delivery_id: str) -> Event | None:
        return self._one(Event, "event_by_delivery", delivery_id=delivery_id)

    def new_events(self, limit: int) -> list[Event]:
        return self._all(Event, "new_events", limit=limit)

    def waiting_events(self, job: str) -> list[Event]:
        return self._all(Event, "waiting_events", job=job)

    def jobs_with_waiting(self) -> list[str]:
        return [str(row[0]) for row in self._run("jobs_with_waiting").fetchall()]

    def set_event_state(self, seqs: Sequence[int], state: str, run_id: str | None) -> None:
        for seq in seqs:
            self._run("set_event_state", seq=seq, state=state, run_id=run_id)

    def events_of_run(self, run_id: str) -> list[Event]:
        return self._all(Event, "events_of_run", run_id=run_id)

    # timers and slots --------------------------------------------------------------------

    def due_timers(self, now: datetime, limit: int) -> list[Timer]:
        return self._all(Timer, "due_timers", now=now, limit=limit)

    def timers(self) -> list[Timer]:
        return self._all(Timer, "timers")

    def get_timer(self, job: str) -> Timer | None:
        return self._one(Timer, "get_timer", job=job)

    def put_timer(self, timer: Timer) -> None:
        self._run("put_timer", **_values(timer))

    def put_timers(self, timers: Sequence[Timer]) -> None:
        self._many("put_timer", [_values(timer) for timer in timers])

    def advance_timer(self, timer: Timer, expected_version: int) -> bool:
        values = _values(timer)
        del values["version"], values["timing_key"]
        return self._run("advance_timer", expected_version=expected_version, **values).rowcount == 1

    def delete_timer(self, job: str) -> None:
        self._run("delete_timer", job=job)

    def record_slot(self, record: SlotRecord) -> bool:
        return self._run("record_slot", **_values(record)).rowcount == 1

    def record_slots(self, records: Sequence[tuple[SlotRecord, str | None]]) -> None:
        rows = []
        for record, delivery_id in records:
            values = _values(record)
            del values["event_seq"]
            rows.append({**values, "delivery_id": delivery_id})
        self._many("record_slot_of_delivery", rows)

    def slots(self, job: str, start: datetime | None, end: datetime | None) -> list[SlotRecord]:
        return self._all(SlotRecord, "slots", job=job, start=to_text(start) or _LOW,
                         end=to_text(end) or _HIGH)

    # runs --------------------------------------------------------------------------------

    def insert_run(self, run: Run) -> None:
        self._run("insert_run", **_values(run))

    def update_run(self, run_id: str, **values: object) -> None:
        if not values:
            return
        known = {f.name for f in fields(Run)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown run fields: {sorted(unknown)}")
        assignments = ", ".join(f"{name} = :{name}" for name in values)
        sql = self._translate(f"UPDATE runs SET {assignments} WHERE id = :id")
        try:
            self._cursor.execute(sql, _params({**values, "id": run_id}))
        except Exception as error:
            if self._is_conflict(error):
                raise Conflict(str(error)) from error
            raise

    def get_run(self, run_id: str) -> Run | None:
        return self._one(Run, "get_run", id=run_id)

    def active_runs(self, job: str | None = None) -> list[Run]:
        if job is None:
            return self._all(Run, "active_runs")
        return self._all(Run, "active_runs_of_job", job=job)

    def due_backoffs(self, now: datetime) -> list[Run]:
        return self._all(Run, "due_backoffs", now=now)

    def overdue_runs(self, now: datetime) -> list[Run]:
        return self._all(Run, "overdue_runs", now=now)

    def active_count(self, job: str) -> tuple[int, int]:
        row = self._run("active_count", job=job).fetchone()
        return int(row[0]), int(row[1])

    def history(self, job: str, limit: int) -> list[Run]:
        return self._all(Run, "history", job=job, limit=limit)

    def runs_to_prune(self, job: str, keep: int) -> list[Run]:
        return self._all(Run, "runs_to_prune", job=job, keep=keep)

    def insert_run_end(self, job: str, run_id: str, event: str, outcome: str,
                       ended_at: datetime) -> int:
        row = self._run("insert_run_end", job=job, run_id=run_id, event=event, outcome=outcome,
                        ended_at=ended_at).fetchone()
        return 0 if row is None else int(row[0])

    def run_ends_after(self, job: str | None, seq: int) -> list[RunEnd]:
        if job is None:
            return self._all(RunEnd, "run_ends_after", seq=seq)
        return self._all(RunEnd, "run_ends_of_job_after", job=job, seq=seq)

    def unchained_run_ends(self, limit: int) -> list[RunEnd]:
        return self._all(RunEnd, "unchained_run_ends", limit=limit)

    def mark_chained(self, seq: int) -> None:
        self._run("mark_chained", seq=seq)

    def last_run_end_seq(self) -> int:
        row = self._run("last_run_end_seq").fetchone()
        return int(row[0])

    def next_due(self, with_timers: bool) -> datetime | None:
        row = self._run("next_due", with_timers=with_timers).fetchone()
        return None if row is None else from_text(row[0])

    # meta --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._run("get_meta", key=key).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._run("set_meta", key=key, value=value)
