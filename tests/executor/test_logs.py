"""Following a run's log as the job writes it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cronduit.executor import Attempt, launch
from tests.helpers.logs import follow_log
from tests.helpers.processes import finish, spec_for


def test_following_yields_everything_the_job_writes_and_stops_when_it_ends(
    tmp_path: Path,
) -> None:
    """Chunks arrive as the job writes them, the last one included, then the follow ends."""
    spec = spec_for(tmp_path, shell="echo a; sleep 0.3; echo b; sleep 0.3; printf c")
    attempt = launch(spec)
    chunks = asyncio.run(_collect(spec.log_path, attempt))
    finish(attempt)
    assert (b"a\nb\nc", True) == (b"".join(chunks), len(chunks) >= 2)


def test_following_starts_at_the_offset_given(tmp_path: Path) -> None:
    """A follower that already showed part of the log picks up where it stopped."""
    spec = spec_for(tmp_path, shell="echo earlier attempt")
    finish(launch(spec))
    spec = spec_for(tmp_path, shell="echo this attempt", attempt=2)
    attempt = launch(spec)
    offset = len(b"earlier attempt\n")
    chunks = asyncio.run(_collect(spec.log_path, attempt, offset))
    finish(attempt)
    assert b"this attempt\n" == b"".join(chunks)


async def _collect(log_path: Path, attempt: Attempt, offset: int = 0) -> list[bytes]:
    return [chunk async for chunk in follow_log(log_path, attempt, offset, poll_interval=0.05)]
