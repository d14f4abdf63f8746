"""The supervisor's ``recorded`` word: it comes once an attempt's record is complete, counts
only for the process it names, and shortens the daemon's wait without replacing the file."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
from pathlib import Path

import pytest

from cronduit.executor import Exited, Vanished, exits, launch, wait
from cronduit.executor.adopt import record_complete
from cronduit.executor.recorded import EARLY_KEPT, RecordedWords
from tests.helpers.processes import spec_for

WORD_TIMEOUT = 10.0
"""Seconds a test waits for a word that must come (it comes within a millisecond)."""


def test_the_word_comes_once_the_record_is_complete(tmp_path: Path) -> None:
    """A launched job's word is heard on the loop, and by then its status is in the file."""

    async def scenario() -> tuple[bool, object]:
        words = RecordedWords(asyncio.get_running_loop())
        attempt = launch(spec_for(tmp_path, shell="exit 3"))
        heard = words.expect((attempt.pid, attempt.start_time))
        await asyncio.wait_for(asyncio.shield(heard), WORD_TIMEOUT)
        complete = record_complete(attempt.attempt_file)
        return complete, await wait(attempt, heard)

    assert (True, Exited(3)) == asyncio.run(scenario())


def test_a_word_heard_before_anyone_waits_is_kept_for_the_waiter() -> None:
    """A job that ends before its watch begins: the word waits for the watch."""

    async def scenario() -> bool:
        words = RecordedWords(asyncio.get_running_loop())
        words.heard((4242, 17))
        await asyncio.sleep(0)  # the word crosses to the loop
        return words.expect((4242, 17)).done()

    assert asyncio.run(scenario())


def test_a_word_for_a_process_that_reused_the_pid_counts_for_nobody_else() -> None:
    """Named by pid and start time: a later process with the same pid is not told."""

    async def scenario() -> tuple[bool, bool]:
        words = RecordedWords(asyncio.get_running_loop())
        waiting = words.expect((4242, 18))
        words.heard((4242, 17))
        words.heard((4243, 18))
        words.heard((4242, 18))
        await asyncio.wait_for(asyncio.shield(waiting), WORD_TIMEOUT)
        other = words.expect((4242, 17))  # kept as early, but only for (4242, 17)
        return waiting.done(), other.done() and not words.expect((4242, 19)).done()

    assert (True, True) == asyncio.run(scenario())


def test_early_words_are_kept_up_to_a_bound() -> None:
    """Words nobody waits on (a stopped daemon's jobs) never grow without end."""

    async def scenario() -> tuple[bool, bool]:
        words = RecordedWords(asyncio.get_running_loop())
        for pid in range(EARLY_KEPT + 10):
            words.heard((pid, 1))
        await asyncio.sleep(0)
        return words.expect((0, 1)).done(), words.expect((EARLY_KEPT + 9, 1)).done()

    assert (False, True) == asyncio.run(scenario())


def test_the_wait_ends_on_the_word_not_at_the_end_of_its_pause(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock is still held as the wait begins; the word, not the next look, ends it."""
    attempt = launch(spec_for(tmp_path, shell="exit 0"))
    asyncio.run(wait(attempt))  # done and reaped: only the lock below holds the wait
    monkeypatch.setattr(exits, "_FIRST_LOOK", 3600.0)
    holder = os.open(attempt.attempt_file, os.O_RDONLY | os.O_CLOEXEC)
    fcntl.flock(holder, fcntl.LOCK_EX)

    async def scenario() -> object:
        heard: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = asyncio.create_task(wait(attempt, heard))
        await asyncio.sleep(0)
        assert not waiting.done()
        os.close(holder)  # the record is complete now, as the supervisor would leave it
        heard.set_result(None)
        return await asyncio.wait_for(waiting, WORD_TIMEOUT)

    assert Exited(0) == asyncio.run(scenario())


def test_the_word_ends_the_wait_without_the_exit_watch(tmp_path: Path) -> None:
    """The supervisor says ``recorded`` only once it has reaped the job and closed its
    record, so the word alone ends the wait: here it comes for a job still sleeping (which
    the supervisor never does), and the wait trusts it, reading the file as it stands."""
    attempt = launch(spec_for(tmp_path, shell="sleep 30"))
    try:
        async def scenario() -> object:
            heard: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            waiting = asyncio.create_task(wait(attempt, heard))
            await asyncio.sleep(0)
            assert not waiting.done()
            heard.set_result(None)
            return await asyncio.wait_for(waiting, WORD_TIMEOUT)

        assert Vanished(attempt.pid) == asyncio.run(scenario())  # no status in the file yet
    finally:
        os.killpg(attempt.pid, signal.SIGKILL)
        asyncio.run(wait(attempt))
