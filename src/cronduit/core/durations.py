"""Durations as written in the config: ``30s``, ``15m``, ``6h``, ``1d`` and sums like ``1h30m``.

A duration is held as a whole number of seconds: every duration cronduit takes (timeouts,
windows, backoffs, intervals, jitter) is meaningful to the second and no finer.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
_WHOLE = re.compile(r"(?:\d+[dhms])+")
_PART = re.compile(r"(\d+)([dhms])")


class DurationError(ValueError):
    """A duration string that does not follow the ``<number><unit>`` form."""


def parse_duration(text: str) -> int:
    """Return the number of seconds ``text`` names; units must run from days down to seconds."""
    if not isinstance(text, str) or not _WHOLE.fullmatch(text):
        raise DurationError(
            "must be a duration such as 30s, 15m, 6h, 1d or 1h30m (units d, h, m, s)"
        )
    parts = _PART.findall(text)
    units = [unit for _, unit in parts]
    order = "dhms"
    if [order.index(u) for u in units] != sorted({order.index(u) for u in units}):
        raise DurationError("must give each unit once, largest first (as in 1h30m)")
    return sum(int(number) * _UNIT_SECONDS[unit] for number, unit in parts)


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
