"""The database drivers' errors, for code above ``store/`` that must not import a driver.

Loading the store makes its drivers' errors known to :mod:`cronduit.faults`, which tells the
daemon what it lives through (a full or read-only disk; with PostgreSQL, a lost connection);
the CLI catches :data:`DRIVER_ERRORS` when a store cannot be opened.
"""

from __future__ import annotations

import sqlite3

from cronduit.faults import count_database_errors

DRIVER_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error,)
"""Every error the backends' drivers raise (a PostgreSQL backend adds its driver's)."""

count_database_errors(sqlite3.Error, sqlite3.IntegrityError)
