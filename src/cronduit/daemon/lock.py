"""One daemon per state directory: the lock it holds for its life.

``cronduit state copy`` holds the same lock while it reads an SQLite state, so that no
daemon starts on the state being copied, and a daemon that holds it (even one stopped with
SIGSTOP, whose heartbeat has gone stale) refuses the copy.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from cronduit.daemon.errors import AlreadyServing
from cronduit.paths import StatePaths


def hold_daemon_lock(paths: StatePaths) -> int:
    """An exclusive lock on the state directory's ``daemon.lock``, held until the returned
    descriptor is closed; :class:`AlreadyServing` when another process holds it."""
    paths.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.root / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise AlreadyServing(f"another cronduit daemon is serving {paths.root}") from None
    return fd


@contextmanager
def daemon_lock(paths: StatePaths) -> Iterator[None]:
    """The daemon lock held for a ``with`` block (no daemon can start meanwhile)."""
    fd = hold_daemon_lock(paths)
    try:
        yield
    finally:
        os.close(fd)
