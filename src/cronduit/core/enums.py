"""The product's vocabulary: one documented enum per concept, shared by core, store, CLI and API."""

from __future__ import annotations

from enum import StrEnum


class TriggerKind(StrEnum):
    """What asked for a run."""

    TIMER = "timer"
    """A slot of a timed job (cron, at, every) came due."""
    WEBHOOK = "webhook"
    """A signed POST to the job's webhook URL."""
    EVENT = "event"
    """A code-host delivery (GitHub push, check suite, release...) that matched the job's ``on``."""
    MANUAL = "manual"
    """An operator asked, from the CLI, the API or the dashboard."""
    AFTER = "after"
    """Another job's run ended with an outcome this job's ``on.after`` lists."""

    @property
    def is_delivery(self) -> bool:
        """Deliveries carry a payload from outside; the newest one wins a coalesced batch."""
        return self in (TriggerKind.WEBHOOK, TriggerKind.EVENT)


class Overlap(StrEnum):
    """What a trigger does when it arrives while the job has a run going."""

    QUEUE = "queue"
    """Wait; when the run ends exactly one run starts and consumes every waiting trigger."""
    SKIP = "skip"
    """Record a ``skipped`` run with the reason; nothing waits."""
    REPLACE = "replace"
    """Cancel the running run (TERM, grace, KILL) and run the new trigger."""
    ALLOW = "allow"
    """Run in parallel, up to the job's ``max_parallel``; beyond that, wait in arrival order."""


class Outcome(StrEnum):
    """How a run ended."""

    SUCCESS = "success"
    FAILURE = "failure"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    """The trigger met a running run (or a pause); news about timing, never about the job."""
    CANCELLED = "cancelled"


class DstGap(StrEnum):
    """What a fixed-time job does when its wall-clock time falls in a spring-forward gap."""

    RUN = "run"
    """Run once, at the first instant after the gap (Debian cron's rule; the default)."""
    SKIP = "skip"
    """Do not run that day."""


class DstFold(StrEnum):
    """What a fixed-time job does when its wall-clock time repeats in a fall-back hour."""

    ONCE = "once"
    """Run at the first occurrence only (Debian cron's rule; the default)."""
    TWICE = "twice"
    """Run at both occurrences."""


class CatchUpMode(StrEnum):
    """Which missed slots inside the catch-up window a firing publishes."""

    LATEST = "latest"
    """Only the latest slot; older missed slots are recorded as missed."""
    ALL = "all"
    """Every missed slot inside the window, oldest first, at most ``max_runs``."""


class SlotFate(StrEnum):
    """What became of a slot of a timed job, as the slot ledger records it."""

    RAN = "ran"
    SKIPPED = "skipped"
    MISSED = "missed"
