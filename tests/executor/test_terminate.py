"""Ending an attempt early (deadline, replace): TERM the group, grace, KILL, sweep."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from cronduit.executor import (
    Attempt,
    Exited,
    Termination,
    exits,
    launch,
    terminate_async,
)
from cronduit.executor.adopt import record_complete
from tests.helpers.processes import (
    alive,
    eventually,
    finish,
    group_killed_afterwards,
    read_pid,
    spec_for,
)

STARTED = "echo $$ >job.pid; "
"""Prefix for a job script that tells the test it is under way (and its pid)."""


def terminate(attempt: Attempt, grace: float) -> Termination:
    """:func:`terminate_async` from synchronous test code."""
    return asyncio.run(terminate_async(attempt, grace=grace))


def _launch_running(tmp_path: Path, script: str, setup: str = "") -> Attempt:
    """Launch a ``run`` job and wait until its script has begun, ``setup`` done (a trap
    set before the pid is told, so a TERM sent at once meets it)."""
    attempt = launch(spec_for(tmp_path, shell=setup + STARTED + script))
    assert eventually((tmp_path / "job.pid").exists)
    return attempt


def test_a_job_that_honours_term_ends_without_kill(tmp_path: Path) -> None:
    """TERM stops the job; the supervisor, outside its group, records 128 + 15."""
    attempt = _launch_running(tmp_path, "sleep 30")
    with group_killed_afterwards(attempt.pid):
        termination = terminate(attempt, grace=5)
        assert Termination(Exited(143), killed=False) == termination
        assert Exited(143) == finish(attempt)


def test_a_job_that_ignores_term_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    """TERM ignored, the group gets KILL once ``grace`` is over; the supervisor, outside the
    group, records the job's end as a shell would (128 + 9)."""
    attempt = _launch_running(tmp_path, "sleep 30", setup="trap '' TERM; ")
    with group_killed_afterwards(attempt.pid):
        began = time.monotonic()
        termination = terminate(attempt, grace=0.3)
        took = time.monotonic() - began
        assert Termination(Exited(137), killed=True) == termination
        assert Exited(137) == finish(attempt)
    assert 0.3 <= took < 3


def test_the_jobs_children_die_with_it(tmp_path: Path) -> None:
    """A process the job started is in the job's group and gets the TERM too."""
    attempt = _launch_running(tmp_path, "sleep 30 & echo $! >child.pid; wait")
    with group_killed_afterwards(attempt.pid):
        assert eventually(lambda: read_pid(tmp_path / "child.pid") is not None)
        child = read_pid(tmp_path / "child.pid")
        assert child is not None
        terminate(attempt, grace=5)
        finish(attempt)
        assert eventually(lambda: not alive(child))


def test_children_that_ignore_term_are_killed_once_the_job_is_gone(tmp_path: Path) -> None:
    """A deadline bounds the whole run: what outlives the job in its group is KILLed."""
    script = "(trap '' TERM; exec sleep 30) & echo $! >child.pid; wait"
    attempt = _launch_running(tmp_path, script)
    with group_killed_afterwards(attempt.pid):
        assert eventually(lambda: read_pid(tmp_path / "child.pid") is not None)
        child = read_pid(tmp_path / "child.pid")
        assert child is not None
        termination = terminate(attempt, grace=5)
        finish(attempt)
        assert (Termination(Exited(143), killed=False), True) == (
            termination,
            eventually(lambda: not alive(child), timeout=2),
        )


def test_terminate_async_sends_the_same_signals_without_blocking(tmp_path: Path) -> None:
    """The loop keeps going while the group is signalled and waited for, KILL included."""
    attempt = _launch_running(tmp_path, "sleep 30", setup="trap '' TERM; ")

    async def stop_while_ticking() -> tuple[Termination, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        termination = await terminate_async(attempt, grace=0.3)
        ticker.cancel()
        return termination, ticks

    with group_killed_afterwards(attempt.pid):
        termination, ticks = asyncio.run(stop_while_ticking())
        finish(attempt)
    assert (Termination(Exited(137), killed=True), True) == (termination, ticks > 10)


def test_terminating_an_attempt_that_already_ended_reports_how_it_ended(
    tmp_path: Path,
) -> None:
    """Nothing is left to signal; the recorded status is the answer."""
    attempt = launch(spec_for(tmp_path, shell="exit 5"))
    ended = finish(attempt)
    assert Termination(ended, killed=False) == terminate(attempt, grace=1)


def test_waiting_for_the_supervisors_record_leaves_the_loop_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the job is gone, its record is read when the supervisor has completed it: the
    wait for a slow supervisor is awaited, not slept on the loop's thread."""
    attempt = _launch_running(tmp_path, "sleep 30")
    ticks = [0]
    looks: list[int] = []

    def slow_record(path: Path) -> bool:  # a supervisor that takes a few looks to write
        looks.append(ticks[0])
        return len(looks) > 6 and record_complete(path)

    monkeypatch.setattr(exits, "record_complete", slow_record)

    async def stop_while_ticking() -> Termination:
        async def tick() -> None:
            while True:
                await asyncio.sleep(0.001)
                ticks[0] += 1

        ticker = asyncio.create_task(tick())
        termination = await terminate_async(attempt, grace=5)
        ticker.cancel()
        return termination

    with group_killed_afterwards(attempt.pid):
        termination = asyncio.run(stop_while_ticking())
        finish(attempt)
    assert Termination(Exited(143), killed=False) == termination
    assert len(looks) > 6
    assert looks[-1] > looks[0], looks
