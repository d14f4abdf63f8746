"""A process that owns a real :class:`ProcessRunner` and holds the node's lease, as a daemon
on a PostgreSQL state does: a test freezes it and watches what happens to its run.

    python -m tests.helpers.lease_owner STATE LEASE

It holds the lease, launches one run of ``sleep 60`` and prints ``launched PID START_TIME``,
then renews every third of ``LEASE`` seconds, each renewal taken as having succeeded in
the database, and prints ``renewed SENT_AT`` (``time.monotonic()``) after each.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from cronduit.core.config.loader import load_config
from cronduit.core.payload import EMPTY
from cronduit.executor import lease_deadline
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import Event, Run

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def own(state: Path, lease: float) -> None:
    """Launch the run under the lease, then keep renewing it."""
    config_path = state / "cronduit.yaml"
    job = load_config("jobs:\n  j: {run: 'sleep 60', every: 1h}\n", str(config_path)).jobs["j"]
    run = Run(id="r1", job="j", kind="schedule", label="x", state="running", created_at=T0)
    event = Event(1, "d1", "j", "schedule", "x", None, False, EMPTY, None, T0, "consumed", "r1")
    runner = ProcessRunner(StatePaths(state), config_path, dict, lambda: None)
    runner.attach(asyncio.get_running_loop())
    runner.hold_lease(lease_deadline(time.monotonic(), lease))
    [started] = runner.launch_many([(run, job, event, 1)])
    assert isinstance(started, tuple)
    print("launched", *started, flush=True)
    while True:
        await asyncio.sleep(lease / 3)
        sent_at = time.monotonic()  # before the renewal would be sent
        runner.hold_lease(lease_deadline(sent_at, lease))
        print("renewed", sent_at, flush=True)


if __name__ == "__main__":
    asyncio.run(own(Path(sys.argv[1]), float(sys.argv[2])))
