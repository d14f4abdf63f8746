"""Process identity read from ``/proc/<pid>/stat``."""

from __future__ import annotations

import os

from cronduit.executor.procfs import Identity, identity, parse_stat

STAT = (
    b"4242 (we) (ird name) S 1 4242 4242 0 -1 4194560 96 0 0 0 0 0 0 0 20 0 1 0 "
    b"987654 2719744 225 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
)


def test_fields_are_counted_from_the_last_parenthesis() -> None:
    """A command name holding spaces and parentheses does not shift the fields."""
    assert Identity(session=4242, start_time=987654) == parse_stat(STAT)


def test_this_process_has_an_identity_and_a_missing_one_has_none() -> None:
    """A live pid has an identity; a pid beyond ``pid_max`` has none."""
    mine = identity(os.getpid())
    assert (True, None) == (mine is not None and mine.start_time > 0, identity(2**22 + 1))
