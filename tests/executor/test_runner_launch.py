"""The process runner's launches: an attempt that cannot be started ends, the daemon goes on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cronduit.core.config.loader import load_config
from cronduit.core.lifecycle import AttemptReport
from cronduit.paths import StatePaths
from cronduit.ports import Event, Run
from cronduit.runner import ProcessRunner

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
    event = Event(1, "d1", "j", "schedule", "x", None, False, "{}", None, T0, "consumed", "r1")
    started_before = paths.attempt("r1", 1)
    started_before.parent.mkdir(parents=True)
    started_before.write_bytes(b"4242\n")
    launched = runner.launch_many([(run, config.jobs["j"], event, 1)])
    assert ([None], [("r1", 1, AttemptReport(None, vanished=True))], b"4242\n") == (
        launched, runner.ended(), started_before.read_bytes())

