"""Backfill windows: the slots a window holds (DST nights included), and the windows refused.

Europe/London in 2026: clocks go forward at 01:00 UTC on 29 March (01:00-02:00 local does not
exist) and back at 01:00 UTC on 25 October (01:00-02:00 local happens twice).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core.backfill import (
    BackfillError,
    BackfillPolicy,
    delivery_id,
    label,
    trigger_policy,
    window_slots,
)
from cronduit.core.cron import DstPolicy
from cronduit.core.enums import DstFold, DstGap, Overlap
from cronduit.core.timespec import IntervalSchedule, Slot, cron_schedule

NOW = datetime(2026, 12, 1, tzinfo=UTC)
LONDON = "Europe/London"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def spelled(slots: list[Slot]) -> list[tuple[str, str]]:
    return [(slot.instant.isoformat(), slot.name) for slot in slots]


def test_a_fixed_time_job_runs_the_spring_gap_once_after_the_gap() -> None:
    """30 1 * * * over 29 March: the missing 01:30 runs once, at 02:00 BST (01:00 UTC)."""
    slots = window_slots(cron_schedule("30 1 * * *", LONDON), at("2026-03-28T00:00Z"),
                         at("2026-03-30T23:00Z"), NOW)
    assert [
        ("2026-03-28T01:30:00+00:00", "2026-03-28 01:30 Europe/London"),
        ("2026-03-29T01:00:00+00:00", "2026-03-29 02:00 Europe/London"),
        ("2026-03-30T00:30:00+00:00", "2026-03-30 01:30 Europe/London"),
    ] == spelled(slots)


def test_a_fixed_time_job_runs_the_repeated_hour_once_by_default() -> None:
    """30 1 * * * over 25 October: 01:30 runs at its first occurrence only (00:30 UTC)."""
    slots = window_slots(cron_schedule("30 1 * * *", LONDON), at("2026-10-24T00:00Z"),
                         at("2026-10-26T23:00Z"), NOW)
    assert [
        ("2026-10-24T00:30:00+00:00", "2026-10-24 01:30 Europe/London"),
        ("2026-10-25T00:30:00+00:00", "2026-10-25 01:30 Europe/London"),
        ("2026-10-26T01:30:00+00:00", "2026-10-26 01:30 Europe/London"),
    ] == spelled(slots)


def test_the_jobs_own_dst_policy_decides_both_nights() -> None:
    """dst {gap: skip, fold: twice}: no slot on 29 March, two on 25 October."""
    schedule = cron_schedule("30 1 * * *", LONDON, DstPolicy(DstGap.SKIP, DstFold.TWICE))
    spring = window_slots(schedule, at("2026-03-28T00:00Z"), at("2026-03-30T23:00Z"), NOW)
    fall = window_slots(schedule, at("2026-10-25T00:00Z"), at("2026-10-25T23:00Z"), NOW)
    assert ["2026-03-28T01:30:00+00:00", "2026-03-30T00:30:00+00:00"] == [
        s.instant.isoformat() for s in spring]
    assert [
        ("2026-10-25T00:30:00+00:00", "2026-10-25 01:30 Europe/London"),
        ("2026-10-25T01:30:00+00:00", "2026-10-25 01:30 Europe/London (repeated)"),
    ] == spelled(fall)


def test_a_wildcard_job_follows_real_time_through_the_spring_gap() -> None:
    """*/30 * * * * on 29 March: 00:00, 00:30 GMT, then 02:00 BST on, half-hourly."""
    slots = window_slots(cron_schedule("*/30 * * * *", LONDON), at("2026-03-29T00:00Z"),
                         at("2026-03-29T02:00Z"), NOW)
    assert [
        "2026-03-29 00:00 Europe/London", "2026-03-29 00:30 Europe/London",
        "2026-03-29 02:00 Europe/London", "2026-03-29 02:30 Europe/London",
        "2026-03-29 03:00 Europe/London",
    ] == [slot.name for slot in slots]


def test_a_wildcard_job_ticks_through_both_repeated_hours() -> None:
    """*/30 * * * * on 25 October: 01:00 and 01:30 twice, each its own slot and name."""
    slots = window_slots(cron_schedule("*/30 * * * *", LONDON), at("2026-10-25T00:00Z"),
                         at("2026-10-25T02:00Z"), NOW)
    assert [
        ("2026-10-25T00:00:00+00:00", "2026-10-25 01:00 Europe/London"),
        ("2026-10-25T00:30:00+00:00", "2026-10-25 01:30 Europe/London"),
        ("2026-10-25T01:00:00+00:00", "2026-10-25 01:00 Europe/London (repeated)"),
        ("2026-10-25T01:30:00+00:00", "2026-10-25 01:30 Europe/London (repeated)"),
        ("2026-10-25T02:00:00+00:00", "2026-10-25 02:00 Europe/London"),
    ] == spelled(slots)


def test_the_window_includes_both_ends() -> None:
    """--from and --to that fall on slots are both run."""
    slots = window_slots(cron_schedule("0 * * * *"), at("2026-06-01T10:00Z"),
                         at("2026-06-01T12:00Z"), NOW)
    assert ["10:00", "11:00", "12:00"] == [f"{s.instant:%H:%M}" for s in slots]


def test_an_interval_job_counts_its_slots_from_the_start_of_the_window() -> None:
    """every 20m from 10:05 to 11:00: 10:05, 10:25, 10:45."""
    slots = window_slots(IntervalSchedule(1200), at("2026-06-01T10:05Z"),
                         at("2026-06-01T11:00Z"), NOW)
    assert ["10:05", "10:25", "10:45"] == [f"{s.instant:%H:%M}" for s in slots]
    assert "2026-06-01 10:05:00 UTC" == slots[0].name


def test_a_window_ending_in_the_future_is_refused() -> None:
    """--to after now: a backfill runs past slots only."""
    with pytest.raises(BackfillError, match=r"^--to: .* is in the future"):
        window_slots(cron_schedule("0 * * * *"), NOW - timedelta(hours=2),
                     NOW + timedelta(seconds=1), NOW)


def test_a_window_ending_before_it_starts_is_refused() -> None:
    """--from after --to: the window is empty."""
    with pytest.raises(BackfillError, match=r"^--from: .* the window is empty"):
        window_slots(cron_schedule("0 * * * *"), at("2026-06-02T00:00Z"),
                     at("2026-06-01T00:00Z"), NOW)


def test_a_window_without_slots_is_refused() -> None:
    """10:01 to 10:59 holds no slot of an hourly job."""
    with pytest.raises(BackfillError, match=r"^--from/--to: no slot"):
        window_slots(cron_schedule("0 * * * *"), at("2026-06-01T10:01Z"),
                     at("2026-06-01T10:59Z"), NOW)


def test_more_slots_than_the_limit_are_refused_and_exactly_the_limit_is_not() -> None:
    """Three hourly slots: a limit of 3 passes, 2 is refused naming --max."""
    schedule = cron_schedule("0 * * * *")
    start, end = at("2026-06-01T10:00Z"), at("2026-06-01T12:00Z")
    assert 3 == len(window_slots(schedule, start, end, NOW, limit=3))
    with pytest.raises(BackfillError, match=r"^--max: the window holds more than 2 slots"):
        window_slots(schedule, start, end, NOW, limit=2)


def test_a_backfill_trigger_is_spelled_from_its_slot() -> None:
    """Delivery id from the UTC instant, label from the wall-clock name."""
    slot = Slot(at("2026-10-25T01:30Z"), "2026-10-25 01:30 Europe/London (repeated)")
    assert "backfill/j/2026-10-25T01:30:00Z" == delivery_id("j", slot)
    assert "backfill 2026-10-25 01:30 Europe/London (repeated)" == label(slot)


def test_the_policy_survives_its_payload() -> None:
    """serial is allow with one run going; others carry the job's max_parallel."""
    for name in ("serial", "queue", "skip", "allow", "replace"):
        policy = BackfillPolicy.named(name)
        assert policy == trigger_policy(policy.payload())
        assert name == policy.name
    assert BackfillPolicy(Overlap.ALLOW, 1) == BackfillPolicy.named("serial")
    assert trigger_policy({"inputs": {}}) is None
