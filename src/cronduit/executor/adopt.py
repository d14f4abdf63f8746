"""Inspecting an attempt after a restart: is it running (adopt it), over, or never started?

The lock decides first: the supervisor holds the attempt file's lock from before the job
starts until its exit status is written, so a held lock means the record may still change.
While it is held, the pid on the file is checked against the start time the caller recorded
at launch (and against the job's mark of leading its own session), so a recycled pid is
never adopted. A free lock with a pid and no status means the supervisor is gone: the job is
adopted only if that very process still lives, and otherwise it vanished.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cronduit.executor.files import read_record, settled_state
from cronduit.executor.procfs import identity
from cronduit.executor.states import (
    Attempt,
    AttemptConflict,
    AttemptState,
    Running,
    Vanished,
)

STARTUP_PATIENCE = 2.0
"""How long a held lock may go without a pid line (a job being started), in seconds."""


def inspect(
    attempt_file: Path,
    expected_start_time: int | None = None,
    patience: float = STARTUP_PATIENCE,
) -> AttemptState:
    """The attempt's state, read from its file and ``/proc``; it changes nothing.

    Pass ``expected_start_time`` (:attr:`Attempt.start_time`, as recorded at launch) when
    known: a held lock whose recorded pid now has another start time is not adopted.
    Waits up to ``patience`` seconds for a supervisor that holds the lock but has not yet
    written its pid (it does so first thing), then raises :class:`AttemptConflict`.
    """
    deadline = time.monotonic() + patience
    while (state := _look(attempt_file.absolute(), expected_start_time)) is None:
        if time.monotonic() >= deadline:
            raise AttemptConflict(f"{attempt_file}: the lock is held but no job is recorded")
        time.sleep(0.005)
    return state


def _look(attempt_file: Path, expected_start_time: int | None) -> AttemptState | None:
    """One look; None while the lock is held but no pid line is written yet."""
    settled = _settled_if_free(attempt_file)
    if settled is not None:
        if isinstance(settled, Vanished) and settled.pid is not None \
                and expected_start_time is not None \
                and _job_start_time(settled.pid, expected_start_time, living=True) is not None:
            # The supervisor is gone but its job is not: watch it, though its exit status can
            # no longer be recorded.
            return Running(Attempt(settled.pid, expected_start_time, attempt_file))
        return settled
    pid = read_record(attempt_file).pid
    if pid is None:
        return None
    start_time = _job_start_time(pid, expected_start_time)
    if start_time is not None:
        return Running(Attempt(pid, start_time, attempt_file))
    # The recorded process is gone. Look again: it may have exited a moment ago, leaving a
    # status; if the lock is still held, some other process holds it.
    return _settled_if_free(attempt_file) or Vanished(pid)


def _job_start_time(pid: int, expected_start_time: int | None, *,
                    living: bool = False) -> int | None:
    """The start time of ``pid`` if it is still the job: a session leader started then
    (``living``: and not yet exited, where nobody is left to reap it)."""
    found = identity(pid)
    if found is None or found.session != pid or (living and found.exited):
        return None
    if expected_start_time not in (None, found.start_time):
        return None
    return found.start_time


def record_complete(attempt_file: Path) -> bool:
    """Whether nobody holds the attempt's lock any more, so its record will not change."""
    with _probe(attempt_file.absolute()) as free:
        return free


def _settled_if_free(attempt_file: Path) -> AttemptState | None:
    """If nobody holds the lock, how the attempt stands; None while somebody does."""
    with _probe(attempt_file) as free:
        return settled_state(attempt_file) if free else None


@contextmanager
def _probe(attempt_file: Path) -> Iterator[bool]:
    """Whether the lock is free, holding a shared lock meanwhile so no launch can begin."""
    fd = _open_lock(attempt_file)
    if fd is None:
        yield True
        return
    try:
        yield _lock_shared(fd)
    finally:
        os.close(fd)


def _open_lock(attempt_file: Path) -> int | None:
    """A descriptor on what the launcher locks; None if no launch ever got as far as making it.

    Opens without creating, as inspecting changes nothing. That is the attempt file, or for
    an attempt an older cronduit launched (a folder; see :mod:`.files`) the ``lock`` in it.
    """
    try:
        fd = os.open(attempt_file, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        return fd
    try:
        return os.open("lock", os.O_RDONLY | os.O_CLOEXEC, dir_fd=fd)
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)


def _lock_shared(fd: int) -> bool:
    """Take a shared lock at once if nobody holds it exclusively; say whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
