"""The kind of each reason a slot's fate is recorded with, for counting slots by reason.

A ledger reason is written for a person: it carries durations, clock times and dates
(``missed: 6h30m late, outside the catch-up window of 6h``), so counting slots by the
reason itself would make one series per distinct text. Each reason the core writes
(:mod:`~cronduit.core.catchup`, :mod:`~cronduit.core.timespec`'s DST rules,
:mod:`~cronduit.core.overlap`'s skips, pauses) maps to one of :data:`REASON_KINDS`, a set
that never grows with the data; a reason this table does not know is ``other``.
"""

from __future__ import annotations

from typing import Final

from cronduit.core.catchup import (
    COUNTED_OUTAGE,
    COUNTED_PAUSED,
    OVER_MAX_RUNS,
    PAUSED,
    SAME_NAME,
    SUPERSEDED,
)
from cronduit.core.overlap import SKIPPED_BUSY, SKIPPED_PAUSED

__all__ = ["REASON_KINDS", "reason_kind"]

_EXACT: Final = {
    "": "none",
    PAUSED: "paused",
    SKIPPED_PAUSED: "paused",
    COUNTED_PAUSED: "paused",
    COUNTED_OUTAGE: "outage",
    SAME_NAME: "same_name",
    SUPERSEDED: "superseded",
    OVER_MAX_RUNS: "over_max_runs",
    SKIPPED_BUSY: "overlap",
}
"""Reasons written as fixed text."""

_SHAPED: Final = (
    ("missed: ", " late and catch-up is off", "catch_up_off"),
    ("missed: ", " late, outside the catch-up window of ", "outside_window"),
    ("missed: the timer fired ", " late; an interval job runs once, not a burst",
     "interval_behind"),
    ("missed: ", " (dst gap: skip)", "dst_gap"),
    ("missed: ", " (dst fold: once)", "dst_fold"),
)
"""Reasons formatted with numbers, names or dates: their start, a part that follows (the
end, or what stands between two numbers) and their kind."""

REASON_KINDS: Final = frozenset({*_EXACT.values(), *(kind for *_, kind in _SHAPED), "other"})
"""Every kind :func:`reason_kind` answers."""


def reason_kind(reason: str) -> str:
    """The kind of a slot's reason: ``none`` for a slot that ran with no reason, ``other``
    for a reason not in the table."""
    found = _EXACT.get(reason)
    if found is not None:
        return found
    for start, part, kind in _SHAPED:
        if reason.startswith(start) and part in reason[len(start):]:
            return kind
    return "other"
