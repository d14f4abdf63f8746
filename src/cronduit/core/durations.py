"""Durations as written in the config: ``30s``, ``15m``, ``6h``, ``1d`` and sums like ``1h30m``.

A duration is held as a whole number of seconds: every duration cronduit takes (timeouts,
windows, backoffs, intervals, jitter) is meaningful to the second and no finer, and none is
longer than :data:`~cronduit.core.limits.MAX_DURATION` (ten years).
"""

from __future__ import annotations

import re

from cronduit.core.limits import MAX_DURATION, MAX_DURATION_DIGITS

_UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
_WHOLE = re.compile(r"(?:\d+[dhms])+")
_PART = re.compile(r"(\d+)([dhms])")


class DurationError(ValueError):
    """A duration string that does not follow the ``<number><unit>`` form."""


class DurationTooLong(DurationError):
    """A duration in the right form, longer than the longest allowed where it is read."""


def parse_duration(text: str, maximum: int = MAX_DURATION) -> int:
    """Return the number of seconds ``text`` names; units must run from days down to seconds.

    Raises :class:`DurationTooLong` past ``maximum`` seconds (at most ten years, whatever
    the caller asks): a longer one cannot be added to an instant.
    """
    if not isinstance(text, str) or not _WHOLE.fullmatch(text):
        raise DurationError(
            "must be a duration such as 30s, 15m, 6h, 1d or 1h30m (units d, h, m, s)"
        )
    parts = _PART.findall(text)
    units = [unit for _, unit in parts]
    order = "dhms"
    if [order.index(u) for u in units] != sorted({order.index(u) for u in units}):
        raise DurationError("must give each unit once, largest first (as in 1h30m)")
    maximum = min(maximum, MAX_DURATION)
    too_long = DurationTooLong(f"must be at most {format_duration(maximum)}")
    numbers = [(number.lstrip("0") or "0", unit) for number, unit in parts]
    if any(len(number) > MAX_DURATION_DIGITS for number, _ in numbers):
        raise too_long  # past any maximum, and too long for int() to be asked
    seconds = sum(int(number) * _UNIT_SECONDS[unit] for number, unit in numbers)
    if seconds > maximum:
        raise too_long
    return seconds


def format_duration(seconds: int) -> str:
    """The shortest config spelling of ``seconds``, so messages echo what a user would write."""
    if seconds == 0:
        return "0s"
    out = []
    for unit in "dhms":
        size = _UNIT_SECONDS[unit]
        count, seconds = divmod(seconds, size)
        if count:
            out.append(f"{count}{unit}")
    return "".join(out)
