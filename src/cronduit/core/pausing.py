"""What a pause request must say, and when it ends: checks on values, no store, no clock.

The edges (``cronduit job pause``, ``POST /v1/jobs/{job}/pause``) pass the text they were
given and the instant ``now``; these functions answer with the value to record or a
:class:`PauseError` naming the field and the rule it breaks. The reason and the operator
follow the rule of every free-text field (:func:`cronduit.core.text.check_line`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronduit.core.durations import DurationError, parse_duration


class PauseError(ValueError):
    """A pause request whose ``until`` cannot be recorded as given."""


def parse_until(text: str, now: datetime) -> datetime:
    """When a pause expires: a duration from ``now`` (``2h``, ``1d12h``) or an ISO 8601
    instant (``2026-06-01T09:00:00Z``; one without an offset is read as UTC). It must be
    after ``now``."""
    stripped = text.strip()
    instant = _instant(stripped, now)
    if instant <= now:
        raise PauseError(f"until: {stripped!r} is not in the future")
    return instant


def _instant(stripped: str, now: datetime) -> datetime:
    if stripped and stripped[0].isdigit() and stripped[-1] in "dhms":
        try:
            return now + timedelta(seconds=parse_duration(stripped))
        except DurationError as error:
            raise PauseError(f"until: {stripped!r} {error}") from None
    try:
        instant = datetime.fromisoformat(stripped.replace("z", "Z"))
    except ValueError:
        raise PauseError(f"until: {stripped!r} is neither a duration such as 2h nor an ISO "
                         "8601 instant such as 2026-06-01T09:00:00Z") from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant.astimezone(UTC)
