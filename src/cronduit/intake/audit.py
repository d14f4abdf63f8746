"""The audit log: who paused, resumed, ran or applied what, and when. Append-only.

Entries are written in the transaction of the action they record, so an action and its
entry commit together or not at all. An entry's detail is JSON made by the caller from values
it chose (a reason, inputs, change lines); no caller passes a secret's value.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from cronduit.core.timespec import format_utc
from cronduit.ports import AuditEntry, Pause, Transaction

ENGINE = "cronduit"
"""The operator of what cronduit does by itself: an expired pause, a removed job's pause, the
apply at start-up."""
UNKNOWN_OPERATOR = "unknown"
"""The operator recorded when the request could not say who it was."""
APPLY_LINES = 200
"""Change lines an apply's entry keeps; more are counted (a first start arms every timer of a
large config)."""


def record(tx: Transaction, action: str, operator: str | None, at: datetime,
           job: str | None = None, **detail: object) -> int:
    """Append an entry; its seq."""
    entry = AuditEntry(action, operator or UNKNOWN_OPERATOR, at, job,
                       json.dumps(detail, sort_keys=True))
    return tx.insert_audit(entry)


def describe(pause: Pause) -> str:
    """``paused by ana since 2026-06-01T09:00:00Z: disk full (until 2026-06-01T12:00:00Z)``."""
    until = f" (until {format_utc(pause.until)})" if pause.until is not None else ""
    return f"paused by {pause.operator} since {format_utc(pause.paused_at)}: {pause.reason}{until}"


def apply_lines(lines: Sequence[str]) -> list[str]:
    """An apply's change lines as its entry keeps them: the first :data:`APPLY_LINES`, then
    how many more."""
    kept = list(lines[:APPLY_LINES])
    if len(lines) > APPLY_LINES:
        kept.append(f"... and {len(lines) - APPLY_LINES} more")
    return kept
