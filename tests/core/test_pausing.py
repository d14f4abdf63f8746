"""What a pause holds (the slot ledger's ``paused``) and what a pause request must say."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.catchup import PAUSED, decide_held_firing
from cronduit.core.pausing import UNHELD, PauseError, holds, is_held, parse_until, starts_paused
from cronduit.core.timespec import CalendarSchedule, IntervalSchedule, Slot, cron_schedule
from tests.helpers.policies import catch_up

NOW = datetime(2026, 6, 1, 3, 30, tzinfo=UTC)


def hourly_slot(hour: int) -> tuple[CalendarSchedule, Slot]:
    schedule = cron_schedule("0 * * * *")
    slot = schedule.next_after(datetime(2026, 6, 1, hour - 1, 59, tzinfo=UTC))
    assert slot is not None
    return schedule, slot


def test_while_paused_every_due_slot_is_missed_and_the_timer_moves_past_now() -> None:
    """01:00, 02:00 and 03:00 held; nothing published; re-armed for 04:00."""
    schedule, armed = hourly_slot(1)
    firing = decide_held_firing(schedule, armed, None, NOW, None, catch_up())
    assert () == firing.publish
    assert [(1, PAUSED), (2, PAUSED), (3, PAUSED)] == [
        (missed.slot.instant.hour, missed.reason) for missed in firing.missed]
    assert datetime(2026, 6, 1, 4, tzinfo=UTC) == firing.next_due


def test_after_an_unseen_resume_held_slots_stay_missed_and_later_ones_catch_up() -> None:
    """Resumed at 02:30, fired at 03:30: 01:00 and 02:00 paused, 03:00 runs (late)."""
    schedule, armed = hourly_slot(1)
    resumed = datetime(2026, 6, 1, 2, 30, tzinfo=UTC)
    firing = decide_held_firing(schedule, armed, None, NOW, resumed, catch_up())
    assert [1, 2] == [missed.slot.instant.hour for missed in firing.missed]
    assert [3] == [published.slot.instant.hour for published in firing.publish]


def test_a_slot_at_the_resume_instant_is_not_held() -> None:
    """The pause covers the time before its resume, not the resume itself."""
    schedule, armed = hourly_slot(3)
    firing = decide_held_firing(schedule, armed, None, NOW,
                                datetime(2026, 6, 1, 3, tzinfo=UTC), catch_up())
    assert ([], [3]) == ([m.slot.instant.hour for m in firing.missed],
                         [p.slot.instant.hour for p in firing.publish])


def test_a_paused_interval_job_misses_its_slot_and_keeps_its_rhythm() -> None:
    """every 1h armed 03:00, fired at 03:30 while paused: missed, next at 04:00."""
    schedule = IntervalSchedule(3600)
    armed = schedule.slot_at(datetime(2026, 6, 1, 3, tzinfo=UTC))
    firing = decide_held_firing(schedule, armed, None, NOW, None, catch_up())
    assert ((), [PAUSED]) == (firing.publish, [missed.reason for missed in firing.missed])
    assert datetime(2026, 6, 1, 4, tzinfo=UTC) == firing.next_due


@given(st.integers(min_value=1, max_value=10_000))
def test_a_paused_firing_never_publishes_and_never_arms_in_the_past(minutes: int) -> None:
    """Whatever the pause's length, nothing runs and the next slot is after now."""
    schedule = cron_schedule("*/7 * * * *")
    armed = schedule.next_after(NOW - timedelta(minutes=minutes))
    assert armed is not None
    firing = decide_held_firing(schedule, armed, None, NOW, None, catch_up())
    assert () == firing.publish
    assert firing.next_due is not None
    assert firing.next_due > NOW


def test_until_reads_a_duration_from_now_or_an_instant() -> None:
    """2h from now; an instant with or without an offset (UTC when without)."""
    assert NOW + timedelta(hours=2) == parse_until("2h", NOW)
    assert datetime(2026, 6, 2, 9, tzinfo=UTC) == parse_until("2026-06-02T09:00:00Z", NOW)
    assert datetime(2026, 6, 2, 9, tzinfo=UTC) == parse_until("2026-06-02T09:00", NOW)
    assert datetime(2026, 6, 2, 7, tzinfo=UTC) == parse_until("2026-06-02T09:00+02:00", NOW)


@pytest.mark.parametrize("text", ["0s", "2026-06-01T03:30:00Z", "2020-01-01", "soon", "2x"])
def test_until_must_be_a_future_time(text: str) -> None:
    with pytest.raises(PauseError):
        parse_until(text, NOW)


def test_holds_keep_the_latest_resume_and_a_pause_in_force_holds_everything() -> None:
    early, late = NOW, NOW + timedelta(hours=2)
    held = holds([("a", early), ("a", late), ("b", late), ("b", None), ("c", late),
                  ("c", early)])
    assert {"a": late, "b": None, "c": late} == held
    assert {} == holds([])


def test_a_slot_is_held_while_paused_or_when_due_before_the_resume() -> None:
    resumed = NOW + timedelta(hours=1)
    assert is_held(None, NOW)
    assert is_held(resumed, NOW)
    assert not is_held(resumed, resumed)  # due at the resume itself: it runs
    assert not is_held(UNHELD, NOW)


@pytest.mark.parametrize(("paused_on_start", "seen", "known", "expected"), [
    (True, False, False, True),
    (True, True, False, False),  # resumed since: never paused again
    (True, False, True, False),  # ran or was armed before it was first seen
    (False, False, False, False),
])
def test_paused_on_start_pauses_a_job_only_the_first_time_it_is_seen(
        paused_on_start: bool, seen: bool, known: bool, expected: bool) -> None:
    assert expected is starts_paused(paused_on_start, seen_before=seen, known_before=known)
