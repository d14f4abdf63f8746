"""The only place cronduit reads the wall clock. Everything else is handed ``now``."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    """The real clock (:class:`cronduit.ports.Clock`)."""

    def now(self) -> datetime:
        return datetime.now(UTC)
