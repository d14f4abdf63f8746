"""``cronduit schedule list``, ``cronduit schedule slots`` and ``cronduit status``.

They read the config and the state store, never the daemon, so they work while it is down.
What a job's timer shows, what counts as divergence and what a slot of the ledger shows are
decided in the core (:mod:`cronduit.core.status`, :mod:`cronduit.core.slot_ledger`), from
values: the job, its timer, its newest runs, its pause, now. The commands only fetch those
values and print the answer.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from cronduit import intake
from cronduit.cli.context import State, known_job, open_state, runtime
from cronduit.cli.options import bounded_instant, config_option, fail
from cronduit.cli.render import (
    cell,
    echo_json,
    echo_line,
    echo_table,
    outcome_summary,
    plural,
    timing_of,
    utc,
)
from cronduit.core.cron import ZoneError, load_zone
from cronduit.core.enums import RunState
from cronduit.core.status import (
    FAILED,
    DaemonState,
    JobStatus,
    TimerState,
    daemon_state,
    timers_expected,
)
from cronduit.core.text import clean
from cronduit.daemon import DaemonInfo, running_daemon
from cronduit.ports import NodeRecord, Pause, Run, Store
from cronduit.store import membership_of

# -- status: the facts -------------------------------------------------------------------


def collect_status(state: State, now: datetime, daemon: DaemonInfo | None
                   ) -> list[JobStatus[Run, Pause]]:
    """Every configured job's status, read in one transaction and judged by the core."""
    with state.store.reading() as tx:
        return intake.job_statuses(tx, state.config, now, timers_expected(_state_of(daemon)))


# -- status: printing ---------------------------------------------------------------------


def _state_of(daemon: DaemonInfo | None) -> DaemonState:
    """The daemon's state word, from its heartbeat as found (None: no live daemon)."""
    return daemon_state(daemon is not None, daemon is not None and daemon.dry_run)


def daemon_line(daemon: DaemonInfo | None) -> str:
    """The first line of ``status`` and ``doctor``: the daemon's state, and who it is."""
    state = _state_of(daemon)
    if daemon is None or state is DaemonState.DOWN:
        return ("daemon: down (timers fire and accepted runs start when it starts: "
                "cronduit serve)")
    mode = ("running in dry run (no timers fire, no runs start)"
            if state is DaemonState.DRY_RUN else "running")
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
    if run.state == RunState.BACKOFF:
        failed = f"attempt {run.attempts} failed" + (f" ({run.reason})" if run.reason else "")
        return [f"{failed}; retry at {cell(run.next_attempt_at)} (run {run.id})"]
    if run.attempts > 1:  # the store knows when the run started, not this attempt
        return [f"running attempt {run.attempts} (run {run.id} started {cell(run.started_at)})"]
    return [f"running attempt 1 since {cell(run.started_at)} (run {run.id})"]


def status_lines(status: JobStatus[Run, Pause]) -> list[tuple[str, str | None]]:
    """The lines printed for one job, each with its terminal style."""
    elapse = status.elapse
    lines: list[tuple[str, str | None]] = [
        (f"{status.job.name}  {timing_of(status.job)}", "bold")]
    lines.extend(pause_lines(status))
    if elapse.timer is TimerState.PAUSED:
        lines.append(("  next: - (timer paused: its slots are recorded as missed)", None))
    elif elapse.timer is TimerState.NONE:
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


def pause_lines(status: JobStatus[Run, Pause]) -> list[tuple[str, str | None]]:
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
        nodes = live_nodes(state.store)
    diverging = [s for s in statuses if s.divergences]
    if as_json:
        echo_json({
            "daemon": daemon_json(daemon),
            **({} if nodes is None else {"nodes": [_node_json(node) for node in nodes]}),
            "healthy": not diverging,
            "jobs": [intake.job_facts(s, now) for s in statuses],
        })
    else:
        echo_line(daemon_line(daemon), None if daemon else "yellow")
        if nodes is not None:
            echo_line(_nodes_line(nodes), None if nodes else "yellow")
        for one in statuses:
            for text, style in status_lines(one):
                echo_line(text, style)
        summary = (f"{plural(len(diverging), 'job')} of {len(statuses)} diverging" if diverging
                   else f"{plural(len(statuses), 'job')}, no divergence")
        echo_line(summary, "bold red" if diverging else "green")
    if diverging:
        raise SystemExit(1)


def live_nodes(store: Store) -> list[NodeRecord] | None:
    """The nodes whose lease is valid, by the store's clock, where daemons share the state;
    None for a state one daemon serves."""
    membership = membership_of(store)
    if membership is None:
        return None
    now = membership.now()
    return [node for node in membership.nodes()
            if node.retired_at is None and node.expires_at > now]


def _nodes_line(nodes: list[NodeRecord]) -> str:
    if not nodes:
        return "nodes: none live (no daemon holds a lease on this state)"
    return "nodes: " + ", ".join(
        f"{clean(node.name)} ({clean(node.host)}"
        + (f", http://{clean(node.listen)}" if node.listen else "") + ")" for node in nodes)


def _node_json(node: NodeRecord) -> dict[str, object]:
    return {"name": node.name, "host": node.host, "pid": node.pid, "listen": node.listen,
            "epoch": node.epoch, "lease_until": utc(node.expires_at)}


# -- schedule -----------------------------------------------------------------------------


@click.group("schedule")
def schedule() -> None:
    """Timers and the slot ledger: when jobs run next, and what became of every slot."""


@schedule.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per job, one a line.")
@config_option
def schedule_list(as_json: bool, config_path: Path) -> None:
    """Every job: its timing, timer state (armed, unarmed, paused, none) and next elapse.

    --json gives each job's facts as ``status --json`` and ``GET /v1/jobs`` do.
    """
    now = runtime().clock.now()
    with open_state(config_path) as state:
        statuses = collect_status(state, now, running_daemon(state.store, now))
    if as_json:
        for one in statuses:
            echo_json(intake.job_facts(one, now))
        return
    echo_table(["JOB", "TIMING", "TIMER", "NEXT ELAPSE", "SLOT"],
               [[one.job.name, timing_of(one.job), one.elapse.timer, cell(one.elapse.due),
                 cell(one.elapse.slot_name)] for one in statuses], wrap=["TIMING", "SLOT"])


def _fate_cell(view: intake.reports.SlotView) -> str:
    return view.fate if view.record.count <= 1 else f"{view.fate} ×{view.record.count}"


def _reason_cell(view: intake.reports.SlotView) -> str:
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
        with state.store.reading() as tx:
            views = [intake.reports.slot_view(tx, record)
                     for record in tx.slots(job_name, start, end)]
    if as_json:
        for view in views:
            echo_json(intake.reports.slot_facts(view))
        return
    if not views:
        click.echo(f"no slots recorded for {job_name}" + (" in that window" if start or end
                                                           else ""))
        return
    echo_table(["SLOT", "NAME", "FATE", "REASON", "RUN"],
               [[cell(v.record.slot), cell(v.record.name), _fate_cell(v), _reason_cell(v),
                 cell(v.run)] for v in views], wrap=["NAME", "REASON"])


COMMANDS: list[click.Command] = [status, schedule]
