"""A run's lifecycle after each attempt: retry, or end, and with which outcome and event.

Pure: the engine passes what the executor reported and the run's deadline, and records the
answer. The rules (SPEC §5):

* exit 0 is ``success``; a run stopped for its deadline is ``timeout``; one stopped to make way
  for a newer trigger (overlap: replace) or by an operator is ``cancelled``; anything else is
  ``failure``;
* a failed attempt is retried while ``retry.attempts`` allows, after ``backoff`` doubling up to
  ``max_backoff``; exit status 75 (EX_TEMPFAIL) asks for a retry even without ``retry``; a
  duration the job wrote to ``$CRONDUIT_RETRY_AFTER_FILE`` says when;
* the deadline bounds the whole run, attempts and sleeps included: a retry that could not start
  before the deadline is not scheduled, and the run ends ``timeout`` if its time ran out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from cronduit.core.config.model import Retry
from cronduit.core.enums import EX_TEMPFAIL, Outcome
from cronduit.core.limits import MAX_ATTEMPTS
from cronduit.core.log_tails import LogTail

RUN_END_EVENTS = {
    Outcome.SUCCESS: "completed",
    Outcome.FAILURE: "failed",
    Outcome.TIMEOUT: "timed_out",
    Outcome.CANCELLED: "cancelled",
}
"""The run-ended event recorded on the job for each outcome (``job wait``, ``on.after``)."""


@dataclass(frozen=True, slots=True)
class AttemptReport:
    """What the executor knows about an attempt that ended."""

    exit_status: int | None
    """None when the process vanished or was stopped before it could say."""
    stopped_for: str | None = None
    """``timeout`` or ``cancelled`` when cronduit stopped it; None otherwise."""
    retry_after: int | None = None
    """Seconds the job asked to wait before a retry, if it wrote any."""
    vanished: bool = False
    """The process disappeared without an exit status (lost while cronduit was down)."""
    not_started: str | None = None
    """Why the process could not be started at all (a missing ``dir``, no processes left)."""
    node_lost: str | None = None
    """The node the attempt went on, when that node's lease expired with the attempt going:
    its own supervisor ended the process; the attempt is retried like a failed one."""
    log_tail: LogTail | None = None
    """The end of the run's log once the attempt ended, when the engine keeps it in the
    store (a state shared by many hosts, :mod:`cronduit.core.log_tails`); None otherwise,
    and when the run has no log."""
    outputs: bytes | None = None
    """What a step attempt wrote to ``$CRONDUIT_OUTPUT_FILE``, raw and bounded (None: no
    file); validated by :func:`cronduit.core.steps.parse_outputs` before it is saved."""
    outputs_unreadable: str | None = None
    """Why the output file could not be read, when it could not."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Either a retry at ``retry_at``, or the run's end with ``outcome`` and ``reason``."""

    outcome: Outcome | None
    reason: str
    retry_at: datetime | None = None


NODE_LOST = "node lost"
"""The reason a run's attempt failed when the node it went on was lost (SPEC §10)."""


def judge_attempt(
    report: AttemptReport,
    attempt: int,
    retry: Retry,
    now: datetime,
    deadline: datetime,
) -> Verdict:
    """The verdict on attempt number ``attempt`` (1-based) of a run due to end by ``deadline``."""
    if report.stopped_for == "timeout":
        return Verdict(Outcome.TIMEOUT, f"deadline passed during attempt {attempt}")
    if report.stopped_for == "cancelled":
        return Verdict(Outcome.CANCELLED, "cancelled")
    if report.exit_status == 0:
        return Verdict(Outcome.SUCCESS, "")
    return judge_failure(_failure_reason(report), report, attempt, retry, now, deadline)


def judge_failure(reason: str, report: AttemptReport, attempt: int, retry: Retry,
                  now: datetime, deadline: datetime) -> Verdict:
    """The verdict on attempt ``attempt`` that failed for ``reason``: a retry when ``retry``
    and the deadline leave room for one, else the run's failure. A step whose exit status
    was 0 but whose outputs were refused fails so too (:mod:`cronduit.core.steps`)."""
    delay = _retry_delay(report, attempt, retry)
    if delay is None:
        return Verdict(Outcome.FAILURE, reason)
    # Compared before it is added: a delay past the deadline never becomes an instant.
    if delay >= (deadline - now).total_seconds():
        return Verdict(Outcome.FAILURE, f"{reason}; no time left before the deadline to retry")
    return Verdict(None, reason, now + timedelta(seconds=delay))


def _failure_reason(report: AttemptReport) -> str:
    if report.not_started is not None:
        return f"could not start: {report.not_started}"
    if report.node_lost is not None:
        return f"{NODE_LOST} (node {report.node_lost})"
    if report.vanished:
        return "process vanished while cronduit was down"
    if report.exit_status is None:
        return "process ended without an exit status"
    if report.exit_status > 128:
        return f"killed by signal {report.exit_status - 128}"
    return f"exit status {report.exit_status}"


def _retry_delay(report: AttemptReport, attempt: int, retry: Retry) -> int | None:
    """Seconds before the next attempt, or None when no retry is due."""
    if attempt >= MAX_ATTEMPTS or report.vanished:
        return None
    if attempt < retry.attempts:
        hinted = report.retry_after
        return retry.delay_after(attempt) if hinted is None else hinted
    if report.exit_status == EX_TEMPFAIL:
        hinted = report.retry_after
        return retry.delay_after(attempt) if hinted is None else hinted
    return None


Recovered = AttemptReport | Literal["running", "not_started"]
"""What the executor reads of an attempt after a restart: live, ended, or never started."""


def recovered_attempt(found: Recovered, pid_recorded: bool) -> Recovered:
    """What a restart makes of an attempt, given whether the store recorded its process.

    An attempt file that says "never started" while the store holds the attempt's pid lost
    its last writes: the kernel had not written them out when a power cut or a disk error
    (a file system turned read-only) came, while the store's commit was on disk. The job did
    start, so it is never launched again: it ends as vanished.
    """
    if found == "not_started" and pid_recorded:
        return AttemptReport(None, vanished=True)
    return found


def deadline_passed(now: datetime, deadline: datetime | None) -> bool:
    """Whether a run's whole-run deadline has come (exactly at it counts as passed)."""
    return deadline is not None and now >= deadline


def run_deadline(started: datetime, timeout: int) -> datetime:
    """The whole-run deadline of a run started at ``started``: every attempt and every
    backoff between them must end by it."""
    return started + timedelta(seconds=timeout)


def backoff_step(now: datetime, deadline: datetime | None,
                 next_attempt_at: datetime | None) -> Literal["timeout", "retry"] | None:
    """What a run sleeping in backoff does at ``now``: end as ``timeout`` once its deadline
    has come (before its next attempt, even when both are due), start its next attempt once
    that is due, or sleep on (None)."""
    if deadline_passed(now, deadline):
        return "timeout"
    if next_attempt_at is not None and next_attempt_at <= now:
        return "retry"
    return None


ONE_ATTEMPT = Retry()
"""The retry of a job that has none (or was removed from the config): one attempt."""


def retry_of(retry: Retry | None) -> Retry:
    """The retry an attempt's end is judged by: the job's own, else one attempt."""
    return retry or ONE_ATTEMPT
