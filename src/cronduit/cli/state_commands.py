"""``cronduit schedule list``, ``cronduit schedule slots`` and ``cronduit status``.

They read the config and the state store, never the daemon, so they work while it is down.
What counts as divergence is decided by :func:`judge`, from values: the job, its timer, its
newest runs. The commands only fetch those values and print the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from cronduit.cli.context import State, known_job, open_state, runtime
from cronduit.cli.options import bounded_instant, config_option, fail
from cronduit.cli.render import (
    cell,
    duration_s,
    echo_json,
    echo_line,
    echo_table,
    outcome_summary,
    plural,
    timing_of,
    utc,
)
from cronduit.core.catchup import arm_new
from cronduit.core.config.model import Job
from cronduit.core.cron import ZoneError, load_zone
from cronduit.core.enums import Outcome
from cronduit.core.timespec import CalendarSchedule, Slot, next_jittered, schedule_of
from cronduit.daemon import DaemonInfo, running_daemon
from cronduit.ports import Pause, Run, SlotRecord, Timer, Transaction

OVERDUE_AFTER = timedelta(minutes=1)
"""A timer this far past its due time has not fired: the daemon is down or stuck."""
SKIPS_IN_A_ROW = 3
"""This many skipped runs in a row is divergence: the job's triggers keep missing it."""
FAILED = {Outcome.FAILURE: "the last run failed", Outcome.TIMEOUT: "the last run timed out"}
PAUSE_REMINDER = timedelta(days=7)
"""A pause older than this gets a reminder in ``status`` (not divergence: it was asked for)."""


# -- the next elapse ----------------------------------------------------------------------


@dataclass(frozen=True)
class NextElapse:
    """A job's timer as the schedule shows it."""

    timer: str
    """``armed`` (a timer row exists), ``unarmed`` (a timed job without one), ``paused`` (a
    timed job paused: no slot of it runs) or ``none``."""
    due: datetime | None
    """The timer's due time, else the jittered slot it would be armed for now."""
    slot_name: str | None
    stale: bool = False
    """The armed timer is for an older timing than the config's (not applied yet)."""

    def overdue(self, now: datetime) -> bool:
        """Armed, and more than :data:`OVERDUE_AFTER` past its due time: nothing fires it."""
        return self.timer == "armed" and self.due is not None and now - self.due > OVERDUE_AFTER


def next_elapse(job: Job, timer: Timer | None, now: datetime, paused: bool = False
                ) -> NextElapse:
    """When the job's timer elapses next: its row's due time, else what arming it would give
    (an interval job not armed yet runs as soon as the daemon arms it, so: now). A paused
    job's timer elapses for nothing: no next elapse until it is resumed."""
    if paused and schedule_of(job) is not None:
        return NextElapse("paused", None, None)
    if timer is not None:
        return NextElapse("armed", timer.due_at, timer.slot_name,
                          stale=timer.timing_key != (job.timing_key or ""))
    schedule = schedule_of(job)
    if schedule is None:
        return NextElapse("none", None, None)
    if isinstance(schedule, CalendarSchedule) and job.jitter:
        arming = arm_new(schedule, now,
                         lambda slot: next_jittered(schedule, job.name, slot, job.jitter))
    else:
        arming = arm_new(schedule, now)
    if arming is None:
        return NextElapse("unarmed", None, None)
    return NextElapse("unarmed", arming.due, arming.slot.name)


# -- status: the judgement ----------------------------------------------------------------


@dataclass(frozen=True)
class JobStatus:
    """What ``cronduit status`` says about one job."""

    job: Job
    elapse: NextElapse
    last: Run | None
    """The newest ended run that was not skipped: a skip is news about timing, not the job."""
    skipped_since: int
    """Skipped runs newer than :attr:`last`."""
    active: tuple[Run, ...]
    waiting: int
    divergences: tuple[str, ...]
    pause: Pause | None = None
    reminder: str | None = None
    """Said of a pause older than :data:`PAUSE_REMINDER`."""


def judge(job: Job, elapse: NextElapse, newest: Sequence[Run], active: Sequence[Run],
          waiting: int, timers_expected: bool, pause: Pause | None = None,
          now: datetime | None = None) -> JobStatus:
    """The job's status from its newest runs (newest first, at least down to the last one
    that was not skipped), its timer and its pause. ``timers_expected`` is False while the
    daemon runs in dry run, which arms no timers. A paused job's skips and stopped timer are
    what the pause asked for, not divergence; a pause older than a week earns a reminder."""
    last = next((run for run in newest if run.state == "ended"
                 and run.outcome != Outcome.SKIPPED), None)
    newer = newest if last is None else newest[: newest.index(last)]
    skipped_since = sum(1 for run in newer if run.outcome == Outcome.SKIPPED)
    divergences = []
    if last is not None and last.outcome in FAILED:
        divergences.append(FAILED[Outcome(last.outcome)])
    recent = newest[:SKIPS_IN_A_ROW]
    if (pause is None and len(recent) == SKIPS_IN_A_ROW
            and all(r.outcome == Outcome.SKIPPED for r in recent)):
        divergences.append(f"the newest {SKIPS_IN_A_ROW} runs were all skipped")
    if elapse.timer == "unarmed" and timers_expected and pause is None:
        divergences.append("no timer is armed for its timing (apply the config or start "
                           "the daemon)")
    if timers_expected and pause is None and now is not None and elapse.overdue(now):
        divergences.append(f"the timer is overdue: due {cell(elapse.due)} and not fired (is "
                           "the daemon running?)")
    reminder = None
    if pause is not None and now is not None and now - pause.paused_at >= PAUSE_REMINDER:
        reminder = (f"paused for {(now - pause.paused_at).days} days: resume it "
                    f"(cronduit job resume {job.name}) or remove it from the config")
    return JobStatus(job, elapse, last, skipped_since, tuple(active), waiting,
                     tuple(divergences), pause, reminder)


def _newest_runs(tx: Transaction, job: str) -> list[Run]:
    """The job's newest runs, down to the newest ended one that was not skipped."""
    limit = 50
    while True:
        runs = tx.history(job, limit)
        if len(runs) < limit or any(
            run.state == "ended" and run.outcome != Outcome.SKIPPED for run in runs
        ):
            return runs
        limit *= 4


def collect_status(state: State, now: datetime, daemon: DaemonInfo | None) -> list[JobStatus]:
    """Every configured job's status, read in one transaction."""
    timers_expected = daemon is None or not daemon.dry_run
    statuses = []
    with state.store.transaction() as tx:
        pauses = {pause.job: pause for pause in tx.pauses()}
        for name, job in state.config.jobs.items():
            pause = pauses.get(name)
            elapse = next_elapse(job, tx.get_timer(name), now, paused=pause is not None)
            statuses.append(judge(job, elapse, _newest_runs(tx, name), tx.active_runs(name),
                                  len(tx.waiting_events(name)), timers_expected, pause, now))
    return statuses


# -- status: printing ---------------------------------------------------------------------


def daemon_line(daemon: DaemonInfo | None) -> str:
    if daemon is None:
        return ("daemon: down (timers fire and accepted runs start when it starts: "
                "cronduit serve)")
    mode = "running in dry run (no timers fire, no runs start)" if daemon.dry_run else "running"
    listening = f", listening on http://{daemon.listen}" if daemon.listen else ""
    return (f"daemon: {mode}, pid {daemon.pid} on {daemon.host} since "
            f"{_instant(daemon.started_at)}{listening}")


def daemon_json(daemon: DaemonInfo | None) -> dict[str, object] | None:
    """The running daemon as ``status --json`` and ``doctor --json`` show it; None: down."""
    if daemon is None:
        return None
    return {"pid": daemon.pid, "host": daemon.host, "started_at": _instant(daemon.started_at),
            "dry_run": daemon.dry_run, "listen": daemon.listen}


def _instant(text: str) -> str:
    """A heartbeat's ISO time in the one UTC spelling (as written, if it does not parse)."""
    try:
        return cell(datetime.fromisoformat(text))
    except ValueError:
        return text


def progress_lines(run: Run) -> list[str]:
    """The attempt in progress of an active run."""
    if run.state == "backoff":
        failed = f"attempt {run.attempts} failed" + (f" ({run.reason})" if run.reason else "")
        return [f"{failed}; retry at {cell(run.next_attempt_at)} (run {run.id})"]
    if run.attempts > 1:  # the store knows when the run started, not this attempt
        return [f"running attempt {run.attempts} (run {run.id} started {cell(run.started_at)})"]
    return [f"running attempt 1 since {cell(run.started_at)} (run {run.id})"]


def status_lines(status: JobStatus) -> list[tuple[str, str | None]]:
    """The lines printed for one job, each with its terminal style."""
    elapse = status.elapse
    lines: list[tuple[str, str | None]] = [
        (f"{status.job.name}  {timing_of(status.job)}", "bold")]
    lines.extend(pause_lines(status))
    if elapse.timer == "paused":
        lines.append(("  next: - (timer paused: its slots are recorded as missed)", None))
    elif elapse.timer == "none":
        lines.append(("  next: - (no timing)", None))
    else:
        timer = ("timer armed for an older timing: apply the config" if elapse.stale
                 else f"timer {elapse.timer}")
        lines.append((f"  next: {cell(elapse.due)} ({timer})", "yellow" if elapse.stale else None))
    last = status.last
    if last is None:
        lines.append(("  last: no run yet", None))
    else:
        style = "red" if last.outcome in FAILED else None
        lines.append((f"  last: {outcome_summary(last)}, ended {cell(last.finished_at)}",
                      style))
    if status.skipped_since:
        lines.append((f"  nothing has run since: {status.skipped_since} skipped", "yellow"))
    for run in status.active:
        lines.extend((f"  {line}", "cyan") for line in progress_lines(run))
    if status.waiting:
        lines.append((f"  {plural(status.waiting, 'trigger')} waiting", None))
    lines.extend((f"  divergence: {why}", "bold red") for why in status.divergences)
    return lines


def pause_lines(status: JobStatus) -> list[tuple[str, str | None]]:
    """``PAUSED by USER since TIME: REASON`` (and until when), and a reminder if it is old."""
    pause = status.pause
    if pause is None:
        return []
    until = f" (until {cell(pause.until)})" if pause.until is not None else ""
    lines: list[tuple[str, str | None]] = [
        (f"  PAUSED by {pause.operator} since {cell(pause.paused_at)}: {pause.reason}{until}",
         "bold yellow")]
    if status.reminder is not None:
        lines.append((f"  reminder: {status.reminder}", "yellow"))
    return lines


def status_json(status: JobStatus) -> dict[str, object]:
    last = status.last
    return {
        "job": status.job.name,
        "timing": timing_of(status.job),
        "timer": status.elapse.timer,
        "next_elapse": utc(status.elapse.due),
        "last": None if last is None else {
            "run": last.id, "outcome": last.outcome, "reason": last.reason,
            "started_at": utc(last.started_at), "finished_at": utc(last.finished_at),
            "duration_s": duration_s(last), "attempts": last.attempts,
            "exit_status": last.exit_status,
        },
        "skipped_since": status.skipped_since,
        "in_progress": [
            {"run": run.id, "state": run.state, "attempt": run.attempts,
             "started_at": utc(run.started_at), "retry_at": utc(run.next_attempt_at)}
            for run in status.active
        ],
        "waiting": status.waiting,
        "divergences": list(status.divergences),
        "paused": None if status.pause is None else {
            "by": status.pause.operator, "since": utc(status.pause.paused_at),
            "reason": status.pause.reason, "until": utc(status.pause.until),
        },
        "reminder": status.reminder,
    }


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
@config_option
def status(as_json: bool, config_path: Path) -> None:
    """Per job: next elapse, last outcome, the attempt in progress. Exit 1 on divergence.

    Divergence: a last run that failed or timed out, the newest three runs all skipped, or a
    timed job whose timer is not armed. A paused job shows who paused it, when and why; its
    stopped timer and its skips are not divergence, and a pause older than a week is reminded.
    """
    now = runtime().clock.now()
    with open_state(config_path) as state:
        daemon = running_daemon(state.store, now)
        statuses = collect_status(state, now, daemon)
    diverging = [s for s in statuses if s.divergences]
    if as_json:
        echo_json({
            "daemon": daemon_json(daemon),
            "healthy": not diverging,
            "jobs": [status_json(s) for s in statuses],
        })
    else:
        echo_line(daemon_line(daemon), None if daemon else "yellow")
        for one in statuses:
            for text, style in status_lines(one):
                echo_line(text, style)
        summary = (f"{plural(len(diverging), 'job')} of {len(statuses)} diverging" if diverging
                   else f"{plural(len(statuses), 'job')}, no divergence")
        echo_line(summary, "bold red" if diverging else "green")
    if diverging:
        raise SystemExit(1)


# -- schedule -----------------------------------------------------------------------------


@click.group("schedule")
def schedule() -> None:
    """Timers and the slot ledger: when jobs run next, and what became of every slot."""


@schedule.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per job, one a line.")
@config_option
def schedule_list(as_json: bool, config_path: Path) -> None:
    """Every job: its timing, timer state (armed, unarmed, paused, none) and next elapse."""
    now = runtime().clock.now()
    with open_state(config_path) as state, state.store.transaction() as tx:
        paused = {pause.job for pause in tx.pauses()}
        rows = [(job, next_elapse(job, tx.get_timer(name), now, paused=name in paused))
                for name, job in state.config.jobs.items()]
    if as_json:
        for job, elapse in rows:
            echo_json({"job": job.name, "timing": timing_of(job), "timer": elapse.timer,
                       "next_elapse": utc(elapse.due), "next_slot": elapse.slot_name})
        return
    echo_table(["JOB", "TIMING", "TIMER", "NEXT ELAPSE", "SLOT"],
               [[job.name, timing_of(job), elapse.timer, cell(elapse.due),
                 cell(elapse.slot_name)] for job, elapse in rows], wrap=["TIMING", "SLOT"])


@dataclass(frozen=True)
class SlotView:
    """A ledger row with the fate of its run folded in."""

    record: SlotRecord
    fate: str
    reason: str
    run: str | None


def slot_view(tx: Transaction, record: SlotRecord) -> SlotView:
    """A ``ran`` slot whose run was skipped (overlap, pause) shows as skipped, with why."""
    if record.fate != "ran":
        return SlotView(record, record.fate, record.reason, None)
    event = tx.event_by_delivery(Slot(record.slot, record.name).delivery_id(record.job))
    if event is None:
        return SlotView(record, record.fate, record.reason, None)
    if event.state != "consumed" or event.run_id is None:
        why = {"new": "accepted, not routed yet", "waiting": "waiting for the run going",
               "unmatched": "no job took it (removed)"}.get(event.state, event.state)
        return SlotView(record, record.fate, why, None)
    run = tx.get_run(event.run_id)
    if run is not None and run.outcome == Outcome.SKIPPED:
        return SlotView(record, "skipped", run.reason, run.id)
    return SlotView(record, "ran", "late (catch-up)" if event.late else record.reason,
                    event.run_id)


def _fate_cell(view: SlotView) -> str:
    return view.fate if view.record.count <= 1 else f"{view.fate} ×{view.record.count}"


def _reason_cell(view: SlotView) -> str:
    record = view.record
    if record.count <= 1:
        return cell(view.reason)
    return f"from {cell(record.slot)} to {cell(record.until_slot)}: {view.reason}"


def parse_instant(text: str | None, zone: str, option: str) -> datetime | None:
    """An ISO 8601 time or date; without an offset it is read on the job's clock."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        fail(f"{option}: {text!r} is not an ISO 8601 time such as 2026-03-29T00:00:00Z")
    if value.tzinfo is None:
        try:
            value = value.replace(tzinfo=load_zone(zone))
        except ZoneError:
            value = value.replace(tzinfo=UTC)
    return bounded_instant(value, text, option)


@schedule.command("slots")
@click.argument("job_name", metavar="JOB")
@click.option("--from", "from_text", metavar="TIME", help="First slot instant (ISO 8601).")
@click.option("--to", "to_text", metavar="TIME", help="Last slot instant (ISO 8601).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per slot, one a line.")
@config_option
def schedule_slots(job_name: str, from_text: str | None, to_text: str | None, as_json: bool,
                   config_path: Path) -> None:
    """The slot ledger of JOB, oldest first: every slot's fate (ran, skipped, missed) and why.

    A time without an offset is read in the job's time zone.
    """
    with open_state(config_path) as state:
        job = known_job(state, job_name)
        zone = job.time_zone if job is not None else "UTC"
        start = parse_instant(from_text, zone, "--from")
        end = parse_instant(to_text, zone, "--to")
        if end is not None and not end.microsecond:
            # Slots print to the second, and a time the DST rule removed is kept a few
            # microseconds past the second it prints as: --to takes in that whole second.
            end += timedelta(microseconds=999_999)
        with state.store.transaction() as tx:
            views = [slot_view(tx, record) for record in tx.slots(job_name, start, end)]
    if as_json:
        for view in views:
            record = view.record
            echo_json({"slot": utc(record.slot), "name": record.name or None,
                       "fate": view.fate, "reason": view.reason, "run": view.run,
                       "count": record.count, "until": utc(record.until_slot)})
        return
    if not views:
        click.echo(f"no slots recorded for {job_name}" + (" in that window" if start or end
                                                           else ""))
        return
    echo_table(["SLOT", "NAME", "FATE", "REASON", "RUN"],
               [[cell(v.record.slot), cell(v.record.name), _fate_cell(v), _reason_cell(v),
                 cell(v.run)] for v in views], wrap=["NAME", "REASON"])


COMMANDS: list[click.Command] = [status, schedule]
