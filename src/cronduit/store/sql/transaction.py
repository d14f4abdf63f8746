"""The SQLite store's transaction.

All SQL lives in ``queries.sql`` (named queries) and ``migrations/`` (numbered). This module
only binds values, converts rows into the records of :mod:`cronduit.ports`, and turns
constraint violations into :class:`~cronduit.ports.Conflict`; the queries it runs as the
PostgreSQL backend does are written once, in :mod:`cronduit.store.named`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from enum import StrEnum
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Protocol, TypeVar

from cronduit.core.enums import (
    EventState,
    ExecutionState,
    NotificationState,
    RunState,
    SlotFate,
    StepState,
)
from cronduit.core.payload import Payload
from cronduit.ports import (
    AuditEntry,
    Conflict,
    Delivery,
    Event,
    Execution,
    ExecutionStep,
    NewEvent,
    Notification,
    Pause,
    Run,
    SlotRecord,
    Timer,
)
from cronduit.store.named import NamedQueries, checked_update

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_LOW = "0000-01-01T00:00:00.000000Z"
_HIGH = "9999-12-31T23:59:59.999999Z"


def to_text(instant: datetime | None) -> str | None:
    """An instant in the store's one fixed-width UTC text form (sorts as it compares)."""
    if instant is None:
        return None
    return _utc_text(instant)


@lru_cache(maxsize=16384)
def _utc_text(instant: datetime) -> str:
    # Cached: a batch of firings writes the same few instants (now, a shared slot, the next
    # one) thousands of times, and formatting was a tenth of a firing's cost.
    if instant.utcoffset():
        instant = instant.astimezone(UTC)
    return instant.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_text(text: str | None) -> datetime | None:
    if text is None:
        return None
    return datetime.fromisoformat(text)  # the "Z" suffix reads as UTC


_PARAMETER = re.compile(r"(?<!:):(\w+)")


@cache
def positional(query: str, order: tuple[str, ...]) -> str:
    """The named query with ``?`` for its parameters, which must appear in ``order``.

    For the batch writes of a firing: binding a tuple by position costs a third less than a
    mapping by name, at three rows a firing. The order is checked against the query text
    once, so an edit of ``queries.sql`` that moves a parameter fails loudly, never binds a
    value to the wrong column.
    """
    text = queries()[query]
    found = tuple(_PARAMETER.findall(text))
    if found != order:
        raise ValueError(f"query {query} takes {found}, not {order}")
    return _PARAMETER.sub("?", text)


@cache
def queries() -> dict[str, str]:
    """The named queries, parsed once."""
    text = resources.files("cronduit.store.sql").joinpath("queries.sql").read_text()
    parts = _NAME.split(text)
    return {parts[i]: parts[i + 1].strip().rstrip(";") for i in range(1, len(parts), 2)}


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses."""

    def execute(self, sql: str, parameters: Mapping[str, Any] = ...) -> Any: ...
    def executemany(self, sql: str,
                    parameters: Sequence[Mapping[str, Any]] | Sequence[tuple[Any, ...]]) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    @property
    def rowcount(self) -> int: ...
    @property
    def description(self) -> Any: ...


R = TypeVar("R")
_TIME_FIELDS = frozenset({
    "slot", "accepted_at", "due_at", "recorded_at", "until_slot", "created_at", "started_at",
    "finished_at", "deadline_at", "next_attempt_at", "ended_at", "received_at", "next_at",
    "updated_at", "paused_at", "until", "resumed_at", "at", "stored_at", "expires_at",
    "done_at",
})
_BOOL_FIELDS = frozenset({"late", "exclusive", "files_pruned", "chained"})
_ENUM_FIELDS: dict[tuple[type, str], type[StrEnum]] = {
    (Event, "state"): EventState, (Run, "state"): RunState, (SlotRecord, "fate"): SlotFate,
    (Notification, "state"): NotificationState, (Execution, "state"): ExecutionState,
    (ExecutionStep, "state"): StepState,
}
"""Columns read back as enum members: the schema's CHECK constraints hold them to these."""


@cache
def _member_of(kind: type[StrEnum]) -> Callable[[str], StrEnum]:
    """The member for a stored value: a dict lookup, a tenth of the enum's own call."""
    return {member.value: member for member in kind}.__getitem__


_READERS: dict[tuple[type, tuple[str, ...]], Callable[[Sequence[Any]], Any]] = {}


def _reader(kind: type[R], columns: tuple[str, ...]) -> Callable[[Sequence[Any]], R]:
    found = _READERS.get((kind, columns))
    if found is None:
        found = _READERS[kind, columns] = _make_reader(kind, columns)
    return found


def _make_reader(kind: type[R], columns: tuple[str, ...]) -> Callable[[Sequence[Any]], R]:
    """A row-to-record function for one query's columns, worked out once per query shape:
    deciding each column's conversion again for every row cost more than reading it."""
    names = _field_names(kind)
    index_of = {name: index for index, name in enumerate(columns)}

    def conversion(name: str) -> Callable[[Any], Any] | None:
        if name in _TIME_FIELDS:
            return from_text
        if (kind, name) in _ENUM_FIELDS:
            return _member_of(_ENUM_FIELDS[kind, name])
        if name == "payload":
            return Payload.stored
        return bool if name in _BOOL_FIELDS else None

    if all(name in index_of for name in names):  # every field read: build positionally
        order = [(index_of[name], conversion(name)) for name in names]
        if order == [(index, None) for index in range(len(columns))]:
            return lambda row: kind(*row)  # the row is the record, in order: 2,000 run
            # marks of a dashboard page were a third slower through the general form

        def read(row: Sequence[Any]) -> R:
            return kind(*[row[index] if convert is None else convert(row[index])
                          for index, convert in order])

        return read
    plan = [(name, index_of[name], conversion(name)) for name in names if name in index_of]

    def read_some(row: Sequence[Any]) -> R:
        return kind(**{name: row[index] if convert is None else convert(row[index])
                       for name, index, convert in plan})

    return read_some


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
    if isinstance(value, Payload):
        return value.text
    if isinstance(value, bool):
        return int(value)
    return value


_EVENT_ORDER = ("delivery_id", "job", "kind", "label", "slot", "late", "payload", "operator",
                "accepted_at", "parent")
_ADVANCE_ORDER = ("slot", "slot_name", "due_at", "last_name", "job", "expected_version")
_START_ORDER = ("pid", "pid_start", "id")
_EVENT_STATE_ORDER = ("state", "run_id", "seq")
_SLOT_ORDER = ("job", "slot", "name", "fate", "reason", "event_seq", "recorded_at", "count",
               "until_slot")
_NUMBERED_EVENT_ORDER = ("seq", *_EVENT_ORDER)


@cache
def _update(kind: type, names: tuple[str, ...]) -> str:
    """The UPDATE for these fields of ``kind``, worked out once per set of fields."""
    table, key = checked_update(kind, names)
    assignments = ", ".join(f"{name} = :{name}" for name in names)
    return f"UPDATE {table} SET {assignments} WHERE " + " AND ".join(
        f"{name} = :{name}" for name in key)


class SqlTransaction(NamedQueries):
    """:class:`cronduit.ports.Transaction` over one DB-API cursor inside a transaction."""

    def __init__(self, cursor: Cursor, translate: Callable[[str], str],
                 is_conflict: Callable[[Exception], bool], *, numbers_events: bool = False) -> None:
        self._cursor = cursor
        self._translate = translate
        self._is_conflict = is_conflict
        self._numbers_events = numbers_events
        """Whether this backend may choose event seqs itself: true where a write transaction
        excludes every other writer (SQLite), so the next seq after the last is free."""

    def __enter__(self) -> None:
        """``with self:`` around a statement turns the driver's constraint error into
        :class:`Conflict`. A plain context manager, not a generator one: it wraps every
        statement."""

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: object) -> None:
        if isinstance(error, Exception) and self._is_conflict(error):
            raise Conflict(str(error)) from error

    def _run(self, query: str, /, **values: Any) -> Cursor:
        with self:
            self._cursor.execute(self._translate(queries()[query]), _params(values))
        return self._cursor

    def _array(self, values: list[Any]) -> Any:
        return json.dumps(values)  # read by the queries through json_each

    def _many(self, query: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """One statement for many rows: the group commit's cheapest form. How many rows
        changed."""
        if not rows:
            return 0
        with self:
            self._cursor.executemany(self._translate(queries()[query]),
                                     [_params(row) for row in rows])
        return int(self._cursor.rowcount)

    def _many_in_order(self, query: str, order: tuple[str, ...],
                       rows: Sequence[tuple[Any, ...]]) -> int:
        """:meth:`_many` with rows of store values in ``order`` (see :func:`positional`)."""
        if not rows:
            return 0
        with self:
            self._cursor.executemany(self._translate(positional(query, order)), rows)
        return int(self._cursor.rowcount)

    def _fields(self, record: object) -> dict[str, Any]:
        return _values(record)

    def _all(self, kind: type[R], query: str, /, **values: Any) -> list[R]:
        cursor = self._run(query, **values)
        read = _reader(kind, tuple(column[0] for column in cursor.description))
        return [read(row) for row in cursor.fetchall()]

    # events ------------------------------------------------------------------------------

    def new_events(self, limit: int, excluded: Sequence[str] = ()) -> list[Event]:
        if not excluded:  # the usual case, and the one the firing path is measured on
            return self._all(Event, "new_events", limit=limit)
        return self._all(Event, "new_events_except", limit=limit,
                         excluded=json.dumps(list(excluded)))

    def due_backoffs(self, now: datetime, node: str | None = None,
                     excluded: Sequence[str] = ()) -> list[Run]:
        return self._all(Run, "due_backoffs", now=now, node=node,
                         excluded=json.dumps(list(excluded)))

    # nodes: one daemon serves an SQLite state (its lock file says so), so none is lost ----

    def claim_job(self, job: str) -> bool:
        return True  # the one writer: no other transaction decides beside this one

    def claim_jobs(self, jobs: Iterable[str]) -> set[str]:
        return set(jobs)

    def lost_nodes(self, me: str, limit: int) -> list[tuple[str, int]]:
        return []

    def release_backoffs(self, node: str) -> None:
        """Nothing to release: no node of an SQLite state is ever lost."""

    def retire_node(self, name: str, epoch: int, by: str) -> None:
        """Nothing to retire: an SQLite state has no node leases."""

    def insert_event(self, event: NewEvent) -> int | None:
        row = self._run("insert_event", **_values(event)).fetchone()
        return None if row is None else int(row[0])

    def insert_events(self, events: Sequence[NewEvent]) -> list[int]:
        # Rows built field by field: the generic record-to-parameters path cost more than the
        # insert itself at thousands of firings a second.
        rows = [(e.delivery_id, e.job, e.kind, e.label, to_text(e.slot), int(e.late),
                 e.payload.text, e.operator, to_text(e.accepted_at), e.parent) for e in events]
        if not rows:
            return []
        if self._numbers_events:
            # Seqs handed out here, after the last one, in this write transaction: each
            # event's seq is known without reading it back, and the ledger rows that link
            # to these events bind it instead of looking each delivery id up.
            first = int(self._run("last_event_seq").fetchone()[0]) + 1
            accepted = self._many_in_order(
                "insert_numbered_events", _NUMBERED_EVENT_ORDER,
                [(first + index, *row) for index, row in enumerate(rows)])
            if accepted == len(rows):
                return list(range(first, first + len(rows)))
        else:
            self._many_in_order("insert_events", _EVENT_ORDER, rows)
        return [int(self._run("event_seq_of_delivery", delivery_id=e.delivery_id).fetchone()[0])
                for e in events]

    def set_event_state(self, seqs: Sequence[int], state: EventState,
                        run_id: str | None) -> None:
        text = str(state)  # bound as plain text: the driver adapts a str subclass per row
        self._many_in_order("set_event_state", _EVENT_STATE_ORDER,
                            [(text, run_id, seq) for seq in seqs])

    # timers and slots --------------------------------------------------------------------

    def advance_timers(self, moves: Sequence[tuple[Timer, int]]) -> int:
        return self._many_in_order("advance_timer", _ADVANCE_ORDER, [
            (to_text(t.slot), t.slot_name, to_text(t.due_at), t.last_name, t.job, version)
            for t, version in moves
        ])

    def record_slots(self, records: Sequence[SlotRecord]) -> None:
        self._many_in_order("record_slot", _SLOT_ORDER, [
            (r.job, to_text(r.slot), r.name, str(r.fate), r.reason, r.event_seq,
             to_text(r.recorded_at), r.count, to_text(r.until_slot))
            for r in records
        ])

    def slots(self, job: str, start: datetime | None, end: datetime | None) -> list[SlotRecord]:
        return self._all(SlotRecord, "slots", job=job, start=to_text(start) or _LOW,
                         end=to_text(end) or _HIGH)

    # runs --------------------------------------------------------------------------------

    def insert_run(self, run: Run) -> None:
        self._run("insert_run", **_values(run))

    def record_starts(self, starts: Sequence[tuple[str, int, int]]) -> None:
        self._many_in_order("record_start", _START_ORDER,
                            [(pid, pid_start, run_id) for run_id, pid, pid_start in starts])

    def update_run(self, run_id: str, **values: object) -> None:
        if not values:
            return
        with self:
            self._cursor.execute(self._translate(_update(Run, tuple(values))),
                                 _params({**values, "id": run_id}))

    def active_count(self, job: str) -> tuple[int, int]:
        row = self._run("active_count", job=job).fetchone()
        return int(row[0]), int(row[1])

    def insert_run_end(self, job: str, run_id: str, event: str, outcome: str,
                       ended_at: datetime) -> int:
        row = self._run("insert_run_end", job=job, run_id=run_id, event=event, outcome=outcome,
                        ended_at=ended_at).fetchone()
        return 0 if row is None else int(row[0])

    def last_run_end_seq(self) -> int:
        row = self._run("last_run_end_seq").fetchone()
        return int(row[0])

    def next_due(self, with_timers: bool) -> datetime | None:
        row = self._run("next_due", with_timers=with_timers).fetchone()
        return None if row is None else from_text(row[0])

    def last_successes(self, jobs: Collection[str]) -> dict[str, datetime]:
        if not jobs:
            return {}
        rows = self._run("last_successes", jobs=self._array(list(jobs))).fetchall()
        return {str(job): instant for job, at in rows if (instant := from_text(at)) is not None}

    # durable executions ------------------------------------------------------------------

    def update_execution(self, execution_id: str, **values: object) -> None:
        self._update_row(Execution, {"id": execution_id}, values)

    def update_step(self, execution_id: str, step_id: str, **values: object) -> None:
        self._update_row(ExecutionStep, {"execution_id": execution_id, "step_id": step_id},
                         values)

    def _update_row(self, kind: type, key: Mapping[str, Any],
                    values: Mapping[str, object]) -> None:
        if not values:
            return
        with self:
            self._cursor.execute(self._translate(_update(kind, tuple(values))),
                                 _params({**values, **key}))

    # pauses and the audit log ------------------------------------------------------------

    def insert_pause(self, pause: Pause) -> None:
        self._run("insert_pause", **_values(pause))

    def insert_audit(self, entry: AuditEntry) -> int:
        row = self._run("insert_audit", at=entry.at, operator=entry.operator,
                        action=entry.action, job=entry.job, detail=entry.detail).fetchone()
        return int(row[0])

    # meta --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._run("get_meta", key=key).fetchone()
        return None if row is None else str(row[0])

    # not in the product's seam -----------------------------------------------------------

    def delivery_for_tests(self, delivery_id: str) -> Delivery | None:
        """The delivery recorded under ``delivery_id``, whole. Tests only: nothing in cronduit
        reads a delivery back (its triggers carry what they need), so it is no part of
        :class:`~cronduit.ports.Transaction`."""
        return self._one(Delivery, "get_delivery", delivery_id=delivery_id)
