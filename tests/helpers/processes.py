"""Tests of the process executor, with real processes; helpers they share live here."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from signal import SIGKILL

from cronduit.executor import Attempt, LaunchSpec, Settled, launch, wait
from cronduit.executor.procfs import identity
from tests.helpers.logs import read_log

ENV = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


def spec_for(
    tmp_path: Path,
    *,
    argv: tuple[str, ...] | None = None,
    shell: str | None = None,
    attempt: int = 1,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    max_log: int | None = None,
) -> LaunchSpec:
    """A launch spec for one attempt of run ``r1`` kept under ``tmp_path``."""
    return LaunchSpec(
        run_id="r1",
        attempt=attempt,
        argv=argv,
        shell=shell,
        cwd=cwd or tmp_path,
        env=ENV if env is None else env,
        attempt_file=tmp_path / "runs" / "r1" / f"attempt-{attempt}",
        log_path=tmp_path / "runs" / "r1" / "log",
        max_log=max_log,
    )


def finish(attempt: Attempt) -> Settled:
    """Wait for ``attempt`` from synchronous test code (and reap it)."""
    return asyncio.run(wait(attempt))


def run_job(spec: LaunchSpec) -> tuple[Settled, bytes]:
    """Launch ``spec``, wait for it, and return how it ended with the log it left."""
    ended = finish(launch(spec))
    return ended, read_log(spec.log_path)


def alive(pid: int) -> bool:
    """Whether ``pid`` names a process that has not exited (a zombie has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rindex(b")") + 2 :][:1] not in (b"Z", b"X")


def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Whether ``condition`` becomes true within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


@contextmanager
def group_killed_afterwards(pgid: int) -> Iterator[None]:
    """Leave no process of the group ``pgid`` behind, whatever the test did to it."""
    try:
        yield
    finally:
        with suppress(ProcessLookupError):
            os.killpg(pgid, SIGKILL)


def read_pid(path: Path) -> int | None:
    """The pid a test's job wrote to ``path``, or None until it has written a whole line."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return int(text) if text.endswith("\n") else None


def start_time_of(pid: int) -> int:
    """The start time of a live process, as the executor reads it."""
    found = identity(pid)
    assert found is not None
    return found.start_time
