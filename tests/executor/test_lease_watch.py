"""The supervisor ends the jobs started under the node's lease when the lease ends, and never
for anything else."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from cronduit.executor import Attempt, Exited, LaunchSpec, Settled, launch, wait
from cronduit.executor.files import read_record
from cronduit.executor.lease import boot_id, write_lease
from cronduit.executor.lease_watch import KILL_NOTE, TERM_NOTE
from tests.helpers.logs import read_log
from tests.helpers.processes import (
    alive,
    eventually,
    group_killed_afterwards,
    read_pid,
    spec_for,
)
from tests.helpers.spawn import supervisor_pid

IGNORES_TERM = "trap '' TERM; sleep 60"


def _spec(tmp_path: Path, run_id: str, shell: str, lease: Path | None) -> LaunchSpec:
    """A launch of ``shell`` as run ``run_id`` under the lease file ``lease``."""
    return replace(spec_for(tmp_path, shell=shell), run_id=run_id,
                   attempt_file=tmp_path / run_id / "attempt-1",
                   log_path=tmp_path / run_id / "log", lease_file=lease)


def _ended(attempt: Attempt, timeout: float = 15.0) -> Settled:
    """How the attempt ended, as its file records it; fails if it is still running then."""
    return asyncio.run(asyncio.wait_for(wait(attempt), timeout))


def test_a_job_is_terminated_when_the_lease_it_was_started_under_ends(tmp_path: Path) -> None:
    """A second to go: the job gets SIGTERM, its exit is recorded as 143, its log says why."""
    lease = tmp_path / "lease"
    write_lease(lease, time.monotonic() + 1)
    spec = _spec(tmp_path, "r1", "sleep 60", lease)
    attempt = launch(spec)
    with group_killed_afterwards(attempt.pid):
        assert Exited(143) == _ended(attempt)
    assert TERM_NOTE == read_log(spec.log_path)


def test_a_job_that_ignores_sigterm_is_killed_at_the_deadline(tmp_path: Path) -> None:
    lease = tmp_path / "lease"
    until = time.monotonic() + 1
    write_lease(lease, until)
    spec = _spec(tmp_path, "r1", IGNORES_TERM, lease)
    attempt = launch(spec)
    with group_killed_afterwards(attempt.pid):
        assert Exited(137) == _ended(attempt)
    assert time.monotonic() >= until
    assert TERM_NOTE + KILL_NOTE == read_log(spec.log_path)


def test_nothing_of_the_jobs_process_group_outlives_the_lease(tmp_path: Path) -> None:
    """The job exits at the SIGTERM but left a process behind that ignores it: that one is
    killed as the job is reaped."""
    lease = tmp_path / "lease"
    write_lease(lease, time.monotonic() + 1)
    left = tmp_path / "left"
    spec = _spec(tmp_path, "r1", f"(trap '' TERM; sleep 60) & echo $! > {left}; wait", lease)
    attempt = launch(spec)
    with group_killed_afterwards(attempt.pid):
        assert eventually(lambda: read_pid(left) is not None)
        straggler = read_pid(left)
        assert straggler is not None
        assert Exited(143) == _ended(attempt)
        assert eventually(lambda: not alive(straggler))


def _missing(lease: Path) -> None:
    pass


def _garbage(lease: Path) -> None:
    lease.write_bytes(b"\x00\xff not a lease at all \xfe\n" * 100)


def _another_boot(lease: Path) -> None:
    """A deadline long past, written before the machine last started."""
    write_lease(lease, time.monotonic() - 100)
    lease.write_text(lease.read_text().replace(boot_id(), "another-boot"))


def _not_finite(lease: Path) -> None:
    lease.write_text(f"{boot_id()} nan nan\n")


def _a_fifo(lease: Path) -> None:
    os.mkfifo(lease)


def _expiring(lease: Path) -> None:
    """The same deadline as the job that is killed, about to be renewed."""
    write_lease(lease, time.monotonic() + 1)


NO_DEADLINE: dict[str, Callable[[Path], None]] = {
    "no file": _missing, "garbage": _garbage, "another boot": _another_boot,
    "not finite": _not_finite, "a FIFO": _a_fifo, "renewed before it passed": _expiring,
}


@pytest.mark.parametrize("lease_kind", [*NO_DEADLINE, "no lease"])
def test_a_job_outlives_a_deadline_that_does_not_apply_to_it(
    tmp_path: Path, lease_kind: str,
) -> None:
    """The job under test runs beside two others in the same supervisor: one under a lease
    that ran out already, killed at the first look at the leases after it started (so that
    look has read the tested job's file too), and one under a lease of a second, killed once
    that second is over. When both have been killed, the tested job still runs, its log
    untouched, and the supervisor goes on recording."""
    lease = tmp_path / "lease"
    NO_DEADLINE.get(lease_kind, _missing)(lease)
    tested = launch(_spec(tmp_path, "tested", "sleep 60", None if lease_kind == "no lease"
                          else lease))
    with group_killed_afterwards(tested.pid):
        ended = _spec(tmp_path, "ended", IGNORES_TERM, tmp_path / "ended-lease")
        write_lease(tmp_path / "ended-lease", time.monotonic() - 1)
        assert Exited(137) == _ended(launch(ended))
        if lease_kind == "renewed before it passed":
            write_lease(lease, time.monotonic() + 60)
        ending = _spec(tmp_path, "ending", IGNORES_TERM, tmp_path / "ending-lease")
        write_lease(tmp_path / "ending-lease", time.monotonic() + 1)
        assert Exited(137) == _ended(launch(ending))
        supervisor = supervisor_pid()
        assert supervisor is not None
        assert (True, None, b"", True) == (
            alive(tested.pid), read_record(tested.attempt_file).status,
            read_log(tmp_path / "tested" / "log"), alive(supervisor))
        os.killpg(tested.pid, signal.SIGTERM)
        assert Exited(143) == _ended(tested)


def test_the_supervisor_of_a_daemon_gone_ends_its_jobs_with_the_lease(tmp_path: Path) -> None:
    """A daemon launches a job under its lease and is SIGKILLed; the supervisor it left
    behind keeps the job while a restarted daemon holds the lease on, and ends it when that
    lease ends."""
    lease = tmp_path / "lease"
    write_lease(lease, time.monotonic() + 60)
    spec = _spec(tmp_path, "r1", "sleep 60", lease)
    with subprocess.Popen([sys.executable, "-c", _LAUNCH_AND_WAIT, str(tmp_path)],
                          stdout=subprocess.PIPE, text=True) as daemon:
        try:
            assert daemon.stdout is not None
            pid, start_time = map(int, daemon.stdout.readline().split())
        finally:
            daemon.kill()
    attempt = Attempt(pid, start_time, spec.attempt_file)
    with group_killed_afterwards(pid):
        assert alive(pid)
        write_lease(lease, time.monotonic() + 1)  # the next daemon's renewal, its last one
        assert Exited(143) == _ended(attempt)
    assert TERM_NOTE == read_log(spec.log_path)


_LAUNCH_AND_WAIT = """
import sys, time
from dataclasses import replace
from pathlib import Path
from cronduit.executor import launch
from tests.helpers.processes import spec_for
folder = Path(sys.argv[1])
spec = replace(spec_for(folder, shell="sleep 60"), attempt_file=folder / "r1" / "attempt-1",
               log_path=folder / "r1" / "log", lease_file=folder / "lease")
attempt = launch(spec)
print(attempt.pid, attempt.start_time, flush=True)
time.sleep(60)
"""
