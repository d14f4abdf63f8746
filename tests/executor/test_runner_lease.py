"""The process runner and the node's lease: a frozen owner's run ends before its lease could
expire, and a runner that holds no lease has nothing stopped for one."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from cronduit.core.config.loader import load_config
from cronduit.core.payload import EMPTY
from cronduit.executor import Attempt, Exited, Settled, launch, lease_margin, wait
from cronduit.executor.files import read_record
from cronduit.executor.lease import lease_clock, read_lease
from cronduit.executor.lease_watch import TERM_NOTE
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import Event, Run
from tests.helpers.logs import read_log
from tests.helpers.processes import alive, group_killed_afterwards, spec_for

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]
LEASE = 6.0
"""Long enough that renewals every 2 s arrive in time on a loaded 2-core machine."""


def _ended(attempt: Attempt, timeout: float = 15.0) -> Settled:
    return asyncio.run(asyncio.wait_for(wait(attempt), timeout))


def _state(pid: int) -> str:
    """The process's state letter in ``/proc`` (``T``: stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_the_run_of_a_frozen_lease_owner_ends_before_its_lease_could_expire(
    tmp_path: Path,
) -> None:
    """The process that owns the runner renews a lease of 6 s every 2 s; its run outlives
    the lease it was launched under. Then it is frozen with SIGSTOP: while it is still
    stopped, its supervisor terminates the run, before the lease of its last renewal can
    have expired in the database."""
    state = tmp_path / "state"
    paths = StatePaths(state)
    with subprocess.Popen([sys.executable, "-m", "tests.helpers.lease_owner", str(state),
                           str(LEASE)], cwd=ROOT, stdout=subprocess.PIPE, text=True) as owner:
        try:
            assert owner.stdout is not None
            word, pid, start_time = owner.stdout.readline().split()
            assert "launched" == word
            attempt = Attempt(int(pid), int(start_time), paths.attempt("r1", 1))
            with group_killed_afterwards(attempt.pid):
                launched_at = time.monotonic()
                while float(owner.stdout.readline().split()[1]) < launched_at + LEASE:
                    pass  # renewals, until the lease the run was launched under is over
                assert (True, None) == (alive(attempt.pid),
                                        read_record(attempt.attempt_file).status)
                os.kill(owner.pid, signal.SIGSTOP)
                held = read_lease(str(paths.lease))  # the last renewal's, no more to come
                assert held is not None
                assert Exited(143) == _ended(attempt)
                # The database's expiry is at least the last renewal's sent_at + LEASE.
                assert lease_clock() < held.kill_at + lease_margin(LEASE)
                assert "T" == _state(owner.pid)
        finally:
            owner.kill()
    assert TERM_NOTE == read_log(paths.log("r1"))


def test_a_runner_holding_no_lease_has_nothing_stopped_by_a_file_left_there(
    tmp_path: Path,
) -> None:
    """A lease file left by a daemon before (long run out) does not touch the runs of a
    runner that holds no lease, as on SQLite: a job launched beside them under that file is
    killed at once, they go on."""
    paths = StatePaths(tmp_path / "state")
    config_path = tmp_path / "cronduit.yaml"
    job = load_config("jobs:\n  j: {run: 'sleep 60', every: 1h}\n", str(config_path)).jobs["j"]
    run = Run(id="r1", job="j", kind="schedule", label="x", state="running", created_at=T0)
    event = Event(1, "d1", "j", "schedule", "x", None, False, EMPTY, None, T0, "consumed", "r1")

    async def scenario() -> None:
        runner = ProcessRunner(paths, config_path, dict, lambda: None)
        runner.attach(asyncio.get_running_loop())
        runner.hold_lease(time.monotonic() - 1)
        runner.hold_lease(None)
        assert not paths.lease.exists()
        runner.hold_lease(time.monotonic() - 1)  # as a daemon before left it
        runner = ProcessRunner(paths, config_path, dict, lambda: None)
        runner.attach(asyncio.get_running_loop())
        [started] = runner.launch_many([(run, job, event, 1)])
        assert isinstance(started, tuple)
        attempt = Attempt(*started, paths.attempt("r1", 1))
        with group_killed_afterwards(attempt.pid):
            under = launch(replace(spec_for(tmp_path, shell="sleep 60"), lease_file=paths.lease))
            assert Exited(137) == await asyncio.wait_for(wait(under), 15)
            assert (True, None) == (alive(attempt.pid), read_record(attempt.attempt_file).status)
            os.killpg(attempt.pid, signal.SIGTERM)
            assert Exited(143) == await asyncio.wait_for(wait(attempt), 15)

    asyncio.run(scenario())
