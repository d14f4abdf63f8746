"""Backfill: the slots of a window of a timed job, to run again now (``cronduit job backfill``).

What must live here: which slots a window holds, when a window is refused, and how a backfill
trigger is spelled (its delivery id, label and payload). The slots come from the job's own
schedule, so a DST night inside the window gives exactly the slots the job's rules give.

A backfill trigger is a ``manual`` trigger (SPEC §4 lists the trigger kinds; a backfill is an
operator's request) whose payload says ``backfill: true`` and carries the overlap policy its
triggers follow (:func:`trigger_policy`); its slot is the trigger's slot. Its delivery id is
``backfill/<job>/<UTC slot>``, so the same backfill asked twice accepts nothing new.

The window is inclusive at both ends: ``--from`` and ``--to`` are slot instants that may run.
An ``every`` job has no calendar: its slots in a window are counted from ``--from``, one
interval apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from cronduit.core.enums import Overlap
from cronduit.core.timespec import CalendarSchedule, Schedule, Slot, format_utc

DEFAULT_MAX_SLOTS: Final = 1000
"""Slots one backfill may run unless ``--max`` says more."""

SERIAL: Final = "serial"
"""The default backfill overlap: each slot its own run, one after another (``allow`` with at
most one run going)."""


class BackfillError(ValueError):
    """A window that cannot be backfilled; the message names the option and the rule."""


@dataclass(frozen=True, slots=True)
class BackfillPolicy:
    """The overlap policy a backfill's triggers follow instead of their kind's (and, as
    :data:`~cronduit.core.catchup.SERIAL_CATCH_UP`, a ``mode: all`` catch-up's)."""

    overlap: Overlap
    max_parallel: int | None = None
    """Runs going at most, for ``allow``; None: the job's ``max_parallel``."""

    def __post_init__(self) -> None:
        if self.max_parallel is not None and (
            self.overlap is not Overlap.ALLOW or self.max_parallel < 1
        ):
            raise ValueError("max_parallel goes with allow, and is 1 or more")

    @classmethod
    def named(cls, name: str) -> BackfillPolicy:
        """``serial`` (the default), or one of the overlap policies."""
        if name == SERIAL:
            return cls(Overlap.ALLOW, 1)
        return cls(Overlap(name))

    @property
    def name(self) -> str:
        return SERIAL if self.max_parallel == 1 else self.overlap.value

    def payload(self) -> dict[str, object]:
        """The trigger's payload: what the trigger file shows besides kind, label and slot."""
        body: dict[str, object] = {"inputs": {}, "backfill": True,
                                   "overlap": self.overlap.value}
        if self.max_parallel is not None:
            body["max_parallel"] = self.max_parallel
        return body


def trigger_policy(payload: Mapping[str, object]) -> BackfillPolicy | None:
    """The policy a trigger's payload carries: a backfill's, else None (its kind's)."""
    if payload.get("backfill") is not True:
        return None
    overlap = payload.get("overlap")
    limit = payload.get("max_parallel")
    if not isinstance(overlap, str):
        return BackfillPolicy.named(SERIAL)
    return BackfillPolicy(Overlap(overlap), limit if isinstance(limit, int) else None)


def delivery_id(job: str, slot: Slot) -> str:
    """``backfill/<job>/<UTC slot>``: the same slot backfilled twice is one trigger."""
    return f"backfill/{job}/{format_utc(slot.instant)}"


def label(slot: Slot) -> str:
    """``backfill 2026-10-25 01:30 Europe/London``."""
    return f"backfill {slot.name}"


def window_slots(schedule: Schedule, start: datetime, end: datetime, now: datetime,
                 limit: int = DEFAULT_MAX_SLOTS) -> list[Slot]:
    """The slots from ``start`` to ``end`` inclusive, oldest first; raises
    :class:`BackfillError` for a window that ends after ``now``, that is empty or holds no
    slot, or that holds more than ``limit`` slots."""
    if end > now:
        raise BackfillError(f"--to: {format_utc(end)} is in the future (now is "
                            f"{format_utc(now)}); a backfill runs past slots only")
    if start > end:
        raise BackfillError(f"--from: {format_utc(start)} is after --to {format_utc(end)}; "
                            "the window is empty")
    slots: list[Slot] = []
    for slot in _slots_from(schedule, start):
        if slot.instant > end:
            break
        if len(slots) == limit:
            raise BackfillError(f"--max: the window holds more than {limit} slots; narrow "
                                "--from/--to or raise --max")
        slots.append(slot)
    if not slots:
        raise BackfillError(f"--from/--to: no slot of the job falls between "
                            f"{format_utc(start)} and {format_utc(end)}")
    return slots


def _slots_from(schedule: Schedule, start: datetime) -> Iterator[Slot]:
    if isinstance(schedule, CalendarSchedule):
        yield from schedule.slots_from(start)
        return
    step = timedelta(seconds=schedule.seconds)
    instant = start
    while True:
        yield schedule.slot_at(instant)
        instant += step
