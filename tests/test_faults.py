"""Which errors the daemon lives through: the state folder's, named by their reason."""

from __future__ import annotations

import errno
import sqlite3

import cronduit.store  # noqa: F401 - loading the store names its driver's errors
from cronduit.faults import reason_of
from cronduit.ports import Conflict


def test_a_database_that_cannot_write_is_a_fault_named_in_one_line() -> None:
    """The driver's own message, on one line: one outage reads as one reason."""
    assert "database or disk is full" == reason_of(
        sqlite3.OperationalError("database or disk\n  is full"))


def test_a_refused_write_is_never_the_disks_fault() -> None:
    """A constraint's refusal is the caller's to handle, raw or as the store's Conflict."""
    assert [None, None] == [reason_of(sqlite3.IntegrityError("UNIQUE constraint failed")),
                            reason_of(Conflict("UNIQUE constraint failed"))]


def test_a_full_disk_is_named_without_its_file() -> None:
    """An OSError's reason is its system message, never the path it met."""
    error = OSError(errno.ENOSPC, "No space left on device", "/state/runs/r1/log")
    assert ["No space left on device", None] == [reason_of(error), reason_of(ValueError("x"))]
