"""The machine's bare process start rate: the ceiling any executor's launch rate is held to."""

from __future__ import annotations

import os
import time

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
