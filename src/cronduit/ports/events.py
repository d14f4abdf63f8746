"""The store's events and deliveries: every accepted trigger, and the code-host deliveries
triggers are derived from.

Accepting is idempotent by delivery id, in the database: the same slot, webhook retry or
GitHub redelivery accepted twice, by one daemon or two, is one event. An event then moves
``new`` -> ``waiting`` -> ``consumed`` (or ``unmatched``) as it is routed (:class:`EventState`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from cronduit.core.enums import EventState
from cronduit.ports.records import Delivery, Event, NewEvent


class EventsAndDeliveries(Protocol):
    """Accepted triggers and the deliveries they came from."""

    def insert_event(self, event: NewEvent) -> int | None:
        """Accept ``event`` in state ``new``; its seq, or None when its delivery id was
        accepted before (nothing is written). Seqs are unique and rise: routing reads in
        seq order, which is acceptance order.

        Concurrency: the delivery id is a unique key. Of transactions accepting the same id
        at once, the first to commit has the event; the others get None once it has (or
        the event, should it roll back)."""
        ...

    def insert_events(self, events: Sequence[NewEvent]) -> list[int]:
        """Accept many events in one statement (a batch of firings): the seq of each
        delivery id's event, in the order given. An id accepted before, or earlier in the
        same sequence, is skipped and gives the stored event's seq. New events' seqs rise
        in the order given. Concurrency: as :meth:`insert_event`, per delivery id."""
        ...

    def record_delivery(self, delivery: Delivery) -> bool:
        """Record a code-host delivery once per delivery id; False (nothing written) when
        the id was recorded before, which is how a redelivery is recognised. Written in the
        transaction that accepts its triggers (``parent`` = its id), so both or neither
        commit. Concurrency: the delivery id is a unique key (see :meth:`insert_event`)."""
        ...

    def events_of_delivery(self, delivery_id: str) -> list[Event]:
        """The triggers derived from a delivery (events whose ``parent`` is it), oldest
        first; [] for an unknown id."""
        ...

    def event_by_delivery(self, delivery_id: str) -> Event | None:
        """The event accepted under ``delivery_id``, in whatever state; None when there is
        none: what a client that retried a request (or waits for its run) reads."""
        ...

    def new_events(self, limit: int, excluded: Sequence[str] = ()) -> list[Event]:
        """Up to ``limit`` events in state ``new`` (accepted, not routed yet), lowest seq
        first, leaving out the ``excluded`` jobs' (those whose runs go on other nodes).

        The router moves each one out of ``new`` in the same transaction. Concurrency:
        as :meth:`~cronduit.ports.TimersAndLedger.due_timers`: SQLite's one writer makes the
        read the router's own; a backend with routers on many daemons locks the rows it
        returns and skips locked ones, so an event is routed once."""
        ...

    def held_elsewhere(self, jobs: Collection[str], routing: Sequence[int]) -> dict[str, int]:
        """For each of ``jobs`` that has an event still ``new`` besides the ``routing`` ones
        (those this router read), the lowest such seq. On a backend with many routers,
        those are events another router holds (skipped by :meth:`new_events`); any newer
        event of that job must wait for them, since a job's triggers meet its work in the
        order they were accepted. One statement for a routing batch."""
        ...

    def set_event_state(self, seqs: Sequence[int], state: EventState,
                        run_id: str | None) -> None:
        """Set the state of each event in ``seqs`` and the run that consumed it (None for
        ``waiting`` and ``unmatched``), in one statement. Unknown seqs are ignored; setting
        the same again is harmless. The database refuses a state outside
        :class:`EventState` (a CHECK constraint). Concurrency: the caller routes these
        events (it read them in this transaction); the last commit wins."""
        ...

    def set_event_states(self, changes: Sequence[tuple[int, EventState, str | None]]) -> None:
        """:meth:`set_event_state` for many events at once, each ``(seq, state, run_id)``
        its own: what a routing batch decided, written in one statement."""
        ...

    def events_of_run(self, run_id: str) -> list[Event]:
        """The events ``run_id`` consumed, oldest first: its trigger (``Run.trigger_seq``)
        and every trigger it took in."""
        ...
