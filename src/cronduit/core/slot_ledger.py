"""What ``cronduit schedule slots`` shows for a slot, once the fate of its run is known.

The ledger records a slot's fate when it fires (ran, skipped, missed), before the trigger it
published meets the job's runs; what became of that trigger decides what the operator is
shown: a slot that ran into a skipped run (overlap, pause) shows as skipped, one whose
trigger still waits says what for, one run by catch-up says it was late. Values in (the
ledger row's fate and reason, the trigger, the run), the answer out; the command reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from cronduit.core.enums import EventState, Outcome, SlotFate

__all__ = ["WAITING_EVENT", "LedgerFate", "ledger_fate"]

WAITING_EVENT: Final = {EventState.NEW: "accepted, not routed yet",
                        EventState.WAITING: "waiting for the run going",
                        EventState.UNMATCHED: "no job took it (removed)"}
"""What the ledger says of a slot that fired but whose trigger has not become a run."""


class EventFacts(Protocol):
    """What the slot ledger reads of the trigger a slot fired."""

    @property
    def state(self) -> EventState: ...
    @property
    def run_id(self) -> str | None: ...
    @property
    def late(self) -> bool: ...


class EndedRunFacts(Protocol):
    """What the slot ledger reads of the run a slot's trigger became."""

    @property
    def id(self) -> str: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def reason(self) -> str: ...


@dataclass(frozen=True)
class LedgerFate:
    """What the slot ledger shows for one slot, once the fate of its run is folded in."""

    fate: SlotFate
    reason: str
    run: str | None
    """The run the slot became, when it became one."""


def ledger_fate(fate: SlotFate, reason: str, event: EventFacts | None,
                run: EndedRunFacts | None) -> LedgerFate:
    """A slot as ``schedule slots`` shows it, from its ledger row's ``fate`` and ``reason``,
    the trigger it fired (None: not found, or the slot did not run) and the run that trigger
    became (None: none yet). A slot that ran into a skipped run (overlap, pause) shows as
    skipped, with the run's reason; one still waiting says what for; one run by catch-up
    says it was late."""
    if fate != SlotFate.RAN or event is None:
        return LedgerFate(fate, reason, None)
    if event.state != EventState.CONSUMED or event.run_id is None:
        return LedgerFate(fate, WAITING_EVENT.get(event.state, event.state), None)
    if run is not None and run.outcome == Outcome.SKIPPED:
        return LedgerFate(SlotFate.SKIPPED, run.reason, run.id)
    return LedgerFate(fate, "late (catch-up)" if event.late else reason, event.run_id)
