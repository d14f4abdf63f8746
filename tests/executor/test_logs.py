"""Reading and following a run's log."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cronduit.executor import Attempt, follow_log, launch, read_log
from tests.executor import finish, spec_for


def test_reading_a_log_that_does_not_exist_gives_nothing(tmp_path: Path) -> None:
    """A run whose log was pruned, or never written, reads as empty."""
    assert b"" == read_log(tmp_path / "log")


def test_a_tail_is_the_last_bytes_of_the_log(tmp_path: Path) -> None:
    """``tail_bytes`` keeps the end; asking for more than there is gives it all."""
    log = tmp_path / "log"
    log.write_bytes(b"one\ntwo\nthree\n")
    assert [b"three\n", b"one\ntwo\nthree\n"] == [
        read_log(log, tail_bytes=6),
        read_log(log, tail_bytes=1000),
    ]


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
