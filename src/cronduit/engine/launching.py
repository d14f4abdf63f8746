"""Launching: carrying out what a committed transaction decided, in the world.

Observations, log lines, stops, prunes and launches leave the outbox only after their
transaction committed. Launches go a chunk per tick (:data:`LAUNCH_CHUNK`), so a burst of
runs never holds up the timers due behind it; a launch leaves the queue only once it began:
a store that fails before it (a full disk), or a runner that defers it, puts it back for
the next tick.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from cronduit.core.enums import Outcome
from cronduit.core.lifecycle import deadline_passed
from cronduit.engine.ending import end_run
from cronduit.engine.executions import run_trigger
from cronduit.engine.observer import report
from cronduit.engine.outbox import Launch, Outbox
from cronduit.engine.plan import Stage
from cronduit.ports import Deferred, Event, Run, Runner, Store, Transaction

LAUNCH_CHUNK = 64
"""Processes started per tick; the rest wait for the next tick, after timers have fired."""


class Launcher:
    """The launches committed but not begun yet, and the starts not recorded yet."""

    def __init__(self, stage: Stage, store: Store, runner: Runner,
                 checkpoint: Callable[[str], None]) -> None:
        self.stage = stage
        self.store = store
        self.runner = runner
        self.checkpoint = checkpoint
        self.waiting: list[Launch] = []
        """Attempts committed as started but not launched yet."""
        self.unrecorded: list[tuple[str, int, int]] = []
        """Processes started whose pids are not recorded yet: the first transaction of the
        next tick records them, which the engine asks for within
        :data:`~cronduit.engine.RECORD_PIDS_WITHIN`. Not a commit of their
        own: a job that ends at once (a quick step) has its pid and its end in one commit,
        and the next step waits for one fsync, not two. Until then the attempt file, which
        the supervisor wrote before answering, says who the process is."""
        self.fault: str | None = None
        """Why the last launches had to wait (the state folder cannot be written), or None."""
        self.notified = 0
        """Notifications committed since the daemon last took the count (:meth:`keep`)."""

    def carry_out(self, outbox: Outbox, now: datetime, most: int = LAUNCH_CHUNK) -> int:
        """Report to the observer, log, stop, prune, then launch the next chunk of at most
        ``most`` launches; how many it took to launch (runs that ended late start nothing and
        are not counted). With ``most`` 0 (the tick's chunk is spent) nothing is launched,
        and the reason the last launches waited, if any, stands."""
        return self.begin(outbox, now, most)()

    def begin(self, outbox: Outbox, now: datetime,
              most: int = LAUNCH_CHUNK) -> Callable[[], int]:
        """:meth:`carry_out` in two halves: on return the chunk's processes are starting,
        and the call returned waits for them (their pids queued to record, launches that
        had to wait put back) and says how many it took. Call it, once, before anything
        else launches."""
        self.keep(outbox)
        if most <= 0:
            return _NONE
        self.fault = None
        if not self.waiting:
            return _NONE
        chunk = self.waiting[:most]
        late = [launch for launch in chunk if deadline_passed(now, launch.run.deadline_at)]
        if late:  # they never start; the next chunk launches, with what their ends freed
            return self.begin(self._end_late(late, now), now, most)
        triggers = self._triggers(chunk)
        del self.waiting[:most]
        return self._launch(chunk, triggers)

    def keep(self, outbox: Outbox) -> None:
        """Take what a transaction decided out of its outbox the moment it has committed:
        report to the observer, log, stop, prune, count its notifications, and queue its
        launches (begun by the next :meth:`carry_out`). A tick commits twice; were the first
        commit's outbox kept until the second, a second that fails (the database restarted
        between them) would drop it, and a run the first committed as started (the next of
        a job's waiting work, once a run's end freed a slot) would stay recorded as running
        with no process, and its trigger consumed, until the daemon restarts."""
        report(self.stage.observer, outbox)
        for line in outbox.lines:
            self.stage.log(line)
        for run, why in outbox.stops:
            self.runner.stop(run, why)
        for run in outbox.prunes:
            self.runner.prune(run)
        self.waiting.extend(outbox.launches)
        self.stage.triggers.update((launch.run.id, launch.trigger) for launch in outbox.launches
                                   if launch.trigger is not None)
        self.notified += outbox.notified
        outbox.notified = 0
        outbox.lines.clear()
        outbox.stops.clear()
        outbox.prunes.clear()
        outbox.launches.clear()

    def _end_late(self, late: list[Launch], now: datetime) -> Outbox:
        """Runs whose whole-run deadline came while they waited to start: they never start.
        What their ends decided (the work they freed), committed."""
        ended = Outbox()
        with self.store.transaction() as tx:
            for launch in late:
                end_run(self.stage, tx, launch.run, Outcome.TIMEOUT,
                        "deadline passed before the process started", None, now, ended)
        gone = {id(launch) for launch in late}
        self.waiting = [launch for launch in self.waiting if id(launch) not in gone]
        return ended

    def _triggers(self, chunk: list[Launch]) -> list[Event]:
        known = self.stage.triggers
        found = [launch.trigger or known.get(launch.run.id) for launch in chunk]
        if all(trigger is not None for trigger in found):
            return [trigger for trigger in found if trigger is not None]
        with self.store.transaction() as tx:
            return [trigger or _trigger_event(tx, launch.run)
                    for launch, trigger in zip(chunk, found, strict=True)]

    def _launch(self, chunk: list[Launch], triggers: list[Event]) -> Callable[[], int]:
        self.checkpoint("launching")
        jobs = self.stage.config.jobs
        batch = [
            (launch, (launch.run, job, trigger, launch.attempt))
            for launch, trigger in zip(chunk, triggers, strict=True)
            # a job removed while its run was being started: the attempt never began
            if (job := jobs.get(launch.run.job)) is not None
        ]
        steps = {launch.run.id: launch.step for launch, _ in batch if launch.step is not None}
        collect = self.runner.begin_many([item for _, item in batch], steps or None)

        def finish() -> int:
            started = collect()
            launched: list[tuple[str, int, int]] = []
            deferred: list[Launch] = []
            for (launch, _), got in zip(batch, started, strict=True):
                if isinstance(got, Deferred):  # the state folder cannot be written: not begun
                    deferred.append(launch)
                    self.fault = got.reason
                elif got is not None:  # one not started ends through runner.ended()
                    launched.append((launch.run.id, got[0], got[1]))
            self.waiting[:0] = deferred
            self.unrecorded.extend(launched)
            return len(chunk)

        return finish


def _none() -> int:
    return 0


_NONE: Callable[[], int] = _none
"""What :meth:`Launcher.begin` gives when it launched nothing."""


def _trigger_event(tx: Transaction, run: Run) -> Event:
    found = run_trigger(tx, run)
    if found is None:
        raise LookupError(f"run {run.id} has no trigger event {run.trigger_seq}")
    return found
