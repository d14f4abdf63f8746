"""Which errors mean the state folder cannot be written (a full disk, a read-only one, an I/O
error), and the one-line reason each gives.

The daemon lives through these (:mod:`cronduit.core.outage`): the store and the run folders
are on that disk, and space comes back. Any other error is a fault of cronduit's own and
still ends the daemon, loudly.
"""

from __future__ import annotations

import sqlite3


def reason_of(error: BaseException) -> str | None:
    """The reason to log for a state-folder fault; None for any other error.

    An OSError's reason is its system message without the file name, so one outage reads
    as one reason however many files it meets.
    """
    if isinstance(error, sqlite3.IntegrityError):
        return None  # a constraint: a conflict the caller handles, never the disk
    if isinstance(error, sqlite3.Error):
        return _one_line(str(error)) or type(error).__name__
    if isinstance(error, OSError):
        return _one_line(error.strerror or "") or type(error).__name__
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())
