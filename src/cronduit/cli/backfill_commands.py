"""``cronduit job backfill``: run the slots of a past window of a timed job again.

The slots come from the core (:mod:`cronduit.core.backfill`); they are accepted in one
transaction as manual triggers marked as a backfill (:func:`cronduit.intake.accept_backfill`),
and the daemon runs them like any trigger. This command then follows them by reading the
store: a progress bar on a terminal, one line per finished run elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import click
from rich.progress import Progress, TaskID

from cronduit import intake
from cronduit.cli.context import POLL_SECONDS, Runtime, State, open_state, runtime, wake_daemon
from cronduit.cli.job_commands import INTERRUPTED, default_operator, job, run_record
from cronduit.cli.options import config_option, fail, operator_option
from cronduit.cli.render import echo_json, echo_table, is_terminal, outcome_summary, plural
from cronduit.cli.state_commands import parse_instant
from cronduit.core import backfill
from cronduit.core.config.model import Job
from cronduit.core.enums import EventState, Outcome, RunState
from cronduit.core.limits import MAX_SLOTS_LISTED
from cronduit.core.timespec import Slot, format_utc, schedule_of
from cronduit.daemon import running_daemon
from cronduit.intake.audit import UNKNOWN_OPERATOR
from cronduit.ports import Run

POLICIES = [backfill.SERIAL, "queue", "skip", "allow", "replace"]
FAILED = frozenset({Outcome.FAILURE, Outcome.TIMEOUT, Outcome.CANCELLED})


@job.command("backfill")
@click.argument("name")
@click.option("--from", "from_text", required=True, metavar="TIME",
              help="First slot instant that may run (ISO 8601; without an offset, the job's "
                   "wall clock).")
@click.option("--to", "to_text", required=True, metavar="TIME",
              help="Last slot instant that may run (inclusive; not after now).")
@click.option("--overlap", type=click.Choice(POLICIES), default=backfill.SERIAL,
              show_default=True,
              help="How these triggers meet runs: serial runs each slot on its own, one "
                   "after another; the others as in the config.")
@click.option("--max", "limit", type=click.IntRange(1, MAX_SLOTS_LISTED),
              default=backfill.DEFAULT_MAX_SLOTS,
              show_default=True, help="Refuse a window holding more slots than this.")
@click.option("--dry-run", is_flag=True, help="List the slots it would run; accept nothing.")
@operator_option("Who asks (recorded on the runs) [default: the OS user].")
@click.option("--json", "as_json", is_flag=True,
              help="The summary as one JSON object, with the run records (with --dry-run: "
                   "one object per slot, one a line).")
@config_option
def backfill_command(name: str, from_text: str, to_text: str, overlap: str, limit: int,
                     dry_run: bool, operator: str | None, as_json: bool,
                     config_path: Path) -> None:
    """Run the slots of NAME (cron, at or every) between --from and --to, both included,
    each its own run marked as a backfill; follow them and print a summary.

    Exit 0 when no run failed, 1 otherwise; 2 for a bad window (in the future, empty, too
    many slots) or an untimed job; 3 when the job is paused. Asking for the same backfill
    again runs nothing new.
    """
    rt = runtime()
    with open_state(config_path) as state:
        job_ = state.config.jobs.get(name)
        if job_ is None:
            fail(f"no job named {name!r} in {config_path}")
        slots = _window(job_, from_text, to_text, limit, rt)
        if dry_run:
            _list(slots, as_json)
            click.echo(f"dry run: {plural(len(slots), 'slot')} of {name} would run; "
                       "nothing was accepted", err=True)
            return
        policy = backfill.BackfillPolicy.named(overlap)
        who = operator or default_operator() or UNKNOWN_OPERATOR
        window = (slots[0].instant, slots[-1].instant)
        try:
            with state.store.transaction() as tx:
                accepted = intake.accept_backfill(tx, job_, slots, policy, window=window,
                                                  operator=who, now=rt.clock.now())
        except intake.RequestRefused as refused:
            fail(str(refused), code=3 if refused.status == 409 else 2)
        fresh = [one.event.delivery_id for one in accepted if one.created]
        if len(fresh) < len(accepted):
            click.echo(f"cronduit: {len(accepted) - len(fresh)} of {len(accepted)} slots were "
                       "backfilled before; they are not run again", err=True)
        request = _Request(name, policy.name, slots, len(fresh))
        if not fresh or not _daemon_will_follow(state, rt, name, len(fresh)):
            _not_followed(state, request, as_json)
            return
        tally = _follow(state, rt, fresh, show=not as_json)
        if as_json:
            echo_json(_document(state, request, tally))
        else:
            _summary(tally, len(fresh))
    raise SystemExit(1 if tally.failed else 0)


def _window(job_: Job, from_text: str, to_text: str, limit: int, rt: Runtime) -> list[Slot]:
    schedule = schedule_of(job_)
    if schedule is None:
        fail(f"job {job_.name} has no cron, at or every: it has no slots to backfill")
    start = parse_instant(from_text, job_.time_zone, "--from") or rt.clock.now()
    end = parse_instant(to_text, job_.time_zone, "--to") or rt.clock.now()
    try:
        return backfill.window_slots(schedule, start, end, rt.clock.now(), limit)
    except backfill.BackfillError as error:
        fail(str(error))


def _list(slots: Sequence[Slot], as_json: bool) -> None:
    if as_json:
        for slot in slots:
            echo_json({"slot": format_utc(slot.instant), "name": slot.name})
        return
    echo_table(["SLOT", "NAME"], [[format_utc(slot.instant), slot.name] for slot in slots],
               wrap=["NAME"])


@dataclass(frozen=True)
class _Request:
    """What was asked for, as the audit entry records it."""

    job: str
    overlap: str
    slots: Sequence[Slot]
    new: int
    """Slots not backfilled before: the triggers accepted now, the ones followed."""


def _not_followed(state: State, request: _Request, as_json: bool) -> None:
    """Nothing new was accepted, or no daemon will run it now (the notes are on stderr)."""
    if as_json:
        echo_json(_document(state, request, _Tally({}, request.new)))
    elif not request.new:
        click.echo(f"nothing new to run for {request.job}")


def _daemon_will_follow(state: State, rt: Runtime, name: str, count: int) -> bool:
    """Wake the daemon; whether there is one to follow (not down, not in a dry run)."""
    daemon = wake_daemon(state, rt)
    what = f"{plural(count, 'slot')} of {name}"
    if daemon is None:
        click.echo(f"cronduit: no daemon is running; {what} were accepted and will run "
                   "when the daemon starts (cronduit serve)", err=True)
        return False
    if daemon.dry_run:
        click.echo(f"cronduit: the daemon runs in dry run; {what} were accepted and will run "
                   "after a normal start", err=True)
        return False
    return True


@dataclass
class _Tally:
    """The runs the backfill's triggers went to, as last read."""

    runs: dict[str, Run]
    open_triggers: int
    """Triggers not consumed yet, or consumed by a run not ended."""

    def count(self, outcomes: frozenset[str]) -> int:
        return sum(1 for run in self.runs.values()
                   if run.state == RunState.ENDED and run.outcome in outcomes)

    @property
    def failed(self) -> int:
        return self.count(FAILED)

    @property
    def skipped(self) -> int:
        return self.count(frozenset({Outcome.SKIPPED}))

    @property
    def succeeded(self) -> int:
        return self.count(frozenset({Outcome.SUCCESS}))


def _read(state: State, delivery_ids: Sequence[str]) -> _Tally:
    runs: dict[str, Run] = {}
    waiting = 0
    with state.store.transaction() as tx:
        for delivery_id in delivery_ids:
            event = tx.event_by_delivery(delivery_id)
            if event is None or event.run_id is None:
                waiting += event is not None and event.state != EventState.UNMATCHED
                continue
            run = runs.get(event.run_id) or tx.get_run(event.run_id)
            if run is not None:
                runs[run.id] = run
                waiting += run.state != RunState.ENDED
    return _Tally(runs, waiting)


def _follow(state: State, rt: Runtime, delivery_ids: Sequence[str], show: bool) -> _Tally:
    """Follow the triggers to their runs' ends, showing progress unless ``show`` is false (the
    JSON summary is then the only output); the runs as last read. Ctrl-C exits 130."""
    total = len(delivery_ids)
    bar: AbstractContextManager[Progress | None] = (
        Progress(transient=False) if show and is_terminal() else nullcontext())
    reported: set[str] = set()
    try:
        with bar as progress:
            task = None if progress is None else progress.add_task("backfill", total=total)
            tally = _read(state, delivery_ids)
            while True:
                if show:
                    _report(tally, reported, progress, task, total)
                if tally.open_triggers == 0 or running_daemon(state.store,
                                                              rt.clock.now()) is None:
                    return tally
                rt.sleep(POLL_SECONDS)
                tally = _read(state, delivery_ids)
    except KeyboardInterrupt:
        click.echo("\ncronduit: stopped following; the backfill goes on", err=True)
        raise SystemExit(INTERRUPTED) from None


def _report(tally: _Tally, reported: set[str], progress: Progress | None,
            task: TaskID | None, total: int) -> None:
    ended = [run for run in tally.runs.values() if run.state == RunState.ENDED and run.id not in
             reported]
    for run in ended:
        reported.add(run.id)
        if progress is None:
            click.echo(f"run {run.id} [{run.label}]: {outcome_summary(run)}")
    if progress is not None and task is not None:
        progress.update(task, completed=total - tally.open_triggers)


def _summary(tally: _Tally, total: int) -> None:
    line = (f"backfill: {plural(total, 'slot')}, {plural(len(tally.runs), 'run')}: "
            f"{tally.succeeded} succeeded, {tally.failed} failed, {tally.skipped} skipped")
    if tally.open_triggers:
        line += f"; {tally.open_triggers} not done (the daemon stopped; they run when it " \
                "starts)"
    click.echo(line)


def _document(state: State, request: _Request, tally: _Tally) -> dict[str, object]:
    """``job backfill --json``: the request as audited, the run record of every run its new
    triggers went to (in slot order), and the counts of the text summary."""
    with state.store.transaction() as tx:
        runs = [run_record(tx, run, state.paths) for run in tally.runs.values()]
    return {"job": request.job, "start": format_utc(request.slots[0].instant),
            "end": format_utc(request.slots[-1].instant), "overlap": request.overlap,
            "slots": len(request.slots), "new": request.new, "runs": runs,
            "succeeded": tally.succeeded, "failed": tally.failed, "skipped": tally.skipped,
            "not_done": tally.open_triggers}
