"""A run's log under ``settings.max_log``: where it is cut, by how much, and the marker left.

A log that grows past its cap keeps its **head**, the first half of the cap, and its
**tail**, the newest bytes; the bytes between are cut out, and the last bytes of the head
are overwritten by a marker line that says how many::

    …the job's first words
    [cronduit: 123456789 bytes cut here; max_log 64MiB]
    …the job's newest words

The executor carries this out on the file while the job writes to it
(:mod:`cronduit.executor.logcap`) and reads it back (:mod:`cronduit.executor.logs`); the
numbers are decided here. File systems cut whole blocks only, so the head ends on a block
boundary and cuts are whole blocks.

Later cuts happen at the same place, so the log holds one marker, whose count grows. The
count lives in the file itself: a second attempt of the run, or another supervisor after a
restart, reads it back from the head's end and adds to it.
"""

from __future__ import annotations

import re

from cronduit.core.sizes import format_size

MARKER_ROOM = 128
"""The most bytes a marker takes: what is read before the head's end to find it."""
_MARKER = re.compile(
    rb"\n\[cronduit: ([0-9]{1,20}) bytes cut here; max_log [0-9A-Za-z ]{1,24}\]\n\Z")

RUNNING_TAIL_EIGHTHS = 1
"""While the job runs, a cut leaves this many eighths of the cap as the tail: the log then
grows three eighths of the cap before the next cut, rather than being cut at every look."""

SOONEST = 0.005
"""The shortest wait, in seconds, between two looks at a log that grows fast."""
LATEST = 0.1
"""The longest wait between two looks at a log that grows at all: a job that speeds up from
a trickle to a flood gets at most this long before it is looked at again."""


def head_end(cap: int, block: int) -> int:
    """Where the head ends: half the cap, down to a whole block (at least one block)."""
    return max(block, cap // 2 // block * block)


def marker(cut: int, cap: int) -> bytes:
    """The line that stands where ``cut`` bytes were taken out."""
    return f"\n[cronduit: {cut} bytes cut here; max_log {format_size(cap)}]\n".encode()


def marker_cut(before_head_end: bytes) -> int:
    """The count of the marker that ends these bytes (those just before the head's end),
    or 0 when they end in none: the log was never cut."""
    found = _MARKER.search(before_head_end[-MARKER_ROOM:])
    return int(found[1]) if found else 0


def bytes_to_cut(kept: int, cap: int, block: int, *, final: bool, coming: int = 0) -> int:
    """How many bytes to cut at the head's end from a log that holds ``kept`` bytes and is
    expected to grow by ``coming`` before it is looked at again; 0 when it stays within its
    cap. Always whole blocks, and always less than the tail, since a file system will not
    cut up to the end of a file.

    While the job runs (``final`` false), the tail is cut down to an eighth of the cap, so
    that a job writing without end is cut every three eighths of the cap, not at every look;
    and a log that will pass its cap before the next look is cut now, not after. Once the
    job has ended (``final``), only the excess goes: the log left holds as much of the tail
    as fits in the cap.
    """
    tail = kept - head_end(cap, block)
    if final:
        if kept <= cap:
            return 0
        return min(_blocks_up(kept - cap, block), _blocks_down(tail - 1, block))
    if kept + max(coming, 0) <= cap:
        return 0
    return _blocks_down(tail - cap * RUNNING_TAIL_EIGHTHS // 8, block)


def next_look(headroom: int, growth_per_second: float) -> float:
    """Seconds until a growing log is looked at again: half the time its growth would take
    to fill what is left below the cap, from :data:`SOONEST` to :data:`LATEST`."""
    if growth_per_second <= 0:
        return LATEST
    return min(LATEST, max(SOONEST, max(headroom, 0) / growth_per_second / 2))


def _blocks_up(size: int, block: int) -> int:
    return -(-size // block) * block


def _blocks_down(size: int, block: int) -> int:
    return max(0, size // block * block)
