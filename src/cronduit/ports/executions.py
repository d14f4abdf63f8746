"""The store's durable multi-step executions (SPEC §8): each execution, its steps' states and
saved outputs, and the append-only history of every step attempt.

An execution is created with the first run of a job that has steps (or ``durable:``); each
activation is a run (the first, then one per resume), and each step attempt is one attempt
of that run, so the run's own machinery (deadline, backoff, adoption, stopping) carries the
steps. Keyed by the step's declared id, never by its position: a step's saved outputs stay
with its id. Nothing here deletes a step attempt except :meth:`delete_execution`, which
retention calls for an expired execution that is not running.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from cronduit.ports.records import Execution, ExecutionStep, StepAttempt


class Executions(Protocol):
    """Durable executions, their steps and their step attempts."""

    def insert_execution(self, execution: Execution, steps: Sequence[str]) -> None:
        """Add ``execution`` (its ``seq`` is ignored) with one ``pending`` step row per id in
        ``steps``, in that order (their ``position``). Raises
        :class:`~cronduit.ports.Conflict` when its id exists (nothing written)."""
        ...

    def get_execution(self, execution_id: str) -> Execution | None:
        ...

    def executions(self, job: str | None, limit: int) -> list[Execution]:
        """The newest ``limit`` executions (of ``job``, or of every job), newest first."""
        ...

    def update_execution(self, execution_id: str, **values: object) -> None:
        """Set the named fields of the execution (``state``, ``run_id``, ``activations``,
        ``failed_step``, ``updated_at``, ...). Unknown fields raise; an unknown id changes
        nothing."""
        ...

    def execution_steps(self, execution_id: str) -> list[ExecutionStep]:
        """The execution's steps in their order (``position``)."""
        ...

    def update_step(self, execution_id: str, step_id: str, **values: object) -> None:
        """Set the named fields of one step (``state``, ``outputs``, ``attempts``,
        ``done_at``, ``run_id``)."""
        ...

    def insert_step_attempt(self, attempt: StepAttempt) -> None:
        """Append a step attempt as it starts (its end fields None). Raises
        :class:`~cronduit.ports.Conflict` when one with the same run and attempt number, or
        the same attempt id, exists."""
        ...

    def end_step_attempt(self, run_id: str, attempt: int, ended_at: datetime,
                         exit_status: int | None, outcome: str, reason: str) -> None:
        """Record how the step attempt that is attempt ``attempt`` of run ``run_id`` ended.
        Its other fields never change."""
        ...

    def step_attempts(self, execution_id: str) -> list[StepAttempt]:
        """Every attempt of the execution's steps, in the order they started."""
        ...

    def step_attempt(self, run_id: str, attempt: int) -> StepAttempt | None:
        """The step attempt that is attempt ``attempt`` of run ``run_id``, if any."""
        ...

    def expired_executions(self, now: datetime, limit: int) -> list[Execution]:
        """Up to ``limit`` executions whose ``expires_at`` is at or before ``now`` and
        that are not ``running``, oldest first: what retention deletes."""
        ...

    def delete_execution(self, execution_id: str) -> None:
        """Delete the execution, its steps and its step attempts (retention only)."""
        ...
