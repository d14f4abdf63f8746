"""Observing: what the stages decided, told to whoever counts it, once it has committed.

The facts metrics count are decided here, in the engine: a run ends with its outcome, a
timed run starts late, a slot is given its fate. Each stage notes them in the
:class:`~cronduit.engine.outbox.Outbox` of its transaction; :func:`report` hands them to the
stage's :class:`Observer` after the commit, with each slot's reason reduced to its kind
(:func:`~cronduit.core.reason_kinds.reason_kind`), so no observer sees a reason's text.
The default observer does nothing: the engine knows no metrics library.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from cronduit.core.arming import due_of
from cronduit.core.enums import Outcome, SlotFate
from cronduit.core.reason_kinds import reason_kind
from cronduit.core.timespec import Slot

if TYPE_CHECKING:
    from cronduit.engine.outbox import Outbox
    from cronduit.engine.plan import Plan

__all__ = ["NOT_OBSERVED", "Observer", "lateness", "report"]


class Observer(Protocol):
    """Told what each committed transaction did; called on the engine's thread."""

    def run_ended(self, job: str, outcome: Outcome, seconds: float | None) -> None:
        """A run ended; ``seconds`` from its start to its end, None for a run recorded
        skipped (it never started)."""

    def timed_run_started(self, job: str, lateness: float) -> None:
        """A run of a timer's trigger started, ``lateness`` seconds after its slot was due
        (negative never: a clock stepped back counts 0)."""

    def slots_fated(self, job: str, fate: SlotFate, kind: str, count: int) -> None:
        """``count`` slots of the job were given ``fate``, for a reason of ``kind``."""


class _NotObserved:
    """The observer that keeps nothing (tests, benchmarks, the CLI's engines)."""

    def run_ended(self, job: str, outcome: Outcome, seconds: float | None) -> None:
        pass

    def timed_run_started(self, job: str, lateness: float) -> None:
        pass

    def slots_fated(self, job: str, fate: SlotFate, kind: str, count: int) -> None:
        pass


NOT_OBSERVED: Observer = _NotObserved()


def report(observer: Observer, outbox: Outbox) -> None:
    """Tell ``observer`` what the committed transaction noted in ``outbox``, once: the notes
    are taken out."""
    if observer is not NOT_OBSERVED:
        for job, outcome, seconds in outbox.ended:
            observer.run_ended(job, outcome, seconds)
        for job, late in outbox.late:
            observer.timed_run_started(job, late)
        for job, fate, reason, count in outbox.slots:
            observer.slots_fated(job, fate, reason_kind(reason), count)
    outbox.ended.clear()
    outbox.late.clear()
    outbox.slots.clear()


def lateness(plan: Plan, job: str, slot: datetime, started: datetime) -> float:
    """Seconds from the slot's due time (its instant plus the job's jitter) to ``started``."""
    config_job = plan.config.jobs.get(job)
    schedule = plan.schedules.get(job)
    due = slot if config_job is None or schedule is None else (
        due_of(config_job, schedule)(Slot(slot, "")))
    return max(0.0, (started - due).total_seconds())
