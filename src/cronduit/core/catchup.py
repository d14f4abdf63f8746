"""Catch-up and re-arm: what a timer firing publishes, what it records as missed, when it
fires next. Pure: the store calls :func:`decide_firing` inside the firing transaction with
the timer row it read and ``now``, and writes the answer, so replaying a firing from the same
row gives the same answer. The policy is the job's own ``catch_up`` record
(:class:`~cronduit.core.config.model.CatchUp`, whose :meth:`~CatchUp.admits` says whether a
slot is still inside its window), taken as the config holds it.

The rules (cron and at):

* A firing publishes the latest slot whose due time is at or before ``now`` only if it is
  strictly less than the catch-up window late (exactly at the window's edge is too late) and
  its wall-clock name differs from the one that ran last. Older missed slots are recorded as
  missed, each with its reason, and so are the wall-clock times the DST rule removed (see
  :mod:`cron`) between the armed slot and the one the timer re-arms for: the firing passes
  them, even those still ahead. ``mode: all`` publishes every missed slot inside the window,
  oldest first, at most ``max_runs`` (the newest ones; older ones are missed), each as its
  own run, one after another: such a firing is *serial* (:attr:`Firing.serial`), and its
  triggers carry their own policy (:func:`published_payload`) unless the job's timer overlap
  is ``skip`` or ``replace``, which still apply.
* A slot fired :data:`SCHEDULING_TOLERANCE` or more after its due time is *late*: marked so in
  its run's record and label, cron, at and every alike. ``catch_up: false`` (a window of 0)
  runs only slots fired within the tolerance, so it is never looser than the smallest window
  a user can write (``1s``).
* The timer re-arms for the next slot after ``now`` whose name differs from the last one run.

Interval (``every``) jobs publish their own slot, however late, and re-arm ``every`` after it,
or ``every`` after ``now`` when that is already past: an outage yields one run, not a burst.
The slots of the old rhythm that such a firing passes over (each ``every`` after the one it
ran, up to ``now``) are recorded as missed, with the reason :func:`behind_reason`, so an
interval job's ledger has a fate for every slot too (:func:`interval_passed_over`).

A paused job's timer still fires, and every slot it passes over is recorded as missed with
the reason ``paused`` (:func:`decide_held_firing`); so is every slot that fell due before a
resume the daemon had not seen yet. A pause never makes a slot up: after it, the timer points
at the first slot after the resume.

Lateness is measured from a slot's due time (its instant plus the job's jitter), so jitter
never makes a slot look late.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cronduit.core.config.model import SCHEDULING_TOLERANCE, CatchUp
from cronduit.core.durations import format_duration
from cronduit.core.enums import CatchUpMode, Overlap
from cronduit.core.payload import EMPTY, SERIAL, Payload
from cronduit.core.timespec import CalendarSchedule, IntervalSchedule, RemovedSlot, Slot

LISTED_MISSED = 1000
"""After a long outage, missed slots listed one by one; older ones are counted in one row."""


@dataclass(frozen=True, slots=True)
class Publish:
    """A slot the firing turns into an accepted timer trigger."""

    slot: Slot
    late: bool
    """Run by catch-up rather than on time: marked in the run's record and label."""


@dataclass(frozen=True, slots=True)
class Missed:
    """A slot that will never run, with the reason the slot ledger shows."""

    slot: Slot
    reason: str


PAUSED = "paused"
"""The ledger's reason for a slot that fell due while its job was paused."""
COUNTED_OUTAGE = "missed during a long outage (counted, not listed)"
COUNTED_PAUSED = "paused (counted, not listed)"


@dataclass(frozen=True, slots=True)
class MissedCount:
    """Missed slots beyond :data:`LISTED_MISSED`, counted in one ledger row."""

    count: int
    first: datetime
    last: datetime
    reason: str = COUNTED_OUTAGE
    """:data:`COUNTED_PAUSED` when every counted slot fell due during a pause."""


@dataclass(frozen=True)
class Firing:
    """Everything one firing writes, in one transaction."""

    publish: tuple[Publish, ...]
    missed: tuple[Missed, ...]
    missed_count: MissedCount | None
    next_slot: Slot | None
    """The slot the timer is re-armed for (None: the schedule has no further slot)."""
    next_due: datetime | None
    """When the timer elapses next: ``next_slot``'s instant plus jitter."""
    last_name: str | None
    """The wall-clock name of the newest slot that ran (unchanged if none ran)."""
    serial: bool = False
    """A ``mode: all`` catch-up of several slots: each is to run on its own, oldest first, one
    after another (see :func:`published_payload`)."""


DueOf = Callable[[Slot], datetime]
"""A slot's due time (instant plus jitter); the identity when the job has no jitter."""


def slot_instant(slot: Slot) -> datetime:
    """The due time of a slot of a job without jitter: the slot itself."""
    return slot.instant


_instant = slot_instant


def _late_by(now: datetime, due: datetime) -> float:
    return (now - due).total_seconds()


@dataclass
class _Outage:
    """Collects the slots a firing passes over, keeping only the newest ones listed."""

    listed: deque[Missed] | None = None
    """Made on the first missed slot: most firings miss none, and a bounded deque is dear."""
    dropped: int = 0
    first_dropped: datetime | None = None
    last_dropped: datetime | None = None
    all_paused: bool = True
    """Every dropped slot was held by a pause (the counted row says so)."""
    removed: tuple[Missed, ...] = ()
    """The times the DST rule removed (:meth:`add_removed`)."""

    def add(self, missed: Missed) -> None:
        if self.listed is None:
            self.listed = deque(maxlen=LISTED_MISSED)
        elif len(self.listed) == LISTED_MISSED:
            oldest = self.listed[0]
            self.dropped += 1
            self.first_dropped = self.first_dropped or oldest.slot.instant
            self.last_dropped = oldest.slot.instant
            self.all_paused = self.all_paused and oldest.reason == PAUSED
        self.listed.append(missed)

    def add_removed(self, removed: tuple[RemovedSlot, ...]) -> None:
        """The times the DST rule removed: listed apart from the outage's slots (they are few,
        and never what :data:`LISTED_MISSED` bounds)."""
        if removed:
            self.removed = tuple(Missed(each.slot, each.reason) for each in removed)

    def missed(self) -> tuple[Missed, ...]:
        listed = tuple(self.listed or ())
        return listed + self.removed if self.removed else listed

    def count(self) -> MissedCount | None:
        if not self.dropped or self.first_dropped is None or self.last_dropped is None:
            return None
        reason = COUNTED_PAUSED if self.all_paused else COUNTED_OUTAGE
        return MissedCount(self.dropped, self.first_dropped, self.last_dropped, reason)


def _too_late_reason(lateness: float, policy: CatchUp) -> str:
    late = format_duration(int(lateness))
    if policy.window == 0:
        return f"missed: {late} late and catch-up is off"
    assert policy.window is not None
    return f"missed: {late} late, outside the catch-up window of {format_duration(policy.window)}"


SAME_NAME = "missed: same wall-clock name as the slot that ran last"
SUPERSEDED = "missed: a later slot ran instead (catch-up mode latest)"
OVER_MAX_RUNS = "missed: more than max_runs slots to catch up; the newest ran"


def decide_firing(
    schedule: CalendarSchedule,
    armed: Slot,
    last_name: str | None,
    now: datetime,
    policy: CatchUp,
    due_of: DueOf = _instant,
) -> Firing:
    """The firing of a calendar timer that was armed for slot ``armed``, at ``now``."""
    return _calendar_firing(schedule, armed, last_name, now, policy, due_of, _Outage(), armed)


def _calendar_firing(schedule: CalendarSchedule, armed: Slot, last_name: str | None,
                     now: datetime, policy: CatchUp, due_of: DueOf,
                     outage: _Outage, since: Slot) -> Firing:
    """``since``: the slot the timer was armed for, where the times the DST rule removed are
    looked for from (``armed`` itself, unless a pause held the slots before it)."""
    due: list[Slot] = []
    next_slot: Slot | None = armed
    while next_slot is not None and due_of(next_slot) <= now:
        due.append(next_slot)
        next_slot = schedule.next_after(next_slot.instant)
    publish = _choose(due, last_name, now, policy, due_of, outage)
    ran_name = publish[-1].slot.name if publish else last_name
    while next_slot is not None and next_slot.name == ran_name:
        outage.add(Missed(next_slot, SAME_NAME))
        next_slot = schedule.next_after(next_slot.instant)
    # The timer passes them now, re-arming beyond them: recorded here, even those still ahead.
    # (Asked only of a plan whose DST rule can remove a time: most firings skip the call.)
    if schedule.plan.removes:
        outage.add_removed(schedule.removed_between(since, next_slot))
    return Firing(
        publish=tuple(publish),
        missed=outage.missed(),
        missed_count=outage.count(),
        next_slot=next_slot,
        next_due=None if next_slot is None else due_of(next_slot),
        last_name=ran_name,
        serial=len(publish) > 1 and policy.mode is CatchUpMode.ALL,
    )


def _choose(
    due: list[Slot],
    last_name: str | None,
    now: datetime,
    policy: CatchUp,
    due_of: DueOf,
    outage: _Outage,
) -> list[Publish]:
    """Split the due slots into published and missed, per the catch-up mode."""
    if not due:
        return []
    latest = policy.mode is CatchUpMode.LATEST
    if latest:
        for slot in due[:-1]:
            lateness = _late_by(now, due_of(slot))
            reason = SUPERSEDED if policy.admits(lateness) else _too_late_reason(lateness, policy)
            outage.add(Missed(slot, reason))
        candidates = due[-1:]
    else:
        candidates = due
    chosen: list[Publish] = []
    previous = last_name
    for slot in candidates:
        lateness = _late_by(now, due_of(slot))
        if not policy.admits(lateness):
            outage.add(Missed(slot, _too_late_reason(lateness, policy)))
        elif slot.name == previous:
            outage.add(Missed(slot, SAME_NAME))
        else:
            chosen.append(Publish(slot, late=lateness >= SCHEDULING_TOLERANCE))
            previous = slot.name
    if not latest and len(chosen) > policy.max_runs:
        for extra in chosen[: -policy.max_runs]:
            outage.add(Missed(extra.slot, OVER_MAX_RUNS))
        chosen = chosen[-policy.max_runs :]
    return chosen


_OWN_POLICY = frozenset({Overlap.QUEUE, Overlap.ALLOW})
"""Timer policies a serial catch-up replaces: ``queue`` would coalesce the slots into one
run, ``allow`` would run them side by side. ``skip`` and ``replace`` still apply."""


def published_payload(firing: Firing, timer_policy: Overlap) -> Payload:
    """The payload of the timer triggers ``firing`` publishes for a job whose timer overlap
    is ``timer_policy``: empty, or for a serial catch-up under queue or allow the policy its
    triggers follow instead (:data:`~cronduit.core.payload.SERIAL_CATCH_UP`, read back by
    :meth:`~cronduit.core.payload.Payload.own_policy`)."""
    if firing.serial and timer_policy in _OWN_POLICY:
        return SERIAL
    return EMPTY


def decide_interval_firing(schedule: IntervalSchedule, armed: datetime, now: datetime) -> Firing:
    """The firing of an ``every`` timer due at ``armed``: one run, then re-arm. The slot is
    the second ``armed`` falls in (:meth:`IntervalSchedule.slot_at`), and the next is due
    ``every`` after it, on a whole second too: a job armed at 12:00:00.6 runs at once (slot
    12:00:00), then at 12:00:01.0, 12:00:02.0, so a run's lateness is measured from the
    instant it was due, never from a fraction of a second before it.

    Behind by a step or more (an outage, a daemon stalled for a second): one run, then every
    after ``now``; the slots passed over on the way are missed (:func:`interval_passed_over`).
    """
    slot = schedule.slot_at(armed)
    step = timedelta(seconds=schedule.seconds)
    following = slot.instant + step
    missed: tuple[Missed, ...] = ()
    count: MissedCount | None = None
    if following <= now:
        following = now.replace(microsecond=0) + step
        missed, count = interval_passed_over(schedule, slot, now, behind_reason(slot, now))
    lateness = _late_by(now, armed)
    return Firing(
        publish=(Publish(slot, late=lateness >= SCHEDULING_TOLERANCE),),
        missed=missed,
        missed_count=count,
        next_slot=schedule.slot_at(following),
        next_due=following,
        last_name=slot.name,
    )


def behind_reason(ran: Slot, now: datetime) -> str:
    """The ledger's reason for an interval slot passed over by a firing at ``now`` that ran
    the slot ``ran``: the whole seconds it was behind, and the rule that skipped the rest."""
    behind = format_duration(int(_late_by(now, ran.instant)))
    return f"missed: the timer fired {behind} late; an interval job runs once, not a burst"


def interval_passed_over(schedule: IntervalSchedule, ran: Slot, until: datetime,
                         reason: str) -> tuple[tuple[Missed, ...], MissedCount | None]:
    """The slots of ``ran``'s rhythm (each ``every`` after it) at or before ``until``: the
    newest :data:`LISTED_MISSED` listed with ``reason``, any older counted in one row.

    Worked out by arithmetic rather than by walking the slots: a one-second job whose host
    was down for a month passes over 2.6 million, and the firing transaction waits on this.
    """
    step = schedule.seconds
    passed = int((until - ran.instant).total_seconds()) // step
    if passed <= 0:
        return (), None
    counted = max(0, passed - LISTED_MISSED)

    def nth(k: int) -> datetime:
        return ran.instant + timedelta(seconds=k * step)

    listed = tuple(Missed(schedule.slot_at(nth(k)), reason)
                   for k in range(counted + 1, passed + 1))
    if not counted:
        return listed, None
    counted_reason = COUNTED_PAUSED if reason == PAUSED else COUNTED_OUTAGE
    return listed, MissedCount(counted, nth(1), nth(counted), counted_reason)


def decide_held_firing(
    schedule: CalendarSchedule | IntervalSchedule,
    armed: Slot,
    last_name: str | None,
    now: datetime,
    resumed_at: datetime | None,
    policy: CatchUp,
    due_of: DueOf = _instant,
) -> Firing:
    """The firing of a timer whose job is paused (``resumed_at`` None) or was resumed at
    ``resumed_at`` after its armed slot fell due (the daemon was down or behind).

    Every slot due while paused (at or before ``now``; before ``resumed_at``) is missed with
    the reason :data:`PAUSED`, nothing is made up, and the timer re-arms for the first slot
    after. Slots due after the resume and by ``now`` then follow the ordinary rules, as after
    an outage. An interval job keeps its rhythm: one missed slot per firing, re-armed
    ``every`` after it (or after the resume, or ``now``, when that is already past).
    """
    def held(slot: Slot) -> bool:
        due = due_of(slot)
        return due <= now if resumed_at is None else due < resumed_at

    if isinstance(schedule, IntervalSchedule):
        return _held_interval_firing(schedule, armed, last_name, now, resumed_at, held)
    outage = _Outage()
    slot: Slot | None = armed
    while slot is not None and held(slot):
        outage.add(Missed(slot, PAUSED))
        slot = schedule.next_after(slot.instant)
    if slot is not None and resumed_at is not None and due_of(slot) <= now:
        return _calendar_firing(schedule, slot, last_name, now, policy, due_of, outage, armed)
    if schedule.plan.removes:
        outage.add_removed(schedule.removed_between(armed, slot))
    return Firing(publish=(), missed=outage.missed(), missed_count=outage.count(),
                  next_slot=slot, next_due=None if slot is None else due_of(slot),
                  last_name=last_name)


def _held_interval_firing(schedule: IntervalSchedule, armed: Slot, last_name: str | None,
                          now: datetime, resumed_at: datetime | None,
                          held: Callable[[Slot], bool]) -> Firing:
    if not held(armed):
        return decide_interval_firing(schedule, armed.instant, now)
    base = now if resumed_at is None else resumed_at
    step = timedelta(seconds=schedule.seconds)
    following = armed.instant + step
    missed: tuple[Missed, ...] = (Missed(armed, PAUSED),)
    count: MissedCount | None = None
    if following <= base:  # the daemon was down or behind while paused: every slot passed
        following = base + step
        passed, count = interval_passed_over(schedule, armed, base, PAUSED)
        missed += passed
    if resumed_at is not None and following <= now:
        rest = decide_interval_firing(schedule, following, now)
        return replace(rest, missed=missed + rest.missed,
                       missed_count=_merged(count, rest.missed_count))
    return Firing(publish=(), missed=missed, missed_count=count,
                  next_slot=schedule.slot_at(following), next_due=following,
                  last_name=last_name)


def _merged(paused: MissedCount | None, behind: MissedCount | None) -> MissedCount | None:
    """One counted row for a firing that passed over slots both while paused and after the
    resume: the ledger keeps one count row per firing."""
    if paused is None or behind is None:
        return paused or behind
    return MissedCount(paused.count + behind.count, paused.first, behind.last, COUNTED_OUTAGE)


# -- arming on start and on config edits (SPEC §3) ------------------------------------------


@dataclass(frozen=True, slots=True)
class Arming:
    """Where a timer points after a config change: its next slot and due time."""

    slot: Slot
    due: datetime


def arm_new(schedule: CalendarSchedule | IntervalSchedule, now: datetime,
            due_of: DueOf = _instant) -> Arming | None:
    """A new job: a timed job waits for its next slot; an interval job runs at once."""
    if isinstance(schedule, IntervalSchedule):
        slot = schedule.slot_at(now)
        return Arming(slot, now)
    if due_of is not slot_instant:
        latest = schedule.latest_at_or_before(now)
        if latest is not None and due_of(latest) > now:  # its jitter has not elapsed yet
            return Arming(latest, due_of(latest))
    following = schedule.next_after(now)
    return None if following is None else Arming(following, due_of(following))


def arm_edited(
    schedule: CalendarSchedule | IntervalSchedule,
    last_name: str | None,
    now: datetime,
    policy: CatchUp,
    due_of: DueOf = _instant,
) -> Arming | None:
    """An edited timing: an interval job runs at once; a timed job runs its latest slot if it
    is inside the catch-up window and not the one that ran last, else waits for the next."""
    if isinstance(schedule, IntervalSchedule):
        return arm_new(schedule, now)
    latest = schedule.latest_at_or_before(now)
    if (
        latest is not None
        and latest.name != last_name
        and due_of(latest) <= now
        and policy.admits(_late_by(now, due_of(latest)))
    ):
        return Arming(latest, due_of(latest))
    return arm_new(schedule, now, due_of)
