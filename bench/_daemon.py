"""Serving processes for ``bench/engine.py``: a real ``cronduit serve``, or a peer.

Each runs as a subprocess in a temporary folder (config, state, output in ``log``), exactly
as a user starts it; the bench reads its log for the ``serving`` line, its CPU and memory
through psutil, and, once a daemon stops, what happened from its store.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable
from contextlib import closing, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psutil

from cronduit.store.sql.transaction import from_text


def write_config(folder: Path, jobs: Iterable[str], kept_runs: int = 20) -> Path:
    """A config with one job per line of ``jobs`` (``name: {...}`` flow mappings)."""
    lines = ["settings:", "  state: state", "  listen: 127.0.0.1:0", f"  kept_runs: {kept_runs}",
             "jobs:"]
    lines += [f"  {job}" for job in jobs]
    path = folder / "cronduit.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def cpu_seconds(process: psutil.Process) -> tuple[float, float]:
    """CPU seconds of the process itself, and of its children: those it has reaped (with
    theirs) and those still alive with what they have reaped (cronduit's supervisor and the
    jobs it started), so no work escapes the count by running in a long-lived child."""
    times = process.cpu_times()
    children = times.children_user + times.children_system
    for child in process.children():
        try:
            child_times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        children += (child_times.user + child_times.system + child_times.children_user
                     + child_times.children_system)
    return times.user + times.system, children


def thread_cpu_seconds(pid: int) -> float:
    """CPU seconds of the process's live threads, to the nanosecond (``schedstat``), where
    :func:`cpu_seconds` counts 10 ms clock ticks: fine enough to measure an idle process."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with suppress(FileNotFoundError):  # a thread that ended meanwhile
            total += int(stat.read_text().split()[0])
    return total / 1e9


class Served:
    """A serving process started from ``argv`` in ``folder``, its output in ``folder/log``."""

    def __init__(self, argv: list[str], folder: Path) -> None:
        self.folder = folder
        self.log = folder / "log"
        self._read = self.log.stat().st_size if self.log.exists() else 0
        self._tail = b""
        self.started = time.perf_counter()
        with self.log.open("ab") as log:
            self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=log, cwd=folder)
        self.process = psutil.Process(self.popen.pid)

    def wait_for(self, text: str, timeout: float = 60.0) -> float:
        """Seconds from the start until ``text`` appears in the log."""
        wanted = text.encode()
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if wanted in self._new_log():
                return time.perf_counter() - self.started
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.popen.args} exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.005)
        raise TimeoutError(f"no {text!r} in {self.log} after {timeout}s")

    def _new_log(self) -> bytes:
        """The log written since the last look (and the line that was cut short then)."""
        with self.log.open("rb") as log:
            log.seek(self._read)
            new = log.read()
        self._read += len(new)
        text = self._tail + new
        self._tail = text[text.rfind(b"\n") + 1:]
        return text

    def stop(self) -> None:
        """SIGINT, as an operator's Ctrl-C; SIGKILL if it has not exited within 30 s."""
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGINT)
        try:
            self.popen.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def daemon(config: Path) -> Served:
    """``cronduit serve -c CONFIG``, started as a user starts it."""
    argv = [sys.executable, "-m", "cronduit", "serve", "-c", str(config)]
    return Served(argv, config.parent)


@dataclass(frozen=True)
class Firing:
    """One timer firing read back from the store: its slot, when it was accepted, and when
    the run's wrapper process began (None: no run, or no process recorded)."""

    slot: datetime
    accepted_at: datetime
    started: float | None


def firings(folder: Path) -> list[Firing]:
    """Every timer firing of the daemon that ran in ``folder``, with its process start.

    The start is the kernel's start time of the run's wrapper process (``/proc/<pid>/stat``
    field 22), which the daemon records with the run (``runs.pid_start``) to know the wrapper
    from a later process given its pid: a kernel timestamp, unaffected by how busy the daemon
    is (``runs.started_at`` is when the run was decided, before launch).

    Field 22 counts clock ticks (10 ms) since boot, so the start is placed mid-tick, within
    5 ms of the truth; and it is the wrapper's fork, a shell start-up (about 1 ms) before the
    moment this bench used to read: the modification time of the attempt's ``started`` file,
    written by the wrapper just before it ran the job. That file is gone (an attempt is one
    file now, whose last write is the job's exit status, so its time is the run's end); on
    the same runs of the old layout, the two measures gave p50 and p99 within 6 ms.
    """
    state = folder / "state"
    with closing(sqlite3.connect(state / "cronduit.db")) as db:
        rows = db.execute(
            "SELECT e.slot, e.accepted_at, r.pid_start FROM events e"
            " LEFT JOIN runs r ON r.trigger_seq = e.seq WHERE e.kind = 'timer'").fetchall()
    boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)  # the epoch of field 22
    tick = os.sysconf("SC_CLK_TCK")
    return [Firing(_instant(slot), _instant(accepted_at),
                   None if ticks is None else boot + (ticks + 0.5) / tick)
            for slot, accepted_at, ticks in rows]


def _instant(text: str) -> datetime:
    instant = from_text(text)
    assert instant is not None
    return instant
