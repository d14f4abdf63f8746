"""The status judgement: what ``cronduit status``, ``schedule list`` and ``doctor`` say of a job.

What must live here, and nowhere else: every rule that turns a job's stored facts into a word
or a warning. When its timer elapses next and in which state the timer is
(:func:`next_elapse`); when an armed timer counts as overdue (:meth:`NextElapse.overdue`);
the daemon's state, and whether timers are expected at all given it (:func:`daemon_state`,
:func:`timers_expected`); which run
counts as the job's last (:func:`last_counted`); what is divergence and when a pause earns a
reminder (:func:`judge`). What a slot of the ledger shows is :mod:`cronduit.core.slot_ledger`'s.

Values in, typed answers out: the commands fetch the job, its timer, its newest runs and its
pause from the store, read the clock once, and print what comes back. The records are read
through protocols naming only the fields a rule looks at, so the store's records pass as
they are, and the answers hand them back with their own type for the printing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from itertools import islice
from typing import Final, Generic, Protocol, TypeVar

from cronduit.core.arming import due_of, timing_key
from cronduit.core.catchup import arm_new
from cronduit.core.config.model import Job
from cronduit.core.enums import Outcome, RunState
from cronduit.core.timespec import CalendarSchedule, format_utc, schedule_of

__all__ = [
    "FAILED",
    "OVERDUE_AFTER",
    "PAUSE_REMINDER",
    "SKIPS_IN_A_ROW",
    "DaemonState",
    "JobStatus",
    "NextElapse",
    "TimerState",
    "UpcomingSlot",
    "daemon_state",
    "diverges",
    "judge",
    "last_counted",
    "next_elapse",
    "skipped_in_a_row",
    "timer_diverges",
    "timer_state",
    "timers_expected",
    "upcoming_slots",
]

OVERDUE_AFTER: Final = timedelta(minutes=1)
"""A timer this far past its due time has not fired: the daemon is down or stuck."""
SKIPS_IN_A_ROW: Final = 3
"""This many skipped runs in a row is divergence: the job's triggers keep missing it."""
FAILED: Final = {Outcome.FAILURE: "the last run failed",
                 Outcome.TIMEOUT: "the last run timed out"}
"""The outcomes of a last run that are divergence, each with what ``status`` says of it."""
PAUSE_REMINDER: Final = timedelta(days=7)
"""A pause older than this gets a reminder in ``status`` (not divergence: it was asked for)."""


class TimerState(StrEnum):
    """A job's timer as the schedule shows it."""

    ARMED = "armed"
    """A timer row exists: the daemon fires it when it is due."""
    UNARMED = "unarmed"
    """A timed job without a timer row: nothing fires until the daemon arms it (an apply or
    a start)."""
    PAUSED = "paused"
    """A timed job that is paused: no slot of it runs until it is resumed."""
    NONE = "none"
    """A job without a timing (manual, webhook, events, after)."""


class TimerFacts(Protocol):
    """What the judgement reads of a stored timer."""

    @property
    def timing_key(self) -> str: ...
    @property
    def slot_name(self) -> str: ...
    @property
    def due_at(self) -> datetime: ...


class RunFacts(Protocol):
    """What the judgement reads of a run."""

    @property
    def state(self) -> RunState: ...
    @property
    def outcome(self) -> str | None: ...


class PauseFacts(Protocol):
    """What the judgement reads of a job's pause."""

    @property
    def paused_at(self) -> datetime: ...


R = TypeVar("R", bound=RunFacts)
P = TypeVar("P", bound=PauseFacts)


# -- the next elapse ----------------------------------------------------------------------


@dataclass(frozen=True)
class NextElapse:
    """A job's timer as the schedule shows it."""

    timer: TimerState
    due: datetime | None
    """The timer's due time, else the jittered slot it would be armed for now."""
    slot_name: str | None
    stale: bool = False
    """The armed timer is for an older timing than the config's (not applied yet)."""

    def overdue(self, now: datetime) -> bool:
        """Armed, and more than :data:`OVERDUE_AFTER` past its due time: nothing fires it."""
        return (self.timer is TimerState.ARMED and self.due is not None
                and now - self.due > OVERDUE_AFTER)


def timer_state(job: Job, armed: bool, paused: bool) -> TimerState:
    """The job's timer as the schedule shows it, from whether a timer row exists: a timed
    job that is paused shows ``paused`` whatever its row; else a row is ``armed``, and a
    timed job without one ``unarmed``. Reads no schedule: the timing's fields say whether
    it has one (what :func:`~cronduit.core.timespec.schedule_of` builds from)."""
    timed = job.cron is not None or job.at is not None or job.every is not None
    if paused and timed:
        return TimerState.PAUSED
    if armed:
        return TimerState.ARMED
    return TimerState.UNARMED if timed else TimerState.NONE


def next_elapse(job: Job, timer: TimerFacts | None, now: datetime, paused: bool = False
                ) -> NextElapse:
    """When the job's timer elapses next: its row's due time, else what arming it would give
    (an interval job not armed yet runs as soon as the daemon arms it, so: now). A paused
    job's timer elapses for nothing: no next elapse until it is resumed."""
    state = timer_state(job, timer is not None, paused)
    if state is TimerState.PAUSED:
        return NextElapse(TimerState.PAUSED, None, None)
    if timer is not None:
        return NextElapse(TimerState.ARMED, timer.due_at, timer.slot_name,
                          stale=timer.timing_key != timing_key(job))
    schedule = schedule_of(job)
    if schedule is None:
        return NextElapse(TimerState.NONE, None, None)
    arming = arm_new(schedule, now, due_of(job, schedule))
    if arming is None:
        return NextElapse(TimerState.UNARMED, None, None)
    return NextElapse(TimerState.UNARMED, arming.due, arming.slot.name)


@dataclass(frozen=True)
class UpcomingSlot:
    """A slot of a calendar timing still to come, and when its timer is due for it."""

    slot: datetime
    name: str
    due: datetime
    """The slot's instant plus the job's jitter offset for it, as the daemon arms it."""


def upcoming_slots(job: Job, after: datetime, count: int) -> list[UpcomingSlot]:
    """The next ``count`` slots of the job's calendar timing after ``after``, each with its
    due time (jitter applied); none for an interval timing, whose next slot is simply its
    next elapse, or for a job with no timing."""
    schedule = schedule_of(job)
    if not isinstance(schedule, CalendarSchedule):
        return []
    due = due_of(job, schedule)
    return [UpcomingSlot(slot.instant, slot.name, due(slot))
            for slot in islice(schedule.slots_after(after), count)]


class DaemonState(StrEnum):
    """The daemon serving the store, as its heartbeat says (its freshness is the heartbeat's
    own rule, :mod:`cronduit.daemon.heartbeat`)."""

    DOWN = "down"
    """No live daemon: timers fire and accepted runs start when one starts."""
    RUNNING = "running"
    DRY_RUN = "dry_run"
    """Running in dry run: no timers are armed or fire, no runs start; triggers wait."""


def daemon_state(running: bool, dry_run: bool) -> DaemonState:
    """The daemon's state from its heartbeat: whether a live one was found, and its mode."""
    if not running:
        return DaemonState.DOWN
    return DaemonState.DRY_RUN if dry_run else DaemonState.RUNNING


def timers_expected(daemon: DaemonState) -> bool:
    """Whether a timed job should have an armed timer: yes unless the daemon running serves
    in dry run, which arms none (a daemon that is down armed them when it last applied)."""
    return daemon is not DaemonState.DRY_RUN


# -- the judgement ------------------------------------------------------------------------


@dataclass(frozen=True)
class JobStatus(Generic[R, P]):
    """What ``cronduit status`` says about one job."""

    job: Job
    elapse: NextElapse
    last: R | None
    """The newest ended run that was not skipped: a skip is news about timing, not the job."""
    skipped_since: int
    """Skipped runs newer than :attr:`last`."""
    active: tuple[R, ...]
    waiting: int
    divergences: tuple[str, ...]
    pause: P | None = None
    reminder: str | None = None
    """Said of a pause older than :data:`PAUSE_REMINDER`."""


def last_counted(newest: Sequence[R]) -> R | None:
    """The run a job's status reports as its last, from its runs newest first: the newest
    ended one that was not skipped (SPEC §5: a skip never clears a failure)."""
    return next((run for run in newest
                 if run.state == RunState.ENDED and run.outcome != Outcome.SKIPPED), None)


def judge(job: Job, elapse: NextElapse, newest: Sequence[R], active: Sequence[R],
          waiting: int, timers_expected: bool, pause: P | None = None,
          now: datetime | None = None) -> JobStatus[R, P]:
    """The job's status from its newest runs (newest first, at least down to the last one
    that was not skipped), its timer and its pause. ``timers_expected`` is False while the
    daemon runs in dry run, which arms no timers. A paused job's skips and stopped timer are
    what the pause asked for, not divergence; a pause older than a week earns a reminder."""
    last = last_counted(newest)
    newer = newest if last is None else newest[: newest.index(last)]
    skipped_since = sum(1 for run in newer if run.outcome == Outcome.SKIPPED)
    divergences = ([FAILED[Outcome(last.outcome)]]
                   if last is not None and last.outcome in FAILED else [])
    if pause is None:
        divergences += _timing_divergences(elapse, newest, timers_expected, now)
    return JobStatus(job, elapse, last, skipped_since, tuple(active), waiting,
                     tuple(divergences), pause, _reminder(job, pause, now))


def skipped_in_a_row(newest: Sequence[RunFacts]) -> bool:
    """Whether the job's newest :data:`SKIPS_IN_A_ROW` runs (newest first) were all skipped:
    its triggers keep missing it."""
    recent = newest[:SKIPS_IN_A_ROW]
    return len(recent) == SKIPS_IN_A_ROW and all(r.outcome == Outcome.SKIPPED for r in recent)


def timer_diverges(timer: TimerState, overdue: bool, timers_expected: bool) -> bool:
    """Whether a job that is not paused diverges by its timer: it should be armed and is
    not, or it is armed and ``overdue`` (:meth:`NextElapse.overdue`)."""
    return timers_expected and (timer is TimerState.UNARMED
                                or (timer is TimerState.ARMED and overdue))


def diverges(failed: bool, paused: bool, skipping: bool, timer: TimerState, overdue: bool,
             timers_expected: bool) -> bool:
    """Whether :func:`judge` finds any divergence, from the facts it rests on alone: the
    last counted run ``failed`` (its outcome in :data:`FAILED`), and for a job not paused
    :func:`skipped_in_a_row` or :func:`timer_diverges`. For every job of a large config at
    once, where the store answers those facts for all of them in a few statements; a test
    holds it to :func:`judge`."""
    return failed or (not paused and (skipping or timer_diverges(timer, overdue,
                                                                 timers_expected)))


def _timing_divergences(elapse: NextElapse, newest: Sequence[RunFacts],
                        timers_expected: bool, now: datetime | None) -> list[str]:
    """What is wrong with when a job that is not paused runs: its triggers keep being
    skipped, or its timer should be armed and is not, or is armed and does not fire."""
    divergences = []
    if skipped_in_a_row(newest):
        divergences.append(f"the newest {SKIPS_IN_A_ROW} runs were all skipped")
    if elapse.timer is TimerState.UNARMED and timer_diverges(elapse.timer, False,
                                                              timers_expected):
        divergences.append("no timer is armed for its timing (apply the config or start the "
                           "daemon)")
    if now is not None and elapse.timer is TimerState.ARMED and timer_diverges(
            elapse.timer, elapse.overdue(now), timers_expected):
        assert elapse.due is not None  # overdue only with a due time
        divergences.append(f"the timer is overdue: due {format_utc(elapse.due)} and not "
                           "fired (is the daemon running?)")
    return divergences


def _reminder(job: Job, pause: PauseFacts | None, now: datetime | None) -> str | None:
    if pause is None or now is None or now - pause.paused_at < PAUSE_REMINDER:
        return None
    return (f"paused for {(now - pause.paused_at).days} days: resume it "
            f"(cronduit job resume {job.name}) or remove it from the config")
