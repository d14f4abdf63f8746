"""What the benchmarks measure with that the product itself never needs.

The machine's bare process start rate is the ceiling any executor's launch rate is held to;
the supervisor's pid lets a bench read its CPU and memory; a log is read back whole to count
what a capped job wrote.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cronduit.executor import spawn
from cronduit.executor.logs import LogReader

TRUE = "/bin/true"


def measure_spawn_rate(seconds: float) -> float:
    """Start and reap ``/bin/true`` back to back for about ``seconds``; return starts per second.

    ``os.posix_spawn`` is the cheapest start Python offers (vfork and exec, no Python in
    the child), so the figure is what one core can do with no supervision at all.
    """
    count = 0
    started = time.perf_counter()
    while True:
        pid = os.posix_spawn(TRUE, [TRUE], {})
        os.waitpid(pid, 0)
        count += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return count / elapsed


def supervisor_pid() -> int | None:
    """The pid of this process's supervisor, once a launch has started one."""
    return spawn._SUPERVISOR.pid


def read_log(log_path: Path) -> bytes:
    """The whole log of an attempt that has ended, holes skipped (no cap: its marker, if it
    was cut, is read as the bytes it is)."""
    fd = os.open(log_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return b"".join(LogReader(fd, None).chunks())
    finally:
        os.close(fd)
