"""The process runner on a state folder that is full, for real (a small tmpfs): a launch
waits for the disk instead of failing the run, and starts once there is room."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from cronduit.core.config.loader import load_config
from cronduit.core.payload import EMPTY
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import Deferred, Event, Run
from tests.helpers.mounts import fill, free, small_tmpfs

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_launch_on_a_full_state_folder_is_deferred_then_runs_once_there_is_room(
        tmp_path: Path) -> None:
    """No space for the run's files: the launch is deferred with the reason, nothing is
    reported ended (the run is not failed) and the attempt file, if made, is empty; with
    space back the same attempt launches and its job runs."""
    config = load_config("jobs:\n  j: {run: 'echo ran', every: 1h}\n", "cronduit.yaml")
    run = Run(id="r1", job="j", kind="manual", label="x", state="running", created_at=T0)
    event = Event(1, "d1", "j", "manual", "x", None, False, EMPTY, None, T0, "consumed", "r1")
    item = (run, config.jobs["j"], event, 1)
    with small_tmpfs(tmp_path / "state") as state:
        paths = StatePaths(state)
        runner = ProcessRunner(paths, tmp_path / "cronduit.yaml", dict, lambda: None)

        async def scenario() -> None:
            runner.attach(asyncio.get_running_loop())
            filler = fill(state)
            assert [Deferred("No space left on device")] == runner.launch_many([item])
            assert [] == runner.ended()
            attempt = paths.attempt("r1", 1)
            assert not attempt.exists() or b"" == attempt.read_bytes()
            free(filler)
            [started] = runner.launch_many([item])
            assert isinstance(started, tuple)
            async with asyncio.timeout(20):
                while not (ended := runner.ended()):
                    await asyncio.sleep(0.02)
            assert [("r1", 1, 0)] == [(r, n, report.exit_status) for r, n, report in ended]

        asyncio.run(scenario())
        assert b"ran\n" == paths.run("r1").joinpath("log").read_bytes()
