"""A config with every number at its upper bound is served: the engine fires, retries,
times out and prunes with the largest values ``check`` accepts, on a real store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from cronduit.core.enums import Outcome
from cronduit.core.limits import MAX_DURATION
from tests.engine.conftest import Rig

MakeRig = Callable[..., Rig]
T0 = datetime(2026, 6, 1, tzinfo=UTC)
AT_THE_BOUNDS = """
settings: {kept_runs: 1000000, timeout: 3650d, catch_up: 3650d}
jobs:
  rare: {run: x, every: 3650d}
  patient:
    run: x
    timeout: 3650d
    retry: {attempts: 100, backoff: 1s, max_backoff: 1d}
  sleepy:
    run: x
    retry: {attempts: 2, backoff: 3649d, max_backoff: 3650d}
  spread:
    run: x
    cron: "0 0 29 2 *"
    jitter: 3650d
    catch_up: {window: 3650d, mode: all, max_runs: 10000}
    overlap: {default: allow, max_parallel: 1000}
"""


def test_a_config_at_every_bound_fires_retries_and_prunes(make_rig: MakeRig) -> None:
    """The interval job runs at once and re-arms ten years on; a retry sleeps almost ten
    years; a hint past any deadline ends its run; the leap-day job waits for its slot, jittered
    by less than the four years to the next; pruning asks the store to keep a million runs."""
    rig = make_rig(AT_THE_BOUNDS, T0)
    rig.accept("by-hand", "patient", "manual")
    rig.accept("by-hand-too", "sleepy", "manual")
    rig.tick()
    for launched in rig.runner.launched:
        hint = MAX_DURATION if launched.run.job == "patient" else None
        rig.runner.finish(launched.run.id, 75 if hint else 1, retry_after=hint)
    due = rig.tick()
    with rig.store.transaction() as tx:
        timers = {timer.job: timer.due_at for timer in tx.timers()}
    [patient], [sleeping] = rig.history("patient"), rig.history("sleepy")
    assert (Outcome.FAILURE, True) == (
        patient.outcome, "no time left before the deadline to retry" in patient.reason)
    assert ("backoff", T0 + timedelta(days=3649)) == (sleeping.state, sleeping.next_attempt_at)
    assert [Outcome.FAILURE] == [run.outcome for run in rig.history("rare")]
    assert T0 + timedelta(seconds=MAX_DURATION) == timers["rare"]
    assert T0 < timers["spread"] < datetime(2028, 2, 29, tzinfo=UTC)  # jitter below the room
    assert due is not None
