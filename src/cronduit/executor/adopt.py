"""Inspecting an attempt after a restart: is it running (adopt it), over, or never started?

The lock decides, not the pid: the wrapper holds ``lock`` exactly while it lives, so a free
lock means it is gone, whatever process now has its pid. While the lock is held, the pid in
``started`` is checked against the start time the caller recorded at launch (and against
the wrapper's mark of leading its own session), so a recycled pid is never adopted.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cronduit.executor.files import LOCK, STARTED, read_number, settled_state
from cronduit.executor.procfs import identity
from cronduit.executor.states import (
    Attempt,
    AttemptConflict,
    AttemptState,
    Running,
    Vanished,
)

STARTUP_PATIENCE = 2.0
"""How long a held lock may go without a ``started`` marker (a wrapper starting up), in s."""


def inspect(
    attempt_dir: Path,
    expected_start_time: int | None = None,
    patience: float = STARTUP_PATIENCE,
) -> AttemptState:
    """The attempt's state, read from its directory and ``/proc``; it changes nothing.

    Pass ``expected_start_time`` (:attr:`Attempt.start_time`, as recorded at launch) when
    known: a held lock whose ``started`` pid now has another start time is not adopted.
    Waits up to ``patience`` seconds for a wrapper that holds the lock but has not yet
    written its pid (it does so first thing), then raises :class:`AttemptConflict`.
    """
    deadline = time.monotonic() + patience
    while (state := _look(attempt_dir.absolute(), expected_start_time)) is None:
        if time.monotonic() >= deadline:
            raise AttemptConflict(f"{attempt_dir}: the lock is held but no wrapper says so")
        time.sleep(0.005)
    return state


def _look(attempt_dir: Path, expected_start_time: int | None) -> AttemptState | None:
    """One look; None while a wrapper holds the lock but has not written ``started`` yet."""
    settled = _settled_if_free(attempt_dir)
    if settled is not None:
        return settled
    pid = read_number(attempt_dir / STARTED)
    if pid is None:
        return None
    start_time = _wrapper_start_time(pid, expected_start_time)
    if start_time is not None:
        return Running(Attempt(pid, start_time, attempt_dir))
    # The recorded process is gone. Look again: it may have exited a moment ago, leaving a
    # status; if the lock is still held, some other process holds it.
    return _settled_if_free(attempt_dir) or Vanished(pid)


def _wrapper_start_time(pid: int, expected_start_time: int | None) -> int | None:
    """The start time of ``pid`` if it is still the wrapper: a session leader started then."""
    found = identity(pid)
    if found is None or found.session != pid:
        return None
    if expected_start_time not in (None, found.start_time):
        return None
    return found.start_time


def _settled_if_free(attempt_dir: Path) -> AttemptState | None:
    """If no wrapper holds the lock, how the attempt stands; None while one does."""
    with _probe(attempt_dir / LOCK) as free:
        return settled_state(attempt_dir) if free else None


@contextmanager
def _probe(lock_path: Path) -> Iterator[bool]:
    """Whether the lock is free, holding a shared lock meanwhile so no launch can begin.

    Opens without creating, so the probe never replaces the inode a wrapper has locked; a
    missing lock file means no launch ever got as far as taking it.
    """
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = None
    if fd is None:
        yield True
        return
    try:
        yield _lock_shared(fd)
    finally:
        os.close(fd)


def _lock_shared(fd: int) -> bool:
    """Take a shared lock at once if nobody holds it exclusively; say whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
