"""The overlap and trigger-selection policy: what a trigger does when it meets the job's runs.

What must live here, and nowhere else: every decision that depends on a job's ``overlap``
policy. Whether an arriving trigger starts a run, waits in the job's work, joins a retry, is
skipped or replaces the runs going (:func:`on_arrival`); which waiting triggers start runs
when a run ends (:func:`on_run_end`) or goes into backoff (:func:`on_backoff`); what a pause
does to waiting triggers (:func:`on_pause`); when a manual run is refused
(:func:`manual_refusal`); and which trigger a run reports (:func:`select_trigger`).

Values in, decisions out. The store calls these functions inside the transaction that accepts
a trigger or ends a run, with the values it just read (:class:`JobState`), and carries the
answer out in that same transaction, so two daemons can never both start "the next run".
Nothing here reads the store, the clock or the config file.

A job's policy is per trigger kind: its ``overlap`` record as the config holds it
(:class:`~cronduit.core.config.model.OverlapSpec`, whose :meth:`~OverlapSpec.of` gives a
kind's policy). Two families of behaviour follow from it, and the tables below name them:

* a trigger whose policy is queue, skip or replace never starts beside another run: once it
  waits, it waits for the job to be idle, and everything waiting that way is consumed by one
  run (:data:`NEEDS_IDLE`);
* a trigger whose policy is allow runs beside other runs, one run per trigger, while a
  parallel slot is free.

A manual trigger counts as queue whatever its kind's policy (see :func:`on_arrival`). A
trigger that carries its own policy (a backfill's: :attr:`Trigger.overlap`) follows it instead
of its kind's, with its own bound on the runs going (:attr:`Trigger.max_parallel`). The
oldest waiting trigger always goes first, so a steady stream of parallel runs cannot starve a
queued one. ``docs/overlap.md`` is the user's
account of all this, with the choices made where the specification is silent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from types import MappingProxyType
from typing import Final

from cronduit.core.config.model import OverlapSpec
from cronduit.core.enums import Overlap, TriggerKind

__all__ = [
    "CANCELLED_REPLACED",
    "DEFAULT_MAX_PARALLEL",
    "JOINS_RETRY",
    "NEEDS_IDLE",
    "REFUSED_MANUAL_WAITING",
    "REFUSED_PAUSED",
    "REFUSED_RUNNING",
    "SKIPPED_BUSY",
    "SKIPPED_PAUSED",
    "Arrival",
    "Batch",
    "Decision",
    "JobState",
    "Trigger",
    "effective_policy",
    "manual_refusal",
    "on_arrival",
    "on_backoff",
    "on_pause",
    "on_run_end",
    "runs_alone",
    "select_trigger",
]

DEFAULT_MAX_PARALLEL: Final = 4
"""Parallel runs a job under ``allow`` may have when it does not say."""

SKIPPED_BUSY: Final = "a run was already going (overlap: skip)"
SKIPPED_PAUSED: Final = "paused"
CANCELLED_REPLACED: Final = "replaced by a newer trigger (overlap: replace)"
REFUSED_RUNNING: Final = "the job has a run going; queue the manual run to wait behind it"
REFUSED_MANUAL_WAITING: Final = (
    "a manual run is already waiting; queue this one to wait behind it"
)
REFUSED_PAUSED: Final = "the job is paused; resume it first"


class Decision(StrEnum):
    """What the caller does with an arriving trigger (the answer of :func:`on_arrival`)."""

    START = "start"
    """Start a run now; it consumes :attr:`Arrival.batch`."""
    WAIT = "wait"
    """Add the trigger to the job's work; a later :func:`on_run_end` starts it."""
    JOIN = "join"
    """Link the trigger to the run sleeping in backoff: its next attempt consumes it."""
    SKIP = "skip"
    """Record a ``skipped`` run for this trigger alone, with :attr:`Arrival.reason`."""
    REPLACE = "replace"
    """Cancel every run going (reason :attr:`Arrival.reason`) and add the trigger to the work.

    The new run starts from :func:`on_run_end` once the cancelled runs have ended, so the old
    and the new process never overlap.
    """


NEEDS_IDLE: Final = frozenset({Overlap.QUEUE, Overlap.SKIP, Overlap.REPLACE})
"""Policies whose waiting triggers wait for the job to be idle, then start one run together.

A skip trigger only waits in held work (a dry run, or a daemon that is down): once dispatch
resumes it is coalesced like a queued one.
"""

JOINS_RETRY: Final = frozenset({Overlap.QUEUE, Overlap.SKIP})
"""Policies whose triggers join a retry's batch when they meet the job's only run in backoff.

No attempt is executing during a backoff, so ``skip`` has nothing to stand aside for; the retry
is the next run, as under ``queue``. ``replace`` cancels the sleeping run instead, and
``allow`` starts beside it.
"""

_WHILE_BUSY: Final[Mapping[Overlap, Decision]] = MappingProxyType(
    {
        Overlap.QUEUE: Decision.WAIT,
        Overlap.SKIP: Decision.SKIP,
        Overlap.REPLACE: Decision.REPLACE,
        Overlap.ALLOW: Decision.WAIT,  # reached only when every parallel slot is taken
    }
)
"""What a trigger does when it meets a run that is executing and cannot start beside it."""

_REASONS: Final[Mapping[Decision, str]] = MappingProxyType(
    {Decision.SKIP: SKIPPED_BUSY, Decision.REPLACE: CANCELLED_REPLACED}
)


@dataclass(frozen=True, slots=True)
class Trigger:
    """An accepted trigger event, as the policy needs to see it."""

    id: str
    kind: TriggerKind
    seq: int
    """Acceptance order across the job's triggers: higher is newer."""
    overlap: Overlap | None = None
    """The trigger's own policy (a backfill's), followed instead of its kind's."""
    max_parallel: int | None = None
    """With its own ``allow``: at most this many runs going when it starts (None: the job's).
    A backfill's default is 1: its slots run one after another, each its own run."""

    def __post_init__(self) -> None:
        if self.max_parallel is not None and (
            self.overlap is not Overlap.ALLOW or self.max_parallel < 1
        ):
            raise ValueError("a trigger's own max_parallel goes with its own allow, and is "
                             "1 or more")


@dataclass(frozen=True, slots=True)
class JobState:
    """What the store knows about one job at the moment it asks."""

    running: int = 0
    """Runs in progress, including one sleeping in backoff between attempts."""
    waiting: tuple[Trigger, ...] = ()
    """The job's work: triggers accepted and not yet consumed, in acceptance order."""
    paused: bool = False
    in_backoff: bool = False
    """A run is sleeping before its next attempt; only one run going may be (see JOINS_RETRY)."""

    def __post_init__(self) -> None:
        if self.running < 0:
            raise ValueError(f"running must be 0 or more, not {self.running}")
        if self.in_backoff and self.running == 0:
            raise ValueError("a run in backoff is a run in progress: running must be 1 or more")
        _check_order(self.waiting, "waiting")


@dataclass(frozen=True, slots=True)
class Batch:
    """The triggers one run consumes, in acceptance order; all stay linked to the run."""

    triggers: tuple[Trigger, ...]

    def __post_init__(self) -> None:
        if not self.triggers:
            raise ValueError("a batch consumes at least one trigger")
        _check_order(self.triggers, "a batch")

    @property
    def trigger(self) -> Trigger:
        """The trigger the run reports (see :func:`select_trigger`)."""
        return select_trigger(self.triggers)


@dataclass(frozen=True, slots=True)
class Arrival:
    """The answer to an arriving trigger: a decision, with what carrying it out needs."""

    decision: Decision
    batch: Batch | None = None
    """For START only: the triggers the new run consumes."""
    reason: str | None = None
    """For SKIP, the skipped run's reason; for REPLACE, the cancelled runs' reason."""

    def __post_init__(self) -> None:
        if (self.batch is not None) != (self.decision is Decision.START):
            raise ValueError("a batch goes with START, and only with START")
        wants_reason = self.decision in (Decision.SKIP, Decision.REPLACE)
        if (self.reason is not None) != wants_reason:
            raise ValueError("a reason goes with SKIP and REPLACE, and only with them")


def select_trigger(batch: Sequence[Trigger]) -> Trigger:
    """The trigger a run reports: the newest delivery, else the earliest request.

    A delivery carries news from outside (a payload, a commit), and the newest is the most
    current account of it; a request (timer, manual, after) only says "run", and the earliest
    one is how late the run is.
    """
    if not batch:
        raise ValueError("a run consumes at least one trigger")
    deliveries = [trigger for trigger in batch if trigger.kind.is_delivery]
    if deliveries:
        return max(deliveries, key=lambda trigger: trigger.seq)
    return min(batch, key=lambda trigger: trigger.seq)


def on_arrival(
    state: JobState,
    trigger: Trigger,
    policy: Overlap,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
) -> Arrival:
    """Decide what ``trigger``, just accepted, does; ``policy`` is the one for its kind.

    A manual trigger always arrives as under ``queue``: one that would meet a run was refused
    (:func:`manual_refusal`) unless the operator asked it to queue.

    Of ``state.waiting`` only whether it is empty, and its newest trigger, matter here; so a
    caller may pass just the newest one (the engine does, rather than read a long queue once
    for every trigger of a burst).
    """
    _check_parallel(max_parallel)
    _check_newer(trigger, state.waiting)
    policy = effective_policy(trigger, policy)
    max_parallel = _limit(trigger, max_parallel)
    if state.paused:
        return Arrival(Decision.SKIP, reason=SKIPPED_PAUSED)
    if state.in_backoff and state.running == 1 and policy in JOINS_RETRY:
        return Arrival(Decision.JOIN)
    if not state.waiting and (
        state.running == 0 or (policy is Overlap.ALLOW and state.running < max_parallel)
    ):
        return Arrival(Decision.START, batch=Batch((trigger,)))
    if state.running == 0:
        # Held work (a dry run, a daemon that is down): the trigger joins it, and on_run_end
        # starts the lot when dispatch resumes.
        return Arrival(Decision.WAIT)
    decision = _WHILE_BUSY[policy]
    return Arrival(decision, reason=_REASONS.get(decision))


def on_run_end(
    state: JobState,
    policy: OverlapSpec,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
) -> list[Batch]:
    """The runs to start now, each with the waiting triggers it consumes.

    ``state`` is the job after the ended run left it (``running`` no longer counts it). Ask
    the same question when dispatch resumes: a daemon starting after a dry run or an outage
    passes ``running=0`` and the held work. Triggers that wait for an idle job are consumed
    by one run; parallel triggers start one run each while slots are free; the oldest waiting
    trigger always goes first.
    """
    _check_parallel(max_parallel)
    if state.paused:
        return []
    running = state.running
    pending = list(state.waiting)
    batches: list[Batch] = []
    while pending:
        if _needs_idle(pending[0], policy):
            if running:
                break
            batches.append(Batch(tuple(t for t in pending if _needs_idle(t, policy))))
            pending = [t for t in pending if not _needs_idle(t, policy)]
        else:
            if running >= _limit(pending[0], max_parallel):
                break
            batches.append(Batch((pending.pop(0),)))
        running += 1
    return batches


def on_run_end_of_head(state: JobState, policy: OverlapSpec, max_parallel: int,
                       whole: bool) -> list[Batch] | None:
    """:func:`on_run_end` asked of the head of a long queue (``state.waiting``; ``whole``:
    it is the whole queue), or None when the head is not enough to decide: a run for an idle
    job consumes every trigger of the queue that waits for one, and runs of one trigger
    each that take the whole head may go on past it. Otherwise the answer is the same as
    over the whole queue, since the decision stops at the first trigger it cannot start."""
    batches = on_run_end(state, policy, max_parallel)
    if whole:
        return batches
    taken = sum(len(batch.triggers) for batch in batches)
    if taken == len(state.waiting) or any(_needs_idle(b.triggers[0], policy) for b in batches):
        return None
    return batches


def on_backoff(state: JobState, policy: OverlapSpec) -> tuple[Trigger, ...]:
    """The waiting triggers that join the retry's batch as the job's run goes into backoff.

    They would have waited for that run to end, and the retry is where it goes on; so they
    are consumed by its next attempt rather than by a run after it. With several runs going
    no trigger joins, because the retry would then overlap the others.
    """
    if state.running != 1:
        return ()
    return tuple(t for t in state.waiting if effective_policy(t, policy.of(t.kind)) in JOINS_RETRY)


def on_pause(state: JobState) -> tuple[Trigger, ...]:
    """The waiting triggers a pause turns into ``skipped`` runs (one each, SKIPPED_PAUSED).

    A paused job's arriving triggers are skipped and resuming makes nothing up, so triggers
    that were waiting when it was paused meet the same fate instead of running at resume.
    """
    return state.waiting


def manual_refusal(state: JobState, queue: bool) -> str | None:
    """Why a manual run is refused (HTTP 409, CLI exit 3), or None when it is accepted.

    ``queue`` (``--queue``, ``?queue=1``) asks to wait behind a run going or a manual run
    already waiting, and the run then arrives as under ``queue``; it cannot get past a pause.
    """
    if state.paused:
        return REFUSED_PAUSED
    if queue:
        return None
    if state.running:
        return REFUSED_RUNNING
    if any(trigger.kind is TriggerKind.MANUAL for trigger in state.waiting):
        return REFUSED_MANUAL_WAITING
    return None


def effective_policy(trigger: Trigger, policy: Overlap) -> Overlap:
    """The policy ``trigger`` follows, ``policy`` being its kind's: its own when it carries
    one; else queue for a manual run, which only meets or waits behind a run because it was
    asked to queue; else its kind's."""
    if trigger.overlap is not None:
        return trigger.overlap
    return Overlap.QUEUE if trigger.kind is TriggerKind.MANUAL else policy


def runs_alone(trigger: Trigger, policy: Overlap) -> bool:
    """Whether the run ``trigger`` starts excludes every other run of the job (the store's
    one-exclusive-run constraint backs it): under a policy that waits for an idle job, or
    under its own allow of one run at a time."""
    return effective_policy(trigger, policy) in NEEDS_IDLE or trigger.max_parallel == 1


def _limit(trigger: Trigger, max_parallel: int) -> int:
    return max_parallel if trigger.max_parallel is None else trigger.max_parallel


def _needs_idle(trigger: Trigger, policy: OverlapSpec) -> bool:
    return effective_policy(trigger, policy.of(trigger.kind)) in NEEDS_IDLE


def _check_parallel(max_parallel: int) -> None:
    if max_parallel < 1:
        raise ValueError(f"max_parallel must be 1 or more, not {max_parallel}")


def _check_order(triggers: Sequence[Trigger], what: str) -> None:
    for earlier, later in pairwise(triggers):
        if earlier.seq >= later.seq:
            raise ValueError(f"{what} must be in acceptance order (seq {earlier.seq}, {later.seq})")


def _check_newer(trigger: Trigger, waiting: Sequence[Trigger]) -> None:
    if waiting and waiting[-1].seq >= trigger.seq:
        raise ValueError(
            f"trigger {trigger.id} (seq {trigger.seq}) is not newer than the work it joins"
        )


def dispatched(decision: Decision, dispatching: bool) -> Decision:
    """The decision as carried out: a dry run (``serve --dry-run``) starts no runs, so a
    start becomes a wait, held in the job's work until a normal start owes it its run."""
    if decision is Decision.START and not dispatching:
        return Decision.WAIT
    return decision


def replaced_at_once(in_backoff: bool) -> bool:
    """How a replace cancels a run going: a run sleeping in backoff has no process to stop,
    so it ends at once, cancelled (True); a running one is asked to stop, and ends when its
    process does (False). Either way the new trigger waits for the run to end."""
    return in_backoff
