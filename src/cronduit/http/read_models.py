"""The answers of the read routes, as pydantic models: FastAPI checks each answer against
its model and describes it in the OpenAPI document. Their fields are the ones
:mod:`cronduit.intake.reports` spells, which the CLI's ``--json`` prints too."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

Instant = str
"""An instant in UTC, as ``2026-03-29T01:00:00Z``."""


class ErrorBody(BaseModel):
    """Every error, whatever the route: what is wrong, naming the field or header."""

    detail: str


class UpcomingSlot(BaseModel):
    slot: Instant
    name: str
    due: Instant
    """The slot plus the job's jitter offset for it: when its timer elapses."""


class LastRun(BaseModel):
    run: str
    outcome: str | None
    reason: str
    started_at: Instant | None
    finished_at: Instant | None
    duration_s: float | None
    attempts: int
    exit_status: int | None


class RunGoing(BaseModel):
    run: str
    state: Literal["running", "backoff"]
    attempt: int
    started_at: Instant | None
    retry_at: Instant | None


class PausedBy(BaseModel):
    by: str
    since: Instant
    reason: str
    until: Instant | None


class JobFacts(BaseModel):
    """A job as ``cronduit status --json`` gives it."""

    job: str
    timing: str
    """What makes it run, in config words."""
    described: str | None
    """A cron timing in English."""
    timer: Literal["armed", "unarmed", "paused", "none"]
    next_elapse: Instant | None
    next_slot: str | None
    next_slots: list[UpcomingSlot]
    last: LastRun | None
    """The newest ended run that was not skipped."""
    skipped_since: int
    in_progress: list[RunGoing]
    waiting: int
    divergences: list[str]
    paused: PausedBy | None
    reminder: str | None


class JobList(BaseModel):
    """A page of jobs in config order; ``next_cursor`` asks for the page after (None: this was the
    last)."""

    healthy: bool
    """No job diverges: every job of the config, not only this page's."""
    jobs: list[JobFacts]
    next_cursor: str | None


class SlotEntry(BaseModel):
    """A slot of the ledger: its fate and why."""

    slot: Instant
    name: str | None
    fate: Literal["ran", "skipped", "missed"]
    reason: str
    run: str | None
    count: int
    """Slots this row stands for (a span of missed ones, ``until`` the last)."""
    until: Instant | None


class SlotList(BaseModel):
    job: str
    slots: list[SlotEntry]


class StepTried(BaseModel):
    step: str
    attempt: int
    attempt_id: str
    outcome: str | None
    exit_status: int | None
    reason: str


class NotificationSent(BaseModel):
    notifier: str
    state: Literal["pending", "sent", "failed"]
    attempts: int
    error: str | None


class RunRecord(BaseModel):
    """The run record of SPEC §5 (as ``cronduit job history --json`` prints it), with the
    extras a run has: its execution's step attempts, its workspace, its backfill slot, its
    notifications."""

    run: str
    job: str
    trigger: str
    label: str
    triggers: list[str]
    """The delivery ids of the triggers it consumed."""
    started_at: Instant | None
    finished_at: Instant | None
    duration_s: float | None
    attempts: int
    exit_status: int | None
    outcome: str | None
    reason: str
    inputs: dict[str, Any]
    operator: str | None
    workspace: str | None = None
    backfill: bool | None = None
    slot: Instant | None = None
    execution: str | None = None
    steps: list[StepTried] | None = None
    notifications: list[NotificationSent] | None = None


class RunPage(BaseModel):
    """Runs newest first; ``next_cursor`` asks for the page after (None: this was the last)."""

    runs: list[RunRecord]
    next_cursor: str | None


class AuditLine(BaseModel):
    seq: int
    at: Instant
    operator: str
    action: str
    job: str | None
    detail: dict[str, Any]


class AuditList(BaseModel):
    """The audit log, newest first."""

    entries: list[AuditLine]
