"""A run's log: one file that every attempt's job appends stdout and stderr to.

Bytes, not text: a job may print anything, and a reader that decodes is the one that
knows how it wants to show what it cannot decode.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

from cronduit.executor.exits import watching
from cronduit.executor.states import Attempt

CHUNK_BYTES = 64 * 1024
"""The most a single chunk of :func:`follow_log` holds."""


def read_log(log_path: Path, tail_bytes: int | None = None) -> bytes:
    """The log's content, or its last ``tail_bytes`` bytes; empty if it does not exist."""
    try:
        log = log_path.open("rb")
    except FileNotFoundError:
        return b""
    with log:
        if tail_bytes is not None:
            size = os.fstat(log.fileno()).st_size
            log.seek(max(0, size - tail_bytes))
        return log.read()


async def follow_log(
    log_path: Path, attempt: Attempt, offset: int = 0, poll_interval: float = 0.2
) -> AsyncIterator[bytes]:
    """Yield the log from ``offset`` on, chunk by chunk as it grows, until the attempt ends.

    The wait between looks is a wait on the attempt's exit, so the end is noticed at once
    and whatever the job wrote last is still yielded.
    """
    with watching(attempt) as watch, log_path.open("rb") as log:
        log.seek(offset)
        while True:
            ended = watch.exited()  # before reading, so the last read drains everything
            chunk = log.read(CHUNK_BYTES)
            if chunk:
                yield chunk
            elif ended:
                return
            else:
                await watch.exited_async(poll_interval)
