"""Waiting for an attempt to end and ending it: pidfds, TERM, grace, KILL.

A pidfd (Linux 5.3+) becomes readable when its process exits, whether or not that process
is our child, so one mechanism serves an attempt we launched and one adopted after a
restart. It is opened from the pid and then checked against the attempt's start time, so
it can never point at a later process that reused the pid.

Every launched attempt must be awaited with :func:`wait`, which also reaps it;
:func:`terminate_async` only signals and watches. Both read the outcome from the attempt
file, so the answer is the same whether or not the daemon restarted in between.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from cronduit.executor.adopt import record_complete
from cronduit.executor.files import settled_state
from cronduit.executor.procfs import identity
from cronduit.executor.states import Attempt, Running, Settled, Termination

GRACE = 10.0
"""Seconds between TERM and KILL unless the caller says otherwise."""
KILL_WAIT = 5.0
"""How long to wait, after KILL, for the kernel to take a process group down, in seconds."""
RECORD_PATIENCE = 30.0
"""How long the supervisor may take, after a job exits, to record its status, in seconds:
it reaps and writes within a millisecond, unless the machine is starved. :func:`wait` looks
every :data:`PATIENT_LOOK` seconds past this, for as long as the supervisor holds the lock
(it may be waiting for a full disk to have room for the status); only
:func:`terminate_async` counts the status as lost past this (the attempt vanished)."""
_FIRST_LOOK = 0.0005
_LAST_LOOK = 0.05
PATIENT_LOOK = 0.5


class ExitWatch:
    """A pidfd on an attempt's job; no pidfd at all when the job is already gone."""

    def __init__(self, attempt: Attempt) -> None:
        self._fd = _open_pidfd(attempt)

    def close(self) -> None:
        """Release the pidfd."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def exited(self, timeout: float = 0.0) -> bool:
        """Whether the job has exited, blocking up to ``timeout`` seconds for it."""
        if self._fd is None:
            return True
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        return bool(poller.poll(max(0, round(timeout * 1000))))

    async def exited_async(self, timeout: float | None = None,
                           word: asyncio.Future[None] | None = None) -> bool:
        """Whether the job exits within ``timeout`` seconds, without blocking the loop; or,
        with no ``timeout``, until it exits or ``word`` (the supervisor's, that the job's
        record is complete, so it has exited) is done, whichever comes first."""
        if self._fd is None or (word is not None and word.done()):
            return True
        loop = asyncio.get_running_loop()
        readable = loop.create_future()
        loop.add_reader(self._fd, _settle, readable)
        try:
            if timeout is None:  # the future itself: a step's end is noticed a turn sooner
                if word is not None:
                    word.add_done_callback(lambda _: _settle(readable))
                await readable
                return True
            done, _ = await asyncio.wait({readable}, timeout=timeout)
        finally:
            loop.remove_reader(self._fd)
            readable.cancel()
        return bool(done)


@contextmanager
def watching(attempt: Attempt) -> Iterator[ExitWatch]:
    """An :class:`ExitWatch` on ``attempt``, closed on leaving the block."""
    watch = ExitWatch(attempt)
    try:
        yield watch
    finally:
        watch.close()


async def wait(attempt: Attempt, recorded: asyncio.Future[None] | None = None) -> Settled:
    """Wait for the attempt's job to exit and its record to be complete; say how it ended.

    ``recorded``, done when the supervisor says the record is complete (:mod:`.recorded`),
    ends the wait at once: the job has exited and nothing more will be written. Without
    it, the exit is seen on the pidfd and the record polled until its lock is free; a word
    that comes meanwhile ends each pause early, and one that never comes only means the
    pauses run their course."""
    with watching(attempt) as watch:
        await watch.exited_async(word=recorded)
    if recorded is None or not recorded.done():  # no word yet: look at the record's lock
        for pause in _until_recorded(attempt.attempt_file, patient=True):
            if recorded is None:
                await asyncio.sleep(pause)
                continue
            with suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(recorded), pause)
            if recorded.done():
                break
    return settled_state(attempt.attempt_file)


def _until_recorded(attempt_file: Path, *, patient: bool = False) -> Iterator[float]:
    """The pauses to sleep, growing, while the supervisor has yet to complete the record of
    a job that exited; none once it has, or after :data:`RECORD_PATIENCE` unless
    ``patient`` (then every :data:`PATIENT_LOOK` seconds for as long as it holds the lock)."""
    delay, waited = _FIRST_LOOK, 0.0
    while not record_complete(attempt_file):
        if waited >= RECORD_PATIENCE:
            if not patient:
                return
            delay = PATIENT_LOOK
        yield delay
        waited += delay
        delay = min(delay * 2, _LAST_LOOK)


async def terminate_async(
    attempt: Attempt, grace: float = GRACE, kill_wait: float = KILL_WAIT
) -> Termination:
    """TERM the attempt's process group, KILL it if still there after ``grace`` seconds.

    Returns once the job is gone (or ``kill_wait`` after KILL), waiting without blocking
    the loop. Whatever is left in the group once the job is gone is KILLed too: a deadline
    bounds the whole run, not just the job's first process.
    """
    with watching(attempt) as watch:
        _signal_group(attempt, signal.SIGTERM, watch)
        killed = not await watch.exited_async(grace)
        if killed:
            _signal_group(attempt, signal.SIGKILL, watch)
            await watch.exited_async(kill_wait)
        if not watch.exited():
            return Termination(Running(attempt), killed)
        # Stragglers swept from the group of the gone job, then its record read once the
        # supervisor has completed it: awaited, so the loop serves on meanwhile.
        _sweep(attempt)
        for pause in _until_recorded(attempt.attempt_file):
            await asyncio.sleep(pause)
        return Termination(settled_state(attempt.attempt_file), killed)


def _sweep(attempt: Attempt) -> None:
    """KILL what is left of the group of a job that has exited.

    Safe while the pid is the job's zombie or no process's at all: Linux never hands
    out a pid that still names a process group, so the group holds only the job's
    leftovers. A live process with that pid and another start time means the group is
    long empty and the pid reused: then nothing is sent.
    """
    found = identity(attempt.pid)
    if found is None or found.start_time == attempt.start_time:
        _signal_group(attempt, signal.SIGKILL)


def _signal_group(attempt: Attempt, signum: int, watch: ExitWatch | None = None) -> None:
    """Signal the attempt's process group; a group already empty is not an error.

    Given a watch whose job is gone, sends nothing: nothing is left to stop, and the
    pid may since name another process.
    """
    if watch is not None and watch.exited():
        return
    with suppress(ProcessLookupError):
        os.killpg(attempt.pid, signum)


def _open_pidfd(attempt: Attempt) -> int | None:
    """A pidfd on the attempt's job, or None once that process no longer exists."""
    try:
        fd = os.pidfd_open(attempt.pid)
    except ProcessLookupError:
        return None
    # Checked after opening: if the start time still matches, the pidfd is the job's.
    found = identity(attempt.pid)
    if found is None or found.start_time != attempt.start_time:
        os.close(fd)
        return None
    return fd


def _settle(future: asyncio.Future[None]) -> None:
    """Resolve ``future`` once, however often the loop reports the pidfd readable."""
    if not future.done():
        future.set_result(None)
