"""Run ids: time-ordered, so a store's indexes on them grow at one end.

A run's id is looked up by key in three indexes (the runs, the events a run consumed, the
run-ended records). Random ids put each new run on a random leaf page of each: at hundreds of
runs a second every commit dirtied a page per run per index, and as the history grew those
pages fell out of SQLite's cache, so the same load wrote and read more each minute (the soak
bench saw the daemon's disk writes grow five-fold in four minutes). Ids that sort by creation
time land on the newest pages, which stay few and cached however long the history.

An id is 20 hex digits: 11 for the milliseconds since the Unix epoch (good until the year
2527), then 9 (36 bits) that start random at each new millisecond and count up within it, as
ULID's monotonic mode does. Ids from one generator never repeat and always increase, even
when the wall clock steps back; ids from two generators (a restart after a clock step, or
later two hosts) differ in their 36 random bits but by a chance of one in tens of billions.
"""

from __future__ import annotations

from datetime import datetime

_TIME_DIGITS = 11
_RANDOM_BITS = 36
_RANDOM_LIMIT = 1 << _RANDOM_BITS


class RunIds:
    """Makes run ids that increase strictly, from instants and random numbers given in."""

    def __init__(self) -> None:
        self._last: tuple[int, int] = (-1, 0)

    def next(self, at: datetime, random_bits: int) -> str:
        """The id of a run made at ``at``; ``random_bits`` is a fresh random 36-bit number."""
        millis = max(0, int(at.timestamp() * 1000))
        last_millis, last_random = self._last
        if millis > last_millis:
            self._last = (millis, random_bits % _RANDOM_LIMIT)
        elif last_random + 1 < _RANDOM_LIMIT:  # same millisecond, or the clock stepped back
            self._last = (last_millis, last_random + 1)
        else:  # 2**36 ids in one millisecond: borrow the next one
            self._last = (last_millis + 1, 0)
        millis, bits = self._last
        return f"{millis:0{_TIME_DIGITS}x}{bits:09x}"
