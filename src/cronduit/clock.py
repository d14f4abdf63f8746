"""The only places cronduit reads a clock. Everything else is handed ``now``."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class SystemClock:
    """The real clock (:class:`cronduit.ports.Clock`)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


MAX_ROUND_TRIP = 0.25
"""Seconds a reading of a source clock may take to be counted from its midpoint."""


REFRESH_EVERY = 1.0
"""Seconds a reading of a source clock is used for before :meth:`SourceClock.refresh` reads
again: the daemon's longest sleep, so an idle daemon still reads it at every turn."""


class SourceClock:
    """Another machine's clock, read through this one's monotonic clock
    (:class:`cronduit.ports.Clock`): with a PostgreSQL state, the database's, so every
    daemon compares due times on the same clock whatever its own host's says.

    :meth:`sync` reads the source (one round trip) and notes the monotonic instant halfway
    through it; :meth:`now` is that reading plus the monotonic time since. The daemon
    refreshes it at each turn of its loop (:meth:`refresh`: a new reading once the last is
    :data:`REFRESH_EVERY` old, so a burst of turns costs no round trip each), so the error
    is the monotonic clock's drift over a second or so, and a wall clock stepped on this
    host changes nothing.

    A round trip longer than :data:`MAX_ROUND_TRIP` (a connection waited for after an
    outage, a server slow to answer) says little of when the reading was taken, most likely
    near its end: its midpoint would put the clock ahead by half the wait, and slots would
    fire early. The source is then read again, and a second slow reading is counted from the
    end of its round trip, so the clock may lag by it but is never ahead.
    """

    def __init__(self, source: Callable[[], datetime],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._source = source
        self._monotonic = monotonic
        self._base: tuple[datetime, float] | None = None

    def refresh(self) -> None:
        """:meth:`sync` if the last reading is :data:`REFRESH_EVERY` old or more."""
        if self._base is None or self._monotonic() - self._base[1] >= REFRESH_EVERY:
            self.sync()

    def sync(self) -> None:
        """Read the source again; raises what reading it raised (the base stays)."""
        for _ in range(2):
            before = self._monotonic()
            read = self._source()
            after = self._monotonic()
            if after - before <= MAX_ROUND_TRIP:
                self._base = (read.astimezone(UTC), (before + after) / 2)
                return
        self._base = (read.astimezone(UTC), after)

    def now(self) -> datetime:
        if self._base is None:
            self.sync()
        assert self._base is not None
        read, at = self._base
        return read + timedelta(seconds=self._monotonic() - at)
