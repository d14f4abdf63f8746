"""A real daemon whose wall clock steps forward and back while it runs, as an NTP step or a
resumed VM does: libfaketime moves the clock of the running process (its monotonic clock
keeps going, as the kernel's does). No slot runs twice; a forward step is an outage."""

from __future__ import annotations

import glob
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronduit.ports import SlotRecord
from cronduit.store.sqlite import SqliteStore
from tests.acceptance.conftest import Deployment

CONFIG = """
jobs:
  tick:
    run: 'echo tick >> ticks.txt'
    every: 2s
  minute:
    run: 'echo minute >> minutes.txt'
    cron: '* * * * *'
"""
AHEAD = 3 * 3600
"""Seconds of the forward step: three hours, inside the default catch-up window of 6h."""
BEHIND = -3600
"""Seconds behind the real clock after the backward step: four hours before the slots
that ran last."""


def libfaketime() -> str:
    """The libfaketime library (Debian's ``faketime`` package); fail under CI without it."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
                   + glob.glob("/usr/lib/faketime/libfaketime.so.1"))
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but libfaketime is missing (apt-get install faketime)")
        pytest.skip("libfaketime is not installed (apt-get install faketime)")
    return found[0]


class SteppedClock:
    """The wall clock of the daemon, as an offset from the real one that the test steps."""

    def __init__(self, folder: Path) -> None:
        self.file = folder / "faketime"
        self.offset = 0
        self.step_to(0)

    def step_to(self, offset: int) -> None:
        self.offset = offset
        self.file.write_text(f"{offset:+d}\n")

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.offset)

    def environment(self) -> dict[str, str]:
        return {"LD_PRELOAD": libfaketime(), "FAKETIME_TIMESTAMP_FILE": str(self.file),
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def ledger(deployment: Deployment, job: str) -> list[SlotRecord]:
    store = SqliteStore(deployment.folder / ".cronduit" / "cronduit.db")
    try:
        with store.transaction() as tx:
            return tx.slots(job, None, None)
    finally:
        store.close()


def heartbeat(deployment: Deployment) -> datetime | None:
    store = SqliteStore(deployment.folder / ".cronduit" / "cronduit.db")
    try:
        with store.transaction() as tx:
            raw = tx.get_meta("daemon")
    finally:
        store.close()
    return None if raw is None else datetime.fromisoformat(json.loads(raw)["heartbeat_at"])


def ran(deployment: Deployment, job: str) -> list[datetime]:
    return sorted(record.slot for record in ledger(deployment, job) if record.fate == "ran")


def test_a_wall_clock_stepped_forward_then_back_runs_no_slot_twice(
        deployment: Deployment) -> None:
    """Three hours forward: each job runs its latest slot once, late, and the slots between
    are missed (an outage). Then four hours back: nothing runs while the clock is behind the
    slots that ran (the daemon keeps beating meanwhile), and once it is past them again the
    jobs carry on, each slot of the ledger run at most once."""
    clock = SteppedClock(deployment.folder)
    deployment.write(CONFIG)
    deployment.serve(extra_env=clock.environment())
    deployment.wait_for(lambda: len(deployment.lines("ticks.txt")) >= 2)

    clock.step_to(AHEAD)
    deployment.wait_for(lambda: any(run.late for run in deployment.runs("minute")), timeout=30)
    deployment.wait_for(lambda: any(run.late for run in deployment.runs("tick")))
    missed = [record for record in ledger(deployment, "minute") if record.fate == "missed"]
    assert missed, "the minutes jumped over are missed, not run"
    assert 1 == len([run for run in deployment.runs("minute") if run.late])

    clock.step_to(BEHIND)
    stepped_back = clock.now()
    # Two heartbeats stamped on the stepped clock: the daemon has gone round its loop for
    # a few seconds at the earlier time, with every timer due hours ahead. What ran is read
    # once the first is stamped: a firing the daemon decided just before it saw the step
    # back is recorded by then, and nothing may be added after it.
    deployment.wait_for(lambda: (beat := heartbeat(deployment)) is not None
                        and beat >= stepped_back - timedelta(seconds=1)
                        and beat < datetime.now(UTC))
    first_beat = heartbeat(deployment)
    before = {job: ran(deployment, job) for job in ("tick", "minute")}
    runs_before = {job: len(deployment.runs(job)) for job in ("tick", "minute")}
    deployment.wait_for(lambda: heartbeat(deployment) != first_beat)
    assert runs_before == {job: len(deployment.runs(job)) for job in ("tick", "minute")}

    clock.step_to(AHEAD + 10)  # past the slots that ran last: the timers are due again
    deployment.wait_for(lambda: len(ran(deployment, "tick")) > len(before["tick"]))
    for job in ("tick", "minute"):
        slots = ran(deployment, job)
        assert len(set(slots)) == len(slots)
        assert all(slot > before[job][-1] for slot in slots[len(before[job]):])
    assert "Traceback" not in deployment.daemon_log()
