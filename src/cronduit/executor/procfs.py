"""Process identity from ``/proc``: a pid plus its start time names exactly one process."""

from __future__ import annotations

import os
from typing import NamedTuple


class Identity(NamedTuple):
    """The fields of ``/proc/<pid>/stat`` that tell one process from a later one with its pid."""

    session: int
    """Field 6: a job leads its own session, so this equals its pid."""
    start_time: int
    """Field 22: clock ticks after boot at which the process started."""
    exited: bool = False
    """Field 3 is ``Z`` or ``X``: the process has exited and waits to be reaped."""


def parse_stat(stat: bytes) -> Identity:
    """Read an :class:`Identity` from the text of ``/proc/<pid>/stat``.

    The command name (field 2) is in parentheses and may itself hold spaces and
    parentheses, so fields are counted from the last ``)``: field 3 is the first after it.
    """
    fields = stat[stat.rindex(b")") + 2 :].split()
    return Identity(session=int(fields[6 - 3]), start_time=int(fields[22 - 3]),
                    exited=fields[0] in (b"Z", b"X"))


STAT_BYTES = 4096
"""More than ``/proc/<pid>/stat`` ever holds (52 numbers and a short name): one read does."""


def identity(pid: int) -> Identity | None:
    """The identity of the process ``pid`` now (a zombie still has one), or None if none.

    Read with plain ``os`` calls, three system calls where a file object makes seven: this
    runs twice per attempt (at launch and when watching its exit).
    """
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError):
        return None
    try:
        stat = os.read(fd, STAT_BYTES)
    except ProcessLookupError:  # the process went between the open and the read
        return None
    finally:
        os.close(fd)
    return parse_stat(stat)
