"""A step attempt of a durable execution (SPEC §8): it runs the step's command with the
step's ids and inputs, into a log of its own, and its report carries its outputs."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from cronduit.core.config.model import Job, Step
from cronduit.core.lifecycle import AttemptReport
from cronduit.core.payload import EMPTY
from cronduit.core.steps import StepLaunch
from cronduit.executor.files import outputs_path, step_log_path
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import Event, Run

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SHOW = ('printf "%s %s %s %s %s" "$CRONDUIT_EXECUTION_ID" "$CRONDUIT_STEP_ID" '
        '"$CRONDUIT_ATTEMPT_ID" "$FROM" "$CRONDUIT_ATTEMPT"; '
        'printf \'{"COUNT": "12"}\' > "$CRONDUIT_OUTPUT_FILE"')
SYNC = Step(id="sync", run="exit 9", outputs=("SNAPSHOT",))
INDEX = Step(id="index", run=SHOW, outputs=("COUNT",), inputs={"FROM": "sync.SNAPSHOT"})
JOB = Job(name="etl", steps=(SYNC, INDEX))


def run_step(paths: StatePaths, config_dir: Path, attempt: int, step: StepLaunch
             ) -> list[AttemptReport]:
    """Launch attempt ``attempt`` of run r1 as ``step``'s, and return its report."""
    paths.root.mkdir(exist_ok=True)
    run = Run(id="r1", job="etl", kind="manual", label="x", state="running", created_at=T0)
    event = Event(1, "d1", "etl", "manual", "x", None, False, EMPTY, None, T0, "consumed", "r1")

    async def scenario() -> list[AttemptReport]:
        woken = asyncio.Event()
        runner = ProcessRunner(paths, config_dir / "cronduit.yaml", dict, woken.set)
        runner.attach(asyncio.get_running_loop())
        runner.launch_many([(run, JOB, event, attempt)], {run.id: step})
        async with asyncio.timeout(20):
            while not (ended := runner.ended()):
                await woken.wait()
                woken.clear()
        return [report for _, _, report in ended]

    return asyncio.run(scenario())


def test_a_step_attempt_runs_its_command_with_its_ids_inputs_and_own_log(
        tmp_path: Path) -> None:
    """Attempt 2 of the run is step index: it sees the execution, step and attempt ids and
    its input, writes its own log, and its outputs come back raw in its report."""
    paths = StatePaths(tmp_path / "state")
    assert [AttemptReport(9)] == run_step(paths, tmp_path, 1, StepLaunch(SYNC, "x1", "a1", {}))
    [report] = run_step(paths, tmp_path, 2, StepLaunch(INDEX, "x1", "a2", {"FROM": "s-1"}))
    assert (0, b'{"COUNT": "12"}') == (report.exit_status, report.outputs)
    attempt_file = paths.attempt("r1", 2)
    assert "x1 index a2 s-1 2" == step_log_path(attempt_file).read_text()
    assert json.loads(outputs_path(attempt_file).read_text()) == {"COUNT": "12"}
    assert not paths.log("r1").exists() or paths.log("r1").read_text() == ""


def test_a_step_that_wrote_no_outputs_reports_none_and_a_failed_one_is_not_read(
        tmp_path: Path) -> None:
    """No file: None, for the core to judge; a failed attempt's outputs are never read."""
    paths = StatePaths(tmp_path / "state")
    quiet = Step(id="quiet", run="true")
    [report] = run_step(paths, tmp_path, 1, StepLaunch(quiet, "x1", "a1", {}))
    assert AttemptReport(0) == report
    failing = Step(id="f", run='printf "{}" > "$CRONDUIT_OUTPUT_FILE"; exit 3')
    [report] = run_step(paths, tmp_path, 2, StepLaunch(failing, "x1", "a2", {}))
    assert AttemptReport(3) == report


def test_the_next_steps_attempt_file_and_log_are_made_while_a_step_runs(
        tmp_path: Path) -> None:
    """A step with a step after it: attempt 2's file and log are there, empty, by the time
    attempt 1 has ended, so the launch that follows only opens them. After the last step
    nothing is made."""
    paths = StatePaths(tmp_path / "state")
    sync = StepLaunch(Step(id="sync", run="exit 0", outputs=("SNAPSHOT",)), "x1", "a1", {})
    [report] = run_step(paths, tmp_path, 1, sync)
    assert 0 == report.exit_status
    ahead = paths.attempt("r1", 2)
    wait_for(lambda: ahead.exists() and step_log_path(ahead).exists())
    assert (b"", b"") == (ahead.read_bytes(), step_log_path(ahead).read_bytes())
    [report] = run_step(paths, tmp_path, 2, StepLaunch(INDEX, "x1", "a2", {"FROM": "s-1"}))
    assert 0 == report.exit_status
    assert b"x1 index a2 s-1 2" == step_log_path(ahead).read_bytes()
    assert not paths.attempt("r1", 3).exists()


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Until ``condition`` holds: the files are made on the runner's own threads."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not made in time"
        time.sleep(0.005)
