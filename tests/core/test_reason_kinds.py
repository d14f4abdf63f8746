"""Every reason the core gives a slot's fate maps to one kind of a small fixed set, whatever
numbers, clock times or dates it carries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core import catchup, overlap
from cronduit.core.config.model import CatchUp
from cronduit.core.reason_kinds import REASON_KINDS, reason_kind
from cronduit.core.timespec import Slot

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("reason", "kind"), [
    ("", "none"),
    (catchup.PAUSED, "paused"),
    (catchup.COUNTED_PAUSED, "paused"),
    (overlap.SKIPPED_PAUSED, "paused"),
    (catchup.COUNTED_OUTAGE, "outage"),
    (catchup.SAME_NAME, "same_name"),
    (catchup.SUPERSEDED, "superseded"),
    (catchup.OVER_MAX_RUNS, "over_max_runs"),
    (overlap.SKIPPED_BUSY, "overlap"),
    ("missed: 6h30m late, outside the catch-up window of 6h", "outside_window"),
    ("missed: 3d late, outside the catch-up window of 1d12h", "outside_window"),
    ("missed: 2m late and catch-up is off", "catch_up_off"),
    (catchup.behind_reason(Slot(T0, ""), T0 + timedelta(minutes=37)), "interval_behind"),
    (catchup.behind_reason(Slot(T0, ""), T0 + timedelta(days=400)), "interval_behind"),
    ("missed: 02:30 does not exist on 2026-03-29 (dst gap: skip)", "dst_gap"),
    ("missed: 01:30 repeated, only its first occurrence runs (dst fold: once)", "dst_fold"),
    ("something a later version writes", "other"),
])
def test_each_reason_the_core_writes_has_its_kind(reason: str, kind: str) -> None:
    assert kind == reason_kind(reason)
    assert kind in REASON_KINDS


def test_the_too_late_reasons_are_those_the_catch_up_rules_write() -> None:
    """The two too-late texts come from the catch-up rules themselves, not a copy of them."""
    window = CatchUp(window=6 * 3600)
    off = CatchUp(window=0)
    assert "outside_window" == reason_kind(catchup._too_late_reason(23400.0, window))
    assert "catch_up_off" == reason_kind(catchup._too_late_reason(120.0, off))


def test_the_kinds_are_few() -> None:
    assert 13 == len(REASON_KINDS)
