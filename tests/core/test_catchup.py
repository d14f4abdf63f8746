"""Catch-up, the slot ledger's decisions and re-arming, on simulated time.

London changes clocks on 2026-03-29 (01:00 GMT -> 02:00 BST) and 2026-10-25 (02:00 BST ->
01:00 GMT); the DST tests below run across those nights.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from cronduit.core.catchup import (
    LISTED_MISSED,
    OVER_MAX_RUNS,
    PAUSED,
    SAME_NAME,
    SUPERSEDED,
    Missed,
    arm_edited,
    arm_new,
    decide_firing,
    decide_held_firing,
    decide_interval_firing,
    published_payload,
)
from cronduit.core.cron import DstPolicy
from cronduit.core.enums import CatchUpMode, DstGap, Overlap, TriggerKind
from cronduit.core.payload import SERIAL_CATCH_UP
from cronduit.core.timespec import (
    CalendarSchedule,
    IntervalSchedule,
    Slot,
    cron_schedule,
)
from tests.helpers.policies import catch_up

HOUR = timedelta(hours=1)
SECOND = timedelta(seconds=1)
PROMPT = timedelta(milliseconds=200)
"""How late an ordinary firing is: well inside the scheduling tolerance."""


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_an_on_time_firing_publishes_its_slot_and_rearms_for_the_next() -> None:
    """The ordinary case: one slot, on time, not late; the timer moves one slot on."""
    schedule = cron_schedule("0 9 * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    firing = decide_firing(schedule, armed, None, armed.instant + PROMPT, catch_up())
    assert [(p.slot.instant, p.late) for p in firing.publish] == [(utc("2026-06-01T09:00"), False)]
    assert firing.missed == ()
    assert utc("2026-06-02T09:00") == firing.next_due
    assert "2026-06-01 09:00 UTC" == firing.last_name


def test_the_catch_up_window_edge_is_strict() -> None:
    """Exactly at the window is too late; one second inside runs; one second outside does not."""
    schedule = cron_schedule("0 9 * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    policy = catch_up(window=6 * 3600)
    for offset, runs in ((6 * HOUR - SECOND, True), (6 * HOUR, False), (6 * HOUR + SECOND, False)):
        firing = decide_firing(schedule, armed, None, armed.instant + offset, policy)
        assert runs == bool(firing.publish), offset
        if not runs:
            assert [m.slot for m in firing.missed] == [armed]
            assert "outside the catch-up window of 6h" in firing.missed[0].reason


def test_several_missed_slots_run_only_the_latest_and_record_the_rest() -> None:
    """An outage over four hourly slots: the newest runs late; the rest are missed, with reasons."""
    schedule = cron_schedule("0 * * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:30")))
    now = utc("2026-06-01T04:10")
    firing = decide_firing(schedule, armed, None, now, catch_up(window=2 * 3600))
    assert [p.slot.instant for p in firing.publish] == [utc("2026-06-01T04:00")]
    assert [p.late for p in firing.publish] == [True]
    assert [(m.slot.instant.hour, m.reason) for m in firing.missed] == [
        (1, "missed: 3h10m late, outside the catch-up window of 2h"),
        (2, "missed: 2h10m late, outside the catch-up window of 2h"),
        (3, SUPERSEDED),
    ]
    assert utc("2026-06-01T05:00") == firing.next_due


def test_mode_all_runs_every_slot_in_the_window_oldest_first_up_to_max_runs() -> None:
    """mode: all with max_runs 2 runs the two newest in-window slots, oldest first."""
    schedule = cron_schedule("0 * * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:30")))
    policy = catch_up(window=3 * 3600, mode=CatchUpMode.ALL, max_runs=2)
    firing = decide_firing(schedule, armed, None, utc("2026-06-01T04:10"), policy)
    assert [p.slot.instant.hour for p in firing.publish] == [3, 4]
    reasons = {m.slot.instant.hour: m.reason for m in firing.missed}
    assert OVER_MAX_RUNS == reasons[2]
    assert "outside the catch-up window" in reasons[1]


def test_a_mode_all_catch_up_of_several_slots_is_serial() -> None:
    """mode all publishing three slots is serial; latest mode, or one slot on time, is not."""
    schedule = cron_schedule("0 * * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:30")))
    all_mode = catch_up(window=6 * 3600, mode=CatchUpMode.ALL)
    outage = decide_firing(schedule, armed, None, utc("2026-06-01T03:20"), all_mode)
    latest = decide_firing(schedule, armed, None, utc("2026-06-01T03:20"), catch_up())
    on_time = decide_firing(schedule, armed, None, armed.instant + PROMPT, all_mode)
    assert (3, True) == (len(outage.publish), outage.serial)
    assert (False, False) == (latest.serial, on_time.serial)


def test_a_serial_catch_up_carries_its_own_policy_except_under_skip_and_replace() -> None:
    """Under queue and allow its triggers run one at a time (allow, at most one run going);
    under skip and replace they follow the job's policy; a firing that is not serial never
    carries one."""
    schedule = cron_schedule("0 * * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:30")))
    all_mode = catch_up(window=6 * 3600, mode=CatchUpMode.ALL)
    serial = decide_firing(schedule, armed, None, utc("2026-06-01T03:20"), all_mode)
    plain = decide_firing(schedule, armed, None, utc("2026-06-01T03:20"), catch_up())
    own = {policy.value: published_payload(serial, policy).own_policy(TriggerKind.TIMER)
           for policy in Overlap}
    assert {"queue": SERIAL_CATCH_UP, "allow": SERIAL_CATCH_UP, "skip": None,
            "replace": None} == own
    assert (Overlap.ALLOW, 1) == (SERIAL_CATCH_UP.overlap, SERIAL_CATCH_UP.max_parallel)
    assert "{}" == published_payload(plain, Overlap.QUEUE).text


def test_catch_up_false_runs_on_time_slots_only() -> None:
    """A window of 0 means never late: a firing within the tolerance runs, 5 s late does not."""
    schedule = cron_schedule("0 9 * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    never = catch_up(window=0)
    assert decide_firing(schedule, armed, None, armed.instant + PROMPT, never).publish
    late = decide_firing(schedule, armed, None, armed.instant + 5 * SECOND, never)
    assert () == late.publish
    assert ["missed: 5s late and catch-up is off"] == [m.reason for m in late.missed]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 120_000))
def test_catch_up_false_is_never_looser_than_the_smallest_window(late_ms: int) -> None:
    """However late the firing, catch_up: false runs the slot only if a 1s window would."""
    schedule = cron_schedule("0 9 * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    now = armed.instant + timedelta(milliseconds=late_ms)
    smallest = decide_firing(schedule, armed, None, now, catch_up(window=1))
    never = decide_firing(schedule, armed, None, now, catch_up(window=0))
    assert bool(smallest.publish) >= bool(never.publish)


def test_a_slot_fired_past_the_tolerance_is_marked_late() -> None:
    """Within the 1 s tolerance a slot is on time; from it on it is late, 2 s and 30 s alike."""
    schedule = cron_schedule("0 9 * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    marks = {}
    for offset in (PROMPT, SECOND, 2 * SECOND, 30 * SECOND):
        firing = decide_firing(schedule, armed, None, armed.instant + offset, catch_up())
        marks[offset.total_seconds()] = [p.late for p in firing.publish]
    assert {0.2: [False], 1.0: [True], 2.0: [True], 30.0: [True]} == marks


def test_an_interval_slot_fired_past_the_tolerance_is_marked_late() -> None:
    """every: a firing 5 s after its slot is late, one 200 ms after it is not."""
    schedule = IntervalSchedule(600)
    armed = utc("2026-06-01T00:00")
    prompt = decide_interval_firing(schedule, armed, armed + PROMPT)
    late = decide_interval_firing(schedule, armed, armed + 5 * SECOND)
    assert ([False], [True]) == ([p.late for p in prompt.publish],
                                 [p.late for p in late.publish])


def test_catch_up_true_has_no_limit() -> None:
    """catch_up: true runs the latest slot however late."""
    schedule = cron_schedule("0 9 * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    firing = decide_firing(schedule, armed, None, utc("2026-09-01T00:00"),
                           catch_up(window=None))
    assert [p.slot.instant for p in firing.publish] == [utc("2026-08-31T09:00")]


def test_the_slot_whose_name_ran_last_is_not_run_again() -> None:
    """A slot whose wall-clock name is the one that ran last is missed (the DST name rule)."""
    schedule = cron_schedule("30 1 * * *", "Europe/London")
    armed = next(schedule.slots_after(utc("2026-10-24T12:00")))
    firing = decide_firing(schedule, armed, armed.name, armed.instant + SECOND, catch_up())
    assert () == firing.publish
    assert [(armed, SAME_NAME)] == [(m.slot, m.reason) for m in firing.missed
                                    if "dst fold" not in m.reason]


def test_a_firing_replayed_from_the_same_row_gives_the_same_answer() -> None:
    """Crash replay: deciding again from the row the store still holds repeats the decision."""
    schedule = cron_schedule("*/5 * * * *", "Europe/London")
    armed = next(schedule.slots_after(utc("2026-10-25T00:00")))
    now = utc("2026-10-25T01:17")
    first = decide_firing(schedule, armed, None, now, catch_up())
    again = decide_firing(schedule, armed, None, now, catch_up())
    assert first == again
    assert first.next_slot is not None
    after = decide_firing(schedule, first.next_slot, first.last_name, now, catch_up())
    assert () == after.publish


def test_both_dst_nights_run_the_daily_job_once_each() -> None:
    """Simulating a month of firings around each London DST night runs 01:30 once per day."""
    for start in ("2026-03-20T00:00", "2026-10-15T00:00"):
        schedule = cron_schedule("30 1 * * *", "Europe/London")
        armed = next(schedule.slots_after(utc(start)))
        last_name = None
        ran: list[datetime] = []
        for _ in range(20):
            firing = decide_firing(schedule, armed, last_name, armed.instant + SECOND,
                                   catch_up())
            ran += [p.slot.instant for p in firing.publish]
            last_name = firing.last_name
            assert firing.next_slot is not None
            armed = firing.next_slot
        days = [d.astimezone(schedule.plan.zone).date() for d in ran]
        assert len(set(days)) == len(days) == 20


GAP_SKIP = DstPolicy(gap=DstGap.SKIP)
MICRO = timedelta(microseconds=1)


def test_a_firing_records_the_time_the_gap_removes_with_its_reason() -> None:
    """gap skip: the firing of 28 March, re-arming for 30 March, records 01:30 on 29 March
    (which does not exist) as missed, listed at the clock change (01:00Z)."""
    schedule = cron_schedule("30 1 * * *", "Europe/London", GAP_SKIP)
    armed = next(schedule.slots_after(utc("2026-03-28T00:00")))
    firing = decide_firing(schedule, armed, None, armed.instant + PROMPT, catch_up())
    assert [Missed(Slot(utc("2026-03-29T01:00") + MICRO, "2026-03-29 01:30 Europe/London"),
                   "missed: 01:30 does not exist on 2026-03-29 (dst gap: skip)")] == list(
        firing.missed)
    assert firing.next_slot is not None
    assert utc("2026-03-30T00:30") == firing.next_slot.instant


def test_a_firing_records_the_second_pass_fold_once_removes() -> None:
    """fold once: the firing at 01:30 BST records 01:30 GMT, the repeated pass, as missed."""
    schedule = cron_schedule("30 1 * * *", "Europe/London")
    armed = next(schedule.slots_after(utc("2026-10-25T00:00")))
    firing = decide_firing(schedule, armed, None, armed.instant + PROMPT, catch_up())
    assert [Missed(Slot(utc("2026-10-25T01:30") + MICRO,
                        "2026-10-25 01:30 Europe/London (repeated)"),
                   "missed: 01:30 repeated, only its first occurrence runs (dst fold: once)")
            ] == list(firing.missed)
    assert [utc("2026-10-25T00:30")] == [p.slot.instant for p in firing.publish]


def test_an_outage_across_the_spring_night_records_the_removed_time_too() -> None:
    """Down from 27 to 30 March: the latest slot runs, the older are missed, and 29 March's
    01:30 (which does not exist) is missed for the DST rule, in its place among them."""
    schedule = cron_schedule("30 1 * * *", "Europe/London", GAP_SKIP)
    armed = next(schedule.slots_after(utc("2026-03-27T00:00")))
    firing = decide_firing(schedule, armed, None, utc("2026-03-30T02:00"), catch_up())
    assert ["2026-03-30 01:30 Europe/London"] == [p.slot.name for p in firing.publish]
    assert [("2026-03-27 01:30 Europe/London",
             "missed: 3d30m late, outside the catch-up window of 6h"),
            ("2026-03-28 01:30 Europe/London",
             "missed: 2d30m late, outside the catch-up window of 6h"),
            ("2026-03-29 01:30 Europe/London",
             "missed: 01:30 does not exist on 2026-03-29 (dst gap: skip)")] == [
        (m.slot.name, m.reason) for m in sorted(firing.missed, key=lambda m: m.slot.instant)]


def test_a_pause_across_the_spring_night_records_the_removed_time_for_the_dst_rule() -> None:
    """Paused from 27 to 30 March: the slots are missed as paused, and 29 March's 01:30 (which
    does not exist) for the DST rule, not for the pause."""
    schedule = cron_schedule("30 1 * * *", "Europe/London", GAP_SKIP)
    armed = next(schedule.slots_after(utc("2026-03-27T00:00")))
    firing = decide_held_firing(schedule, armed, None, utc("2026-03-30T02:00"), None,
                                catch_up())
    assert [("2026-03-27 01:30 Europe/London", PAUSED), ("2026-03-28 01:30 Europe/London", PAUSED),
            ("2026-03-29 01:30 Europe/London",
             "missed: 01:30 does not exist on 2026-03-29 (dst gap: skip)"),
            ("2026-03-30 01:30 Europe/London", PAUSED)] == [
        (m.slot.name, m.reason) for m in sorted(firing.missed, key=lambda m: m.slot.instant)]


def test_a_year_of_firings_gives_every_wall_clock_time_a_fate() -> None:
    """A year of on-time firings of a 01:30 job with gap skip: each day's 01:30 ran or was
    missed for the DST rule, and 25 October's repeated 01:30 was missed too."""
    schedule = cron_schedule("30 1 * * *", "Europe/London", GAP_SKIP)
    armed = next(schedule.slots_after(utc("2026-01-01T00:00")))
    last_name: str | None = None
    fates: dict[str, str] = {}
    while armed.instant < utc("2027-01-01T00:00"):
        firing = decide_firing(schedule, armed, last_name, armed.instant + PROMPT,
                               catch_up())
        fates.update({p.slot.name: "ran" for p in firing.publish})
        fates.update({m.slot.name: m.reason for m in firing.missed})
        last_name = firing.last_name
        assert firing.next_slot is not None
        armed = firing.next_slot
    assert 366 == len(fates)
    assert {"ran": 364, "gap": 1, "fold": 1} == {
        kind: sum(1 for reason in fates.values() if kind in reason)
        for kind in ("ran", "gap", "fold")}
    assert "(dst gap: skip)" in fates["2026-03-29 01:30 Europe/London"]
    assert "(dst fold: once)" in fates["2026-10-25 01:30 Europe/London (repeated)"]


def test_a_wildcard_job_runs_both_repeated_hours_through_firings() -> None:
    """'0 * * * *' fires at 01:00 BST and again at 01:00 GMT: the names differ by '(repeated)'."""
    schedule = cron_schedule("0 * * * *", "Europe/London")
    armed = next(schedule.slots_after(utc("2026-10-24T23:30")))
    last_name = None
    names = []
    for _ in range(3):
        firing = decide_firing(schedule, armed, last_name, armed.instant, catch_up())
        names += [p.slot.name for p in firing.publish]
        last_name = firing.last_name
        assert firing.next_slot is not None
        armed = firing.next_slot
    assert names == [
        "2026-10-25 01:00 Europe/London",
        "2026-10-25 01:00 Europe/London (repeated)",
        "2026-10-25 02:00 Europe/London",
    ]


def test_a_long_outage_lists_the_newest_thousand_and_counts_the_rest() -> None:
    """Ten days of a minutely job missed: 1000 listed one by one, the older ones counted."""
    schedule = cron_schedule("* * * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    now = utc("2026-06-11T00:00:30")
    firing = decide_firing(schedule, armed, None, now, catch_up())
    assert LISTED_MISSED == len(firing.missed)
    assert firing.missed_count is not None
    total = 10 * 24 * 60  # slots from 00:01 on the 1st to 00:00 on the 11th
    assert total - 1 - LISTED_MISSED == firing.missed_count.count
    assert utc("2026-06-01T00:01") == firing.missed_count.first


def test_a_backward_clock_jump_publishes_nothing() -> None:
    """If the clock reads earlier than the armed slot, the firing waits: nothing runs twice."""
    schedule = cron_schedule("0 9 * * *")
    armed = next(schedule.slots_after(utc("2026-06-01T00:00")))
    firing = decide_firing(schedule, armed, "2026-05-31 09:00 UTC", armed.instant - HOUR,
                           catch_up())
    assert () == firing.publish
    assert armed == firing.next_slot


def test_an_interval_outage_yields_one_run_then_rearms_from_now() -> None:
    """every 10m, down for an hour: one late run, next due ten minutes after now."""
    schedule = IntervalSchedule(600)
    armed = utc("2026-06-01T00:00")
    now = utc("2026-06-01T01:03")
    firing = decide_interval_firing(schedule, armed, now)
    assert [(p.slot.instant, p.late) for p in firing.publish] == [(armed, True)]
    assert now + timedelta(minutes=10) == firing.next_due


def test_an_on_time_interval_rearms_from_its_own_slot() -> None:
    """A firing 2s late re-arms N after its slot, so intervals do not drift."""
    schedule = IntervalSchedule(600)
    armed = utc("2026-06-01T00:00")
    firing = decide_interval_firing(schedule, armed, armed + 2 * SECOND)
    assert utc("2026-06-01T00:10") == firing.next_due


def test_new_jobs_arm_per_kind() -> None:
    """A new timed job waits for its next slot; a new interval job runs at once."""
    now = utc("2026-06-01T09:30")
    timed = arm_new(cron_schedule("0 9 * * *"), now)
    assert timed is not None
    assert utc("2026-06-02T09:00") == timed.due
    interval = arm_new(IntervalSchedule(3600), now)
    assert interval is not None
    assert now == interval.due


def test_an_edited_timing_runs_its_latest_slot_inside_the_window() -> None:
    """Edited to a slot one hour past: it runs now; seven hours past: it waits for the next."""
    now = utc("2026-06-01T12:00")
    one_hour = arm_edited(cron_schedule("0 11 * * *"), None, now, catch_up())
    assert one_hour is not None
    assert utc("2026-06-01T11:00") == one_hour.due
    seven_hours = arm_edited(cron_schedule("0 5 * * *"), None, now, catch_up())
    assert seven_hours is not None
    assert utc("2026-06-02T05:00") == seven_hours.due


def test_an_edited_timing_does_not_rerun_the_slot_that_ran_last() -> None:
    """If the latest slot of the new timing has the name that ran last, the timer waits."""
    now = utc("2026-06-01T12:00")
    arming = arm_edited(cron_schedule("0 11 * * *"), "2026-06-01 11:00 UTC", now,
                        catch_up())
    assert arming is not None
    assert utc("2026-06-02T11:00") == arming.due


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 48 * 60), st.integers(1, 12 * 60), st.sampled_from([None, 3600, 21600]))
def test_latest_mode_equals_the_policy_applied_to_the_outage(start_minute: int,
                                                             outage_minutes: int,
                                                             window: int | None) -> None:
    """Catch-up publishes the newest slot of the outage iff it is inside the window."""
    schedule = cron_schedule("*/20 * * * *", "Europe/London")
    origin = utc("2026-10-24T00:00") + timedelta(minutes=start_minute)
    armed = next(schedule.slots_after(origin))
    now = armed.instant + timedelta(minutes=outage_minutes)
    outage = _until(schedule, armed, now)
    firing = decide_firing(schedule, armed, None, now, catch_up(window=window))
    newest = outage[-1]
    inside = window is None or (now - newest.instant).total_seconds() < window
    assert ([newest] if inside else []) == [p.slot for p in firing.publish]
    assert len(outage) == len(firing.publish) + len(firing.missed)


def _until(schedule: CalendarSchedule, armed: Slot, now: datetime) -> list[Slot]:
    slots = [armed]
    for slot in schedule.slots_after(armed.instant):
        if slot.instant > now:
            break
        slots.append(slot)
    return slots


def test_an_interval_armed_inside_a_second_falls_due_on_whole_seconds_after() -> None:
    """Armed at 12:00:00.6 it runs at once, for the slot 12:00:00; the next is due at
    12:00:01.0, the slot it is named for, so its lateness counts from when it was due."""
    armed = utc("2026-06-01T12:00") + timedelta(milliseconds=600)
    firing = decide_interval_firing(IntervalSchedule(1), armed, armed)
    assert utc("2026-06-01T12:00") == firing.publish[0].slot.instant
    assert firing.next_slot is not None
    assert (utc("2026-06-01T12:00:01"), utc("2026-06-01T12:00:01")) == (
        firing.next_due, firing.next_slot.instant)
    after_outage = decide_interval_firing(IntervalSchedule(60), armed,
                                          armed + timedelta(minutes=5, milliseconds=300))
    assert utc("2026-06-01T12:06:00") == after_outage.next_due


def test_an_interval_outage_records_every_slot_it_passes_over_as_missed() -> None:
    """every 10m, down from 00:00 until 01:03: 00:00 runs late, 00:10..01:00 are missed with
    a reason naming how late the timer fired, and the timer re-arms for 01:13."""
    schedule = IntervalSchedule(600)
    armed = utc("2026-06-01T00:00")
    firing = decide_interval_firing(schedule, armed, utc("2026-06-01T01:03"))
    assert [utc("2026-06-01T00:00") + timedelta(minutes=10 * k) for k in range(1, 7)] == [
        missed.slot.instant for missed in firing.missed]
    assert {"missed: the timer fired 1h3m late; an interval job runs once, not a burst"} == {
        missed.reason for missed in firing.missed}
    assert firing.missed_count is None
    assert utc("2026-06-01T01:13") == firing.next_due


def test_an_interval_a_few_seconds_behind_misses_the_seconds_it_skips() -> None:
    """every 1s, stalled 3.5 s: slot 12:00:00 runs, 12:00:01..03 are missed, next 12:00:04."""
    armed = utc("2026-06-01T12:00")
    firing = decide_interval_firing(IntervalSchedule(1), armed, armed + 3.5 * SECOND)
    assert [armed + k * SECOND for k in (1, 2, 3)] == [m.slot.instant for m in firing.missed]
    assert [m.slot.instant.strftime("%Y-%m-%d %H:%M:%S UTC") for m in firing.missed] == [
        m.slot.name for m in firing.missed]
    assert armed + 4 * SECOND == firing.next_due


def test_an_interval_on_time_or_under_a_step_late_misses_nothing() -> None:
    """A firing less than one step behind keeps its rhythm and passes over no slot."""
    armed = utc("2026-06-01T12:00")
    for late in (timedelta(0), PROMPT, 599 * SECOND):
        assert () == decide_interval_firing(IntervalSchedule(600), armed, armed + late).missed


def test_a_month_long_interval_outage_lists_the_newest_and_counts_the_rest() -> None:
    """every 1s, down 30 days: the newest 1000 passed-over slots listed, the other 2,590,999
    counted in one row from the first passed over to the last not listed."""
    armed = utc("2026-06-01T00:00")
    now = armed + timedelta(days=30)
    firing = decide_interval_firing(IntervalSchedule(1), armed, now)
    passed = 30 * 86400
    assert LISTED_MISSED == len(firing.missed)
    assert now == firing.missed[-1].slot.instant
    assert firing.missed_count is not None
    assert (passed - LISTED_MISSED, armed + SECOND, now - LISTED_MISSED * SECOND) == (
        firing.missed_count.count, firing.missed_count.first, firing.missed_count.last)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 2, 5, 60, 3600]), st.integers(0, 5_000_000))
def test_an_interval_firing_gives_every_slot_of_its_rhythm_up_to_now_a_fate(
        every: int, behind_ms: int) -> None:
    """Whatever the lateness: the slot run, the slots missed (listed or counted) and the next
    slot leave no slot of the old rhythm at or before now without a fate, and none twice."""
    armed = utc("2026-06-01T12:00")
    now = armed + timedelta(milliseconds=behind_ms)
    firing = decide_interval_firing(IntervalSchedule(every), armed, now)
    counted = 0 if firing.missed_count is None else firing.missed_count.count
    fates = len(firing.publish) + len(firing.missed) + counted
    assert int((now - armed).total_seconds()) // every + 1 == fates
    instants = [m.slot.instant for m in firing.missed]
    assert len(set(instants)) == len(instants)
    assert firing.next_due is not None
    assert firing.next_due > now


def test_a_paused_interval_job_the_daemon_missed_for_hours_records_each_slot_paused() -> None:
    """every 1h armed 03:00, paused, the daemon down until 06:30: 03:00..06:00 missed as
    paused, nothing published, re-armed an hour after now."""
    schedule = IntervalSchedule(3600)
    armed = schedule.slot_at(utc("2026-06-01T03:00"))
    now = utc("2026-06-01T06:30")
    firing = decide_held_firing(schedule, armed, None, now, None, catch_up())
    assert () == firing.publish
    assert [(utc("2026-06-01T03:00") + k * HOUR, PAUSED) for k in range(4)] == [
        (m.slot.instant, m.reason) for m in firing.missed]
    assert now + HOUR == firing.next_due
