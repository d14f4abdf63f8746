"""Timed jobs through the real engine and store, on simulated time.

London changes clocks on 2026-03-29 (01:00 GMT -> 02:00 BST) and 2026-10-25 (02:00 BST ->
01:00 GMT).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from cronduit.core.config import load_config
from cronduit.core.timespec import format_utc
from cronduit.engine.firing import fire_timers
from cronduit.engine.outbox import Outbox
from tests.engine.conftest import Rig

MakeRig = Callable[..., Rig]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


DAILY = """
jobs:
  report:
    run: ./report.sh
    cron: "30 1 * * *"
    time_zone: Europe/London
"""


def test_a_timer_fires_at_its_slot_and_the_run_is_recorded(make_rig: MakeRig) -> None:
    """One slot, one run launched with the slot's label, one success in the history."""
    rig = make_rig(DAILY, utc("2026-06-01T00:00"))
    assert utc("2026-06-01T00:30") == rig.tick()
    rig.at(utc("2026-06-01T00:30"))
    [launched] = rig.runner.launched
    assert "cron 2026-06-01 01:30 Europe/London" == launched.trigger.label
    rig.runner.finish(launched.run.id, 0)
    rig.tick()
    [run] = rig.history("report")
    assert ("success", 1, "timer") == (run.outcome, run.attempts, run.kind)


def test_both_dst_nights_run_the_daily_job_once_a_day(make_rig: MakeRig) -> None:
    """A month across each London DST night: one run per day, at the rule's instants."""
    for start, night, expected in (
        ("2026-03-25T00:00", "2026-03-29", "2026-03-29T01:00:00Z"),
        ("2026-10-21T00:00", "2026-10-25", "2026-10-25T00:30:00Z"),
    ):
        rig = make_rig(DAILY, utc(start))
        rig.run_until(utc(start) + timedelta(days=10))
        slots = [launched.trigger.slot for launched in rig.runner.launched]
        days = [s.date() for s in slots if s is not None]
        assert len(days) == len(set(days)) == 10
        on_night = [format_utc(s) for s in slots if s is not None and s.date().isoformat() == night]
        assert [expected] == on_night


def test_an_outage_runs_only_the_latest_slot_and_records_the_missed(make_rig: MakeRig) -> None:
    """Down across five hourly slots: one late run of the newest; the others in the ledger."""
    rig = make_rig("jobs:\n  tick:\n    run: x\n    cron: '0 * * * *'\n    catch_up: 3h\n",
                   utc("2026-06-01T00:30"))
    rig.at(utc("2026-06-01T05:20"))
    [launched] = rig.runner.launched
    assert utc("2026-06-01T05:00") == launched.trigger.slot
    assert launched.trigger.late
    assert launched.trigger.label.endswith("(late)")
    with rig.store.transaction() as tx:
        ledger = tx.slots("tick", None, None)
    assert [("ran" if s.slot.hour == 5 else "missed") for s in ledger] == [s.fate for s in ledger]
    assert [1, 2, 3, 4, 5] == [s.slot.hour for s in ledger]


def test_a_crash_between_firing_and_routing_loses_nothing(make_rig: MakeRig) -> None:
    """The firing commits; the daemon dies before routing; the restart runs the slot once."""
    rig = make_rig(DAILY, utc("2026-06-01T00:00"))
    rig.clock.set(utc("2026-06-01T00:30"))
    with rig.store.transaction() as tx:  # the firing transaction, then the "crash"
        assert 1 == fire_timers(rig.engine.stage, tx, rig.clock.now(), Outbox())
    assert [] == rig.runner.launched
    rig.restart()
    rig.tick()
    rig.tick()
    assert 1 == len(rig.runner.launched)
    assert utc("2026-06-01T00:30") == rig.runner.launched[0].trigger.slot


def test_a_backward_clock_jump_runs_nothing_twice(make_rig: MakeRig) -> None:
    """After a slot ran, the clock steps back an hour: the slot does not run again."""
    rig = make_rig(DAILY, utc("2026-06-01T00:00"))
    rig.run_until(utc("2026-06-01T00:31"))
    rig.at(utc("2026-06-01T00:00"))
    rig.run_until(utc("2026-06-01T00:31"))
    assert 1 == len(rig.runner.launched)


INTERVAL = "jobs:\n  poll:\n    run: ./poll\n    every: 10m\n"


def test_a_new_interval_job_runs_at_once_and_a_restart_does_not_rerun_it(
    make_rig: MakeRig,
) -> None:
    """every: runs at once; a restart five minutes later runs nothing until it is due."""
    rig = make_rig(INTERVAL, utc("2026-06-01T00:00"))
    rig.tick()
    assert 1 == len(rig.runner.launched)
    rig.runner.finish(rig.runner.launched[0].run.id, 0)
    rig.advance(timedelta(minutes=5))
    rig.restart()
    rig.tick()
    assert 1 == len(rig.runner.launched)
    assert utc("2026-06-01T00:10") == rig.at(utc("2026-06-01T00:09"))


def test_an_interval_outage_gives_each_slot_it_passed_over_a_missed_row(
    make_rig: MakeRig,
) -> None:
    """every 10m, the daemon down from 00:10 until 00:47: the 00:10 slot runs late, 00:20,
    00:30 and 00:40 are missed with the reason, and the next run is at 00:57."""
    rig = make_rig(INTERVAL, utc("2026-06-01T00:00"))
    rig.tick()
    rig.runner.finish(rig.runner.launched[0].run.id, 0)
    rig.restart()
    rig.at(utc("2026-06-01T00:47"))
    assert [utc("2026-06-01T00:00"), utc("2026-06-01T00:10")] == [
        launched.trigger.slot for launched in rig.runner.launched]
    with rig.store.transaction() as tx:
        ledger = tx.slots("poll", None, None)
    assert [(0, "ran"), (10, "ran"), (20, "missed"), (30, "missed"), (40, "missed")] == [
        (row.slot.minute, row.fate) for row in ledger]
    assert "missed: the timer fired 37m late; an interval job runs once, not a burst" == (
        ledger[-1].reason)
    assert utc("2026-06-01T00:57") == rig.at(utc("2026-06-01T00:50"))


def test_config_edits_follow_the_edit_rules(make_rig: MakeRig) -> None:
    """New timed job waits; edited timing runs its latest slot in the window; removed loses it."""
    rig = make_rig("jobs:\n  a:\n    run: x\n    cron: '0 * * * *'\n", utc("2026-06-01T10:20"))
    rig.tick()
    assert [] == rig.runner.launched  # a new timed job waits for its next slot
    edited = "jobs:\n  a:\n    run: x\n    cron: '15 * * * *'\n"
    changes = rig.engine.apply(load_config(edited, "t.yaml"), rig.clock.now())
    assert ["a: timing changed, timer re-armed for 2026-06-01T10:15:00Z"] == changes
    rig.tick()
    assert [utc("2026-06-01T10:15")] == [x.trigger.slot for x in rig.runner.launched]


def test_removing_a_job_lets_its_run_finish_and_later_triggers_are_unmatched(
    make_rig: MakeRig,
) -> None:
    """A removed job's running run carries on; a trigger for it afterwards is unmatched."""
    rig = make_rig(INTERVAL, utc("2026-06-01T00:00"))
    rig.tick()
    run_id = rig.runner.launched[0].run.id
    rig.restart("jobs:\n  other:\n    run: y\n")
    rig.runner.finish(run_id, 0)
    rig.tick()
    assert ["success"] == [r.outcome for r in rig.history("poll")]
    rig.accept("manual/1", "poll", "manual")
    rig.tick()
    with rig.store.transaction() as tx:
        event = tx.event_by_delivery("manual/1")
        assert tx.timers() == []
    assert event is not None
    assert "unmatched" == event.state


def test_jobs_sharing_a_schedule_still_get_their_own_catch_up_decision(
        make_rig: MakeRig) -> None:
    """Jobs with the same cron line share one firing decision per batch, but only when they
    also share the catch-up policy: after a 3-hour outage the 6-hour window runs the latest
    slot late, catch-up off misses it, and each job gets its own trigger and ledger rows."""
    rig = make_rig("""
jobs:
  a: {run: x, cron: "0 * * * *"}
  b: {run: x, cron: "0 * * * *"}
  c: {run: x, cron: "0 * * * *", catch_up: false}
""", utc("2026-06-01T11:30:00"))
    rig.at(utc("2026-06-01T15:10:00"))  # down from before 12:00 until 15:10
    labels = {job: [run.label for run in rig.history(job)] for job in "abc"}
    assert {"a": ["cron 2026-06-01 15:00 UTC (late)"], "b": ["cron 2026-06-01 15:00 UTC (late)"],
            "c": []} == labels
    with rig.store.transaction() as tx:
        fates = {job: [(s.name, s.fate) for s in tx.slots(job, None, None)] for job in "abc"}
    assert fates["a"] == fates["b"]
    assert ("2026-06-01 15:00 UTC", "missed") == fates["c"][-1]


def test_each_job_in_a_batch_gets_its_own_schedules_label(make_rig: MakeRig) -> None:
    """A batch mixes shared decisions (equal schedules), jobs with jitter and other cron lines
    and zones; labels are cached per shared decision, so each job's must still be its own."""
    jobs = "\n".join(
        [f"  same{i}: {{run: x, cron: '0 * * * *'}}" for i in range(3)]
        + [f"  jit{i}: {{run: x, cron: '0 * * * *', jitter: 10m}}" for i in range(3)]
        + ["  paris: {run: x, cron: '0 * * * *', time_zone: Europe/Paris}",
           "  tick: {run: x, every: 30m}"])
    rig = make_rig(f"jobs:\n{jobs}\n", utc("2026-06-01T11:50:00"))
    rig.at(utc("2026-06-01T12:20:00"))  # all due in one tick, late
    labels = {name: [run.label for run in rig.history(name)]
              for name in ("same0", "same2", "jit0", "jit2", "paris", "tick")}
    hour = "cron 2026-06-01 12:00 UTC (late)"
    assert {"same0": [hour], "same2": [hour], "jit0": [hour], "jit2": [hour],
            "paris": ["cron 2026-06-01 14:00 Europe/Paris (late)"],
            "tick": ["every 30m (late)"]} == {name: found[-1:] for name, found in labels.items()}


def test_a_slot_fired_seconds_late_runs_marked_late(make_rig: MakeRig) -> None:
    """Fired 5 s after its slot (past the 1 s tolerance): the run is late in record and label."""
    rig = make_rig(DAILY, utc("2026-06-01T00:00"))
    rig.at(utc("2026-06-01T00:30:05"))
    [run] = rig.history("report")
    assert (True, "cron 2026-06-01 01:30 Europe/London (late)") == (run.late, run.label)


def test_catch_up_false_misses_a_slot_fired_seconds_late(make_rig: MakeRig) -> None:
    """catch_up: false runs only slots fired within the 1 s tolerance: one fired 30 s late does
    not run, and the ledger says why."""
    rig = make_rig(DAILY.replace("time_zone: Europe/London", "time_zone: Europe/London\n"
                                 "    catch_up: false"), utc("2026-06-01T00:00"))
    rig.at(utc("2026-06-01T00:30:30"))
    assert [] == rig.history("report")
    with rig.store.transaction() as tx:
        [slot] = tx.slots("report", None, None)
    assert ("missed", "missed: 30s late and catch-up is off") == (slot.fate, slot.reason)


def all_mode(overlap: str = "queue", max_runs: int = 10) -> str:
    """An hourly job catching up every missed slot of the last 6 hours."""
    return ("jobs:\n  tick:\n    run: x\n    cron: '0 * * * *'\n"
            f"    catch_up: {{window: 6h, mode: all, max_runs: {max_runs}}}\n"
            f"    overlap: {overlap}\n")


def play(rig: Rig) -> int:
    """Let each run exit 0 as it starts, a second later, until nothing more starts; the most
    runs seen going at once."""
    most = 0
    for _ in range(100):
        rig.tick()
        going = rig.runner.running()
        most = max(most, len(going))
        if not going:
            return most
        for run_id in going:
            rig.runner.finish(run_id, 0)
        rig.clock.advance(timedelta(seconds=1))
    raise AssertionError("the runs never ended")


def triggers_of(rig: Rig, job: str) -> list[list[str]]:
    """Per run of ``job``, oldest first, the delivery ids of the triggers it consumed."""
    runs = rig.history(job)
    with rig.store.transaction() as tx:
        return [[event.delivery_id for event in tx.events_of_run(run.id)] for run in runs]


def test_mode_all_runs_each_missed_slot_on_its_own_one_after_another(
        make_rig: MakeRig) -> None:
    """Down across three hourly slots under the default queue: three runs, oldest first, each
    consuming its own slot alone, never two going at once."""
    rig = make_rig(all_mode(), utc("2026-06-01T00:30"))
    rig.clock.set(utc("2026-06-01T03:20"))
    assert 1 == play(rig)
    assert [["slot/tick/2026-06-01T01:00:00Z"], ["slot/tick/2026-06-01T02:00:00Z"],
            ["slot/tick/2026-06-01T03:00:00Z"]] == triggers_of(rig, "tick")
    assert [("success", True)] * 3 == [(run.outcome, run.late) for run in rig.history("tick")]


def test_mode_all_under_allow_also_runs_the_missed_slots_one_after_another(
        make_rig: MakeRig) -> None:
    """overlap allow: the caught-up slots still run one at a time, oldest first."""
    rig = make_rig(all_mode("allow"), utc("2026-06-01T00:30"))
    rig.clock.set(utc("2026-06-01T03:20"))
    assert 1 == play(rig)
    assert 3 == len(triggers_of(rig, "tick"))


def test_mode_all_runs_at_most_max_runs_slots(make_rig: MakeRig) -> None:
    """Down across five slots with max_runs 3: the three newest run, one by one; the two
    oldest are missed in the ledger."""
    rig = make_rig(all_mode(max_runs=3), utc("2026-06-01T00:30"))
    rig.clock.set(utc("2026-06-01T05:20"))
    assert 1 == play(rig)
    assert [[f"slot/tick/2026-06-01T0{hour}:00:00Z"] for hour in (3, 4, 5)] == triggers_of(
        rig, "tick")
    with rig.store.transaction() as tx:
        fates = [(s.slot.hour, s.fate) for s in tx.slots("tick", None, None)]
    assert [(1, "missed"), (2, "missed"), (3, "ran"), (4, "ran"), (5, "ran")] == fates


def test_mode_all_under_skip_skips_the_slots_that_meet_the_first_run(
        make_rig: MakeRig) -> None:
    """overlap skip still applies: the oldest slot runs, the two behind it meet it and are
    recorded as skipped runs."""
    rig = make_rig(all_mode("skip"), utc("2026-06-01T00:30"))
    rig.clock.set(utc("2026-06-01T03:20"))
    play(rig)
    assert [("success", ""), ("skipped", "a run was already going (overlap: skip)"),
            ("skipped", "a run was already going (overlap: skip)")] == [
        (run.outcome, run.reason) for run in rig.history("tick")]


def test_mode_all_under_replace_cancels_the_run_and_the_rest_run_as_one(
        make_rig: MakeRig) -> None:
    """overlap replace still applies: the oldest slot's run is cancelled by the next; the two
    newer slots then run together, as replacements arriving during a cancel do."""
    rig = make_rig(all_mode("replace"), utc("2026-06-01T00:30"))
    rig.clock.set(utc("2026-06-01T03:20"))
    play(rig)
    assert ["cancelled", "success"] == [run.outcome for run in rig.history("tick")]
    assert [["slot/tick/2026-06-01T01:00:00Z"], ["slot/tick/2026-06-01T02:00:00Z",
                                                 "slot/tick/2026-06-01T03:00:00Z"]] == (
        triggers_of(rig, "tick"))


SKIP_GAP = DAILY + "    dst: {gap: skip}\n"


def test_both_dst_nights_leave_the_times_the_rule_removes_in_the_ledger(
        make_rig: MakeRig) -> None:
    """gap skip and fold once: 29 March's 01:30 (which does not exist) and 25 October's
    repeated 01:30 each have a missed row with its reason, written as the timer passes them,
    beside the days that ran."""
    for start, end, ran, removed in (
        ("2026-03-27T00:00", "2026-03-31T00:00", 3,
         ("2026-03-29T01:00:00Z", "2026-03-29 01:30 Europe/London",
          "missed: 01:30 does not exist on 2026-03-29 (dst gap: skip)")),
        ("2026-10-23T00:00", "2026-10-27T00:00", 4,
         ("2026-10-25T01:30:00Z", "2026-10-25 01:30 Europe/London (repeated)",
          "missed: 01:30 repeated, only its first occurrence runs (dst fold: once)")),
    ):
        rig = make_rig(SKIP_GAP, utc(start))
        rig.run_until(utc(end))
        with rig.store.transaction() as tx:
            ledger = [(format_utc(s.slot), s.name, s.fate, s.reason)
                      for s in tx.slots("report", None, None)]
        assert [("missed", *removed)] == [(fate, slot, name, reason)
                                          for slot, name, fate, reason in ledger
                                          if fate == "missed"]
        assert ran == sum(1 for row in ledger if row[2] == "ran") == len(rig.runner.launched)


def test_an_interval_edited_in_the_second_its_timer_fired_leaves_one_ledger_row(
    make_rig: MakeRig,
) -> None:
    """The edit re-arms the job "at once", inside the second its slot just fired: that is
    the same slot (named to the second), so the ledger holds one row and one run, not two
    rows that print alike."""
    start = utc("2026-06-01T12:00:00") + timedelta(milliseconds=300)
    rig = make_rig("jobs:\n  tick: {run: ./tick, every: 1h}\n", start)
    rig.run_until(start)
    edited = load_config("jobs:\n  tick: {run: ./tick, every: 2h}\n", "test.yaml")
    rig.clock.advance(timedelta(milliseconds=400))
    rig.engine.apply(edited, rig.clock.now())
    rig.run_until(rig.clock.now())
    with rig.store.transaction() as tx:
        rows = tx.slots("tick", None, None)
    assert ([utc("2026-06-01T12:00:00")], 1) == ([row.slot for row in rows],
                                                 len(rig.history("tick")))
