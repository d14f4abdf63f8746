"""What the executor is told (:class:`LaunchSpec`) and the facts it reports back.

An attempt is, at any moment, in one of four states, each a small frozen record so callers
can ``match`` on them: :class:`NotStarted`, :class:`Running`, :class:`Exited` or
:class:`Vanished`. The executor never turns these into outcomes; the daemon does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cronduit.core.enums import EX_TEMPFAIL

__all__ = [
    "EX_TEMPFAIL",
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
]

MIN_MAX_LOG = 64 * 1024
"""The smallest cap the executor takes (the config asks for 1MiB at least): a head and a
tail of whole blocks, with room for the marker."""


class AttemptConflict(RuntimeError):
    """The attempt file belongs to a process the caller did not expect.

    Raised by :func:`~cronduit.executor.launch` when the attempt was already started (so
    launching would run it twice), and by :func:`~cronduit.executor.inspect` when a process
    holds the attempt's lock but never says who it is.
    """


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one attempt of a run; the caller builds all of it."""

    run_id: str
    attempt: int
    argv: tuple[str, ...] | None
    """A ``command:`` job: the argument list, run without a shell."""
    shell: str | None
    """A ``run:`` job: the string given to ``/bin/sh -c``."""
    cwd: Path
    env: Mapping[str, str]
    """The job's complete environment (launch adds only ``CRONDUIT_RETRY_AFTER_FILE``)."""
    attempt_file: Path
    """The attempt's record (:mod:`~cronduit.executor.files`), in the run's folder."""
    log_path: Path
    max_log: int | None = None
    """The log's cap in bytes (``settings.max_log``), kept by the supervisor while the job
    runs (:mod:`~cronduit.executor.logcap`); None for none."""
    lease_file: Path | None = None
    """The node's lease file (:mod:`~cronduit.executor.lease`): the supervisor stops the job
    when the lease it holds ends. None: no lease, the job is never stopped for one."""

    def __post_init__(self) -> None:
        if (self.argv is None) == (self.shell is None):
            raise ValueError("a launch needs exactly one of argv (command) or shell (run)")
        if self.argv is not None and not self.argv:
            raise ValueError("argv must name a program")
        if self.attempt < 1:
            raise ValueError(f"attempts count from 1, not {self.attempt}")
        if self.max_log is not None and self.max_log < MIN_MAX_LOG:
            raise ValueError(f"max_log must be at least {MIN_MAX_LOG} bytes, not {self.max_log}")

    @property
    def command(self) -> tuple[str, ...]:
        """The argument list the supervisor executes: ``argv``, or ``/bin/sh -c shell``."""
        if self.argv is not None:
            return self.argv
        assert self.shell is not None  # __post_init__ guarantees one of the two
        return ("/bin/sh", "-c", self.shell)


@dataclass(frozen=True)
class Attempt:
    """A live attempt: its job's pid and start time, which together name one process.

    A pid alone is not an identity (pids are recycled, 32768 of them by default on Linux);
    ``start_time`` is ``/proc/<pid>/stat`` field 22, clock ticks after boot, and differs for
    any later process given the same pid.
    """

    pid: int
    start_time: int
    attempt_file: Path


@dataclass(frozen=True)
class NotStarted:
    """The lock is free and the attempt file empty (or missing): the job never ran, launch it."""


@dataclass(frozen=True)
class Running:
    """The job recorded is still there (the lock held by its supervisor, or, with the
    supervisor gone, the same pid and start time): adopt it."""

    attempt: Attempt


@dataclass(frozen=True)
class Exited:
    """The supervisor recorded the job's exit status (128 + N when signal N killed the job)."""

    exit_status: int


@dataclass(frozen=True)
class Vanished:
    """The job started but nobody recorded how it ended (its supervisor was killed, say).

    ``pid`` is the job's, when its line was written; it is also the job's process group,
    whose members may outlive the job.
    """

    pid: int | None


AttemptState = NotStarted | Running | Exited | Vanished
Settled = NotStarted | Exited | Vanished
"""A state that can no longer change: the job and its record are done (NotStarted if the
supervisor stopped before marking the attempt started, so before the job could begin)."""


@dataclass(frozen=True)
class Termination:
    """What :func:`~cronduit.executor.terminate_async` saw: the state it left and whether
    KILL was sent.

    ``state`` is :class:`Running` only if the process group survived KILL too (a process
    stuck in the kernel); the caller decides what that means for the run.
    """

    state: AttemptState
    killed: bool
