"""The process executor: spawn, adopt, time out and capture one attempt of a run.

It returns facts (an exit status, a vanished job, a retry hint, log bytes) and decides
nothing: which outcome a run gets, whether it is retried, and when it is cut short are the
daemon's decisions. ``docs/runs.md`` tells users how a run executes.

Each attempt's job is started by the daemon's supervisor (:mod:`.supervisor`), a process of
its own that outlives a killed daemon, in its own session; the supervisor holds the lock on
the attempt's one file until it has recorded the job's pid and exit status there
(:mod:`.files`), so a restarted daemon can tell, without guessing, whether the job is still
running, how it ended, or whether it never started.

Typical use by the daemon::

    attempt = launch(spec)              # record attempt.pid and attempt.start_time
    settled = await wait(attempt)       # Exited(status) or Vanished(pid), rarely NotStarted
    hint = retry_after(spec.attempt_file)

and after a restart, for an attempt recorded as in progress::

    match inspect(attempt_file, expected_start_time=recorded_start_time):
        case Running(attempt): settled = await wait(attempt)
        case Exited(status): ...
        case Vanished(): ...
        case NotStarted(): attempt = launch(spec)

With the state in PostgreSQL, after each renewal of the node's lease that succeeded::

    runner.hold_lease(lease_deadline(sent_at, lease))   # sent_at: monotonic, before sending

and the supervisors stop the node's jobs before the lease can expire (:mod:`.lease`).
"""

from __future__ import annotations

from cronduit.executor.adopt import inspect
from cronduit.executor.exits import GRACE, terminate_async, wait
from cronduit.executor.files import RETRY_AFTER_VARIABLE
from cronduit.executor.lease import LEASE_GRACE, lease_deadline, lease_margin
from cronduit.executor.retry import parse_retry_after, retry_after
from cronduit.executor.spawn import launch
from cronduit.executor.states import (
    EX_TEMPFAIL,
    Attempt,
    AttemptConflict,
    AttemptState,
    Exited,
    LaunchSpec,
    NotStarted,
    Running,
    Settled,
    Termination,
    Vanished,
)

__all__ = [
    "EX_TEMPFAIL",
    "GRACE",
    "LEASE_GRACE",
    "RETRY_AFTER_VARIABLE",
    "Attempt",
    "AttemptConflict",
    "AttemptState",
    "Exited",
    "LaunchSpec",
    "NotStarted",
    "Running",
    "Settled",
    "Termination",
    "Vanished",
    "inspect",
    "launch",
    "lease_deadline",
    "lease_margin",
    "logs",
    "parse_retry_after",
    "procfs",
    "retry_after",
    "runner",
    "terminate_async",
    "wait",
    "workspace",
]
