"""What a transaction decided that only the world can carry out, once it has committed.

A stage never starts or stops a process, prunes a folder or writes a log line inside a
transaction: it notes the work here, and :mod:`cronduit.engine.launching` carries it out
after the commit, so a rolled-back transaction leaves nothing done in the world. What the
stage observed (runs ended and started, slots' fates) waits here too, and reaches the
stage's observer (:mod:`cronduit.engine.observer`) only once committed: a rolled-back
transaction counts nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cronduit.core.enums import Outcome, SlotFate
from cronduit.core.steps import StepLaunch
from cronduit.ports import Event, Run


@dataclass
class Launch:
    """An attempt committed as started, to launch."""

    run: Run
    attempt: int
    trigger: Event | None = None
    """The run's trigger when at hand (a run just started): not read again to launch."""
    step: StepLaunch | None = None
    """The step this attempt runs, when the run is an execution's activation."""


@dataclass
class Outbox:
    """Process work decided inside a transaction, carried out after it commits."""

    launches: list[Launch] = field(default_factory=list)
    stops: list[tuple[Run, str]] = field(default_factory=list)
    prunes: list[Run] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    ended: list[tuple[str, Outcome, float | None]] = field(default_factory=list)
    """Runs ended: job, outcome, seconds from start to end (None: skipped, never started)."""
    late: list[tuple[str, float]] = field(default_factory=list)
    """Timed runs started: job, seconds from its slot's due time to the start."""
    slots: list[tuple[str, SlotFate, str, int]] = field(default_factory=list)
    """Slots given a fate: job, fate, the ledger's reason, how many slots."""
    notified: int = 0
    """Notifications queued: the daemon's sender is told to look once they are committed."""
