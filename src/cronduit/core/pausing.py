"""What a pause request must say, and when it ends: checks on values, no store, no clock.

The edges (``cronduit job pause``, ``POST /v1/jobs/{job}/pause``) pass the text they were
given and the instant ``now``; these functions answer with the value to record or a
:class:`PauseError` naming the field and the rule it breaks. The reason and the operator
follow the rule of every free-text field (:func:`cronduit.core.text.check_line`).
"""

from __future__ import annotations

from collections.abc import Iterable
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


UNHELD = datetime.min.replace(tzinfo=UTC)
"""What a pause holds of a job not paused lately: the slots due before the dawn of time."""


def holds(pauses: Iterable[tuple[str, datetime | None]]) -> dict[str, datetime | None]:
    """What pauses hold of each job's due slots, from ``(job, resumed_at)`` pairs (``None``:
    still paused). A job still paused holds every slot (None); a job resumed holds the slots
    due before its latest resume, which are skipped, never made up. Jobs absent hold
    nothing (:data:`UNHELD`)."""
    held: dict[str, datetime | None] = {}
    for job, resumed_at in pauses:
        if resumed_at is None:
            held[job] = None
        elif job not in held:
            held[job] = resumed_at
        elif (before := held[job]) is not None:
            held[job] = max(before, resumed_at)
    return held


def is_held(held: datetime | None, due_at: datetime) -> bool:
    """Whether a pause holds a slot due at ``due_at`` (see :func:`holds`)."""
    return held is None or due_at < held


def starts_paused(paused_on_start: bool, *, seen_before: bool, known_before: bool) -> bool:
    """``paused_on_start``: a job starts paused the first time cronduit sees it, and only
    then: once resumed, a restart or an apply does not pause it again. A job that ran, was
    armed or was paused before it was first seen (a state kept from an older cronduit) is
    not new."""
    return paused_on_start and not seen_before and not known_before
