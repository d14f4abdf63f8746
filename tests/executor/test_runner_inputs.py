"""A run's inputs reach its process as they were accepted, or the attempt fails saying why."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronduit.core.config.loader import load_config
from cronduit.core.lifecycle import AttemptReport
from cronduit.core.payload import EMPTY
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import Event, Run

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = """\
jobs:
  j:
    run: 'printf %s "$LEVEL" > "$CRONDUIT_OUTPUT_DIR/level"'
    inputs: {LEVEL: {enum: [low, high], default: low}}
"""


def launch(paths: StatePaths, config_path: Path, stored: str) -> list[AttemptReport]:
    """Launch attempt 1 of a run whose record holds the inputs ``stored``, wait until the
    runner wakes the daemon to say it ended, and return what it reported."""
    job = load_config(CONFIG, str(config_path)).jobs["j"]
    paths.root.mkdir()
    run = Run(id="r1", job="j", kind="manual", label="x", state="running", created_at=T0,
              inputs=stored)
    event = Event(1, "d1", "j", "manual", "x", None, False, EMPTY, None, T0, "consumed", "r1")

    async def scenario() -> list[AttemptReport]:
        woken = asyncio.Event()
        runner = ProcessRunner(paths, config_path, dict, woken.set)
        runner.attach(asyncio.get_running_loop())
        runner.launch_many([(run, job, event, 1)])
        async with asyncio.timeout(20):
            while not (ended := runner.ended()):
                await woken.wait()
                woken.clear()
        return [report for _, _, report in ended]

    return asyncio.run(scenario())


def test_inputs_the_config_no_longer_accepts_reach_the_run_as_they_were_accepted(
    tmp_path: Path,
) -> None:
    """``max`` was accepted before the enum was narrowed: the run gets ``max``, never the
    default in its place."""
    paths = StatePaths(tmp_path / "state")
    reports = launch(paths, tmp_path / "cronduit.yaml", '{"LEVEL": "max"}')
    assert ([AttemptReport(0)], "max") == (
        reports, paths.run("r1").joinpath("output", "level").read_text())


def test_a_timer_run_without_inputs_gets_the_declared_defaults(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    reports = launch(paths, tmp_path / "cronduit.yaml", "{}")
    assert ([AttemptReport(0)], "low") == (
        reports, paths.run("r1").joinpath("output", "level").read_text())


@pytest.mark.parametrize("stored", ['["LEVEL"]', '{"LEVEL": 3}', "{", '"low"'])
def test_stored_inputs_that_cannot_be_read_fail_the_attempt_instead_of_running_defaults(
    tmp_path: Path, stored: str,
) -> None:
    """Running with the defaults would run something nobody asked for: the attempt ends
    not started, saying why, and the job's command never runs."""
    paths = StatePaths(tmp_path / "state")
    reports = launch(paths, tmp_path / "cronduit.yaml", stored)
    reason = ("the run's stored inputs cannot be read (not a JSON object of names and "
              "string values)")
    assert ([AttemptReport(None, not_started=reason)], False) == (
        reports, paths.run("r1").joinpath("output", "level").exists())
