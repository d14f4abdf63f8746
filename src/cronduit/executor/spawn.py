"""Launching an attempt: claim its lock, hand the lock to the wrapper, record who it is.

The order is what makes "never twice" hold through any crash of the daemon:

1. open ``lock`` (created once, never truncated or replaced) and ``flock`` it;
2. refuse if ``started`` exists: the job ran already, whatever state it is in now;
3. spawn the wrapper with the lock as its standard input, so the child holds the lock from
   birth; the daemon then closes its own copy.

Killed before 3, the daemon leaves a free lock and no ``started``: nothing ran, and the
attempt may be launched. Killed after, the lock is the wrapper's until it exits.

Spawning uses :class:`subprocess.Popen` (vfork on Linux, with every other descriptor
closed), one process per attempt: the wrapper, which forks the job. Launched wrappers are
the daemon's children and must be reaped; :func:`~cronduit.executor.wait` does so.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

from cronduit.executor.files import LOCK, RETRY_AFTER, RETRY_AFTER_VARIABLE, STARTED
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

    Raises :class:`AttemptConflict` when the attempt's lock is held or its ``started``
    marker exists, and the usual :class:`OSError` (a missing ``cwd``, say) when the wrapper
    cannot be started, in which case nothing ran and the attempt is still not started.
    """
    attempt_dir = spec.attempt_dir.absolute()  # the wrapper runs in the job's cwd
    attempt_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = _claim(attempt_dir)
    try:
        wrapper = _spawn(spec, attempt_dir, lock)
    finally:
        os.close(lock)
    found = identity(wrapper.pid)
    assert found is not None  # an unreaped child always has a /proc entry
    _children[wrapper.pid, found.start_time] = wrapper
    return Attempt(wrapper.pid, found.start_time, attempt_dir)


def reap(attempt: Attempt) -> None:
    """Collect the exit of a wrapper this process launched, once it has exited; else nothing."""
    wrapper = _children.pop((attempt.pid, attempt.start_time), None)
    if wrapper is not None:
        wrapper.poll()


def _claim(attempt_dir: Path) -> int:
    """Open and lock the attempt's lock file, refusing an attempt that started before."""
    lock = os.open(attempt_dir / LOCK, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        _take_lock(lock, attempt_dir)
        if (attempt_dir / STARTED).exists():
            raise AttemptConflict(f"{attempt_dir}: this attempt already started")
    except BaseException:
        os.close(lock)
        raise
    return lock


def _take_lock(lock: int, attempt_dir: Path) -> None:
    """Lock exclusively; an inspector's shared probe lasts microseconds, so wait that out."""
    deadline = time.monotonic() + _LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise AttemptConflict(f"{attempt_dir}: a running wrapper holds the lock") from None
            time.sleep(0.001)


def _spawn(spec: LaunchSpec, attempt_dir: Path, lock: int) -> subprocess.Popen[bytes]:
    """Start the wrapper: own session, lock on stdin, log on stdout and stderr."""
    spec.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    log = os.open(spec.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        return subprocess.Popen(
            wrapper_argv(attempt_dir, spec.command),
            stdin=lock,
            stdout=log,
            stderr=log,
            cwd=spec.cwd,
            env={**spec.env, RETRY_AFTER_VARIABLE: str(attempt_dir / RETRY_AFTER)},
            start_new_session=True,
        )
    finally:
        os.close(log)
