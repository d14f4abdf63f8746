"""What ``schedule slots`` shows for a slot once the trigger it fired met the job's runs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from cronduit.core.slot_ledger import LedgerFate, ledger_fate


@dataclass(frozen=True)
class FakeEvent:
    state: str
    run_id: str | None = None
    late: bool = False


@dataclass(frozen=True)
class FakeRun:
    id: str
    outcome: str | None
    reason: str = ""


def test_a_missed_slot_shows_as_recorded() -> None:
    assert LedgerFate("missed", "daemon down", None) == ledger_fate(
        "missed", "daemon down", None, None)


def test_a_slot_that_ran_without_a_trigger_found_shows_as_recorded() -> None:
    assert LedgerFate("ran", "", None) == ledger_fate("ran", "", None, None)


@pytest.mark.parametrize(("state", "reason"), [
    ("new", "accepted, not routed yet"), ("waiting", "waiting for the run going"),
    ("unmatched", "no job took it (removed)"), ("someday", "someday")])
def test_a_slot_whose_trigger_has_not_become_a_run_says_what_it_waits_for(
    state: str, reason: str,
) -> None:
    assert LedgerFate("ran", reason, None) == ledger_fate("ran", "", FakeEvent(state), None)


def test_a_slot_whose_run_was_skipped_shows_as_skipped_with_the_runs_reason() -> None:
    """The ledger said ran when it fired; the overlap policy then skipped its run."""
    event = FakeEvent("consumed", "r1")
    run = FakeRun("r1", "skipped", "a run was already going (overlap: skip)")
    assert LedgerFate("skipped", "a run was already going (overlap: skip)", "r1") == (
        ledger_fate("ran", "", event, run))


def test_a_slot_run_by_catch_up_says_it_was_late() -> None:
    event = FakeEvent("consumed", "r1", late=True)
    assert LedgerFate("ran", "late (catch-up)", "r1") == ledger_fate(
        "ran", "", event, FakeRun("r1", "success"))


def test_a_slot_that_ran_names_its_run_even_when_the_run_is_gone() -> None:
    """A pruned run record still leaves its id on the trigger."""
    assert LedgerFate("ran", "", "r1") == ledger_fate("ran", "", FakeEvent("consumed", "r1"),
                                                      None)
