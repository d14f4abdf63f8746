"""The records the store reads and writes: what crosses the store's seam.

Frozen values, except the three the firing path builds per firing (see the comment on
:class:`NewEvent`). States are the enums of :mod:`cronduit.core.enums`: a record read from
the store carries the enum member, and the schema's CHECK constraints refuse any other value.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cronduit.core.enums import (
    EventState,
    ExecutionState,
    NotificationState,
    RunState,
    SlotFate,
    StepState,
)
from cronduit.core.payload import EMPTY, Payload


# Not frozen, unlike the other records: a frozen dataclass sets each field through
# ``object.__setattr__`` on construction, three times the cost of a plain one, and the firing
# path builds three of these per firing (this, Timer and SlotRecord: a tenth of its time).
# Treat them as values all the same.
@dataclass(slots=True)
class NewEvent:
    """A trigger to accept. ``delivery_id`` makes acceptance idempotent."""

    delivery_id: str
    job: str
    kind: str
    label: str
    accepted_at: datetime
    slot: datetime | None = None
    late: bool = False
    payload: Payload = EMPTY
    """Inputs, a webhook's body, a delivery's facts, a backfill's own policy."""
    operator: str | None = None
    parent: str | None = None
    """The code-host delivery (:class:`Delivery`) this trigger was derived from."""


@dataclass(frozen=True, slots=True)
class Event:
    """An accepted trigger, as stored."""

    seq: int
    delivery_id: str
    job: str
    kind: str
    label: str
    slot: datetime | None
    late: bool
    payload: Payload
    operator: str | None
    accepted_at: datetime
    state: EventState
    """Where it is on its way to a run; ``consumed`` by ``run_id``."""
    run_id: str | None
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """A code-host delivery as recorded: once per delivery id, the parent of its triggers."""

    delivery_id: str
    source: str
    """``github``."""
    event: str
    label: str
    facts: str
    """JSON: what the delivery said, as each of its triggers' files shows it."""
    received_at: datetime
    triggers: int
    """How many jobs it triggered."""


# Not frozen: see NewEvent.
@dataclass(slots=True)
class Timer:
    """A timed job's durable timer: the slot it is armed for and when it elapses."""

    job: str
    timing_key: str
    slot: datetime
    slot_name: str
    due_at: datetime
    last_name: str | None
    version: int = 0
    """Bumped by every firing; a firing commits only against the version it read."""


# Not frozen: see NewEvent.
@dataclass(slots=True)
class SlotRecord:
    """A slot's fate in the ledger."""

    job: str
    slot: datetime
    name: str
    fate: SlotFate
    reason: str
    recorded_at: datetime
    event_seq: int | None = None
    count: int = 1
    until_slot: datetime | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """A run and its record. Runs are a job's history; coordination fields are never deleted."""

    id: str
    job: str
    kind: str
    label: str
    state: RunState
    created_at: datetime
    trigger_seq: int | None = None
    exclusive: bool = True
    outcome: str | None = None
    reason: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    attempts: int = 0
    exit_status: int | None = None
    inputs: str = "{}"
    operator: str | None = None
    late: bool = False
    deadline_at: datetime | None = None
    next_attempt_at: datetime | None = None
    pid: int | None = None
    pid_start: int | None = None
    attempt_dir: str | None = None
    cancel_reason: str | None = None
    files_pruned: bool = False
    node: str | None = None
    """The node the run goes (or went) on: where its process and its files are."""
    execution_id: str | None = None
    """The durable execution this run is an activation of."""


@dataclass(frozen=True, slots=True)
class Execution:
    """A durable multi-step execution (SPEC §8): one walk of a job's steps, over one or more
    activations (runs), resumable where it failed."""

    id: str
    job: str
    definition: str
    """The stable hash of the job's steps when the execution began
    (:func:`cronduit.core.steps.definition_hash`): a resume is refused once it differs."""
    inputs: str
    """The inputs of the trigger that began it, as JSON text (a run's ``inputs``); a resume
    never changes them."""
    state: ExecutionState
    created_at: datetime
    expires_at: datetime
    """``created_at`` plus the job's ``durable.retention``; a resume does not extend it."""
    updated_at: datetime
    activations: int = 1
    run_id: str | None = None
    """The newest activation's run."""
    failed_step: str | None = None
    """The step whose failure ended the newest activation, if it failed."""
    seq: int = 0


@dataclass(frozen=True, slots=True)
class ExecutionStep:
    """One step of an execution, keyed by its declared id."""

    execution_id: str
    step_id: str
    position: int
    state: StepState
    outputs: str | None = None
    """The validated outputs as a JSON object's text, saved with the step's success."""
    attempts: int = 0
    """Attempts of this step over every activation."""
    done_at: datetime | None = None
    run_id: str | None = None
    """The run of the step's latest attempt."""


@dataclass(frozen=True, slots=True)
class StepAttempt:
    """One attempt of one step: append-only history. It is attempt ``attempt`` of run
    ``run_id``, so its log and files are that attempt's."""

    execution_id: str
    step_id: str
    attempt_id: str
    """``CRONDUIT_ATTEMPT_ID``: fresh for every attempt."""
    run_id: str
    attempt: int
    started_at: datetime
    ended_at: datetime | None = None
    exit_status: int | None = None
    outcome: str | None = None
    """``success``, ``failure``, ``timeout`` or ``cancelled`` once ended."""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class RunLogTail:
    """The end of a run's log as the store keeps it, for hosts that do not have the log
    (a state shared by many hosts: :mod:`cronduit.core.log_tails`)."""

    run_id: str
    attempt: int
    """The attempt at whose end it was read: the run's last one, once the run has ended."""
    tail: bytes
    """The log's last bytes, raw (:data:`~cronduit.core.log_tails.TAIL_BYTES` at most)."""
    size: int
    """How many bytes the log held then."""
    cut: int
    """How many bytes ``max_log`` had cut out of its middle by then."""
    stored_at: datetime


@dataclass(frozen=True, slots=True)
class Notification:
    """A run's outcome to deliver to one notifier: pending, sent, or failed with the reason."""

    seq: int
    run_id: str
    notifier: str
    body: str
    """The JSON body POSTed (never a secret: the notifier's URL is not in it)."""
    state: NotificationState
    attempts: int
    next_at: datetime
    error: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class RunEnd:
    """A run-ended event on a job: what ``job wait`` and ``on.after`` read."""

    seq: int
    job: str
    run_id: str
    event: str
    """``completed``, ``failed``, ``timed_out`` or ``cancelled``."""
    outcome: str
    ended_at: datetime
    chained: bool = False


@dataclass(frozen=True, slots=True)
class Pause:
    """A pause of a job (``cronduit job pause``): active until ``resumed_at`` is set."""

    job: str
    reason: str
    operator: str
    paused_at: datetime
    until: datetime | None = None
    """When the pause expires by itself (the engine resumes it, as operator ``cronduit``)."""
    resumed_at: datetime | None = None
    resumed_by: str | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the audit log: who did what to which job, and when."""

    action: str
    """``pause``, ``resume``, ``run`` (a manual run accepted), ``backfill`` or ``apply``."""
    operator: str
    at: datetime
    job: str | None = None
    detail: str = "{}"
    """JSON: the action's particulars (reason, inputs, changes); never a secret's value."""
    seq: int = 0
    """Given by the store on insert; newer entries have higher ones."""
