"""The PostgreSQL store's transaction: :class:`cronduit.ports.Transaction` on psycopg 3.

All SQL lives in ``queries.sql`` (named queries) and ``migrations/`` (numbered). This module
binds values, turns rows into the records of :mod:`cronduit.ports` and refused writes into
:class:`~cronduit.ports.Conflict`. Instants, flags and seqs travel as PostgreSQL's own types
(timestamptz, boolean, identity), so unlike the SQLite store's transaction nothing is
converted to text and back; the seqs of new events come back from the insert itself
(``RETURNING``), since other transactions may insert beside this one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import fields
from datetime import datetime
from enum import StrEnum
from functools import cache
from importlib import resources
from typing import Any, TypeVar

import psycopg
from psycopg import sql

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

NOTIFICATION_CLAIM = 120.0
"""Seconds a daemon holds the notifications it is sending: longer than a pass of tries with
their timeouts, so no other daemon sends one meanwhile."""
INTAKE_LOCK = 0x696E7461
"""The first key of the lock that transactions accepting triggers take turns on ("inta");
the second is the schema's name hashed (``take_intake`` in queries.sql)."""
JOB_LOCKS = 0x63726F6E
"""The first key of cronduit's per-job advisory locks ("cron"): the second is the job's
name hashed, so they never meet another application's locks in the same database."""
_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
R = TypeVar("R")
_ENUM_FIELDS: dict[tuple[type, str], type[StrEnum]] = {
    (Event, "state"): EventState, (Run, "state"): RunState, (SlotRecord, "fate"): SlotFate,
    (Notification, "state"): NotificationState, (Execution, "state"): ExecutionState,
    (ExecutionStep, "state"): StepState,
}
"""Columns read back as enum members: the schema's CHECK constraints hold them to these."""


@cache
def queries() -> dict[str, bytes]:
    """The named queries, parsed once (as bytes: psycopg takes a query that is not a
    literal string that way)."""
    text = resources.files("cronduit.store.pg").joinpath("queries.sql").read_text()
    parts = _NAME.split(text)
    return {parts[i]: parts[i + 1].strip().rstrip(";").encode()
            for i in range(1, len(parts), 2)}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_READERS: dict[tuple[type, tuple[str, ...]], Callable[[Sequence[Any]], Any]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
    return names


def _reader(kind: type[R], columns: tuple[str, ...]) -> Callable[[Sequence[Any]], R]:
    found = _READERS.get((kind, columns))
    if found is None:
        found = _READERS[kind, columns] = _make_reader(kind, columns)
    return found


def _make_reader(kind: type[R], columns: tuple[str, ...]) -> Callable[[Sequence[Any]], R]:
    """A row-to-record function for one query's columns, worked out once per query shape.
    Columns the record has no field for (a run's seq) are left out."""
    plan: list[tuple[str, int, Callable[[Any], Any] | None]] = []
    for index, name in enumerate(columns):
        if name not in _field_names(kind):
            continue
        enum = _ENUM_FIELDS.get((kind, name))
        convert = (Payload.stored if name == "payload"
                   else None if enum is None else {m.value: m for m in enum}.__getitem__)
        plan.append((name, index, convert))

    def read(row: Sequence[Any]) -> R:
        return kind(**{name: row[index] if convert is None else convert(row[index])
                       for name, index, convert in plan})

    return read


def _param(value: Any) -> Any:
    # Enum members bound as plain text; payloads as their JSON text; the rest as they are.
    if isinstance(value, StrEnum):
        return str(value)
    if isinstance(value, Payload):
        return value.text
    return value


def _values(record: object) -> dict[str, Any]:
    """A record's fields, shallow (``dataclasses.asdict`` deep-copies every value)."""
    return {name: _param(getattr(record, name)) for name in _field_names(type(record))}


def _assigned(names: Sequence[str], separator: str) -> sql.Composed:
    return sql.SQL(separator).join(
        sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(name))
        for name in names)


@cache
def _update(kind: type, names: tuple[str, ...]) -> sql.Composed:
    """The UPDATE for these fields of ``kind``, worked out once per set of fields."""
    table, key = checked_update(kind, names)
    return sql.SQL("UPDATE {} SET {} WHERE {}").format(
        sql.Identifier(table), _assigned(names, ", "), _assigned(key, " AND "))


class PgTransaction(NamedQueries):
    """:class:`cronduit.ports.Transaction` over one psycopg cursor inside a transaction.

    A statement refused by a unique key the caller handles (a second exclusive run, a
    second active pause) is written ``ON CONFLICT DO NOTHING`` and raises
    :class:`Conflict` from its row count, so the transaction stays usable as on SQLite. Any
    other constraint error (a state outside its enum: a bug) raises :class:`Conflict` too,
    and PostgreSQL has then aborted the transaction, which the store rolls back.
    """

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor
        self.accepted = False
        """Whether this transaction accepted triggers."""
        self._claims: dict[str, bool] = {}
        """Jobs asked for in this transaction (:meth:`claim_jobs`), and whether taken."""
        self.asked_stop = False
        """Whether it asked for a run to stop, which only the run's own node can do."""

    def __enter__(self) -> None:
        """``with self:`` around a statement turns a constraint error into :class:`Conflict`."""

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: object) -> None:
        if isinstance(error, psycopg.errors.IntegrityError):
            raise Conflict(str(error)) from error

    def _run(self, query: str, /, **values: Any) -> psycopg.Cursor[Any]:
        with self:
            self._cursor.execute(queries()[query],
                                 {name: _param(value) for name, value in values.items()})
        return self._cursor

    def _many(self, query: str, rows: Sequence[dict[str, Any]]) -> int:
        """One round trip for many rows (psycopg pipelines ``executemany``); how many rows
        changed."""
        if not rows:
            return 0
        with self:
            self._cursor.executemany(queries()[query], rows)
        return int(self._cursor.rowcount)

    def _fields(self, record: object) -> dict[str, Any]:
        return _values(record)

    def _all(self, kind: type[R], query: str, /, **values: Any) -> list[R]:
        cursor = self._run(query, **values)
        read = _reader(kind, tuple(column.name for column in cursor.description or ()))
        return [read(row) for row in cursor.fetchall()]

    def _scalar(self, query: str, /, **values: Any) -> Any:
        row = self._run(query, **values).fetchone()
        return None if row is None else row[0]

    # events ------------------------------------------------------------------------------

    def _take_intake(self) -> None:
        if not self.accepted:
            self._run("take_intake", space=INTAKE_LOCK)
            self.accepted = True

    def insert_event(self, event: NewEvent) -> int | None:
        self._take_intake()
        seq = self._scalar("insert_event", **_values(event))
        return None if seq is None else int(seq)

    def insert_events(self, events: Sequence[NewEvent]) -> list[int]:
        if not events:
            return []
        self._take_intake()
        # One INSERT per event, in the order given (so new seqs rise in it), pipelined in one
        # round trip; each returns its seq unless its delivery id was accepted before.
        with self:
            self._cursor.executemany(queries()["insert_event"],
                                     [_values(e) for e in events], returning=True)
        seqs: dict[str, int] = {}
        for event in events:
            row = self._cursor.fetchone()
            if row is not None:
                seqs.setdefault(event.delivery_id, int(row[0]))
            if not self._cursor.nextset():
                break
        missing = [e.delivery_id for e in events if e.delivery_id not in seqs]
        if missing:
            for delivery_id, seq in self._run("event_seqs_of_deliveries",
                                              ids=missing).fetchall():
                seqs[delivery_id] = int(seq)
        return [seqs[e.delivery_id] for e in events]

    def set_event_state(self, seqs: Sequence[int], state: EventState,
                        run_id: str | None) -> None:
        if seqs:
            self._run("set_event_state", state=state, run_id=run_id, seqs=list(seqs))

    def set_event_states(self, changes: Sequence[tuple[int, EventState, str | None]]) -> None:
        # One statement over three arrays: a batch's 500 updates pipelined one by one took a
        # third of the routing's time.
        if changes:
            seqs, states, runs = zip(*changes, strict=True)
            self._run("set_event_states", seqs=list(seqs), states=[str(s) for s in states],
                      runs=list(runs))

    # timers and slots --------------------------------------------------------------------

    def advance_timers(self, moves: Sequence[tuple[Timer, int]]) -> int:
        return self._many("advance_timer", [
            {"slot": t.slot, "slot_name": t.slot_name, "due_at": t.due_at,
             "last_name": t.last_name, "job": t.job, "expected_version": version}
            for t, version in moves
        ])

    def record_slots(self, records: Sequence[SlotRecord]) -> None:
        self._many("record_slot", [_values(record) for record in records])

    def slots(self, job: str, start: datetime | None, end: datetime | None) -> list[SlotRecord]:
        return self._all(SlotRecord, "slots", job=job, start=start, end=end)

    # runs --------------------------------------------------------------------------------

    def insert_run(self, run: Run) -> None:
        if self._run("insert_run", **_values(run)).rowcount != 1:
            raise Conflict(f"run {run.id} of {run.job}: its id was used before, or the job "
                           "has an exclusive run in progress")

    def record_starts(self, starts: Sequence[tuple[str, int, int]]) -> None:
        self._many("record_start", [{"pid": pid, "pid_start": pid_start, "id": run_id}
                                    for run_id, pid, pid_start in starts])

    def update_run(self, run_id: str, **values: object) -> None:
        if not values:
            return
        if values.get("cancel_reason") is not None:
            self.asked_stop = True
        statement = _update(Run, tuple(values))
        with self:
            self._cursor.execute(statement, {**{name: _param(value)
                                                for name, value in values.items()},
                                             "id": run_id})

    def active_count(self, job: str) -> tuple[int, int]:
        row = self._run("active_count", job=job).fetchone()
        assert row is not None  # an aggregate always gives its row
        return int(row[0]), int(row[1])

    def insert_run_end(self, job: str, run_id: str, event: str, outcome: str,
                       ended_at: datetime) -> int:
        seq = self._scalar("insert_run_end", job=job, run_id=run_id, event=event,
                           outcome=outcome, ended_at=ended_at)
        return 0 if seq is None else int(seq)

    def last_run_end_seq(self) -> int:
        return int(self._scalar("last_run_end_seq"))

    def next_due(self, with_timers: bool) -> datetime | None:
        due: datetime | None = self._scalar("next_due", with_timers=with_timers)
        return due

    def last_successes(self, jobs: Collection[str]) -> dict[str, datetime]:
        if not jobs:
            return {}
        rows = self._run("last_successes", jobs=list(jobs)).fetchall()
        return {str(job): at for job, at in rows if at is not None}

    # durable executions ------------------------------------------------------------------

    def update_execution(self, execution_id: str, **values: object) -> None:
        self._update_row(Execution, {"id": execution_id}, values)

    def update_step(self, execution_id: str, step_id: str, **values: object) -> None:
        self._update_row(ExecutionStep, {"execution_id": execution_id, "step_id": step_id},
                         values)

    def _update_row(self, kind: type, key: dict[str, Any], values: dict[str, object]) -> None:
        if not values:
            return
        statement = _update(kind, tuple(values))
        with self:
            self._cursor.execute(statement, {**{name: _param(value)
                                                for name, value in values.items()}, **key})

    # notifications -----------------------------------------------------------------------

    def due_notifications(self, now: datetime, limit: int) -> list[Notification]:
        return self._all(Notification, "due_notifications", now=now, limit=limit,
                         claim=NOTIFICATION_CLAIM)

    # pauses and the audit log ------------------------------------------------------------

    def insert_pause(self, pause: Pause) -> None:
        if self._run("insert_pause", **_values(pause)).rowcount != 1:
            raise Conflict(f"job {pause.job} has an active pause already")

    def insert_audit(self, entry: AuditEntry) -> int:
        return int(self._scalar("insert_audit", at=entry.at, operator=entry.operator,
                                action=entry.action, job=entry.job, detail=entry.detail))

    # nodes -------------------------------------------------------------------------------

    def claim_job(self, job: str) -> bool:
        return job in self.claim_jobs((job,))

    def claim_jobs(self, jobs: Iterable[str]) -> set[str]:
        # Asked once per job and transaction: the lock, once had, is held to its end, and
        # one refused stays refused (the other transaction may not have ended yet, but what
        # it decides is read by the next turn, not by this one).
        asked = [job for job in dict.fromkeys(jobs) if job not in self._claims]
        if asked:
            rows = self._run("claim_jobs", space=JOB_LOCKS, jobs=asked).fetchall()
            self._claims.update((str(job), bool(taken)) for job, taken in rows)
        return {job for job in jobs if self._claims.get(job)}

    def lost_nodes(self, me: str, limit: int) -> list[tuple[str, int]]:
        rows = self._run("lost_nodes", me=me, limit=limit).fetchall()
        return [(str(name), int(epoch)) for name, epoch in rows]

    def release_backoffs(self, node: str) -> None:
        self._run("release_backoffs", node=node)

    def retire_node(self, name: str, epoch: int, by: str) -> None:
        self._run("retire_node", name=name, epoch=epoch, by=by)

    # meta --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        value = self._scalar("get_meta", key=key)
        return None if value is None else str(value)

    # not in the product's seam -----------------------------------------------------------

    def delivery_for_tests(self, delivery_id: str) -> Delivery | None:
        """The delivery recorded under ``delivery_id``, whole. Tests only (see the SQLite
        store's transaction)."""
        return self._one(Delivery, "get_delivery", delivery_id=delivery_id)
