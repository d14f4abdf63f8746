"""The store's timers and slot ledger: what a timed job is armed for, and every slot's fate.

A timer holds the next slot of one timed job and when it elapses; a firing moves it on under
its version guard and writes the slot's ledger row in the same transaction. Together these
make a slot fire at most once (SPEC §3), in the database, whichever daemon fires it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol

from cronduit.ports.records import SlotRecord, Timer


class TimersAndLedger(Protocol):
    """Durable timers and the slot ledger."""

    def due_timers(self, now: datetime, limit: int) -> list[Timer]:
        """Up to ``limit`` timers whose ``due_at`` is at or before ``now``, soonest first
        (then by job name), each with the version a firing must present to move it.

        Concurrency: reading claims nothing on SQLite, where the transaction that read them
        is the only writer until it commits. A backend whose daemons fire at once may lock
        the rows it returns and skip rows another transaction holds (PostgreSQL:
        ``FOR UPDATE SKIP LOCKED``). Exactly-once never rests on this read: it rests on
        :meth:`advance_timers`' version guard and the ledger's key."""
        ...

    def timers(self) -> list[Timer]:
        """Every timer, by job name: what an apply compares the new config with."""
        ...

    def get_timer(self, job: str) -> Timer | None:
        """The job's timer; None when it has none (an untimed job, a removed one, or one
        whose schedule has no slot left)."""
        ...

    def timers_of(self, jobs: Collection[str]) -> dict[str, Timer]:
        """:meth:`get_timer` of each of ``jobs`` at once, by job; a job without a timer is
        left out. One statement however many jobs (a page of the dashboard), reading only
        theirs, not every timer of a large config."""
        ...

    def armed_jobs(self, due_before: datetime | None = None) -> set[str]:
        """The jobs that have a timer; with ``due_before``, only those whose timer is due
        before that instant (overdue ones, when it is a while before now). Names only,
        read from the index of due times: which of 10,000 timed jobs are armed, for the
        API's ``healthy``, without a timer record each."""
        ...

    def put_timers(self, timers: Sequence[Timer]) -> None:
        """Create or replace the timer of each ``timer.job``, in one statement (an apply, a
        start-up of 10,000 jobs). A new timer starts at the record's ``version``; replacing
        one bumps the stored version whatever the record says, so a firing that read the
        old timer can no longer move it. An empty sequence writes nothing.

        Concurrency: a replace and a firing of the same timer serialise on its row; the one
        that commits second finds the version moved (the firing) or overwrites (the
        replace: the newer config wins)."""
        ...

    def advance_timers(self, moves: Sequence[tuple[Timer, int]]) -> int:
        """Re-arm each ``(timer, expected_version)``: write its slot, slot name, due time and
        last name, and bump its version, only where the stored version is still
        ``expected_version``; how many timers were written, in one statement.

        The replay guard: a count short of ``len(moves)`` means a timer was moved, replaced
        or deleted since it was read, and the caller must roll the whole batch back (its
        events and ledger rows with it). Concurrency: the compare and the write are one
        atomic step per row, so of two firings that read the same version at most one
        moves the timer."""
        ...

    def delete_timer(self, job: str) -> None:
        """Remove the job's timer (a removed job, or a schedule with no slot left); nothing
        when it has none. Idempotent. Its ledger stays."""
        ...

    def record_slots(self, records: Sequence[SlotRecord]) -> None:
        """Add each slot's fate to the ledger, linked to its ``event_seq``, in one statement.
        A slot (job, slot instant) that has a fate already is skipped and keeps it: a slot's
        fate is written once. An empty sequence writes nothing.

        Concurrency: the ledger's key is the slot, so the database itself refuses a second
        fate for it, whichever transaction or daemon writes it."""
        ...

    def slots(self, job: str, start: datetime | None, end: datetime | None) -> list[SlotRecord]:
        """The job's ledger between the slot instants ``start`` and ``end``, both inclusive
        (None: unbounded), oldest slot first. A counted row (``count`` > 1) stands for that
        many missed slots, from ``slot`` to ``until_slot``."""
        ...
