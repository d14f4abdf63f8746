"""The database drivers' errors, for code above ``store/`` that must not import a driver.

Loading the store makes its drivers' errors known to :mod:`cronduit.faults`, which tells the
daemon what it lives through (a full or read-only disk; with PostgreSQL, a lost connection);
the CLI catches :func:`driver_errors` when a store cannot be opened. psycopg loads only when
a ``postgresql://`` state is used, so its errors join here when its backend loads
(:func:`add_driver_errors`): a command on an SQLite state never pays for importing it, and
an error of a driver cannot be met before its backend has loaded.
"""

from __future__ import annotations

import sqlite3

from cronduit.faults import count_database_errors

_DRIVERS: list[type[Exception]] = [sqlite3.Error]


def driver_errors() -> tuple[type[Exception], ...]:
    """Every error the loaded backends' drivers raise (read when an error is caught, so a
    backend loaded since is counted: ``except driver_errors():``)."""
    return tuple(_DRIVERS)


def add_driver_errors(error: type[Exception]) -> None:
    """A backend's driver raises ``error`` and its subclasses. Idempotent."""
    if error not in _DRIVERS:
        _DRIVERS.append(error)


count_database_errors(sqlite3.Error, sqlite3.IntegrityError)
