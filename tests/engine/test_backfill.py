"""Backfill on the engine: each slot its own run in order, overrides, idempotence, records."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from cronduit import intake
from cronduit.core.backfill import BackfillPolicy, window_slots
from cronduit.core.timespec import cron_schedule
from cronduit.intake import RequestRefused
from cronduit.ports import Pause
from tests.engine.conftest import Rig

MakeRig = Callable[..., Rig]
T0 = datetime(2026, 10, 26, 12, 0, tzinfo=UTC)
CONFIG = """\
jobs:
  j:
    run: ./j
    cron: "*/30 * * * *"
    time_zone: Europe/London
"""


def backfill(rig: Rig, policy: str = "serial", start: str = "2026-10-25T00:00Z",
             end: str = "2026-10-25T02:00Z") -> list[intake.Accepted]:
    """Accept the slots of the fall-back night's window, as ``job backfill`` does."""
    job = rig.engine.config.jobs["j"]
    slots = window_slots(cron_schedule("*/30 * * * *", "Europe/London"),
                         datetime.fromisoformat(start), datetime.fromisoformat(end),
                         rig.clock.now())
    with rig.store.transaction() as tx:
        return intake.accept_backfill(tx, job, slots, BackfillPolicy.named(policy),
                                      window=(slots[0].instant, slots[-1].instant),
                                      operator="ana", now=rig.clock.now())


def finish_all(rig: Rig) -> None:
    """Play the runs: each launched attempt exits 0, until nothing more starts."""
    for _ in range(100):
        rig.tick()
        going = rig.runner.running()
        if not going:
            return
        for run_id in going:
            rig.runner.finish(run_id, 0)
        rig.clock.advance(timedelta(seconds=1))
    raise AssertionError("the runs never ended")


def backfill_runs(rig: Rig) -> list[str]:
    return [run.label for run in rig.history("j") if run.kind == "manual"]


def test_each_slot_runs_as_its_own_run_one_after_another(make_rig: MakeRig) -> None:
    """Default: five slots of the fall-back night, five runs, oldest first, never two going."""
    rig = make_rig(CONFIG, T0)
    backfill(rig)
    rig.tick()
    assert 1 == len(rig.runner.running())
    finish_all(rig)
    assert [
        "backfill 2026-10-25 01:00 Europe/London",
        "backfill 2026-10-25 01:30 Europe/London",
        "backfill 2026-10-25 01:00 Europe/London (repeated)",
        "backfill 2026-10-25 01:30 Europe/London (repeated)",
        "backfill 2026-10-25 02:00 Europe/London",
    ] == backfill_runs(rig)
    assert all(run.outcome == "success" for run in rig.history("j"))


def test_overlap_queue_coalesces_the_slots_behind_the_first(make_rig: MakeRig) -> None:
    """--overlap queue: the first slot runs, the other four wait and run as one."""
    rig = make_rig(CONFIG, T0)
    backfill(rig, "queue")
    finish_all(rig)
    runs = [run for run in rig.history("j") if run.kind == "manual"]
    assert 2 == len(runs)
    with rig.store.transaction() as tx:
        assert 4 == len(tx.events_of_run(runs[1].id))


def test_overlap_allow_runs_the_slots_beside_each_other(make_rig: MakeRig) -> None:
    """--overlap allow: up to the job's max_parallel (4 by default) at once."""
    rig = make_rig(CONFIG, T0)
    backfill(rig, "allow")
    rig.tick()
    assert 4 == len(rig.runner.running())


def test_overlap_skip_records_the_slots_meeting_a_run_as_skipped(make_rig: MakeRig) -> None:
    """--overlap skip: the first runs, the others meet it and are skipped."""
    rig = make_rig(CONFIG, T0)
    backfill(rig, "skip")
    finish_all(rig)
    assert ["success", "skipped", "skipped", "skipped", "skipped"] == [
        run.outcome for run in rig.history("j")]


def test_the_same_backfill_twice_accepts_and_runs_nothing_new(make_rig: MakeRig) -> None:
    """Delivery ids backfill/<job>/<UTC slot>: the second request creates no trigger."""
    rig = make_rig(CONFIG, T0)
    assert 5 == sum(one.created for one in backfill(rig))
    finish_all(rig)
    again = backfill(rig)
    finish_all(rig)
    assert [False] * 5 == [one.created for one in again]
    assert 5 == len(rig.history("j"))


def test_a_backfill_trigger_carries_its_mark_and_slot(make_rig: MakeRig) -> None:
    """The trigger the runner gets: manual, with backfill true and the slot instant."""
    rig = make_rig(CONFIG, T0)
    backfill(rig)
    rig.tick()
    trigger = rig.runner.launched[0].trigger
    assert "backfill/j/2026-10-25T00:00:00Z" == trigger.delivery_id
    assert datetime(2026, 10, 25, 0, 0, tzinfo=UTC) == trigger.slot
    assert json.loads(trigger.payload.text)["backfill"] is True
    assert "ana" == rig.history("j")[0].operator


def test_a_paused_job_refuses_a_backfill_naming_who_paused_it(make_rig: MakeRig) -> None:
    """409, with the pause's operator and reason; nothing accepted."""
    rig = make_rig(CONFIG, T0)
    with rig.store.transaction() as tx:
        tx.insert_pause(Pause("j", "disk full", "bo", T0))
    with pytest.raises(RequestRefused, match=r"paused by bo since .*: disk full") as refused:
        backfill(rig)
    assert 409 == refused.value.status
    with rig.store.transaction() as tx:
        assert [] == tx.new_events(10)


def test_a_backfill_is_written_to_the_audit_log(make_rig: MakeRig) -> None:
    """Operator, window, policy, slots and how many were new."""
    rig = make_rig(CONFIG, T0)
    backfill(rig)
    with rig.store.transaction() as tx:
        entry = tx.audit(1)[0]
    assert ("backfill", "ana", "j") == (entry.action, entry.operator, entry.job)
    assert {"start": "2026-10-25T00:00:00Z", "end": "2026-10-25T02:00:00Z",
            "overlap": "serial", "slots": 5, "new": 5} == json.loads(entry.detail)
