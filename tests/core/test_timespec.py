"""Slots, their names and labels, delivery ids and jitter: cron, ``at`` and ``every`` as
one vocabulary (``cronduit.core.timespec``).

London changes clocks on 2026-03-29 (01:00 GMT -> 02:00 BST: 01:00-01:59 does not exist)
and on 2026-10-25 (02:00 BST -> 01:00 GMT: 01:00-01:59 happens twice, first at 00:xxZ, then
at 01:xxZ). The expected values are the ones docs/time.md gives for those nights.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronduit.core.config import load_config
from cronduit.core.cron import DstPolicy
from cronduit.core.enums import DstFold, DstGap
from cronduit.core.timespec import (
    CalendarSchedule,
    IntervalSchedule,
    RemovedSlot,
    Slot,
    at_schedule,
    cron_schedule,
    format_utc,
    jitter_offset,
    next_jittered,
    schedule_of,
)

LONDON = "Europe/London"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def after(schedule: CalendarSchedule, instant: str, count: int) -> list[tuple[str, str]]:
    """The next ``count`` slots strictly after ``instant`` (UTC), as (isoformat, name)."""
    return [(slot.instant.isoformat(), slot.name)
            for slot in islice(schedule.slots_after(utc(instant)), count)]


def first(schedule: CalendarSchedule, instant: str) -> Slot:
    """The first slot strictly after ``instant`` (UTC)."""
    return next(schedule.slots_after(utc(instant)))


# -- format_utc and delivery ids ------------------------------------------------------------


def test_an_instant_is_spelled_in_utc_to_the_second() -> None:
    """Whatever its offset; the fraction is dropped, and a year before 1000 is padded."""
    assert ["2026-03-29T01:00:00Z", "0999-01-02T03:04:05Z"] == [
        format_utc(datetime(2026, 3, 29, 2, 0, 0, 900_000, tzinfo=timezone(timedelta(hours=1)))),
        format_utc(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ]


def test_slot_delivery_ids_name_the_job_and_the_utc_instant() -> None:
    """The delivery id makes a slot's acceptance idempotent."""
    schedule = cron_schedule("0 9 * * *")
    slot = next(schedule.slots_after(utc("2026-06-01T00:00")))
    assert "slot/report/2026-06-01T09:00:00Z" == slot.delivery_id("report")
    assert "cron 2026-06-01 09:00 UTC" == schedule.label(slot)


def test_slots_order_by_their_instant() -> None:
    """The instant is a slot's identity, so it is what sorts them, whatever the names say."""
    early, late = Slot(utc("2026-10-25T00:30"), "z"), Slot(utc("2026-10-25T01:30"), "a")
    assert [early, late] == sorted([late, early])


# -- calendar schedules: slots and their names ------------------------------------------------


def test_a_fixed_time_in_the_spring_gap_runs_after_it_named_by_the_time_it_runs() -> None:
    """01:30 does not exist on 29 March: the slot is 01:00Z, read 02:00 on the clock."""
    assert [("2026-03-28T01:30:00+00:00", "2026-03-28 01:30 Europe/London"),
            ("2026-03-29T01:00:00+00:00", "2026-03-29 02:00 Europe/London"),
            ("2026-03-30T00:30:00+00:00", "2026-03-30 01:30 Europe/London"),
            ] == after(cron_schedule("30 1 * * *", LONDON), "2026-03-28T00:00", 3)


def test_the_second_pass_of_a_repeated_hour_is_named_repeated() -> None:
    """A wildcard job ticks through both 01:00s; the second says so, so the catch-up rule
    "never the name that ran last" cannot swallow it."""
    assert [("2026-10-25T00:00:00+00:00", "2026-10-25 01:00 Europe/London"),
            ("2026-10-25T01:00:00+00:00", "2026-10-25 01:00 Europe/London (repeated)"),
            ("2026-10-25T02:00:00+00:00", "2026-10-25 02:00 Europe/London"),
            ] == after(cron_schedule("0 * * * *", LONDON), "2026-10-24T23:30", 3)


def test_a_fixed_time_runs_a_repeated_time_once_unless_its_policy_says_twice() -> None:
    """``fold: once`` (the default) keeps the first 01:30; ``fold: twice`` both."""
    twice = DstPolicy(DstGap.RUN, DstFold.TWICE)
    assert [("2026-10-25T00:30:00+00:00", "2026-10-25 01:30 Europe/London"),
            ("2026-10-26T01:30:00+00:00", "2026-10-26 01:30 Europe/London"),
            ] == after(cron_schedule("30 1 * * *", LONDON), "2026-10-24T12:00", 2)
    assert [("2026-10-25T00:30:00+00:00", "2026-10-25 01:30 Europe/London"),
            ("2026-10-25T01:30:00+00:00", "2026-10-25 01:30 Europe/London (repeated)"),
            ] == after(cron_schedule("30 1 * * *", LONDON, twice), "2026-10-24T12:00", 2)


def test_after_is_strict_from_includes_the_instant_and_before_walks_back() -> None:
    """At a slot's own instant: ``slots_after`` starts at the next, ``slots_from`` at it,
    ``slots_before`` at the one before, ``latest_at_or_before`` is it."""
    schedule = cron_schedule("30 1 * * *", LONDON)
    at = utc("2026-03-29T01:00")
    latest = schedule.latest_at_or_before(at)
    assert (utc("2026-03-30T00:30"), at, utc("2026-03-28T01:30"), at) == (
        next(schedule.slots_after(at)).instant, next(schedule.slots_from(at)).instant,
        next(schedule.slots_before(at)).instant, latest and latest.instant)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4 * 366 * 86_400_000_000), st.sampled_from(["*/7 * * * *", "30 1 * * *",
                                                                  "0 9 * * 1-5"]))
def test_next_after_is_the_first_slot_after(micros: int, expression: str) -> None:
    """The quick lookup the timers use agrees with walking the slots, fractions included."""
    schedule = cron_schedule(expression, LONDON)
    instant = utc("2025-01-01T00:00") + timedelta(microseconds=micros)
    assert next(schedule.slots_after(instant)) == schedule.next_after(instant)


def test_a_calendar_label_names_the_timing_and_the_wall_clock_slot() -> None:
    """``cron`` or ``at``, then the slot's name, as run records and the history show it."""
    cron = cron_schedule("30 1 * * *", LONDON)
    at = at_schedule((317,))
    assert ["cron 2026-10-25 01:30 Europe/London", "at 2026-06-01 05:17 UTC"] == [
        cron.label(first(cron, "2026-10-24T12:00")), at.label(first(at, "2026-06-01T00:00"))]


# -- times the DST rule removes ---------------------------------------------------------------


def test_a_time_in_a_skipped_gap_is_removed_at_the_clock_change_with_its_reason() -> None:
    """``gap: skip``: 01:30 on 29 March has no slot; the ledger row sits at the change
    (01:00Z, a microsecond on, so no slot can share its key), named as the job names it."""
    schedule = cron_schedule("30 1 * * *", LONDON, DstPolicy(DstGap.SKIP, DstFold.ONCE))
    ran = next(schedule.slots_from(utc("2026-03-28T01:30")))
    following = next(schedule.slots_after(ran.instant))
    [removed] = schedule.removed_between(ran, following)
    assert (utc("2026-03-30T00:30"), "2026-03-29T01:00:00Z", "2026-03-29 01:30 Europe/London",
            "missed: 01:30 does not exist on 2026-03-29 (dst gap: skip)") == (
        following.instant, format_utc(removed.slot.instant), removed.slot.name, removed.reason)
    assert utc("2026-03-29T01:00") < removed.slot.instant < utc("2026-03-29T01:00:01")


def test_the_repeated_pass_fold_once_drops_is_removed_at_its_own_instant() -> None:
    """``fold: once``: the second 01:30 on 25 October is recorded as missed, at 01:30Z."""
    schedule = cron_schedule("30 1 * * *", LONDON)
    ran = next(schedule.slots_from(utc("2026-10-25T00:30")))
    assert (RemovedSlot(Slot(utc("2026-10-25T01:30") + timedelta(microseconds=1),
                             "2026-10-25 01:30 Europe/London (repeated)"),
                        "missed: 01:30 repeated, only its first occurrence runs (dst fold: once)"),
            ) == schedule.removed_between(ran, next(schedule.slots_after(ran.instant)))


def test_nothing_is_removed_where_the_policy_keeps_every_time_or_no_slot_follows() -> None:
    """``gap: run`` with ``fold: twice`` removes nothing; nor does the end of a schedule."""
    keeps = cron_schedule("30 1 * * *", LONDON, DstPolicy(DstGap.RUN, DstFold.TWICE))
    ran = next(keeps.slots_from(utc("2026-10-25T00:30")))
    once = cron_schedule("30 1 * * *", LONDON)
    assert ((), ()) == (keeps.removed_between(ran, next(keeps.slots_after(ran.instant))),
                        once.removed_between(ran, None))


# -- at ---------------------------------------------------------------------------------------


def test_at_times_are_utc_unless_a_zone_is_given() -> None:
    """at: ['05:17'] is 05:17 UTC; with time_zone it is 05:17 on that wall clock."""
    plain = at_schedule((5 * 60 + 17,))
    assert utc("2026-06-01T05:17") == next(plain.slots_after(utc("2026-06-01T00:00"))).instant
    london = at_schedule((5 * 60 + 17,), "Europe/London")
    assert utc("2026-06-01T04:17") == next(london.slots_after(utc("2026-06-01T00:00"))).instant


def test_an_at_time_follows_the_fixed_time_dst_rules() -> None:
    """at 01:30 in London runs after the spring gap, as ``30 1 * * *`` does."""
    assert [("2026-03-29T01:00:00+00:00", "2026-03-29 02:00 Europe/London")] == after(
        at_schedule((90,), LONDON), "2026-03-28T12:00", 1)


@pytest.mark.parametrize("minutes", [(), (1440,), (-1,)])
def test_at_needs_times_within_a_day(minutes: tuple[int, ...]) -> None:
    """No times, or one outside 00:00-23:59, is refused before any slot is asked for."""
    with pytest.raises(ValueError, match="between 00:00 and 23:59"):
        at_schedule(minutes)


# -- every --------------------------------------------------------------------------------------


def test_an_interval_slot_is_the_second_it_falls_due_in() -> None:
    """A firing due at 12:00:00.75 meets the slot of 12:00:00, named to the second in UTC,
    labelled by the interval alone."""
    schedule = IntervalSchedule(1800)
    slot = schedule.slot_at(utc("2026-06-01T12:00:00.750"))
    assert (Slot(utc("2026-06-01T12:00"), "2026-06-01 12:00:00 UTC"), "every 30m",
            "slot/tick/2026-06-01T12:00:00Z") == (
        slot, schedule.label(slot), slot.delivery_id("tick"))


# -- jitter -------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7200), st.integers(0, 10**9), st.sampled_from(["a", "backup", "etl-9"]))
def test_jitter_is_stable_and_never_reaches_the_next_slot(jitter: int, seconds: int,
                                                          job: str) -> None:
    """The offset depends only on job and slot, and stays below the room to the next slot."""
    schedule = cron_schedule("*/5 * * * *")
    slot = next(schedule.slots_after(datetime.fromtimestamp(seconds, UTC)))
    due = next_jittered(schedule, job, slot, jitter)
    assert due == next_jittered(schedule, job, slot, jitter)
    assert slot.instant <= due < slot.instant + timedelta(minutes=5)
    assert jitter_offset(job, slot.instant, jitter, None) < jitter


def test_jitter_spreads_jobs_that_share_a_slot() -> None:
    """A thousand jobs at one instant land on most of the 300 seconds of a 5m jitter."""
    slot = utc("2026-06-01T00:00")
    assert 250 < len({jitter_offset(f"job-{n}", slot, 300, None) for n in range(1000)})


def test_no_jitter_or_no_room_for_it_leaves_the_slot_on_time() -> None:
    """Zero jitter, or a second or less to spread over (none at all: a next slot at the
    same instant), adds nothing."""
    schedule = cron_schedule("0 9 * * *")
    slot = first(schedule, "2026-06-01T00:00")
    assert (0, 0, 0, 0, slot.instant) == (
        jitter_offset("a", slot.instant, 0, None), jitter_offset("a", slot.instant, 300, 1),
        jitter_offset("a", slot.instant, 300, 0), jitter_offset("a", slot.instant, 1, None),
        next_jittered(schedule, "a", slot, 0))


# -- schedule_of ----------------------------------------------------------------------------------


def test_each_timing_of_a_job_gives_its_schedule_and_no_timing_none() -> None:
    """cron and ``at`` in the job's zone and DST policy, ``every`` as an interval."""
    config = load_config("""
jobs:
  nightly: {run: x, cron: "30 1 * * *", time_zone: Europe/London, dst: {gap: skip}}
  early:   {run: x, at: ["05:17"], time_zone: Europe/London}
  tick:    {run: x, every: 30m}
  by-hand: {run: x}
""", "c.yaml")
    nightly, early, tick, by_hand = (schedule_of(config.jobs[name]) for name in
                                     ("nightly", "early", "tick", "by-hand"))
    assert isinstance(nightly, CalendarSchedule)
    assert isinstance(early, CalendarSchedule)
    assert (["2026-03-30T00:30:00+00:00"], ["2026-06-01T04:17:00+00:00"], 1800, None) == (
        [slot.instant.isoformat() for slot in islice(nightly.slots_after(
            utc("2026-03-28T12:00")), 1)],
        [first(early, "2026-06-01T00:00").instant.isoformat()],
        tick.seconds if isinstance(tick, IntervalSchedule) else tick, by_hand)
