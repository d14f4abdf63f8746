"""The three timings (cron, at, every) behind one vocabulary: slots with instants and names.

A slot's *instant* is its identity: stable across restarts, unique per job, and the key of its
delivery id (``slot/<job>/<UTC instant>``). Its *name* is how a person reads it on the job's
wall clock (``2026-10-25 01:30 Europe/London``). The second pass through a repeated fall-back
hour reads the same on the clock, so its name says so (``... (repeated)``): the catch-up rule
"never run the name that ran last" must not swallow a slot that the DST policy wants to run.

A wall-clock time the job's DST rule removes (inside a gap under ``gap: skip``, the second
pass of a repeated time under ``fold: once``) has no slot, yet the ledger records it as
missed: :meth:`CalendarSchedule.removed_between` names each with its reason.

``cron`` and ``at`` are calendar schedules (slots fall on the calendar); ``every`` is an
interval schedule (slots are counted from the previous firing, see :mod:`catchup`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property, lru_cache
from typing import Protocol
from zoneinfo import ZoneInfo

from cronduit.core.cron import (
    CronExpression,
    DailyPlan,
    DstPolicy,
    RemovedTime,
    cron_plan,
    load_zone,
)
from cronduit.core.durations import format_duration


@dataclass(frozen=True, slots=True, order=True)
class Slot:
    """One scheduled moment of a timed job."""

    instant: datetime
    """Aware UTC; the slot's identity."""
    name: str
    """The wall-clock name, used for display and for the catch-up name rule."""

    def delivery_id(self, job: str) -> str:
        """The trigger's delivery id: accepting the same slot twice is one event."""
        return f"slot/{job}/{format_utc(self.instant)}"


@dataclass(frozen=True, slots=True)
class RemovedSlot:
    """A wall-clock time the DST rule removed, as the slot ledger records it (missed)."""

    slot: Slot
    """Its ledger key and name: the clock change (a time that does not exist) or the second
    pass (a repeated time), a few microseconds on so it is never a slot's key; named by the
    wall-clock time the job names."""
    reason: str


@lru_cache(maxsize=8192)
def format_utc(instant: datetime) -> str:
    """``2026-03-29T01:00:00Z``: the one spelling of an instant in ids, output and records.

    Cached, like the wall-clock names below: the jobs firing in one batch share a handful of
    instants, and formatting them again for every job was a large part of a firing.
    """
    u = instant.astimezone(UTC)  # by hand: strftime's %Y does not pad years before 1000
    return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _whole_seconds(instant: datetime) -> int:
    """Epoch seconds of an aware instant, floored (slots fall on whole seconds)."""
    delta = instant - _EPOCH
    return delta.days * 86_400 + delta.seconds


@lru_cache(maxsize=8192)
def _wall_name(zone: ZoneInfo, instant: datetime) -> str:
    local = instant.astimezone(zone)
    repeated = " (repeated)" if local.fold else ""
    return f"{local:%Y-%m-%d %H:%M} {zone.key}{repeated}"


@lru_cache(maxsize=8192)
def _utc_name(instant: datetime) -> str:
    return f"{instant.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


@dataclass(frozen=True)
class CalendarSchedule:
    """Slots of a ``cron`` or ``at`` timing in a time zone, with the job's DST policy."""

    plan: DailyPlan
    description: str
    """How the run label names the timing kind: ``cron`` or ``at``."""

    def name_of(self, instant: datetime) -> str:
        """The wall-clock name of ``instant`` on this schedule's clock."""
        return _wall_name(self.plan.zone, instant)

    def label(self, slot: Slot) -> str:
        """The run label of a slot: ``cron 2026-10-25 01:30 Europe/London``."""
        return f"{self.description} {slot.name}"

    def slots_after(self, instant: datetime) -> Iterator[Slot]:
        """Slots strictly after ``instant``, ascending."""
        for moment in self.plan.instants_after(instant):
            yield Slot(moment, self.name_of(moment))

    def next_after(self, instant: datetime) -> Slot | None:
        """The first slot strictly after ``instant``: :meth:`slots_after`'s first, sooner."""
        whole = _whole_seconds(instant)
        found = self.plan.next_after(whole)
        if found is None:
            return None
        moment = datetime.fromtimestamp(found, UTC)
        return Slot(moment, self.name_of(moment))

    def removed_between(self, first: Slot, following: Slot | None) -> tuple[RemovedSlot, ...]:
        """The wall-clock times the DST rule removed from ``first`` (a slot) up to the slot
        ``following`` it (exclusive; None: to the end of the schedule, which removes none)."""
        if following is None or not self.plan.removes:
            return ()
        found = self.plan.removed_from(first.instant, following.instant)
        return tuple(self._removed_slot(removed) for removed in found) if found else ()

    def _removed_slot(self, removed: RemovedTime) -> RemovedSlot:
        key = datetime.fromtimestamp(removed.instant, UTC) + timedelta(microseconds=removed.tag)
        clock = f"{removed.time_of_day // 3600:02d}:{removed.time_of_day // 60 % 60:02d}"
        if removed.gap:
            name = f"{removed.day.isoformat()} {clock} {self.plan.zone.key}"
            reason = (f"missed: {clock} does not exist on {removed.day.isoformat()} "
                      "(dst gap: skip)")
        else:
            name = self.name_of(key)
            reason = f"missed: {clock} repeated, only its first occurrence runs (dst fold: once)"
        return RemovedSlot(Slot(key, name), reason)

    def slots_from(self, instant: datetime) -> Iterator[Slot]:
        """Slots at or after ``instant``, ascending."""
        return self.slots_after(instant - timedelta(seconds=1))

    def slots_before(self, instant: datetime) -> Iterator[Slot]:
        """Slots strictly before ``instant``, descending."""
        for moment in self.plan.instants_before(instant):
            yield Slot(moment, self.name_of(moment))

    def latest_at_or_before(self, instant: datetime) -> Slot | None:
        """The newest slot at or before ``instant``, if any."""
        return next(self.slots_before(instant + timedelta(seconds=1)), None)


@dataclass(frozen=True)
class IntervalSchedule:
    """An ``every`` timing: elapsed time, anchored on each firing rather than on the calendar."""

    seconds: int

    @cached_property
    def description(self) -> str:
        return f"every {format_duration(self.seconds)}"

    def name_of(self, instant: datetime) -> str:
        return _utc_name(instant)

    def label(self, slot: Slot) -> str:
        return self.description

    def slot_at(self, instant: datetime) -> Slot:
        """The slot of a firing due at ``instant``: its second, the slot's identity.

        A slot is named to the second (its delivery id, its ledger row), so its instant is
        that second too: a timer re-armed within the second it fired (an apply that edits
        ``every``) meets the same slot, one ledger row and one run, never two rows that print
        alike. The due time keeps its fraction, so the rhythm does not drift.
        """
        whole = instant.replace(microsecond=0)
        return Slot(whole, self.name_of(whole))


Schedule = CalendarSchedule | IntervalSchedule


def cron_schedule(expression: str, time_zone: str = "UTC", dst: DstPolicy | None = None) -> (
    CalendarSchedule
):
    """The calendar schedule of a cron expression; raises CronError or ZoneError."""
    plan = cron_plan(CronExpression.parse(expression), time_zone, dst or DstPolicy())
    return CalendarSchedule(plan, "cron")


def at_schedule(minutes_of_day: tuple[int, ...], time_zone: str = "UTC",
                dst: DstPolicy | None = None) -> CalendarSchedule:
    """The calendar schedule of an ``at`` list: fixed times of day, every day."""
    if not minutes_of_day or any(not 0 <= m < 1440 for m in minutes_of_day):
        raise ValueError("at needs times of day between 00:00 and 23:59")
    plan = DailyPlan(load_zone(time_zone), tuple(m * 60 for m in minutes_of_day),
                     frozenset(range(1, 13)), None, False, dst or DstPolicy())
    return CalendarSchedule(plan, "at")


def jitter_offset(job: str, slot: datetime, jitter: int, room: int | None) -> int:
    """Seconds added to ``slot``: stable for a job and slot, and less than ``room``.

    A hash rather than a random draw, so the offset survives restarts and every daemon in a
    cluster computes the same due time. ``room`` is the time to the next slot: jitter spreads
    load but never pushes a run past the next one.
    """
    if jitter <= 0:
        return 0
    span = jitter if room is None else min(jitter, room)
    if span <= 1:
        return 0
    digest = hashlib.blake2b(f"{job}/{format_utc(slot)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % span


def next_jittered(schedule: CalendarSchedule, job: str, slot: Slot, jitter: int) -> datetime:
    """When the timer should elapse for ``slot``: its instant plus its jitter offset."""
    if jitter <= 0:
        return slot.instant
    following = schedule.next_after(slot.instant)
    room = None if following is None else int((following.instant - slot.instant).total_seconds())
    return slot.instant + timedelta(seconds=jitter_offset(job, slot.instant, jitter, room))


class Timing(Protocol):
    """The timing fields of a job, as the config model holds them."""

    @property
    def cron(self) -> str | None: ...
    @property
    def at(self) -> tuple[int, ...] | None: ...
    @property
    def every(self) -> int | None: ...
    @property
    def time_zone(self) -> str: ...
    @property
    def dst(self) -> DstPolicy: ...


def schedule_of(job: Timing) -> Schedule | None:
    """The schedule a job's timing describes; None for a job with no timing."""
    if job.cron is not None:
        return cron_schedule(job.cron, job.time_zone, job.dst)
    if job.at is not None:
        return at_schedule(job.at, job.time_zone, job.dst)
    if job.every is not None:
        return IntervalSchedule(job.every)
    return None
