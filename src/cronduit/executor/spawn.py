"""Launching an attempt: claim its file, hand it to the wrapper locked, record who it is.

The order is what makes "never twice" hold through any crash of the daemon:

1. open the attempt file (created once, never truncated or replaced) and ``flock`` it;
2. refuse if it holds anything: the job ran already, whatever state it is in now;
3. spawn the wrapper with the file as its standard input, so the child holds the lock from
   birth; the daemon then closes its own copy.

Killed before 3, the daemon leaves a free lock and an empty file: nothing ran, and the
attempt may be launched. Killed after, the lock is the wrapper's until it exits.

Spawning uses :class:`subprocess.Popen` (vfork on Linux, with every other descriptor
closed), one process per attempt: the wrapper, which forks the job. Launched wrappers are
the daemon's children and must be reaped; :func:`~cronduit.executor.wait` does so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from pathlib import Path

from cronduit.executor.files import RETRY_AFTER_VARIABLE, retry_after_path
from cronduit.executor.procfs import identity
from cronduit.executor.states import Attempt, AttemptConflict, LaunchSpec
from cronduit.executor.wrapper import wrapper_argv

_LOCK_PATIENCE = 0.05
"""How long launch waits out an inspector's momentary probe of the lock, in seconds."""

_children: dict[tuple[int, int], subprocess.Popen[bytes]] = {}
"""Wrappers this process launched and has not reaped yet, by (pid, start time).

Kept so the Popen objects are neither garbage-collected with a warning nor reaped behind
:func:`reap`'s back; the key includes the start time so an adopted attempt whose pid was
recycled into one of our own children never reaps that child.
"""


def launch(spec: LaunchSpec) -> Attempt:
    """Start the attempt's wrapper and return its identity; refuse an attempt already started.

    Raises :class:`AttemptConflict` when the attempt file is locked or holds anything, and
    the usual :class:`OSError` (a missing ``cwd``, say) when the wrapper cannot be started,
    in which case nothing ran and the attempt is still not started.
    """
    attempt_file = spec.attempt_file.absolute()  # the wrapper runs in the job's cwd
    record = _claim(attempt_file)
    try:
        wrapper = _spawn(spec, attempt_file, record)
    finally:
        os.close(record)
    found = identity(wrapper.pid)
    assert found is not None  # an unreaped child always has a /proc entry
    _children[wrapper.pid, found.start_time] = wrapper
    return Attempt(wrapper.pid, found.start_time, attempt_file)


def reap(attempt: Attempt) -> None:
    """Collect the exit of a wrapper this process launched, once it has exited; else nothing."""
    wrapper = _children.pop((attempt.pid, attempt.start_time), None)
    if wrapper is not None:
        wrapper.poll()


def _claim(attempt_file: Path) -> int:
    """Open and lock the attempt file, refusing an attempt that started before.

    Read-write for the wrapper's lines, in append mode so they follow each other whatever
    the shared offset, and never truncated: a record a wrapper wrote is never lost.
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
    record = _open_in_folder(attempt_file, flags)
    try:
        _take_lock(record, attempt_file)
        if os.fstat(record).st_size:
            raise AttemptConflict(f"{attempt_file}: this attempt already started")
    except BaseException:
        os.close(record)
        raise
    return record


def _take_lock(record: int, attempt_file: Path) -> None:
    """Lock exclusively; an inspector's shared probe lasts microseconds, so wait that out."""
    deadline = time.monotonic() + _LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(record, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise AttemptConflict(f"{attempt_file}: a running wrapper holds the lock") from None
            time.sleep(0.001)


def _spawn(spec: LaunchSpec, attempt_file: Path, record: int) -> subprocess.Popen[bytes]:
    """Start the wrapper: own session, attempt file on stdin, log on stdout and stderr."""
    log = _open_in_folder(spec.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC)
    # Shared by every process that inherits the log, and so held while any of them may still
    # write to it: a free lock is what lets a pruned run's log be reused (cronduit.run_folders).
    with contextlib.suppress(OSError):
        fcntl.flock(log, fcntl.LOCK_SH | fcntl.LOCK_NB)
    try:
        return subprocess.Popen(
            wrapper_argv(spec.command),
            stdin=record,
            stdout=log,
            stderr=log,
            cwd=spec.cwd,
            env={**spec.env, RETRY_AFTER_VARIABLE: str(retry_after_path(attempt_file))},
            start_new_session=True,
        )
    finally:
        os.close(log)


def _open_in_folder(path: Path, flags: int) -> int:
    """Open ``path`` (mode 0600 if created), making its folder only when it is missing.

    The runner has nearly always made the run's folder already, so the open comes first:
    no ``mkdir`` or ``stat`` on the way to a launch that needs none.
    """
    try:
        return os.open(path, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(path, flags, 0o600)
