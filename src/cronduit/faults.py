"""Which errors mean the state folder cannot be written (a full disk, a read-only one, an I/O
error), and the one-line reason each gives.

The daemon lives through these (:mod:`cronduit.core.outage`): the store and the run folders
are on that disk, and space comes back. Any other error is a fault of cronduit's own and
still ends the daemon, loudly.

A database driver's errors count once its store backend has loaded: each backend names its
driver's errors here (:func:`count_database_errors`), so this module imports no driver and
knows no backend, and an error of a driver cannot be met before its backend has loaded.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _DatabaseErrors:
    faults: tuple[type[BaseException], ...] = ()
    constraints: tuple[type[BaseException], ...] = ()


_DATABASE = _DatabaseErrors()


def count_database_errors(every: type[BaseException], constraint: type[BaseException]) -> None:
    """Count ``every`` error of a database driver as a state-store fault, except its
    ``constraint`` errors: a write a constraint refused is the caller's to handle (the store
    raises :class:`~cronduit.ports.Conflict`), never the disk's. Idempotent."""
    if every not in _DATABASE.faults:
        _DATABASE.faults += (every,)
        _DATABASE.constraints += (constraint,)


def reason_of(error: BaseException) -> str | None:
    """The reason to log for a state-folder fault; None for any other error.

    An OSError's reason is its system message without the file name, so one outage reads
    as one reason however many files it meets.
    """
    if isinstance(error, _DATABASE.faults) and not isinstance(error, _DATABASE.constraints):
        return _one_line(str(error)) or type(error).__name__
    if isinstance(error, OSError):
        return _one_line(error.strerror or "") or type(error).__name__
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())
