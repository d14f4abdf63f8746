"""Outages of the state folder (a full or read-only disk), as the daemon lives through them.

An outage begins with the first write that fails and ends with the first one that succeeds
after it. Whoever writes (the engine's loop, the HTTP acceptor) keeps one :class:`Outage` or
None and asks here, at each failure and each success, what to log and how long to wait
before trying again. The log gets one line when an outage begins, one for each new reason
during it (a full disk that turns read-only) and one when it ends: never one per retry, nor
one each time two reasons take turns (the store full, then a run's folder), since a disk
that stays full for an hour would otherwise fill the log that is on it too.

Times are seconds on a monotonic clock, as the caller reads it: an outage's length must not
jump with the wall clock, which can step at the same time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cronduit.core.durations import format_duration

FIRST_RETRY = 0.25
"""Seconds before the first retry: a disk freed at once is noticed at once."""
LONGEST_RETRY = 5.0
"""Seconds between retries at most: space given back is noticed within this."""


@dataclass(frozen=True)
class Subject:
    """Who lives through the outage, and how its lines read (``{reason}``, ``{took}``)."""

    begins: str
    changes: str
    ends: str


ENGINE = Subject(
    begins="state store unavailable: {reason}; runs going carry on, timers and new runs "
           "wait; retrying",
    changes="state store still unavailable, now: {reason}; retrying",
    ends="state store available again after {took}; catching up",
)
"""The daemon's loop: timers, routing, launches and the records of runs that end."""

ACCEPTOR = Subject(
    begins="refusing triggers with 503: state store unavailable: {reason}",
    changes="still refusing triggers with 503, now: {reason}",
    ends="accepting triggers again after {took}",
)
"""The HTTP acceptor: webhooks, GitHub deliveries, run-now, pause and resume."""


LEASE = Subject(
    begins="cannot renew the node's lease: {reason}; runs going here are ended before the "
           "lease runs out, retrying",
    changes="still cannot renew the node's lease, now: {reason}",
    ends="renewing the node's lease again after {took}",
)
"""The node lease's renewals (a PostgreSQL state shared by many daemons)."""


@dataclass(frozen=True)
class Outage:
    """An outage under way: why the last write failed, since when, and how many in a row."""

    reason: str
    began: float
    failures: int = 1
    seen: frozenset[str] = frozenset()
    """Every reason this outage has given, ``reason`` included."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "seen", self.seen | {self.reason})


@dataclass(frozen=True)
class Step:
    """What a failure or a success means: the outage now, and a line to log if any."""

    outage: Outage | None
    line: str | None


def failed(outage: Outage | None, reason: str, at: float, subject: Subject) -> Step:
    """A write failed with ``reason`` at ``at``."""
    if outage is None:
        return Step(Outage(reason, at), subject.begins.format(reason=reason))
    more = replace(outage, reason=reason, failures=outage.failures + 1)
    if reason in outage.seen:
        return Step(more, None)
    return Step(more, subject.changes.format(reason=reason))


def succeeded(outage: Outage | None, at: float, subject: Subject) -> Step:
    """A write succeeded at ``at``: the outage, if there was one, is over."""
    if outage is None:
        return Step(None, None)
    return Step(None, subject.ends.format(took=took(at - outage.began)))


def retry_in(outage: Outage) -> float:
    """Seconds to wait before the next try: doubling from :data:`FIRST_RETRY` up to
    :data:`LONGEST_RETRY`, so a long outage costs a try every few seconds, not a busy loop."""
    return min(LONGEST_RETRY, FIRST_RETRY * float(2 ** min(outage.failures - 1, 16)))


def took(seconds: float) -> str:
    """An outage's length for its last line: tenths under a minute, whole units past it."""
    if seconds < 60:
        return f"{max(seconds, 0.0):.1f}s"
    return format_duration(int(seconds))
