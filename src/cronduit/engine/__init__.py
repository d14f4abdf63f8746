"""The engine: trigger -> event -> route -> work -> run -> record, carried out durably.

Each step reads the store, asks the pure core what to do, and writes the answer in the same
transaction; nothing here decides policy. The daemon calls :meth:`Engine.tick` with the time
now (and whenever something happens); tests call it with a fake clock's time, so days of
schedules run in milliseconds.

Crash safety comes from the order of writes: a trigger is committed before it is routed; a
run is committed (with its attempt directory) before its process is launched, and the
executor's lock file tells a restarted engine whether that launch happened; an attempt's
end is committed before the next run starts.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from cronduit.core.backfill import trigger_policy
from cronduit.core.catchup import (
    CatchUpPolicy,
    Firing,
    arm_edited,
    arm_new,
    catch_up_policy,
    decide_firing,
    decide_held_firing,
    decide_interval_firing,
    published_payload,
    slot_instant,
)
from cronduit.core.config.model import AfterSpec, Config, Job, Retry
from cronduit.core.enums import Outcome, TriggerKind
from cronduit.core.lifecycle import (
    RUN_END_EVENTS,
    AttemptReport,
    deadline_passed,
    judge_attempt,
    recovered_attempt,
)
from cronduit.core.notify import RunFacts, message, recipients
from cronduit.core.overlap import (
    SKIPPED_PAUSED,
    Batch,
    Decision,
    JobState,
    OverlapPolicy,
    Trigger,
    on_arrival,
    on_backoff,
    on_pause,
    on_run_end,
    runs_alone,
)
from cronduit.core.run_ids import RunIds
from cronduit.core.timespec import (
    CalendarSchedule,
    IntervalSchedule,
    Schedule,
    Slot,
    format_utc,
    next_jittered,
    schedule_of,
)
from cronduit.intake import pausing as control
from cronduit.ports import (
    Conflict,
    Deferred,
    Event,
    NewEvent,
    Pause,
    Run,
    Runner,
    SlotRecord,
    Store,
    Timer,
    Transaction,
)

BATCH = 500
"""Triggers fired or routed per transaction: one commit for many (group commit)."""
LAUNCH_CHUNK = 64
"""Processes started per tick; the rest wait for the next tick, after timers have fired."""
NO_RETRY = Retry()
_TIMER = TriggerKind.TIMER
STARTS_PAUSED = "paused_on_start: the config starts this job paused"

Log = Callable[[str], None]

_UNHELD = datetime.min.replace(tzinfo=UTC)
"""What a pause holds of a job not paused lately: the slots due before the dawn of time."""


def _quiet(_: str) -> None:
    pass


@dataclass
class _Launch:
    run: Run
    attempt: int
    trigger: Event | None = None
    """The run's trigger when at hand (a run just started): not read again to launch."""


@dataclass
class _FiringBatch:
    """What a batch of firings writes, gathered to be written in one statement per table."""

    events: list[NewEvent] = field(default_factory=list)
    slots: list[tuple[SlotRecord, int | None]] = field(default_factory=list)
    """Ledger rows, each with the index in ``events`` of the event it links to, if any."""
    moves: list[tuple[Timer, int]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    labels: dict[int, tuple[object, str]] = field(default_factory=dict)
    """Run labels by ``id`` of the published slot (kept with it): jobs sharing a decision
    share its published slots, and so their labels."""


@dataclass
class _Outbox:
    """Process work decided inside a transaction, carried out after it commits."""

    launches: list[_Launch] = field(default_factory=list)
    stops: list[tuple[Run, str]] = field(default_factory=list)
    prunes: list[Run] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


class Engine:
    """Drives one config's jobs against a store and a runner."""

    def __init__(self, config: Config, store: Store, runner: Runner, *, dispatch: bool = True,
                 log: Log = _quiet, checkpoint: Log = _quiet) -> None:
        self.store = store
        self.checkpoint = checkpoint
        """Called with a step's name once it has committed (``ended``: attempts' ends and the
        runs they end; ``fired``; ``routed``) or just before processes start (``launching``):
        where crash tests stop the daemon."""
        self.runner = runner
        self.dispatch = dispatch
        """False in a dry run: no timers fire and no runs start; triggers wait."""
        self.log = log
        self.config = config
        self._schedules: dict[str, Schedule] = {}
        self._followers: dict[str, list[tuple[Job, AfterSpec]]] = {}
        """Jobs chained (``on.after``) to each job, so a run end finds them at once."""
        self._ended: list[tuple[str, int, AttemptReport]] = []
        self._waiting_launch: list[_Launch] = []
        """Attempts committed as started but not launched yet: launched a chunk per tick, so
        a burst of runs never holds up the firing of timers behind it."""
        self._unrecorded: list[tuple[str, int, int]] = []
        """Processes started whose pids a failed commit did not record: the next tick does."""
        self.launch_fault: str | None = None
        """Why the last tick's launches had to wait (the state folder cannot be written), or
        None: the daemon then waits before the next tick, as for a failed commit."""
        self._paused: frozenset[str] = frozenset()
        """Jobs paused, as read at the start of the transaction under way."""
        self._run_ids = RunIds()
        self._set_config(config)

    # -- config ------------------------------------------------------------------------------

    def _set_config(self, config: Config, schedules: dict[str, Schedule] | None = None) -> None:
        self.config = config
        self._schedules = _schedules_of(config) if schedules is None else schedules
        # Jobs with the same schedule and catch-up policy decide alike from the same timer
        # state: a small number names each such group, cheaper to hash per firing than the
        # schedule and the policy themselves.
        groups: dict[tuple[object, ...], int] = {}
        self._decision_group = {
            name: groups.setdefault((schedule, config.jobs[name].catch_up), len(groups))
            for name, schedule in self._schedules.items()
        }
        self._followers = {}
        for job in config.jobs.values():
            after = job.on.after if job.on is not None else None
            if after is not None:
                self._followers.setdefault(after.job, []).append((job, after))

    def apply(self, config: Config, now: datetime,
              record: Callable[[Transaction, list[str]], None] | None = None) -> list[str]:
        """Take a new config (start-up, ``cronduit apply``, SIGHUP) and re-arm timers per the
        edit rules; the list of changes, for the operator. ``record`` writes what the caller
        keeps of the apply, given the changes, in the same transaction. All of it commits,
        or none of it, whatever is raised; the engine (and whoever reads its ``config``)
        takes the new config only once it has committed."""
        schedules = self._schedules if config is self.config else _schedules_of(config)
        changes = self._apply(config, schedules, now, record)
        if config is not self.config:
            self._set_config(config, schedules)
        return changes

    def _apply(self, config: Config, schedules: dict[str, Schedule], now: datetime,
               record: Callable[[Transaction, list[str]], None] | None) -> list[str]:
        changes: list[str] = []
        with self.store.transaction() as tx:
            for cleared in control.clear_removed(tx, config.jobs.keys(), now):
                changes.append(f"{cleared.job}: pause cleared (removed from the config)")
            stored = {timer.job: timer for timer in tx.timers()}
            changes += self._pause_new_jobs(tx, config, stored, now)
            for name in stored:
                if name not in schedules:
                    tx.delete_timer(name)
                    changes.append(f"{name}: timer removed")
            if self.dispatch:
                armed: list[Timer] = []
                for name, schedule in schedules.items():
                    change = self._arm(config.jobs[name], schedule, stored.get(name), now,
                                       armed)
                    if change:
                        changes.append(f"{name}: {change}")
                tx.put_timers(armed)
            if record is not None:
                record(tx, changes)
        return changes

    def _pause_new_jobs(self, tx: Transaction, config: Config, stored: dict[str, Timer],
                        now: datetime) -> list[str]:
        """``paused_on_start``: a job seen for the first time starts paused, by cronduit. Only
        the first time: once resumed, a restart or an apply does not pause it again."""
        changes = []
        for job in config.jobs.values():
            if not job.paused_on_start or tx.get_meta(f"seen/{job.name}") is not None:
                continue
            tx.set_meta(f"seen/{job.name}", format_utc(now))
            if job.name in stored or tx.history(job.name, 1) or tx.active_pause(job.name):
                continue  # a job that ran or was armed before is not new
            control.pause(tx, job.name, STARTS_PAUSED, control.ENGINE, None, now)
            changes.append(f"{job.name}: paused (paused_on_start); resume it with cronduit job "
                           f"resume {job.name}")
        return changes

    def _arm(self, job: Job, schedule: Schedule, timer: Timer | None, now: datetime,
             armed: list[Timer]) -> str | None:
        key = job.timing_key or ""
        if timer is not None and timer.timing_key == key:
            return None  # an unchanged timer is left alone, across restarts too
        due_of = self._due_of(job, schedule)
        if timer is None:
            arming = arm_new(schedule, now, due_of)
        else:
            arming = arm_edited(schedule, timer.last_name, now, _catch_up(job), due_of)
        if arming is None:
            return None
        last_name = None if timer is None else timer.last_name
        armed.append(Timer(job.name, key, arming.slot.instant, arming.slot.name, arming.due,
                           last_name))
        verb = "timer armed" if timer is None else "timing changed, timer re-armed"
        return f"{verb} for {format_utc(arming.due)}"

    def _due_of(self, job: Job, schedule: Schedule) -> Callable[[Slot], datetime]:
        if not job.jitter or not isinstance(schedule, CalendarSchedule):
            return slot_instant
        return lambda slot: next_jittered(schedule, job.name, slot, job.jitter)

    # -- the tick ----------------------------------------------------------------------------

    def tick(self, now: datetime) -> datetime | None:
        """Do everything due at ``now``; the next instant something is due (None: nothing)."""
        # Two write transactions a tick (each a durable commit): attempts that ended and timers
        # that fired; then routing, chaining, retries and deadlines. Firing commits before
        # routing reads, so a crash between them leaves accepted triggers to route on restart.
        outbox = _Outbox()
        self._ended.extend(self.runner.ended())  # kept until committed: a failed tick retries
        with self.store.transaction() as tx:
            if self._unrecorded:
                tx.record_starts(self._unrecorded)
            self._settle_pauses(tx, now, outbox)
            self._collect_ended(tx, self._ended, now, outbox)
            fired = self._fire_timers(tx, now) if self.dispatch else 0
        self._unrecorded.clear()
        if self._ended:
            self._ended.clear()
            self.checkpoint("ended")
        if fired:
            self.checkpoint("fired")
        with self.store.transaction() as tx:
            self._read_pauses(tx)  # a pause committed since the first transaction counts
            self._chain(tx, now)
            routed = self._route(tx, now, outbox)
            if self.dispatch:
                self._retry_due(tx, now, outbox)
                self._enforce_deadlines(tx, now, outbox)
        if routed:
            self.checkpoint("routed")
        self._carry_out(outbox, now)
        if max(fired, routed) == BATCH:
            return now  # more waiting than one batch: come back at once
        return self._next_due()

    def start(self, now: datetime) -> None:
        """After (re)start: adopt or settle attempts left by the previous daemon, then start
        the runs that held work (a dry run, an outage) is owed."""
        outbox = _Outbox()
        with self.store.transaction() as tx:
            self._settle_pauses(tx, now, outbox)
            for run in tx.active_runs():
                if run.state != "running":
                    continue
                found = recovered_attempt(self.runner.recover(run), run.pid is not None)
                if found == "not_started":
                    outbox.launches.append(_Launch(run, run.attempts))
                elif found != "running":
                    self._attempt_ended(tx, run, run.attempts, found, now, outbox)
            if self.dispatch:
                for name in tx.jobs_with_waiting():
                    if name in self.config.jobs:
                        self._start_waiting(tx, name, now, outbox)
        self._carry_out(outbox, now)

    # -- pauses ------------------------------------------------------------------------------

    def _read_pauses(self, tx: Transaction) -> list[Pause]:
        active = tx.pauses()
        self._paused = frozenset(pause.job for pause in active)
        return active

    def _settle_pauses(self, tx: Transaction, now: datetime, outbox: _Outbox) -> None:
        """End the pauses whose time has come, and turn what waits in a paused job's work
        into skipped runs (the core's :func:`on_pause`): a pause committed by the CLI or the
        API is carried out here, at the engine's next look."""
        for ended in control.expire(tx, now):
            outbox.lines.append(f"resume {ended.job}: the pause expired (until "
                                f"{format_utc(ended.until or now)})")
        for pause in self._read_pauses(tx):
            job = self.config.jobs.get(pause.job)
            if job is None or tx.newest_waiting_event(job.name) is None:
                continue
            events = {event.seq: event for event in tx.waiting_events(job.name)}
            for trigger in on_pause(self._job_state(tx, job)):
                self._skip(tx, job, events[trigger.seq], SKIPPED_PAUSED, now, outbox)

    def _holds(self, tx: Transaction, due: Sequence[Timer]) -> dict[str, datetime | None]:
        """Per job whose due slots a pause holds: None while it is paused, else the instant
        of a resume the timer has not seen (its slots before that are held, never made up).
        Only resumes after the oldest due timer matter, so the read stays small."""
        holds: dict[str, datetime | None] = {}
        for pause in tx.pauses(resumed_after=min(timer.due_at for timer in due)):
            if pause.resumed_at is None:
                holds[pause.job] = None
            elif pause.job not in holds:
                holds[pause.job] = pause.resumed_at
            elif (held := holds[pause.job]) is not None:
                holds[pause.job] = max(held, pause.resumed_at)
        return holds

    # -- timers ------------------------------------------------------------------------------

    def _fire_timers(self, tx: Transaction, now: datetime) -> int:
        """Fire up to one batch of due timers; how many fired. Each timer is re-armed under its
        version guard; the batch's events and ledger rows are then written in one statement
        each (unique delivery ids and slot keys keep that idempotent)."""
        due = tx.due_timers(now, BATCH)
        holds = self._holds(tx, due) if due else {}
        batch = _FiringBatch()
        decided: dict[tuple[object, ...], Firing] = {}
        for timer in due:
            self._fire(tx, timer, now, batch, holds.get(timer.job, _UNHELD), decided)
        if tx.advance_timers(batch.moves) != len(batch.moves):
            # The timers were read in this same write transaction, so no other firing can
            # have moved one: if one did, the store broke its promise; fire nothing.
            raise Conflict("a timer moved under its own firing; the batch is rolled back")
        seqs = tx.insert_events(batch.events)
        for record, event in batch.slots:
            if event is not None:
                record.event_seq = seqs[event]
        tx.record_slots([record for record, _ in batch.slots])
        for line in batch.lines:
            self.log(line)
        return len(due)

    def _fire(self, tx: Transaction, timer: Timer, now: datetime, batch: _FiringBatch,
              held: datetime | None, decided: dict[tuple[object, ...], Firing]) -> None:
        """Fire one timer; ``held`` says what a pause holds (see :meth:`_holds`). Jobs that
        share a schedule and its state (every 1m, the same cron line) share one decision:
        ``decided`` keeps it for the rest of the batch."""
        job = self.config.jobs.get(timer.job)
        schedule = self._schedules.get(timer.job)
        if job is None or schedule is None:
            tx.delete_timer(timer.job)
            return
        if held is None or timer.due_at < held:
            firing = decide_held_firing(schedule, Slot(timer.slot, timer.slot_name),
                                        timer.last_name, now, held, _catch_up(job),
                                        self._due_of(job, schedule))
        elif job.jitter:  # each job's own offset: its own decision
            firing = self._decide(job, schedule, timer, now)
        else:
            key = (self._decision_group[timer.job], timer.slot, timer.slot_name,
                   timer.last_name)
            found = decided.get(key)
            if found is None:
                found = decided[key] = self._decide(job, schedule, timer, now)
            firing = found
        if firing.next_slot is None or firing.next_due is None:
            tx.delete_timer(timer.job)
        else:
            moved = Timer(timer.job, timer.timing_key, firing.next_slot.instant,
                          firing.next_slot.name, firing.next_due, firing.last_name)
            batch.moves.append((moved, timer.version))
        name, events = timer.job, batch.events
        # a serial catch-up's triggers carry their own policy; every other firing's, none
        payload = published_payload(firing, _policy(job).of(_TIMER)) if firing.serial else "{}"
        for published in firing.publish:
            # Written out here rather than in a helper: this runs for every firing, and the
            # call and keyword arguments were a few per cent of the firing path.
            known = batch.labels.get(id(published))
            if known is None:  # keeps ``published`` alive: its id names nothing else meanwhile
                label = schedule.label(published.slot) + (" (late)" if published.late else "")
                batch.labels[id(published)] = (published, label)
            else:
                label = known[1]
            slot = published.slot
            events.append(NewEvent(slot.delivery_id(name), name, _TIMER, label, now,
                                   slot.instant, published.late, payload))
            batch.slots.append((SlotRecord(name, slot.instant, slot.name, "ran", "", now),
                                len(events) - 1))
            batch.lines.append(f"trigger {name}: {label}")
        for missed in firing.missed:
            batch.slots.append((SlotRecord(job.name, missed.slot.instant, missed.slot.name,
                                           "missed", missed.reason, now), None))
        if firing.missed_count is not None:
            count = firing.missed_count
            batch.slots.append((SlotRecord(job.name, count.first, "", "missed", count.reason,
                                           now, count=count.count, until_slot=count.last), None))

    def _decide(self, job: Job, schedule: Schedule, timer: Timer, now: datetime) -> Firing:
        if isinstance(schedule, IntervalSchedule):
            return decide_interval_firing(schedule, timer.due_at, now)
        armed = Slot(timer.slot, timer.slot_name)
        return decide_firing(schedule, armed, timer.last_name, now, _catch_up(job),
                             self._due_of(job, schedule))

    # -- chaining (on.after) -----------------------------------------------------------------

    def _chain(self, tx: Transaction, now: datetime) -> None:
        for ended in tx.unchained_run_ends(BATCH):
            for job, after in self._followers.get(ended.job, ()):
                if Outcome(ended.outcome) in after.outcomes:
                    label = f"after {ended.job} {ended.outcome}"
                    tx.insert_event(NewEvent(f"after/{job.name}/{ended.run_id}", job.name,
                                             TriggerKind.AFTER, label, now))
                    self.log(f"trigger {job.name}: {label}")
            tx.mark_chained(ended.seq)

    # -- routing -----------------------------------------------------------------------------

    def _route(self, tx: Transaction, now: datetime, outbox: _Outbox) -> int:
        """Route up to one batch of accepted triggers; how many were routed."""
        events = tx.new_events(BATCH)
        known: dict[str, JobState] = {}
        for event in events:
            self._route_one(tx, event, now, outbox, known)
        return len(events)

    def _route_one(self, tx: Transaction, event: Event, now: datetime, outbox: _Outbox,
                   known: dict[str, JobState]) -> None:
        """Route one trigger. ``known`` carries a job's state from one trigger of the batch to
        the next while only this routing changed it (a trigger joined the work, or was
        skipped), so a burst on one job reads the store once, not once per trigger."""
        job = self.config.jobs.get(event.job)
        if job is None:
            tx.set_event_state([event.seq], "unmatched", None)
            outbox.lines.append(f"unmatched {event.job}: {event.label} (no such job)")
            return
        state = known.pop(job.name, None) or self._arrival_state(tx, job)
        kind = TriggerKind(event.kind)
        trigger = _trigger(event)
        arrival = on_arrival(state, trigger, _policy(job).of(kind), job.overlap.max_parallel)
        decision = arrival.decision
        if decision is Decision.START and not self.dispatch:
            decision = Decision.WAIT  # a dry run holds work until a normal start
        if decision is Decision.WAIT:
            known[job.name] = replace(state, waiting=(trigger,))
        elif decision is Decision.SKIP:
            known[job.name] = state
        if decision is Decision.START:
            assert arrival.batch is not None
            self._start_run(tx, job, arrival.batch, {event.seq: event}, now, outbox)
        elif decision is Decision.WAIT:
            tx.set_event_state([event.seq], "waiting", None)
        elif decision is Decision.JOIN:
            sleeping = next(run for run in tx.active_runs(job.name) if run.state == "backoff")
            tx.set_event_state([event.seq], "consumed", sleeping.id)
        elif decision is Decision.SKIP:
            self._skip(tx, job, event, arrival.reason or "", now, outbox)
        else:  # REPLACE
            tx.set_event_state([event.seq], "waiting", None)
            for run in tx.active_runs(job.name):
                if run.state == "backoff":  # no process to stop: it ends here, cancelled
                    self._end_run(tx, run, Outcome.CANCELLED, arrival.reason or "",
                                  run.exit_status, now, outbox)
                    continue
                tx.update_run(run.id, cancel_reason="cancelled")
                outbox.stops.append((run, "cancelled"))

    def _arrival_state(self, tx: Transaction, job: Job) -> JobState:
        """The job as an arriving trigger meets it. An arrival looks only at whether work
        waits, and checks it is newer than the newest waiting trigger, so only that one is
        read: reading the whole queue for each of a burst of deliveries was quadratic."""
        running, backoff = tx.active_count(job.name)
        newest = tx.newest_waiting_event(job.name)
        waiting = () if newest is None else (_trigger(newest),)
        return JobState(running=running, waiting=waiting, in_backoff=backoff > 0,
                        paused=job.name in self._paused)

    def _job_state(self, tx: Transaction, job: Job) -> JobState:
        running, backoff = tx.active_count(job.name)
        waiting = tuple(_trigger(event) for event in tx.waiting_events(job.name))
        return JobState(running=running, waiting=waiting, in_backoff=backoff > 0,
                        paused=job.name in self._paused)

    def _new_run_id(self, now: datetime) -> str:
        return self._run_ids.next(now, secrets.randbits(36))

    def _skip(self, tx: Transaction, job: Job, event: Event, reason: str, now: datetime,
              outbox: _Outbox) -> None:
        run = Run(id=self._new_run_id(now), job=job.name, kind=event.kind, label=event.label,
                  state="ended", created_at=now, trigger_seq=event.seq, exclusive=False,
                  outcome=Outcome.SKIPPED, reason=reason, finished_at=now, late=event.late,
                  inputs=_inputs_of(event), operator=event.operator)
        tx.insert_run(run)
        tx.set_event_state([event.seq], "consumed", run.id)
        outbox.lines.append(f"run {job.name} {run.id}: skipped ({reason}) [{event.label}]")
        self._notify(tx, job, RunFacts(job.name, run.id, Outcome.SKIPPED, None, now, 0, None,
                                       reason), now)

    def _notify(self, tx: Transaction, job: Job, facts: RunFacts, now: datetime) -> None:
        """Queue the run's outcome for every notifier that wants it, in the transaction that
        records the outcome: a crash right after loses no notification."""
        notifiers = self.config.notifiers
        accepts = {name: notifier.on for name, notifier in notifiers.items()}
        for name in recipients(job.notify, accepts, facts.outcome):
            body = json.dumps(message(facts, notifiers[name].format))
            tx.insert_notification(facts.run, name, body, now)

    def _start_waiting(self, tx: Transaction, name: str, now: datetime, outbox: _Outbox) -> None:
        job = self.config.jobs[name]
        state = self._job_state(tx, job)
        if not state.waiting:
            return
        events = {event.seq: event for event in tx.waiting_events(name)}
        for batch in on_run_end(state, _policy(job), job.overlap.max_parallel):
            self._start_run(tx, job, batch, events, now, outbox)

    def _start_run(self, tx: Transaction, job: Job, batch: Batch, events: dict[int, Event],
                   now: datetime, outbox: _Outbox) -> None:
        chosen = events[batch.trigger.seq]
        exclusive = runs_alone(batch.trigger, _policy(job).of(batch.trigger.kind))
        run = Run(id=self._new_run_id(now), job=job.name, kind=chosen.kind, label=chosen.label,
                  state="running", created_at=now, trigger_seq=chosen.seq, exclusive=exclusive,
                  started_at=now, attempts=1, inputs=_inputs_of(chosen),
                  operator=chosen.operator, late=chosen.late,
                  deadline_at=now + timedelta(seconds=job.timeout))
        tx.insert_run(run)
        tx.set_event_state([t.seq for t in batch.triggers], "consumed", run.id)
        outbox.launches.append(_Launch(run, 1, chosen))
        consumed = len(batch.triggers)
        extra = f", consuming {consumed} triggers" if consumed > 1 else ""
        outbox.lines.append(f"run {job.name} {run.id}: started [{chosen.label}]{extra}")

    # -- attempts ----------------------------------------------------------------------------

    def _collect_ended(self, tx: Transaction, ended: list[tuple[str, int, AttemptReport]],
                       now: datetime, outbox: _Outbox) -> None:
        for run_id, attempt, report in ended:
            run = tx.get_run(run_id)
            if run is None or run.state != "running" or run.attempts != attempt:
                continue  # already settled (a replayed report)
            self._attempt_ended(tx, run, attempt, report, now, outbox)

    def _attempt_ended(self, tx: Transaction, run: Run, attempt: int, report: AttemptReport,
                       now: datetime, outbox: _Outbox) -> None:
        job = self.config.jobs.get(run.job)
        if report.stopped_for is None and run.cancel_reason is not None:
            report = replace(report, stopped_for=run.cancel_reason)
        retry = (job.retry if job is not None else None) or NO_RETRY
        deadline = run.deadline_at or now
        verdict = judge_attempt(report, attempt, retry, now, deadline)
        if verdict.retry_at is not None and job is not None:
            tx.update_run(run.id, state="backoff", next_attempt_at=verdict.retry_at,
                          exit_status=report.exit_status, reason=verdict.reason, pid=None)
            state = self._job_state(tx, job)
            joined = on_backoff(state, _policy(job))
            tx.set_event_state([t.seq for t in joined], "consumed", run.id)
            outbox.lines.append(f"run {run.job} {run.id}: attempt {attempt} failed "
                                f"({verdict.reason}); retry at {format_utc(verdict.retry_at)}")
            return
        outcome = verdict.outcome or Outcome.FAILURE
        self._end_run(tx, run, outcome, verdict.reason, report.exit_status, now, outbox)

    def _end_run(self, tx: Transaction, run: Run, outcome: Outcome, reason: str,
                 exit_status: int | None, now: datetime, outbox: _Outbox) -> None:
        tx.update_run(run.id, state="ended", outcome=outcome, reason=reason,
                      exit_status=exit_status, finished_at=now, next_attempt_at=None)
        tx.insert_run_end(run.job, run.id, RUN_END_EVENTS[outcome], outcome, now)
        # Wall-clock time: a clock stepped back during the run would make it negative.
        took = max(0.0, (now - (run.started_at or now)).total_seconds())
        outbox.lines.append(f"run {run.job} {run.id}: {outcome} after {took:.1f}s"
                            + (f" ({reason})" if reason else ""))
        job = self.config.jobs.get(run.job)
        if job is None:
            return
        self._notify(tx, job, RunFacts(job.name, run.id, outcome, run.started_at, now,
                                       run.attempts, exit_status, reason), now)
        for old in tx.runs_to_prune(job.name, self.config.settings.kept_runs):
            tx.update_run(old.id, files_pruned=True)
            outbox.prunes.append(old)
        if self.dispatch:
            self._start_waiting(tx, job.name, now, outbox)

    def _retry_due(self, tx: Transaction, now: datetime, outbox: _Outbox) -> None:
        for run in tx.due_backoffs(now):
            if deadline_passed(now, run.deadline_at):
                self._end_run(tx, run, Outcome.TIMEOUT, "deadline passed during backoff",
                              run.exit_status, now, outbox)
            elif run.next_attempt_at is not None and run.next_attempt_at <= now:
                attempt = run.attempts + 1
                tx.update_run(run.id, state="running", attempts=attempt, next_attempt_at=None)
                outbox.launches.append(_Launch(replace(run, attempts=attempt), attempt))

    def _enforce_deadlines(self, tx: Transaction, now: datetime, outbox: _Outbox) -> None:
        for run in tx.overdue_runs(now):
            tx.update_run(run.id, cancel_reason="timeout")
            outbox.stops.append((run, "timeout"))

    # -- carrying decisions out --------------------------------------------------------------

    def _carry_out(self, outbox: _Outbox, now: datetime) -> None:
        """Log, stop, prune and launch what a committed transaction decided. A launch leaves
        the queue only once it began: a store that fails before (a full disk) puts it back,
        and so does a launch the runner defers, to be tried at the next tick."""
        for line in outbox.lines:
            self.log(line)
        for run, why in outbox.stops:
            self.runner.stop(run, why)
        for run in outbox.prunes:
            self.runner.prune(run)
        self._waiting_launch.extend(outbox.launches)
        self.launch_fault = None
        if not self._waiting_launch:
            return
        chunk = self._waiting_launch[:LAUNCH_CHUNK]
        late = [launch for launch in chunk if deadline_passed(now, launch.run.deadline_at)]
        if late:  # its whole-run deadline came while it waited to start: it never starts
            ended = _Outbox()
            with self.store.transaction() as tx:
                for launch in late:
                    self._end_run(tx, launch.run, Outcome.TIMEOUT,
                                  "deadline passed before the process started", None, now, ended)
            gone = {id(launch) for launch in late}
            self._waiting_launch = [launch for launch in self._waiting_launch
                                    if id(launch) not in gone]
            self._carry_out(ended, now)  # launches the rest of the chunk, and what ended freed
            return
        triggers = self._triggers(chunk)
        del self._waiting_launch[:LAUNCH_CHUNK]
        self._launch(chunk, triggers)

    def _triggers(self, chunk: list[_Launch]) -> list[Event]:
        if all(launch.trigger is not None for launch in chunk):
            return [launch.trigger for launch in chunk if launch.trigger is not None]
        with self.store.transaction() as tx:
            return [launch.trigger or _trigger_event(tx.events_of_run(launch.run.id), launch.run)
                    for launch in chunk]

    def _launch(self, chunk: list[_Launch], triggers: list[Event]) -> None:
        self.checkpoint("launching")
        batch = [
            (launch, (launch.run, job, trigger, launch.attempt))
            for launch, trigger in zip(chunk, triggers, strict=True)
            # a job removed while its run was being started: the attempt never began
            if (job := self.config.jobs.get(launch.run.job)) is not None
        ]
        started = self.runner.launch_many([item for _, item in batch])
        launched: list[tuple[str, int, int]] = []
        deferred: list[_Launch] = []
        for (launch, _), got in zip(batch, started, strict=True):
            if isinstance(got, Deferred):  # the state folder cannot be written: not begun
                deferred.append(launch)
                self.launch_fault = got.reason
            elif got is not None:  # one not started ends through runner.ended()
                launched.append((launch.run.id, got[0], got[1]))
        self._waiting_launch[:0] = deferred
        if launched:
            try:
                with self.store.transaction() as tx:
                    tx.record_starts(launched)
            except BaseException:
                self._unrecorded.extend(launched)
                raise

    def _next_due(self) -> datetime | None:
        if self._waiting_launch:
            return datetime.min.replace(tzinfo=UTC)  # more to launch: come back at once
        with self.store.transaction() as tx:
            return tx.next_due(with_timers=self.dispatch)


def _schedules_of(config: Config) -> dict[str, Schedule]:
    """Each timed job's schedule. Equal schedules become one object, so the jobs sharing one
    (every 1m, a common cron line) share its cached label and name formatting, not only their
    firing decision."""
    interned: dict[Schedule, Schedule] = {}
    return {name: interned.setdefault(schedule, schedule)
            for name, job in config.jobs.items() if (schedule := schedule_of(job)) is not None}


def _catch_up(job: Job) -> CatchUpPolicy:
    return CatchUpPolicy(job.catch_up.window, job.catch_up.mode, job.catch_up.max_runs)


def _policy(job: Job) -> OverlapPolicy:
    kinds = {kind.value: policy for kind, policy in job.overlap.by_kind.items()}
    return OverlapPolicy(default=job.overlap.default, **kinds)


def _trigger(event: Event) -> Trigger:
    kind = TriggerKind(event.kind)
    if event.payload != "{}" and kind in _OWN_POLICY_READERS:
        # Only triggers cronduit itself writes may carry their own policy: a manual one (a
        # backfill's) and a timer one (a serial catch-up's). Other kinds' payloads (webhook
        # bodies, code-host deliveries) come from outside and are never read here.
        own = _OWN_POLICY_READERS[kind](json.loads(event.payload))
        if own is not None:
            return Trigger(event.delivery_id, kind, event.seq, own.overlap, own.max_parallel)
    return Trigger(event.delivery_id, kind, event.seq)


_OWN_POLICY_READERS = {TriggerKind.MANUAL: trigger_policy, TriggerKind.TIMER: catch_up_policy}


def _trigger_event(events: Sequence[Event], run: Run) -> Event:
    for event in events:
        if event.seq == run.trigger_seq:
            return event
    raise LookupError(f"run {run.id} has no trigger event {run.trigger_seq}")


def _inputs_of(event: Event) -> str:
    payload = json.loads(event.payload or "{}")
    return json.dumps(payload.get("inputs", {}), sort_keys=True)


