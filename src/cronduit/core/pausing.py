"""What a pause request must say, and when it ends: checks on values, no store, no clock.

The edges (``cronduit job pause``, ``POST /v1/jobs/{job}/pause``) pass the text they were
given and the instant ``now``; these functions answer with the value to record or a
:class:`PauseError` naming the field and the rule it breaks.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta

from cronduit.core.durations import DurationError, parse_duration

MAX_REASON = 500
"""Characters a pause's reason may have: a sentence or two, not a document."""
MAX_OPERATOR = 200
"""Characters an operator's name may have (as a manual run's)."""


class PauseError(ValueError):
    """A pause or resume request that cannot be recorded as given."""


def check_text(value: str, field: str, limit: int) -> str:
    """``value`` stripped of surrounding spaces: non-empty, at most ``limit`` characters and
    free of control characters (so it prints on one line in status and the audit log)."""
    text = value.strip()
    if not text:
        raise PauseError(f"{field}: required, and not blank")
    if len(text) > limit:
        raise PauseError(f"{field}: at most {limit} characters, not {len(text)}")
    if any(unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") for char in text):
        raise PauseError(f"{field}: control characters (newlines, tabs, escapes) are refused")
    return text


def check_reason(reason: str) -> str:
    """The reason a pause records (required; see :func:`check_text`)."""
    return check_text(reason, "reason", MAX_REASON)


def check_operator(operator: str) -> str:
    """Who asks (see :func:`check_text`)."""
    return check_text(operator, "operator", MAX_OPERATOR)


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
