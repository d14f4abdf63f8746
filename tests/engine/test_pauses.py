"""Pausing and resuming through the real engine and store, on simulated time."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from cronduit.core.catchup import COUNTED_PAUSED, LISTED_MISSED
from cronduit.engine.firing import fire_timers
from cronduit.engine.outbox import Outbox
from cronduit.intake import pausing as control
from cronduit.ports import SlotRecord
from tests.engine.conftest import Rig

MakeRig = Callable[..., Rig]

HOURLY = """
jobs:
  tick:
    run: x
    cron: "0 * * * *"
    catch_up: 6h
"""


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def pause(rig: Rig, job: str = "tick", until: str | None = None) -> None:
    with rig.store.transaction() as tx:
        control.pause(tx, job, "disk full", "ana", until, rig.clock.now())


def resume(rig: Rig, job: str = "tick") -> None:
    with rig.store.transaction() as tx:
        control.resume(tx, job, "bo", rig.clock.now())


def ledger(rig: Rig, job: str = "tick") -> list[SlotRecord]:
    with rig.store.transaction() as tx:
        return tx.slots(job, None, None)


def fates(rig: Rig, job: str = "tick") -> list[tuple[str, str, str]]:
    return [(record.slot.strftime("%H:%M"), record.fate, record.reason)
            for record in ledger(rig, job)]


def test_a_paused_job_fires_no_timer_and_its_slots_are_missed_as_paused(make_rig: MakeRig
                                                                        ) -> None:
    """Three hourly slots pass while paused: no run, three ledger rows missed (paused)."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    pause(rig)
    rig.run_until(utc("2026-06-01T03:30"))
    assert [] == rig.runner.launched
    assert [("01:00", "missed", "paused"), ("02:00", "missed", "paused"),
            ("03:00", "missed", "paused")] == fates(rig)


def test_a_webhook_on_a_paused_job_is_recorded_as_a_skipped_run(make_rig: MakeRig) -> None:
    """Accepted, routed, and recorded as skipped with the reason paused; nothing launched."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    pause(rig)
    rig.accept("hook-1", "tick", "webhook")
    rig.tick()
    [run] = rig.history("tick")
    assert ("webhook", "skipped", "paused") == (run.kind, run.outcome, run.reason)
    assert [] == rig.runner.launched


def test_triggers_waiting_when_the_job_is_paused_become_skipped_runs(make_rig: MakeRig
                                                                     ) -> None:
    """A webhook queued behind a run is skipped (paused) at the engine's next look, and the
    run's end starts nothing."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    rig.accept("hook-1", "tick", "webhook")
    rig.tick()
    rig.accept("hook-2", "tick", "webhook")
    rig.tick()
    pause(rig)
    rig.tick()
    [first] = rig.runner.launched
    rig.runner.finish(first.run.id, 0)
    rig.tick()
    assert [("success", ""), ("skipped", "paused")] == [
        (run.outcome, run.reason) for run in rig.history("tick")]
    assert 1 == len(rig.runner.launched)


def test_resuming_makes_up_nothing_and_the_next_slot_runs(make_rig: MakeRig) -> None:
    """Paused over 01:00 and 02:00, resumed at 02:30: nothing runs until the 03:00 slot."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    pause(rig)
    rig.run_until(utc("2026-06-01T02:30"))
    resume(rig)
    rig.tick()
    assert [] == rig.runner.launched
    rig.run_until(utc("2026-06-01T03:10"))
    assert [utc("2026-06-01T03:00")] == [launched.trigger.slot
                                         for launched in rig.runner.launched]


def test_a_resume_while_the_daemon_is_down_still_makes_up_nothing(make_rig: MakeRig) -> None:
    """Paused, daemon down, resumed at 03:30 (from the CLI), daemon back at 04:10: the held
    slots stay missed (paused); only 04:00, after the resume, runs (late, as after an
    outage)."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    pause(rig)
    rig.clock.set(utc("2026-06-01T03:30"))
    resume(rig)
    rig.at(utc("2026-06-01T04:10"))
    assert [utc("2026-06-01T04:00")] == [launched.trigger.slot
                                         for launched in rig.runner.launched]
    assert [("01:00", "missed", "paused"), ("02:00", "missed", "paused"),
            ("03:00", "missed", "paused"), ("04:00", "ran", "")] == fates(rig)


def test_an_interval_job_resumes_on_its_rhythm_without_a_make_up_run(make_rig: MakeRig
                                                                     ) -> None:
    """every 1h, paused over one slot, resumed between slots: the next run is the next slot
    of its rhythm, not one at the resume."""
    rig = make_rig("jobs:\n  beat:\n    run: x\n    every: 1h\n", utc("2026-06-01T00:00"))
    rig.tick()
    [first] = rig.runner.launched  # a new interval job runs at once
    rig.runner.finish(first.run.id, 0)
    pause(rig, "beat")
    rig.run_until(utc("2026-06-01T01:30"))
    resume(rig, "beat")
    rig.run_until(utc("2026-06-01T01:59"))
    assert 1 == len(rig.runner.launched)
    rig.run_until(utc("2026-06-01T02:00"))
    assert utc("2026-06-01T02:00") == rig.runner.launched[-1].trigger.slot
    assert ("missed", "paused") == (ledger(rig, "beat")[1].fate, ledger(rig, "beat")[1].reason)


def test_a_pause_expires_by_itself_and_the_expiry_is_audited(make_rig: MakeRig) -> None:
    """until 2h: the engine wakes at the expiry, resumes as operator cronduit, and the next
    slot runs."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    pause(rig, until="2h")
    assert utc("2026-06-01T01:00") == rig.tick()
    rig.run_until(utc("2026-06-01T02:30"))
    with rig.store.transaction() as tx:
        assert [] == tx.pauses()
        newest = tx.audit(1)[0]
    assert ("resume", "cronduit", "tick") == (newest.action, newest.operator, newest.job)
    assert "expired" == json.loads(newest.detail)["why"]
    assert [] == rig.runner.launched
    rig.run_until(utc("2026-06-01T03:00"))
    assert [utc("2026-06-01T03:00")] == [launched.trigger.slot
                                         for launched in rig.runner.launched]


def test_work_waiting_through_a_pause_that_expired_unseen_is_not_skipped(make_rig: MakeRig
                                                                         ) -> None:
    """The tick reads the pauses once, and again after one expired: a pause committed and
    over before the engine's next look (its ``until`` passed meanwhile) skips none of the
    work that waited through it, while a pause still in force skips what waits for its job,
    both in that one tick."""
    rig = make_rig("jobs:\n  tick:\n    run: x\n  hook:\n    run: y\n",
                   utc("2026-06-01T00:30"))
    for job in ("tick", "tick", "hook", "hook"):  # one run going and one waiting, each
        rig.accept(f"manual/{job}/{len(rig.runner.launched)}-{rig.clock.now()}", job,
                   "manual")
        rig.tick()
        rig.clock.advance(timedelta(seconds=1))
    assert ["tick", "hook"] == [launched.job.name for launched in rig.runner.launched]
    pause(rig, until="2026-06-01T01:00:00Z")
    pause(rig, "hook")
    rig.clock.set(utc("2026-06-01T01:00"))  # within the runs' deadlines
    rig.tick()
    with rig.store.transaction() as tx:
        assert ["hook"] == [pause.job for pause in tx.pauses()]
    assert [] == [run.id for run in rig.history("tick") if run.outcome == "skipped"]
    assert ["paused"] == [run.reason for run in rig.history("hook") if run.outcome == "skipped"]
    rig.runner.finish(rig.runner.launched[0].run.id, 0)
    rig.tick()
    assert ["tick", "hook", "tick"] == [launched.job.name for launched in rig.runner.launched]


def test_the_daemon_sleeps_no_longer_than_a_pause_lasts(make_rig: MakeRig) -> None:
    """A pause's expiry is something due: the tick says when."""
    rig = make_rig("jobs:\n  hook:\n    run: x\n", utc("2026-06-01T00:30"))
    assert rig.tick() is None
    pause(rig, "hook", until="2026-06-01T05:00:00Z")
    assert utc("2026-06-01T05:00") == rig.tick()


def test_removing_a_job_from_the_config_clears_its_pause(make_rig: MakeRig) -> None:
    """The apply that removes the job ends its pause, audited; put back, it is not paused."""
    rig = make_rig(HOURLY + "  other:\n    run: y\n", utc("2026-06-01T00:30"))
    pause(rig)
    rig.restart("jobs:\n  other:\n    run: y\n")
    with rig.store.transaction() as tx:
        assert [] == tx.pauses()
        newest = tx.audit(1)[0]
    assert ("resume", "cronduit") == (newest.action, newest.operator)
    assert "removed from the config" == json.loads(newest.detail)["why"]
    rig.restart(HOURLY)
    rig.run_until(utc("2026-06-01T01:00"))
    assert 1 == len(rig.runner.launched)


def test_a_pause_committed_before_the_tick_that_fires_the_slot_wins(make_rig: MakeRig) -> None:
    """Pause and slot at the same instant: the tick reads the pause in its firing transaction,
    so the slot is missed (paused) and nothing runs."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    rig.clock.set(utc("2026-06-01T01:00"))
    pause(rig)
    rig.tick()
    assert [] == rig.runner.launched
    assert [("01:00", "missed", "paused")] == fates(rig)


def test_a_slot_fired_before_the_pause_commits_is_routed_as_a_skipped_run(make_rig: MakeRig
                                                                          ) -> None:
    """The firing committed first (the slot is in the ledger as ran), then the pause: the
    routing transaction reads the pause, so the trigger becomes a skipped run (paused)."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    rig.clock.set(utc("2026-06-01T01:00"))
    with rig.store.transaction() as tx:
        assert 1 == fire_timers(rig.engine.stage, tx, rig.clock.now(), Outbox())
    pause(rig)
    rig.tick()
    assert [] == rig.runner.launched
    [run] = rig.history("tick")
    assert ("timer", "skipped", "paused") == (run.kind, run.outcome, run.reason)


def test_a_long_pause_counts_the_oldest_missed_slots_in_one_row(make_rig: MakeRig) -> None:
    """A minutely job paused with the daemon down for a day: the newest slots are listed,
    the rest counted in one row whose reason says paused."""
    rig = make_rig("jobs:\n  m:\n    run: x\n    cron: '* * * * *'\n", utc("2026-06-01T00:00"))
    pause(rig, "m")
    rig.at(utc("2026-06-02T00:00"))
    rows = ledger(rig, "m")
    assert LISTED_MISSED + 1 == len(rows)
    assert (COUNTED_PAUSED, 24 * 60 - LISTED_MISSED) == (rows[0].reason, rows[0].count)
    assert {"paused"} == {row.reason for row in rows[1:]}
    assert [] == rig.runner.launched


def test_a_paused_job_keeps_its_timer_armed_for_the_next_slot(make_rig: MakeRig) -> None:
    """The timer re-arms past each held slot, so resuming needs no re-arming."""
    rig = make_rig(HOURLY, utc("2026-06-01T00:30"))
    pause(rig)
    rig.run_until(utc("2026-06-01T01:30"))
    with rig.store.transaction() as tx:
        timer = tx.get_timer("tick")
    assert timer is not None
    assert utc("2026-06-01T02:00") == timer.due_at
    assert timedelta(0) < timer.due_at - rig.clock.now()


def test_paused_on_start_pauses_a_new_job_once_and_never_again(make_rig: MakeRig) -> None:
    """A job first seen with paused_on_start starts paused, by cronduit; once resumed, a
    restart does not pause it again, and a job that existed before is never paused by it."""
    config = """
jobs:
  fresh:  {run: x, every: 1h, paused_on_start: true}
  plain:  {run: x, every: 1h}
"""
    rig = make_rig(config, utc("2026-06-01T12:00:00"))
    with rig.store.transaction() as tx:
        started = tx.active_pause("fresh")
        assert tx.active_pause("plain") is None
    assert started is not None
    assert ("cronduit", "paused_on_start: the config starts this job paused") == (
        started.operator, started.reason)
    rig.tick()
    assert [] == rig.history("fresh")  # no run while paused
    resume(rig, "fresh")
    rig.restart()
    with rig.store.transaction() as tx:
        assert tx.active_pause("fresh") is None
    rig.restart(config.replace("plain:  {run: x, every: 1h}",
                               "plain:  {run: x, every: 1h, paused_on_start: true}"))
    with rig.store.transaction() as tx:
        assert tx.active_pause("plain") is None  # it ran before: not new


def test_a_pause_lets_the_run_going_finish_and_skips_what_arrives_meanwhile(
        make_rig: MakeRig) -> None:
    """Pausing is about new work: the run going finishes with its own outcome (it is not
    cancelled), a trigger arriving while paused is a skipped run, and after the run ends
    nothing starts until the job is resumed."""
    rig = make_rig("""
settings:
  webhook_secret: HOOK
jobs:
  tick: {run: x, every: 1h, webhook: true}
""", utc("2026-06-01T12:00:00"))
    rig.tick()
    (going,) = rig.runner.running()
    pause(rig)
    rig.accept("hook/1", "tick", "webhook")
    rig.tick()
    rig.runner.finish(going, 0)
    rig.tick()
    outcomes = [(run.kind, run.outcome, run.reason) for run in rig.history("tick")]
    assert [("timer", "success", ""), ("webhook", "skipped", "paused")] == outcomes
    assert [] == rig.runner.running()
