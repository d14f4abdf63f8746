"""Fakes for tests, cronduit's own and its users': a clock you move and a runner you drive.

With :class:`FakeClock` and :class:`FakeRunner`, the real engine and a real store run days of
schedules in milliseconds: the test decides when time passes and how each attempt ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from cronduit.core.config.model import Job
from cronduit.core.lifecycle import AttemptReport
from cronduit.core.log_tails import LogTail, tail_of
from cronduit.core.steps import StepLaunch
from cronduit.ports import Deferred, Event, LaunchResult, Run


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("start must be timezone-aware")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, by: timedelta) -> datetime:
        self._now += by
        return self._now

    def set(self, instant: datetime) -> datetime:
        """Jump to ``instant``: forwards (an outage, a resumed VM) or backwards (an NTP step)."""
        self._now = instant.astimezone(UTC)
        return self._now


@dataclass
class Launched:
    """One attempt the fake runner was asked to start."""

    run: Run
    job: Job
    trigger: Event
    attempt: int
    pid: int
    step: StepLaunch | None = None
    """The step, its ids and inputs, when the attempt is a step's."""


@dataclass
class FakeRunner:
    """A runner whose attempts end when the test says, with the exit status it says."""

    launched: list[Launched] = field(default_factory=list)
    stopped: list[tuple[str, str]] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    recovered: dict[str, AttemptReport | Literal["running", "not_started"]] = field(
        default_factory=dict)
    unstartable: dict[str, str] = field(default_factory=dict)
    """Jobs whose processes cannot start, by name, with the reason the runner reports."""
    deferring: str | None = None
    """While set, every launch is deferred with this reason, as a full state folder does."""
    lease: float | None = None
    """The last instant :meth:`hold_lease` was given (it stops nothing here)."""
    logs: dict[str, bytes] = field(default_factory=dict)
    """Each run's log, by run id, as the test writes it (a run without one has no log)."""
    tails_read: list[str] = field(default_factory=list)
    """The runs whose log tail the engine asked for, in order."""
    _ended: list[tuple[str, int, AttemptReport]] = field(default_factory=list)
    _live: dict[str, int] = field(default_factory=dict)

    def launch(self, run: Run, job: Job, trigger: Event, attempt: int,
               step: StepLaunch | None = None) -> LaunchResult:
        if self.deferring is not None:
            return Deferred(self.deferring)
        if job.name in self.unstartable:
            self._ended.append((run.id, attempt,
                                AttemptReport(None, not_started=self.unstartable[job.name])))
            return None
        pid = 1000 + len(self.launched)
        self.launched.append(Launched(run, job, trigger, attempt, pid, step))
        self._live[run.id] = attempt
        return pid, pid * 7

    def launch_many(self, launches: Sequence[tuple[Run, Job, Event, int]],
                    steps: Mapping[str, StepLaunch] | None = None) -> list[LaunchResult]:
        return [self.launch(*launch, (steps or {}).get(launch[0].id)) for launch in launches]

    def begin_many(self, launches: Sequence[tuple[Run, Job, Event, int]],
                   steps: Mapping[str, StepLaunch] | None = None
                   ) -> Callable[[], list[LaunchResult]]:
        started = self.launch_many(launches, steps)  # at once: nothing to wait for here
        return lambda: started

    def recover(self, run: Run) -> AttemptReport | Literal["running", "not_started"]:
        found = self.recovered.get(run.id, "running")
        if isinstance(found, str):  # "running" or "not_started": the attempt is live again
            self._live[run.id] = run.attempts
        return found

    def ended(self) -> list[tuple[str, int, AttemptReport]]:
        ended, self._ended = self._ended, []
        return ended

    def stop(self, run: Run, why: str) -> None:
        self.stopped.append((run.id, why))
        if run.id in self._live:
            attempt = self._live.pop(run.id)
            self._ended.append((run.id, attempt, AttemptReport(None, stopped_for=why)))

    def prune(self, run: Run) -> None:
        self.pruned.append(run.id)

    def hold_lease(self, until: float | None) -> None:
        self.lease = until

    def log_tail(self, run_id: str, attempt: int | None = None) -> LogTail | None:
        self.tails_read.append(run_id)
        log = self.logs.get(run_id)
        return None if log is None else tail_of(log)

    # -- driving it from a test ---------------------------------------------------------------

    def finish(self, run_id: str, exit_status: int, retry_after: int | None = None,
               outputs: bytes | None = None) -> None:
        """End the live attempt of ``run_id`` with ``exit_status`` (and, for a step attempt,
        what it wrote to its output file)."""
        attempt = self._live.pop(run_id)
        self._ended.append((run_id, attempt, AttemptReport(exit_status, retry_after=retry_after,
                                                           outputs=outputs)))

    def running(self) -> list[str]:
        """Ids of runs with a live attempt, in launch order."""
        return list(self._live)
