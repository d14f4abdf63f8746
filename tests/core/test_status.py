"""The status judgement: a job's next elapse, its last run, its divergences, its reminder."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core.config.loader import load_config
from cronduit.core.config.model import Job
from cronduit.core.status import (
    OVERDUE_AFTER,
    PAUSE_REMINDER,
    DaemonState,
    NextElapse,
    TimerState,
    daemon_state,
    judge,
    last_counted,
    next_elapse,
    timers_expected,
    upcoming_slots,
)

# Monday 30 March 2026, 12:00 UTC; London is on summer time (UTC+1) since the 29th.
NOW = datetime(2026, 3, 30, 12, tzinfo=UTC)


@dataclass(frozen=True)
class FakeTimer:
    timing_key: str
    slot_name: str
    due_at: datetime


@dataclass(frozen=True)
class FakeRun:
    id: str
    state: str = "ended"
    outcome: str | None = "success"


@dataclass(frozen=True)
class FakePause:
    paused_at: datetime


def job(text: str) -> Job:
    """The one job ``a`` declared by the flow mapping ``text``."""
    return load_config(f"jobs:\n  a: {text}\n", "c.yaml").jobs["a"]


NIGHTLY = job("{run: 'true', cron: '0 9 * * *', time_zone: Europe/London}")
MANUAL = job("{run: 'true'}")
ARMED = NextElapse(TimerState.ARMED, NOW + timedelta(hours=1), "slot")
NO_TIMER = NextElapse(TimerState.NONE, None, None)


def armed_for(subject: Job, due: datetime) -> FakeTimer:
    return FakeTimer(subject.timing_key or "", "slot", due)


# -- the next elapse ----------------------------------------------------------------------


def test_a_job_without_a_timing_has_no_timer_paused_or_not() -> None:
    """A manual job never has a next elapse, and a pause does not give it one."""
    assert [NO_TIMER, NO_TIMER] == [next_elapse(MANUAL, None, NOW),
                                    next_elapse(MANUAL, None, NOW, paused=True)]


def test_an_armed_timer_shows_its_own_due_time_and_slot() -> None:
    """The timer row is what fires, so its due time is the next elapse, not the schedule's."""
    due = NOW + timedelta(minutes=5)
    assert NextElapse(TimerState.ARMED, due, "slot") == next_elapse(
        NIGHTLY, armed_for(NIGHTLY, due), NOW)


def test_a_timer_armed_for_another_timing_is_stale() -> None:
    """The config's timing changed and has not been applied: the row is for the old one."""
    old = FakeTimer("cron 0 8 * * * tz UTC dst run/once jitter 0s", "slot", NOW)
    elapse = next_elapse(NIGHTLY, old, NOW)
    assert (TimerState.ARMED, True) == (elapse.timer, elapse.stale)


def test_a_paused_timed_job_has_no_next_elapse_even_with_a_timer_row() -> None:
    """Its timer fires for nothing while it is paused."""
    assert NextElapse(TimerState.PAUSED, None, None) == next_elapse(
        NIGHTLY, armed_for(NIGHTLY, NOW), NOW, paused=True)


def test_an_unarmed_calendar_job_shows_the_slot_it_would_be_armed_for() -> None:
    """09:00 London on the 31st, 08:00 UTC: a new timed job waits for its next slot."""
    elapse = next_elapse(NIGHTLY, None, NOW)
    assert (TimerState.UNARMED, "2026-03-31T08:00:00+00:00", "2026-03-31 09:00 Europe/London"
            ) == (elapse.timer, elapse.due and elapse.due.isoformat(), elapse.slot_name)


def test_an_unarmed_interval_job_is_due_now() -> None:
    """A new interval job runs as soon as the daemon arms it."""
    elapse = next_elapse(job("{run: 'true', every: 1h}"), None, NOW)
    assert (TimerState.UNARMED, NOW) == (elapse.timer, elapse.due)


def test_an_unarmed_jittered_job_is_due_after_now_within_its_jitter_of_its_slot() -> None:
    """Jitter moves the due time off the slot's instant by less than the jitter; the slot at
    now itself still counts while its jittered due time is ahead."""
    elapse = next_elapse(job("{run: 'true', cron: '0 * * * *', jitter: 30m}"), None, NOW)
    slots = {"2026-03-30 12:00 UTC": NOW, "2026-03-30 13:00 UTC": NOW + timedelta(hours=1)}
    assert elapse.due is not None
    assert elapse.slot_name in slots
    slot = slots[elapse.slot_name]
    assert (True, True) == (elapse.due > NOW, slot <= elapse.due < slot + timedelta(minutes=30))


def test_an_armed_timer_is_overdue_only_past_the_minute_after_its_due_time() -> None:
    """Exactly a minute late is still on its way; a moment more and nothing fired it."""
    due = NOW - OVERDUE_AFTER
    elapse = NextElapse(TimerState.ARMED, due, "slot")
    unarmed = NextElapse(TimerState.UNARMED, due, "slot")
    assert [False, True, False] == [elapse.overdue(NOW),
                                    elapse.overdue(NOW + timedelta(microseconds=1)),
                                    unarmed.overdue(NOW + timedelta(hours=1))]


@pytest.mark.parametrize(("running", "dry_run", "state"), [
    (False, False, DaemonState.DOWN), (False, True, DaemonState.DOWN),
    (True, False, DaemonState.RUNNING), (True, True, DaemonState.DRY_RUN)])
def test_the_daemon_is_down_running_or_in_dry_run(
    running: bool, dry_run: bool, state: DaemonState,
) -> None:
    """A heartbeat's dry-run flag means nothing once no live daemon wrote it."""
    assert state == daemon_state(running, dry_run)


def test_timers_are_expected_unless_the_daemon_running_is_in_dry_run() -> None:
    """A daemon that is down armed its timers when it last ran; dry run arms none."""
    assert [True, True, False] == [timers_expected(state) for state in (
        DaemonState.DOWN, DaemonState.RUNNING, DaemonState.DRY_RUN)]


# -- which run is the last ----------------------------------------------------------------


def test_the_last_run_is_the_newest_ended_one_that_was_not_skipped() -> None:
    """A run going and the skips after the last real run do not count."""
    runs = [FakeRun("going", "running", None), FakeRun("s1", outcome="skipped"),
            FakeRun("real", outcome="failure"), FakeRun("older")]
    assert runs[2] == last_counted(runs)


def test_a_job_whose_runs_were_all_skipped_has_no_last_run() -> None:
    assert None is last_counted([FakeRun("s1", outcome="skipped")])


# -- divergence ---------------------------------------------------------------------------


@pytest.mark.parametrize(("outcome", "divergence"), [
    ("failure", ("the last run failed",)), ("timeout", ("the last run timed out",)),
    ("success", ()), ("cancelled", ())])
def test_a_last_run_that_failed_or_timed_out_is_divergence(
    outcome: str, divergence: tuple[str, ...],
) -> None:
    status = judge(MANUAL, NO_TIMER, [FakeRun("r", outcome=outcome)], [], 0, True)
    assert divergence == status.divergences


def test_a_skip_never_clears_a_failure() -> None:
    """The two skips after the failure are counted, and the failure is still the news."""
    runs = [FakeRun("s2", outcome="skipped"), FakeRun("s1", outcome="skipped"),
            FakeRun("f", outcome="failure")]
    status = judge(MANUAL, NO_TIMER, runs, [], 0, True)
    assert ("f", 2, ("the last run failed",)) == (
        status.last and status.last.id, status.skipped_since, status.divergences)


def test_three_skips_in_a_row_are_divergence_and_two_are_not() -> None:
    skips = [FakeRun(f"s{i}", outcome="skipped") for i in range(3)]
    assert [("the newest 3 runs were all skipped",), ()] == [
        judge(MANUAL, NO_TIMER, skips, [], 0, True).divergences,
        judge(MANUAL, NO_TIMER, [*skips[:2], FakeRun("ok")], [], 0, True).divergences]


def test_an_unarmed_timed_job_diverges_unless_in_dry_run() -> None:
    """No timer is armed: nothing fires it, unless the daemon runs in dry run (arms none)."""
    unarmed = next_elapse(NIGHTLY, None, NOW)
    assert [("no timer is armed for its timing (apply the config or start the daemon)",),
            ()] == [judge(NIGHTLY, unarmed, [], [], 0, True).divergences,
                    judge(NIGHTLY, unarmed, [], [], 0, False).divergences]


def test_an_overdue_timer_is_divergence_naming_its_due_time() -> None:
    elapse = NextElapse(TimerState.ARMED, NOW - timedelta(minutes=2), "slot")
    assert ("the timer is overdue: due 2026-03-30T11:58:00Z and not fired (is the daemon "
            "running?)",) == judge(NIGHTLY, elapse, [], [], 0, True, None, NOW).divergences


def test_a_paused_job_diverges_only_on_its_last_run() -> None:
    """Its skips and its stopped timer are what the pause asked for; a failure is still news."""
    runs = [FakeRun("s1", outcome="skipped"), FakeRun("s2", outcome="skipped"),
            FakeRun("s3", outcome="skipped"), FakeRun("f", outcome="failure")]
    overdue = NextElapse(TimerState.ARMED, NOW - timedelta(hours=1), "slot")
    status = judge(NIGHTLY, overdue, runs, [], 0, True, FakePause(NOW), NOW)
    assert ("the last run failed",) == status.divergences


def test_a_pause_older_than_a_week_earns_a_reminder_naming_the_resume_command() -> None:
    judged = [judge(NIGHTLY, ARMED, [], [], 0, True, FakePause(NOW - age), NOW).reminder
              for age in (PAUSE_REMINDER - timedelta(seconds=1), PAUSE_REMINDER)]
    assert [None, "paused for 7 days: resume it (cronduit job resume a) or remove it from the "
            "config"] == judged


def test_the_status_hands_back_the_records_it_was_given() -> None:
    """The printing needs the records' other fields: they come back as they went in."""
    last, going = FakeRun("r1"), FakeRun("r2", "running", None)
    pause = FakePause(NOW)
    status = judge(NIGHTLY, ARMED, [last], [going], 2, True, pause, NOW)
    assert (last, (going,), 2, pause) == (status.last, status.active, status.waiting,
                                          status.pause)


def test_the_slots_to_come_carry_their_jittered_due_times() -> None:
    """Each due time is the slot plus the job's stable jitter offset, within the jitter."""
    nightly = job('{run: x, cron: "0 3 * * *", jitter: 10m}')
    slots = upcoming_slots(nightly, NOW, 3)
    assert ["2026-03-31T03:00:00+00:00", "2026-04-01T03:00:00+00:00",
            "2026-04-02T03:00:00+00:00"] == [one.slot.isoformat() for one in slots]
    assert all(timedelta(0) <= one.due - one.slot < timedelta(minutes=10) for one in slots)
    assert slots == upcoming_slots(nightly, NOW, 3)


def test_an_interval_or_untimed_job_has_no_slots_to_come_listed() -> None:
    assert ([], []) == (upcoming_slots(job("{run: x, every: 5m}"), NOW, 3),
                        upcoming_slots(job("{run: x}"), NOW, 3))
