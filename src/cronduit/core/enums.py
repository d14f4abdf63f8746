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
    """What became of a slot of a timed job, as the slot ledger records it (SPEC §3)."""

    RAN = "ran"
    """Its trigger was accepted (what became of the trigger is its run's record)."""
    SKIPPED = "skipped"
    """It did not run: the overlap policy or a pause turned its trigger into a skipped run.
    The ledger itself stores ``ran`` for such a slot; ``schedule slots`` shows it skipped."""
    MISSED = "missed"
    """It never fired: outside the catch-up window, the daemon down, or a DST rule."""


class EventState(StrEnum):
    """Where an accepted trigger (an event) is on its way to a run (SPEC §11)."""

    NEW = "new"
    """Accepted and durable, not routed yet."""
    WAITING = "waiting"
    """Routed into its job's work, waiting for a run to consume it."""
    CONSUMED = "consumed"
    """Taken by a run (the run that started from it, joined it, or recorded it skipped)."""
    UNMATCHED = "unmatched"
    """No configured job takes it (the job was removed after it was accepted)."""


class RunState(StrEnum):
    """Where a run is in its lifecycle: ``running`` (-> ``backoff`` -> ``running``)* ->
    ``ended``. A run is created running (or ended, when its trigger was skipped)."""

    RUNNING = "running"
    """An attempt is going (or being launched)."""
    BACKOFF = "backoff"
    """An attempt failed and the next one waits for its retry time."""
    ENDED = "ended"
    """Over, with an outcome; never changes again (only its files may be pruned)."""


class ExecutionState(StrEnum):
    """Where a durable multi-step execution is (SPEC §8): ``running`` while an activation (a
    run) walks its steps, then ``succeeded``, or ``failed`` (resumable until it is abandoned,
    expires or reaches its activations' limit), or ``abandoned`` (never resumed again)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ABANDONED = "abandoned"


class StepState(StrEnum):
    """Where one step of an execution is: ``pending`` until an attempt of it starts,
    ``running`` while one goes (or waits for its retry), ``done`` once an attempt's exit
    status and validated outputs were saved together, ``failed`` when its last attempt
    failed (a resume runs it again)."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class NotificationState(StrEnum):
    """Where a queued notification of a run's outcome is."""

    PENDING = "pending"
    """Due at its next try (the first one at once)."""
    SENT = "sent"
    """The notifier answered 2xx."""
    FAILED = "failed"
    """Given up after its last try (or its notifier left the config)."""


EX_TEMPFAIL = 75
"""The exit status (``sysexits.h``'s "try again later") by which a job asks to be retried,
even without ``retry`` (SPEC §5)."""
