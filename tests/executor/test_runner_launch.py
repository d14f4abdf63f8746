"""The process runner's launches: an attempt that cannot be started ends, the daemon goes on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from cronduit.core.config.loader import load_config
from cronduit.core.config.model import Job, Step
from cronduit.core.lifecycle import AttemptReport
from cronduit.core.payload import EMPTY
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import Event, Run

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_an_attempt_that_counts_as_started_ends_vanished_instead_of_raising(
    tmp_path: Path,
) -> None:
    """A launch refused because the attempt's file says it started (as after a supervisor
    lost while starting it, or a daemon that crashed after its launch) is never run again:
    launch_many reports it as vanished."""
    config = load_config("jobs:\n  j: {run: 'echo ran', every: 1h}\n", "cronduit.yaml")
    paths = StatePaths(tmp_path / "state")
    runner = ProcessRunner(paths, tmp_path / "cronduit.yaml", dict, lambda: None)
    run = Run(id="r1", job="j", kind="schedule", label="x", state="running", created_at=T0)
    event = Event(1, "d1", "j", "schedule", "x", None, False, EMPTY, None, T0, "consumed", "r1")
    started_before = paths.attempt("r1", 1)
    started_before.parent.mkdir(parents=True)
    started_before.write_bytes(b"4242\n")
    launched = runner.launch_many([(run, config.jobs["j"], event, 1)])
    assert ([None], [("r1", 1, AttemptReport(None, vanished=True))], b"4242\n") == (
        launched, runner.ended(), started_before.read_bytes())



def test_a_job_the_executor_cannot_start_ends_with_the_reason_instead_of_raising(
    tmp_path: Path,
) -> None:
    """Any fault preparing a launch (here a job with steps, which this version cannot run)
    ends that attempt as not started, with the reason; the launch beside it still runs."""
    config = load_config("jobs:\n  j: {run: 'true', every: 1h}\n", "cronduit.yaml")
    stepped = Job(name="s", steps=(Step(id="one", run="true"),))
    paths = StatePaths(tmp_path / "state")
    paths.root.mkdir()
    runner = ProcessRunner(paths, tmp_path / "cronduit.yaml", dict, lambda: None)
    runs = [Run(id=f"r{i}", job=name, kind="manual", label="x", state="running", created_at=T0)
            for i, name in ((1, "s"), (2, "j"))]
    events = [Event(i, f"d{i}", run.job, "manual", "x", None, False, EMPTY, None, T0, "consumed",
                    run.id) for i, run in enumerate(runs, 1)]

    async def launch() -> list[tuple[int, int] | None]:
        runner.attach(asyncio.get_running_loop())
        return runner.launch_many([(runs[0], stepped, events[0], 1),
                                   (runs[1], config.jobs["j"], events[1], 1)])

    launched = asyncio.run(launch())
    reason = ("cronduit could not launch it (ValueError: a launch needs exactly one of argv "
              "(command) or shell (run))")
    assert (None, True) == (launched[0], launched[1] is not None)
    assert [("r1", 1, AttemptReport(None, not_started=reason))] == runner.ended()
