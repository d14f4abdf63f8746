"""What a transaction decided that only the world can carry out, once it has committed.

A stage never starts or stops a process, prunes a folder or writes a log line inside a
transaction: it notes the work here, and :mod:`cronduit.engine.launching` carries it out
after the commit, so a rolled-back transaction leaves nothing done in the world.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
