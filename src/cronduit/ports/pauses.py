"""The store's pauses and audit log: who held which job, and who did what.

Pauses are kept as history: a row is active until it is resumed, and the schema keeps at
most one active pause per job. The audit log is append-only: nothing in the seam changes or
deletes an entry.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from cronduit.ports.records import AuditEntry, Pause


class PausesAndAudit(Protocol):
    """Pauses of jobs and the audit log."""

    def insert_pause(self, pause: Pause) -> None:
        """Add an active pause (its ``resumed_at`` None). Raises
        :class:`~cronduit.ports.Conflict` (nothing written) when the job has an active
        pause already. Concurrency: a unique key, so of two transactions pausing one job,
        on one host or two, the later commit is refused."""
        ...

    def active_pause(self, job: str) -> Pause | None:
        """The job's active pause, or None when it is not paused."""
        ...

    def pauses(self, resumed_after: datetime | None = None) -> list[Pause]:
        """The active pauses; with ``resumed_after``, also the pauses resumed after that
        instant (what a firing of a timer overdue since then must know). By job name, then
        in the order they were paused."""
        ...

    def end_pause(self, job: str, at: datetime, by: str) -> Pause | None:
        """Resume the job's active pause at ``at``, by ``by``; the pause as ended, or None
        when the job was not paused (nothing written). Concurrency: one statement finds and
        ends the pause, so of two transactions resuming it (an operator and the pause's
        expiry) exactly one gets it; the other gets None."""
        ...

    def insert_audit(self, entry: AuditEntry) -> int:
        """Append ``entry`` (its ``seq`` is ignored); the seq it got. Seqs rise in the order
        entries are appended. Written in the transaction of the action it records, so the
        log holds what happened, and only that."""
        ...

    def audit(self, limit: int) -> list[AuditEntry]:
        """The newest ``limit`` entries, newest first."""
        ...
