"""The engine: trigger -> event -> route -> work -> run -> record, carried out durably.

One module per stage, each of which reads the store, asks the pure core what to do, and
writes the answer in the same transaction; nothing here decides policy:

* :mod:`~cronduit.engine.arming`: a config taken re-arms the timers;
* :mod:`~cronduit.engine.firing`: due timers become accepted triggers and ledger rows;
* :mod:`~cronduit.engine.routing`: accepted triggers meet their job's state (and run ends
  become ``on.after`` triggers);
* :mod:`~cronduit.engine.work`: waiting work starts runs;
* :mod:`~cronduit.engine.ending`: attempts end, runs end and are recorded;
* :mod:`~cronduit.engine.tails`: the end of each run's log, kept in a state shared by many
  hosts;
* :mod:`~cronduit.engine.pauses`: pauses committed elsewhere are carried out;
* :mod:`~cronduit.engine.outbox` and :mod:`~cronduit.engine.launching`: what a commit
  decided, carried out in the world after it;
* :mod:`~cronduit.engine.observer`: what a commit decided, told to the observer that counts
  it (the daemon's metrics).

The daemon calls :meth:`Engine.tick` with the time now (and whenever something happens);
tests call it with a fake clock's time, so days of schedules run in milliseconds.

Crash safety comes from the order of writes: a trigger is committed before it is routed; a
run is committed (with its attempt directory) before its process is launched, and the
executor's lock file tells a restarted engine whether that launch happened; an attempt's
end is committed before the next run starts.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cronduit.core.config.model import Config
from cronduit.core.enums import RunState
from cronduit.core.lifecycle import recovered_attempt
from cronduit.engine.arming import Record, arm
from cronduit.engine.ending import Ended, attempt_ended, collect_ended
from cronduit.engine.executions import launch_of
from cronduit.engine.firing import fire_timers
from cronduit.engine.launching import LAUNCH_CHUNK, Launcher
from cronduit.engine.observer import NOT_OBSERVED, Observer
from cronduit.engine.outbox import Launch, Outbox
from cronduit.engine.pauses import read_pauses, settle_pauses
from cronduit.engine.plan import BATCH, Log, Plan, Stage, quiet
from cronduit.engine.retries import enforce_deadlines, retry_due, stop_cancelled
from cronduit.engine.routing import chain, route
from cronduit.engine.tails import with_tail, with_tails
from cronduit.engine.takeover import sweep_lost_nodes
from cronduit.engine.work import start_waiting
from cronduit.ports import Runner, Store, Transaction

__all__ = ["BATCH", "CONTENDED_RETRY", "LAUNCH_CHUNK", "RECORD_PIDS_WITHIN", "Engine",
           "Observer"]

RECORD_PIDS_WITHIN = timedelta(milliseconds=50)
"""How soon after a launch a tick records the started processes' pids, at the latest. Not
at once: a process that ends within it (a quick step of a durable execution) has its pid
and its end recorded by one commit, and the next step waits for one fsync, not for a turn
of the loop spent on the pid. Until then the attempt file says who the process is."""

CONTENDED_RETRY = timedelta(milliseconds=100)
"""How soon a tick that found a job's work held by another daemon looks again."""


class Engine:
    """Drives one config's jobs against a store and a runner."""

    def __init__(self, config: Config, store: Store, runner: Runner, *, dispatch: bool = True,
                 log: Log = quiet, checkpoint: Log = quiet, node: str = "local",
                 shared: bool = False, observer: Observer = NOT_OBSERVED) -> None:
        self.store = store
        self.runner = runner
        self.stage = Stage(Plan.of(config), dispatch, log, node=node, shared=shared,
                           observer=observer)
        self.sweep_due = False
        """Set (by the daemon, after each lease renewal) to sweep lost nodes at the next
        tick; only where other daemons share the store."""
        self.checkpoint = checkpoint
        """Called with a step's name once it has committed (``ended``: attempts' ends and the
        runs they end; ``fired``; ``routed``) or just before processes start (``launching``):
        where crash tests stop the daemon."""
        self.launcher = Launcher(self.stage, store, runner, checkpoint)
        self._ended: Ended = []
        """Attempts' ends reported by the runner, kept until committed: a failed tick
        retries them."""

    @property
    def config(self) -> Config:
        """The config in force (the new one once an apply has committed)."""
        return self.stage.config

    @property
    def dispatch(self) -> bool:
        """False in a dry run: no timers fire and no runs start; triggers wait."""
        return self.stage.dispatch

    @property
    def launch_fault(self) -> str | None:
        """Why the last tick's launches had to wait (the state folder cannot be written), or
        None: the daemon then waits before the next tick, as for a failed commit."""
        return self.launcher.fault

    def apply(self, config: Config, now: datetime, record: Record | None = None) -> list[str]:
        """Take a new config (start-up, ``cronduit apply``, SIGHUP) and re-arm timers per the
        edit rules; the list of changes, for the operator. ``record`` writes what the caller
        keeps of the apply, given the changes, in the same transaction. All of it commits,
        or none of it, whatever is raised; the engine (and whoever reads its ``config``)
        takes the new config only once it has committed."""
        plan = self.stage.plan if config is self.config else Plan.of(config)
        changes = arm(self.store, plan, now, dispatch=self.dispatch, record=record)
        self.stage.plan = plan
        return changes

    def tick(self, now: datetime) -> datetime | None:
        """Do everything due at ``now``; the next instant something is due (None: nothing)."""
        # Two write transactions a tick (each a durable commit): attempts that ended and timers
        # that fired; then routing, chaining, retries and deadlines. Firing commits before
        # routing reads, so a crash between them leaves accepted triggers to route on restart.
        stage, outbox = self.stage, Outbox()
        ended = self.runner.ended()
        self._ended.extend(with_tails(self.runner, ended) if stage.keeps_tails else ended)
        if self._ended:
            self.checkpoint("ending")  # ends noticed, not recorded yet (crash tests only)
        with self.store.transaction() as tx:
            starts = self._starts_to_record()
            if starts:
                tx.record_starts(starts)
            settle_pauses(stage, tx, now, outbox)
            collect_ended(stage, tx, self._ended, now, outbox)
            fired = fire_timers(stage, tx, now, outbox) if stage.dispatch else 0
        self.launcher.unrecorded.clear()
        if self._ended:
            self._ended.clear()
            self.checkpoint("ended")
        if fired:
            self.checkpoint("fired")
        # Committed: counted, logged and queued now, so a second transaction that fails (the
        # database gone between the two) loses none of it; and its launches (the next step
        # of an execution, the run a run's end freed) begin now, their processes starting
        # while the routing transaction runs: a step's process starts one commit after its
        # predecessor's end.
        launching = self.launcher.begin(outbox, now)
        try:
            due, routed = self._route(now, outbox)
        finally:
            begun = launching()  # the pids to record, even if routing failed
        if routed:
            self.checkpoint("routed")
        # One chunk of launches a tick in all; none more after a launch that had to wait.
        most = 0 if self.launcher.fault is not None else LAUNCH_CHUNK - begun
        self.launcher.carry_out(outbox, now, most)
        if max(fired, routed) == BATCH or self.launcher.waiting:
            return now  # more waiting than one batch, or more to launch: come back at once
        if self.launcher.unrecorded:  # pids to record: soon, if nothing brings a tick sooner
            soon = now + RECORD_PIDS_WITHIN
            due = soon if due is None else min(due, soon)
        if stage.contended:  # another daemon held a job's work: look again soon
            soon = now + CONTENDED_RETRY
            return soon if due is None else min(due, soon)
        return due

    def _starts_to_record(self) -> list[tuple[str, int, int]]:
        """The pids to record, less those of attempts whose end this tick records: a pid is
        kept to adopt an attempt still running after a restart, and a durable run's next
        step would clear it again in the same transaction. Where an end is not recorded
        after all, the attempt's file still says who its process was."""
        ended = {run_id for run_id, _, _ in self._ended}
        return [start for start in self.launcher.unrecorded if start[0] not in ended]

    def _route(self, now: datetime, outbox: Outbox) -> tuple[datetime | None, int]:
        """The tick's second transaction: routing, chaining, retries and deadlines. The next
        instant something is due, and how many triggers were routed."""
        stage = self.stage
        stage.contended = False
        owed, looked = [name for name in stage.owed if name in stage.config.jobs], []
        with self.store.transaction() as tx:
            read_pauses(stage, tx)  # a pause committed since the first transaction counts
            chain(stage, tx, now)
            routed = route(stage, tx, now, outbox)
            if stage.dispatch:
                looked = [name for name in owed if start_waiting(stage, tx, name, now, outbox)]
                retry_due(stage, tx, now, outbox)
                enforce_deadlines(stage, tx, now, outbox)
                if stage.shared:
                    stop_cancelled(stage, tx, outbox)
                    if self.sweep_due:
                        sweep_lost_nodes(stage, tx, now, outbox)
                        self._look_at_waiting(tx, now, outbox)
            # Read here, not in a transaction of its own after the launches below: they
            # change nothing it reads (runs ended late bring a tick sooner, no later).
            due = tx.next_due(with_timers=self.dispatch)
        self.sweep_due = False
        stage.owed.difference_update(looked)  # once committed: after a rollback, again
        stage.owed.intersection_update(stage.config.jobs)
        return due, routed

    def start(self, now: datetime) -> None:
        """After (re)start: adopt or settle attempts left by the previous daemon, then start
        the runs that held work (a dry run, an outage) is owed."""
        stage, outbox = self.stage, Outbox()
        with self.store.transaction() as tx:
            settle_pauses(stage, tx, now, outbox)
            # Only this node's runs: another host's processes are never adopted here.
            own = tx.active_runs() if not stage.shared else tx.active_runs_of_node(stage.node)
            for run in own:
                if run.state != RunState.RUNNING:
                    continue
                found = recovered_attempt(self.runner.recover(run), run.pid is not None)
                if found == "not_started":
                    job = stage.config.jobs.get(run.job)
                    step = None if job is None else launch_of(tx, job, run, run.attempts)
                    outbox.launches.append(Launch(run, run.attempts, step=step))
                elif found != "running":
                    if stage.keeps_tails:  # an attempt that ended while no daemon watched
                        found = with_tail(self.runner, run.id, found, run.attempts)
                    attempt_ended(stage, tx, run, run.attempts, found, now, outbox)
            if stage.dispatch:
                for name in tx.jobs_with_waiting():
                    if name in stage.config.jobs:
                        start_waiting(stage, tx, name, now, outbox)
        self.launcher.carry_out(outbox, now)

    def _look_at_waiting(self, tx: Transaction, now: datetime, outbox: Outbox) -> None:
        """With the sweep, a look at every job whose work waits: what another node left
        waiting when it could not start it (a lost run ended on a node the job's ``nodes:``
        leave out, a job's work held by another node as its run ended there) starts here if
        it may. Each job's overlap policy decides, as after any run's end."""
        stage = self.stage
        for name in tx.jobs_with_waiting():
            if name in stage.config.jobs:
                start_waiting(stage, tx, name, now, outbox)

    def prune_executions(self, now: datetime) -> int:
        """Delete durable executions whose retention is over and that are not running, a
        bounded batch at a time (their runs stay in the history); how many."""
        with self.store.transaction() as tx:
            expired = tx.expired_executions(now, BATCH)
            for execution in expired:
                tx.delete_execution(execution.id)
        return len(expired)

    def take_notified(self) -> int:
        """Notifications committed since the last call: the daemon's sender looks for due
        ones when there are some, not after every tick (a look is a transaction on the
        engine's thread, which the next tick would wait for)."""
        notified, self.launcher.notified = self.launcher.notified, 0
        return notified

    def forget_launches(self) -> None:
        """The node's lease was lost: launches committed under it must not begin now (its
        runs may be another node's already); what is still this node's is adopted again by
        :meth:`start` once the lease is taken again."""
        self.launcher.waiting.clear()
        self.stage.stopping.clear()
        self.stage.triggers.clear()

