"""The DST nights, named: what cronduit runs when the clocks change.

Clock changes used below (2026):
  Europe/London      29 Mar 01:00 GMT -> 02:00 BST;   25 Oct 02:00 BST -> 01:00 GMT
  America/New_York    8 Mar 02:00 EST -> 03:00 EDT;    1 Nov 02:00 EDT -> 01:00 EST
  Australia/Lord_Howe 5 Apr 02:00 +11 -> 01:30 +1030;  4 Oct 02:00 +1030 -> 02:30 +11
  America/Havana      8 Mar 00:00 CST -> 01:00 CDT;    1 Nov 01:00 CDT -> 00:00 CST
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronduit import Cron, DstPolicy
from cronduit.core.cron import CronError, CronExpression, cron_plan
from cronduit.core.enums import DstFold, DstGap
from tests.core.strategies import ZONES, cron_texts, instants_near_transitions


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def next_slots(
    expr: str, tz: str, after: str, count: int, dst: DstPolicy | None = None
) -> list[str]:
    cron = Cron(expr, tz, dst or DstPolicy())
    return [d.isoformat() for d in itertools.islice(cron.after(utc(after)), count)]


def test_london_spring_gap_runs_a_fixed_time_job_at_the_first_instant_after_it() -> None:
    """01:30 does not exist on 29 March; the job runs at 02:00 BST (01:00Z), once."""
    assert next_slots("30 1 * * *", "Europe/London", "2026-03-28T00:00", 3) == [
        "2026-03-28T01:30:00+00:00",
        "2026-03-29T01:00:00+00:00",
        "2026-03-30T00:30:00+00:00",
    ]


def test_several_matches_inside_one_gap_collapse_into_one_run() -> None:
    """01:00 and 01:30 both fall in the gap; one run at 02:00 BST, then 02:00 is the same one."""
    assert next_slots("0,30 1,2 * * *", "Europe/London", "2026-03-29T00:00", 3) == [
        "2026-03-29T01:00:00+00:00",
        "2026-03-29T01:30:00+00:00",
        "2026-03-30T00:00:00+00:00",
    ]


def test_gap_skip_drops_the_nonexistent_time() -> None:
    """With dst.gap=skip, the day whose 01:30 does not exist has no run."""
    assert next_slots("30 1 * * *", "Europe/London", "2026-03-28T12:00", 2,
                      DstPolicy(gap=DstGap.SKIP)) == [
        "2026-03-30T00:30:00+00:00",
        "2026-03-31T00:30:00+00:00",
    ]


SECOND_SUNDAY_OF_MARCH_0230 = "30 2 8-14 3 */7"
"""02:30 on the second Sunday of March (``*/7`` is Sunday alone, and starting with ``*`` it
makes the day fields both apply): always inside New York's spring-forward gap since 2007."""


def test_gap_skip_that_removes_every_slot_is_refused_as_never_running() -> None:
    """Every time the expression names falls in a gap that gap: skip removes: it would never
    run, so it is refused like an expression that can never match a date."""
    with pytest.raises(CronError) as caught:
        Cron(SECOND_SUNDAY_OF_MARCH_0230, "America/New_York", DstPolicy(gap=DstGap.SKIP))
    assert ("'30 2 8-14 3 */7' never runs in America/New_York with dst gap: skip: every time "
            "it names falls in a spring-forward gap") == str(caught.value)


def test_the_same_expression_runs_with_gap_run_or_in_a_zone_without_that_gap() -> None:
    """gap: run moves the slot to 03:00; London changes its clocks on another Sunday."""
    start = utc("2026-01-01T00:00")
    assert [utc("2026-03-08T07:00"), utc("2026-03-08T02:30")] == [
        next(Cron(SECOND_SUNDAY_OF_MARCH_0230, "America/New_York").after(start)),
        next(Cron(SECOND_SUNDAY_OF_MARCH_0230, "Europe/London",
                  DstPolicy(gap=DstGap.SKIP)).after(start)),
    ]


def test_london_fall_back_runs_a_fixed_time_job_at_its_first_occurrence() -> None:
    """01:30 happens twice on 25 October; the job runs at 01:30 BST (00:30Z) only."""
    assert next_slots("30 1 * * *", "Europe/London", "2026-10-24T12:00", 2) == [
        "2026-10-25T00:30:00+00:00",
        "2026-10-26T01:30:00+00:00",
    ]


def test_fold_twice_runs_both_occurrences() -> None:
    """With dst.fold=twice, 01:30 BST and 01:30 GMT both run."""
    assert next_slots("30 1 * * *", "Europe/London", "2026-10-24T12:00", 3,
                      DstPolicy(fold=DstFold.TWICE)) == [
        "2026-10-25T00:30:00+00:00",
        "2026-10-25T01:30:00+00:00",
        "2026-10-26T01:30:00+00:00",
    ]


def test_a_wildcard_job_ticks_through_both_repeated_hours() -> None:
    """'0 * * * *' follows real time: 01:00 BST and 01:00 GMT both run."""
    assert next_slots("0 * * * *", "Europe/London", "2026-10-24T22:30", 5) == [
        "2026-10-24T23:00:00+00:00",
        "2026-10-25T00:00:00+00:00",
        "2026-10-25T01:00:00+00:00",
        "2026-10-25T02:00:00+00:00",
        "2026-10-25T03:00:00+00:00",
    ]


def test_a_wildcard_job_simply_resumes_after_the_gap() -> None:
    """'*/30 * * * *' has no 01:00 or 01:30 on 29 March; it goes from 00:30 GMT to 02:00 BST."""
    assert next_slots("*/30 * * * *", "Europe/London", "2026-03-29T00:00", 3) == [
        "2026-03-29T00:30:00+00:00",
        "2026-03-29T01:00:00+00:00",
        "2026-03-29T01:30:00+00:00",
    ]


def test_a_wildcard_minute_in_a_fixed_hour_follows_real_time() -> None:
    """'*/15 1 * * *' runs eight times on the fall-back night and not at all in the gap."""
    fall = next_slots("*/15 1 * * *", "Europe/London", "2026-10-25T00:00", 8)
    assert fall == [
        "2026-10-25T00:15:00+00:00",
        "2026-10-25T00:30:00+00:00",
        "2026-10-25T00:45:00+00:00",
        "2026-10-25T01:00:00+00:00",
        "2026-10-25T01:15:00+00:00",
        "2026-10-25T01:30:00+00:00",
        "2026-10-25T01:45:00+00:00",
        "2026-10-26T01:00:00+00:00",
    ]
    spring = next_slots("*/15 1 * * *", "Europe/London", "2026-03-28T12:00", 2)
    assert spring == ["2026-03-30T00:00:00+00:00", "2026-03-30T00:15:00+00:00"]


def test_new_york_spring_gap() -> None:
    """02:30 does not exist on 8 March; the job runs at 03:00 EDT (07:00Z)."""
    assert next_slots("30 2 * * *", "America/New_York", "2026-03-07T12:00", 3) == [
        "2026-03-08T07:00:00+00:00",
        "2026-03-09T06:30:00+00:00",
        "2026-03-10T06:30:00+00:00",
    ]


def test_new_york_fall_back() -> None:
    """01:30 happens twice on 1 November; the job runs at 01:30 EDT (05:30Z) only."""
    assert next_slots("30 1 * * *", "America/New_York", "2026-10-31T12:00", 2) == [
        "2026-11-01T05:30:00+00:00",
        "2026-11-02T06:30:00+00:00",
    ]


def test_an_every_other_hour_job_is_fixed_time() -> None:
    """'0 1-23/2 * * *' is fixed-time: New York's 01:00 runs once on the fall-back night."""
    assert next_slots("0 1-23/2 * * *", "America/New_York", "2026-11-01T04:30", 3) == [
        "2026-11-01T05:00:00+00:00",
        "2026-11-01T08:00:00+00:00",
        "2026-11-01T10:00:00+00:00",
    ]


def test_lord_howe_half_hour_shift() -> None:
    """Lord Howe moves by 30 minutes: 02:15 is skipped in October and repeated in April."""
    assert next_slots("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00", 2) == [
        "2026-10-03T15:30:00+00:00",  # 02:30 +11, the first instant after the gap
        "2026-10-04T15:15:00+00:00",
    ]
    assert next_slots("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00", 2) == [
        "2026-04-04T14:45:00+00:00",  # 01:45 +11, first occurrence
        "2026-04-05T15:15:00+00:00",
    ]


def test_havana_midnight_gap_moves_a_midnight_job_to_one_oclock() -> None:
    """Havana's clocks jump from 00:00 to 01:00 on 8 March; the midnight job runs at 01:00 CDT."""
    assert next_slots("0 0 * * *", "America/Havana", "2026-03-07T12:00", 2) == [
        "2026-03-08T05:00:00+00:00",
        "2026-03-09T04:00:00+00:00",
    ]


def test_before_walks_backwards_through_a_dst_night() -> None:
    """before() yields the same slots as after(), in reverse."""
    cron = Cron("*/20 1,2 * * *", "Europe/London")
    forward = list(itertools.islice(cron.after(utc("2026-10-24T12:00")), 12))
    backward = list(itertools.islice(cron.before(forward[-1]), 11))
    assert list(reversed(forward[:-1])) == backward


@pytest.mark.parametrize("tz", ["UTC", "Etc/GMT-5", "Europe/London"])
def test_after_is_strict(tz: str) -> None:
    """A slot exactly at the start instant is not 'after' it."""
    cron = Cron("0 9 * * *", tz)
    first = next(cron.after(utc("2026-01-01T00:00")))
    assert first < next(cron.after(first))
    assert first == next(cron.after(first - timedelta(microseconds=1)))
    assert first == next(cron.before(first + timedelta(microseconds=1)))


def test_naive_instants_are_refused() -> None:
    """An instant without a zone is ambiguous, so the API refuses it."""
    with pytest.raises(ValueError, match="timezone-aware"):
        next(Cron("* * * * *").after(datetime(2026, 1, 1)))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), zone=st.sampled_from(ZONES), text=cron_texts,
       gap=st.sampled_from(list(DstGap)), fold=st.sampled_from(list(DstFold)))
def test_next_after_agrees_with_the_general_walk(data: st.DataObject, zone: str, text: str,
                                                gap: DstGap, fold: DstFold) -> None:
    """``next_after`` is a same-day shortcut of ``after``: the two never disagree, least of
    all on a DST night or the day after one (where the shortcut must step aside)."""
    try:
        plan = cron_plan(CronExpression.parse(text), zone, DstPolicy(gap, fold))
    except CronError:
        return
    start = data.draw(instants_near_transitions(zone))
    instant = int(start.timestamp())
    for _ in range(5):
        expected = next(plan.after(instant), None)
        assert plan.next_after(instant) == expected
        if expected is None:
            return
        instant = expected


# -- wall-clock times the DST rule removes (the slot ledger records them as missed) ----------


def removed(expr: str, tz: str, start: str, end: str, dst: DstPolicy | None = None
            ) -> list[tuple[str, int, str, bool]]:
    """The removed times between two instants: (key instant, tag, wall time, gap?)."""
    plan = Cron(expr, tz, dst or DstPolicy()).plan
    low, high = int(utc(start).timestamp()), int(utc(end).timestamp())
    return [(datetime.fromtimestamp(r.instant, UTC).isoformat(), r.tag,
             f"{r.day} {r.time_of_day // 3600:02d}:{r.time_of_day // 60 % 60:02d}", r.gap)
            for r in plan.removed_between(low, high)]


def test_gap_skip_removes_each_nonexistent_time_at_the_clock_change() -> None:
    """London, 29 March, gap skip: 01:00 and 01:30 do not exist; both are listed at 01:00Z,
    the instant of the change, in wall-clock order; 02:00 exists and is a real slot."""
    assert removed("0,30 1,2 * * *", "Europe/London", "2026-03-28T12:00", "2026-03-30T12:00",
                   DstPolicy(gap=DstGap.SKIP)) == [
        ("2026-03-29T01:00:00+00:00", 1, "2026-03-29 01:00", True),
        ("2026-03-29T01:00:00+00:00", 2, "2026-03-29 01:30", True),
    ]


def test_fold_once_removes_the_second_pass_of_a_repeated_time() -> None:
    """London, 25 October, fold once (the default): 01:30 GMT (01:30Z) is removed."""
    assert removed("30 1 * * *", "Europe/London", "2026-10-24T12:00", "2026-10-26T12:00") == [
        ("2026-10-25T01:30:00+00:00", 1, "2026-10-25 01:30", False),
    ]


def test_nothing_is_removed_where_the_rule_runs_every_time() -> None:
    """gap run moves a time rather than removing it, fold twice runs both passes, and a
    wildcard job follows real time: none of them removes a wall-clock time."""
    everything = DstPolicy(gap=DstGap.RUN, fold=DstFold.TWICE)
    for start, end in (("2026-03-28T12:00", "2026-03-30T12:00"),
                       ("2026-10-24T12:00", "2026-10-26T12:00")):
        assert [] == removed("30 1 * * *", "Europe/London", start, end, everything)
        assert [] == removed("*/15 1 * * *", "Europe/London", start, end,
                             DstPolicy(gap=DstGap.SKIP))
    assert [] == removed("30 1 * * *", "UTC", "2026-01-01T00:00", "2027-01-01T00:00")


def test_removed_times_of_new_york_lord_howe_and_havana() -> None:
    """Other zones' nights: New York's 02:30 gap, Lord Howe's half-hour fold, Havana's gap at
    midnight."""
    skip = DstPolicy(gap=DstGap.SKIP)
    assert removed("30 2 * * *", "America/New_York", "2026-03-07T12:00", "2026-03-09T12:00",
                   skip) == [("2026-03-08T07:00:00+00:00", 1, "2026-03-08 02:30", True)]
    assert removed("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00",
                   "2026-04-06T00:00") == [
        ("2026-04-04T15:15:00+00:00", 1, "2026-04-05 01:45", False)]
    assert removed("0 0 * * *", "America/Havana", "2026-03-07T12:00", "2026-03-09T12:00",
                   skip) == [("2026-03-08T05:00:00+00:00", 1, "2026-03-08 00:00", True)]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), zone=st.sampled_from(ZONES), text=cron_texts,
       gap=st.sampled_from(list(DstGap)), fold=st.sampled_from(list(DstFold)))
def test_removed_times_fall_between_slots_and_add_up(data: st.DataObject, zone: str,
                                                    text: str, gap: DstGap,
                                                    fold: DstFold) -> None:
    """Asked between each pair of neighbouring slots, the removed times add up to those of
    the whole span, and each lies at or after the earlier slot and before the later one (so
    its ledger key, a few microseconds past a whole second, is never a slot's); the kept
    answers of ``removed_from`` agree, asked forward or back."""
    try:
        plan = cron_plan(CronExpression.parse(text), zone, DstPolicy(gap, fold))
    except CronError:
        return
    start = int(data.draw(instants_near_transitions(zone)).timestamp())
    slots = [start, *itertools.islice(plan.after(start), 6)]
    pieces = []
    for low, high in itertools.pairwise(slots):
        found = plan.removed_between(low, high)
        assert all(low <= r.instant < high and r.tag >= 1 for r in found)
        assert found == plan.removed_from(datetime.fromtimestamp(low, UTC),
                                          datetime.fromtimestamp(high, UTC))
        pieces += found
    assert plan.removed_between(slots[0], slots[-1]) == pieces
    # asked again from the start, after the kept answers moved on: still the same
    assert pieces[: len(plan.removed_between(slots[0], slots[1]))] == plan.removed_from(
        datetime.fromtimestamp(slots[0], UTC), datetime.fromtimestamp(slots[1], UTC))
