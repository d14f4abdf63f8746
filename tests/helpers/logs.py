"""Reading a run's log whole, or following it as it grows, the way the tests look at it.

The product reads logs only through :class:`~cronduit.executor.logs.LogReader` (``cronduit
job logs``); these helpers are built on the same pieces, so what they show is what a user
would see.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

from cronduit.executor import Attempt
from cronduit.executor.exits import watching
from cronduit.executor.logcap import held
from cronduit.executor.logs import LogReader, read_data


def read_log(log_path: Path) -> bytes:
    """The log's content with holes skipped, read under the shared lock so that no cut is
    half way through; empty if it does not exist."""
    try:
        fd = os.open(log_path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    try:
        with held(fd, exclusive=False):
            end = os.fstat(fd).st_size
            chunks, position = [], 0
            while position < end:
                chunk, position = read_data(fd, position, end)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


async def follow_log(
    log_path: Path, attempt: Attempt, offset: int = 0, poll_interval: float = 0.2,
    cap: int | None = None,
) -> AsyncIterator[bytes]:
    """Yield the log from ``offset`` on, chunk by chunk as it grows, until the attempt ends.

    The wait between looks is a wait on the attempt's exit, so the end is noticed at once
    and whatever the job wrote last is still yielded. ``cap`` is the log's ``max_log``, so
    that cuts are followed.
    """
    with watching(attempt) as watch, log_path.open("rb") as log:
        reader = LogReader(log.fileno(), cap, offset)
        while True:
            ended = watch.exited()  # before reading, so the last read drains everything
            chunk = reader.next_chunk()
            if chunk:
                yield chunk
            elif ended:
                return
            else:
                await watch.exited_async(poll_interval)
