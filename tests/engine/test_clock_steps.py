"""The engine when the wall clock steps under a run going (an NTP step back, a resumed VM)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from tests.engine.conftest import Rig

MakeRig = Callable[..., Rig]

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
JOB = "jobs:\n  j:\n    run: 'true'\n"


def test_a_run_that_ends_after_the_clock_stepped_back_never_lasts_less_than_nothing(
        make_rig: MakeRig) -> None:
    """Its duration is wall-clock time, so a step back an hour would make it negative: the
    log says 0.0s instead, and the record keeps both instants as the clock gave them."""
    rig = make_rig(JOB, T0)
    rig.accept("manual/1", "j", "manual")
    rig.tick()
    [launched] = rig.runner.launched
    rig.clock.set(T0 - timedelta(hours=1))
    rig.runner.finish(launched.run.id, 0)
    rig.tick()
    assert [f"run j {launched.run.id}: success after 0.0s"] == [
        line for line in rig.lines if "success" in line]
    [run] = rig.history("j")
    assert (T0, T0 - timedelta(hours=1)) == (run.started_at, run.finished_at)
