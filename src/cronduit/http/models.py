"""Request and response bodies, as pydantic models: validated on the way in, and described
in the OpenAPI document at ``/openapi.json`` for whoever writes a client."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cronduit.core.text import MAX_OPERATOR, MAX_REASON


def _operator() -> Any:
    """An optional operator field. Free text is checked by the core's one rule
    (:func:`cronduit.core.text.check_line`) where it is recorded, so the API and the CLI
    refuse it alike; the schema only states the bound."""
    return Field(default=None, json_schema_extra={"maxLength": MAX_OPERATOR})


class Health(BaseModel):
    status: Literal["ok"]
    dry_run: bool
    jobs: int


class Accepted(BaseModel):
    """A trigger accepted durably (202)."""

    delivery_id: str
    event: int
    """The accepted event's sequence number in the store."""
    duplicate: bool
    """True when this delivery id was accepted before: the earlier event is the answer."""


class DeliveryRecorded(BaseModel):
    """A GitHub delivery recorded (202), with the jobs it triggered."""

    delivery_id: str
    label: str
    duplicate: bool
    """True for a redelivery: nothing new was triggered; ``triggered`` is the first time's."""
    triggered: list[str]


class RunRequest(BaseModel):
    """The optional JSON body of a run-now request."""

    model_config = ConfigDict(extra="forbid")

    inputs: dict[str, str] = Field(default_factory=dict)
    operator: str | None = _operator()
    """Who asks, recorded on the run (default ``api``): one line, no control characters."""


class RunStarted(BaseModel):
    """A manual run accepted (201)."""

    run_id: str | None
    """The run started for it; None while it waits behind other work (``?queue=1``)."""
    delivery_id: str
    state: Literal["started", "waiting"]
    note: str | None = None
    """Why it waits, when that is not the queue: in a dry run it waits for a normal start."""


class PauseRequest(BaseModel):
    """The JSON body of a pause request."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(json_schema_extra={"maxLength": MAX_REASON})
    """Why (required, non-blank, no control characters)."""
    until: str | None = None
    """Resume by itself then: a duration from now (``2h``) or an ISO 8601 instant."""
    operator: str | None = _operator()
    """Who pauses (default ``api``)."""


class ResumeRequest(BaseModel):
    """The optional JSON body of a resume request."""

    model_config = ConfigDict(extra="forbid")

    operator: str | None = _operator()
    """Who resumes (default ``api``)."""


class PauseRecord(BaseModel):
    """A job's pause as recorded (200): after a pause, the new one; after a resume, the one
    that ended."""

    job: str
    reason: str
    operator: str
    paused_at: str
    until: str | None
    resumed_at: str | None
    resumed_by: str | None


class StepTry(BaseModel):
    """One attempt of one step: which run and attempt it was, how it ended."""

    run: str
    attempt: int
    attempt_id: str
    started_at: str
    ended_at: str | None
    exit_status: int | None
    outcome: str | None
    reason: str
    log: str
    """Where its log is, under the state folder of the host that ran it."""


class StepInfo(BaseModel):
    """One step of an execution, keyed by its declared id, with its saved outputs."""

    step: str
    state: Literal["pending", "running", "done", "failed"]
    attempts: int
    done_at: str | None
    outputs: dict[str, str] | None
    tries: list[StepTry]


class ExecutionSummary(BaseModel):
    """A durable execution (SPEC §8) as listed."""

    execution: str
    job: str
    state: Literal["running", "succeeded", "failed", "abandoned"]
    steps_done: int
    steps: int
    activations: int
    failed_step: str | None
    run: str | None
    created_at: str
    expires_at: str


class ExecutionList(BaseModel):
    """The newest executions, newest first (``?job=`` and ``?limit=`` narrow it)."""

    executions: list[ExecutionSummary]


class ExecutionDetail(ExecutionSummary):
    """An execution with its original inputs, each step, and whether it can be resumed."""

    inputs: dict[str, str]
    updated_at: str
    resumable: bool
    why_not: str | None
    step_details: list[StepInfo]


class ExecutionRequest(BaseModel):
    """Who resumes or abandons (default ``api``)."""

    model_config = ConfigDict(extra="forbid")
    operator: str | None = _operator()


class ResumeAccepted(BaseModel):
    """A resume accepted (202): the trigger of the new activation, which the daemon starts
    under the job's overlap policy."""

    execution: str
    delivery_id: str
