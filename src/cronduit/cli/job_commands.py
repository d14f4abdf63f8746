"""``cronduit job history | logs | run | wait | pause | resume``: a job's runs and pauses, read
from and asked of the store.

Nothing here talks to the daemon except to wake it: a manual run is an event accepted in the
store (the daemon starts it when it routes the event), and following a run is reading the
store and the run's log file. So every command works while the daemon is down, and a manual
run asked for then starts when it starts. A run's log file is on the host that ran it; on a
host without it, ``job logs`` shows the log's tail the store kept with the run
(:mod:`cronduit.core.log_tails`).
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from pathlib import Path

import click

from cronduit import intake
from cronduit.cli.context import (
    POLL_SECONDS,
    Runtime,
    State,
    known_job,
    open_state,
    runtime,
    wake_daemon,
)
from cronduit.cli.options import config_option, fail, operator_option, reason_option
from cronduit.cli.render import (
    RetryNews,
    cell,
    echo_json,
    echo_table,
    outcome_summary,
    stderr_is_terminal,
    utc,
)
from cronduit.cli.stored_tails import elsewhere, on_node, tail_note
from cronduit.core.config.model import Job
from cronduit.core.durations import DurationError, parse_duration
from cronduit.core.enums import EventState, Outcome, RunState
from cronduit.core.limits import MAX_LISTED
from cronduit.core.text import TextError, check_operator, clean
from cronduit.daemon import running_daemon
from cronduit.executor.logs import LogReader
from cronduit.intake import pausing as control
from cronduit.intake.audit import UNKNOWN_OPERATOR, describe
from cronduit.paths import StatePaths
from cronduit.ports import Pause, Run, RunEnd, Transaction

INTERRUPTED = 130
"""Exit status after Ctrl-C, as a shell reports a command killed by SIGINT."""
TIMED_OUT = 124
"""Exit status of ``job wait`` when ``--timeout`` passes first (as timeout(1) uses)."""
WAIT_EVENTS = {"completed": 0, "failed": 1, "timed_out": 1, "cancelled": 1}


@click.group("job")
def job() -> None:
    """A job's runs: history, logs, run one now, wait for one to end; pause and resume it."""


# -- history ------------------------------------------------------------------------------


def run_record(tx: Transaction, run: Run, paths: StatePaths | None = None
               ) -> dict[str, object]:
    """The run record (:func:`cronduit.intake.reports.run_record`, as ``GET /v1/runs/{id}``
    gives it), its workspace read from this host's run folder."""
    return intake.run_record(tx, run, None if paths is None else paths.run(run.id))


def _outcome_cell(run: Run) -> str:
    if run.state == RunState.RUNNING:
        return f"running (attempt {run.attempts})"
    if run.state == RunState.BACKOFF:
        return f"retry at {cell(run.next_attempt_at)}"
    return outcome_summary(run)


@job.command("history")
@click.argument("name")
@click.option("-n", "limit", default=20, show_default=True, type=click.IntRange(1, MAX_LISTED),
              help="How many runs, newest first.")
@click.option("--json", "as_json", is_flag=True, help="One run record per line (SPEC §5).")
@config_option
def history(name: str, limit: int, as_json: bool, config_path: Path) -> None:
    """NAME's runs, newest first. A job removed from the config shows what was recorded."""
    with open_state(config_path) as state:
        known_job(state, name)
        with state.store.transaction() as tx:
            runs = tx.history(name, limit)
            records = [run_record(tx, run, state.paths) for run in runs] if as_json else []
    if as_json:
        for record in records:
            echo_json(record)
        return
    if not runs:
        click.echo(f"no runs of {name} yet")
        return
    echo_table(["RUN", "TRIGGER", "STARTED", "OUTCOME", "OPERATOR"],
               [[run.id, run.label, cell(run.started_at or run.finished_at), _outcome_cell(run),
                 cell(run.operator)] for run in runs], wrap=["TRIGGER", "OUTCOME"])


# -- logs ---------------------------------------------------------------------------------


def _copy_new(path: Path, position: int, cap: int) -> int:
    """Print the log's bytes from ``position`` on (in the job's bytes, cut ones included),
    undecoded, holes skipped and cuts marked; the new position."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return position  # not created yet: the attempt has not started writing
    try:
        reader = LogReader(fd, cap, position)
        for chunk in reader.chunks():
            click.echo(chunk, nl=False)  # bytes go to stdout's binary buffer as they are
    finally:
        os.close(fd)
    return reader.position


def stream_log(state: State, rt: Runtime, run: Run, follow: bool,
               attempt: int | None = None) -> Run:
    """Print the run's log; with ``follow``, keep printing until the run ends, saying on
    stderr when it waits between attempts. A durable run's step attempts each log apart:
    their logs are printed one after another, each introduced on stderr, or only
    ``attempt``'s. The run as last read."""
    current, position = attempt or 1, 0
    walks = attempt is None and run.execution_id is not None
    news = RetryNews(stderr_is_terminal(), lambda text: click.echo(text, nl=False, err=True))
    cap = state.config.settings.max_log
    if walks:
        _introduce(state, run.id, current)
    while True:
        with state.store.transaction() as tx:
            run = tx.get_run(run.id) or run
        news.settle(run)
        # The state is read before the bytes, so an ended run's last words are printed.
        position = _copy_new(log_path(state, run, current), position, cap)
        while walks and current < run.attempts:  # that attempt is over: on to the next's
            current, position = current + 1, 0
            _introduce(state, run.id, current)
            position = _copy_new(log_path(state, run, current), position, cap)
        if not follow or run.state == RunState.ENDED:
            return run
        news.show(run, rt.clock.now())
        rt.sleep(POLL_SECONDS)


def log_path(state: State, run: Run, attempt: int) -> Path:
    """Where attempt ``attempt`` of ``run`` logs on this host."""
    return state.paths.log_of(run.id, attempt, run.execution_id is not None)


def _introduce(state: State, run_id: str, attempt: int) -> None:
    """Say on stderr which step attempt the log lines that follow are."""
    with state.store.transaction() as tx:
        written = tx.step_attempt(run_id, attempt)
    if written is not None:
        click.echo(f"cronduit: attempt {attempt} of run {run_id}: step {written.step_id} "
                   f"(attempt id {written.attempt_id})", err=True)


def _newest_with_log(tx: Transaction, name: str) -> Run | None:
    """The newest run that is not skipped: a skipped run never had a process or a log."""
    return next((run for run in tx.history(name, 1000) if run.outcome != Outcome.SKIPPED), None)


def show_log(state: State, rt: Runtime, run: Run, follow: bool,
             attempt: int | None = None) -> None:
    """Print the run's log from this host's file; where there is none, the tail stored with
    the run, or say why there is nothing to print. Following a run whose log is on another
    host is refused (exit 1), naming the host, rather than waiting for a file that never
    comes here."""
    active = run.state != RunState.ENDED
    if not log_path(state, run, attempt or 1).exists():
        if follow and active and elsewhere(state, run):
            host = on_node(run, state) or " on another host"
            fail(f"run {run.id} runs{host}: its log is there, and only there can it be "
                 f"followed; once the attempt ends, cronduit job logs {run.job} --run "
                 f"{run.id} prints the tail stored with the run", code=1)
        if not (follow and active):
            _show_stored(state, run, active)
            return
    stream_log(state, rt, run, follow, attempt)


def _show_stored(state: State, run: Run, active: bool) -> None:
    """The stored tail of a run with no log file here, or why there is none."""
    with state.store.transaction() as tx:
        stored = tx.stored_log_tail(run.id)
    if stored is not None:
        click.echo(tail_note(run, stored), err=True)
        click.echo(stored.tail, nl=False)  # raw bytes, as a log file's are printed
        return
    if not active:
        fail(f"run {run.id} left no log", code=1)
    if elsewhere(state, run):
        click.echo(f"cronduit: run {run.id} runs{on_node(run, state) or ' on another host'}"
                   ", which has its log; its tail is stored with the run when its attempt "
                   "ends", err=True)
        return
    click.echo(f"cronduit: run {run.id} has written nothing yet", err=True)


@job.command("logs")
@click.argument("name")
@click.option("--run", "run_id", metavar="ID", help="This run instead of the newest.")
@click.option("--attempt", "attempt", type=click.IntRange(1), metavar="N",
              help="Only attempt N of the run (of a job with steps: one step attempt).")
@click.option("--step", "step_id", metavar="STEP",
              help="Of a job with steps: only the run's latest attempt of STEP.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing until the run ends.")
@config_option
def logs(name: str, run_id: str | None, attempt: int | None, step_id: str | None,
         follow: bool, config_path: Path) -> None:
    """Print the log (stdout and stderr) of NAME's newest run, or of --run ID.

    A job with steps logs each step attempt apart: they are printed in order, each
    introduced on stderr; --attempt or --step picks one. A run that ran on another host (a
    state shared by many hosts) shows the tail of its log stored with the run: its last MiB.
    """
    rt = runtime()
    with open_state(config_path) as state:
        known_job(state, name)
        with state.store.transaction() as tx:
            run = tx.get_run(run_id) if run_id else _newest_with_log(tx, name)
        if run is None and not run_id:
            fail(f"job {name} has no run yet", code=1)
        if run is None or run.job != name:
            fail(f"no run {run_id} of job {name}")  # a --run id that is not NAME's: bad input
        if run.outcome == Outcome.SKIPPED:
            fail(f"run {run.id} was skipped ({run.reason}): it never ran, so it has no log",
                 code=1)
        if run.files_pruned:
            fail(f"the log of run {run.id} was deleted by retention (only the newest "
                 f"{state.config.settings.kept_runs} runs keep their files: settings.kept_runs)",
                 code=1)
        chosen = _chosen_attempt(state, run, attempt, step_id)
        try:
            show_log(state, rt, run, follow, chosen)
        except KeyboardInterrupt:
            click.echo(f"\ncronduit: stopped following; run {run.id} goes on", err=True)
            raise SystemExit(INTERRUPTED) from None


def _chosen_attempt(state: State, run: Run, attempt: int | None,
                    step_id: str | None) -> int | None:
    """The attempt ``--attempt`` or ``--step`` names (exit 2 when the run has no such)."""
    if attempt is not None and step_id is not None:
        fail("give --attempt or --step, not both")
    if attempt is not None and attempt > max(run.attempts, 1):
        fail(f"run {run.id} has {run.attempts} attempt(s), not {attempt}")
    if step_id is None:
        return attempt
    if run.execution_id is None:
        fail(f"run {run.id} has no steps: its job runs one command")
    with state.store.transaction() as tx:
        tried = [a.attempt for a in tx.step_attempts(run.execution_id)
                 if a.run_id == run.id and a.step_id == step_id]
    if not tried:
        fail(f"run {run.id} ran no attempt of a step {clean(step_id, 80)!r}")
    return max(tried)


# -- run ----------------------------------------------------------------------------------


def parse_inputs(pairs: tuple[str, ...]) -> dict[str, str]:
    given: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            fail(f"--input {pair!r}: give it as NAME=VALUE")
        if key in given:
            fail(f"--input {key} given twice")
        given[key] = value
    return given


def default_operator() -> str | None:
    """The operating-system user, when it can be told and passes the rule of every operator
    field (``getpass`` reads it from ``$USER`` and the like, which anyone can set)."""
    try:
        return check_operator(getpass.getuser())
    except (OSError, KeyError, TextError):
        return None


def accept_manual(state: State, job_: Job, inputs: dict[str, str], queue: bool,
                  operator: str | None, rt: Runtime) -> str:
    """Accept the manual run in one transaction, or exit 3 with the reason it is refused;
    its delivery id."""
    try:
        with state.store.transaction() as tx:
            accepted = intake.accept_manual(tx, job_, inputs, queue=queue, operator=operator,
                                            now=rt.clock.now())
    except intake.RequestRefused as refused:
        fail(str(refused) + (" (with --queue)" if refused.queueable else ""), code=3)
    return accepted.event.delivery_id


def await_run(state: State, rt: Runtime, delivery_id: str) -> str | None:
    """The id of the run that consumed the event, once the daemon routes it; None if the
    daemon stops first."""
    while True:
        with state.store.transaction() as tx:
            event = tx.event_by_delivery(delivery_id)
        if event is None:
            fail(f"the manual run {delivery_id} is no longer in the state store", code=1)
        if event.state == EventState.CONSUMED and event.run_id is not None:
            return event.run_id
        if event.state == EventState.UNMATCHED:
            fail(f"the daemon has no job {event.job} in its config (run cronduit apply); "
                 "the manual run was recorded as unmatched", code=1)
        if running_daemon(state.store, rt.clock.now()) is None:
            return None
        rt.sleep(POLL_SECONDS)


def follow_manual(state: State, rt: Runtime, name: str, delivery_id: str) -> int:
    """Wait for the run, stream its log, print its outcome; the exit status."""
    try:
        run_id = await_run(state, rt, delivery_id)
    except KeyboardInterrupt:
        click.echo(f"\ncronduit: stopped waiting; the manual run stays accepted ({delivery_id})",
                   err=True)
        return INTERRUPTED
    if run_id is None:
        click.echo("cronduit: the daemon stopped; the manual run stays accepted and starts "
                   "when it starts again", err=True)
        return 0
    with state.store.transaction() as tx:
        run = tx.get_run(run_id)
    if run is None:
        fail(f"run {run_id} is not in the state store", code=1)
    click.echo(f"cronduit: run {run.id} of {name} [{clean(run.label)}]", err=True)
    try:
        run = stream_log(state, rt, run, follow=True)
    except KeyboardInterrupt:
        click.echo(f"\ncronduit: stopped following; run {run_id} goes on "
                   f"(cronduit job logs {name} --run {run_id} --follow)", err=True)
        return INTERRUPTED
    if not log_path(state, run, 1).exists():  # it ran on another host: its stored tail
        with state.store.transaction() as tx:
            stored = tx.stored_log_tail(run.id)
        if stored is not None:
            click.echo(tail_note(run, stored), err=True)
            click.echo(stored.tail, nl=False)
    click.echo(f"cronduit: run {run.id}: {clean(outcome_summary(run))}", err=True)
    return 0 if run.outcome == Outcome.SUCCESS else 1


@job.command("run")
@click.argument("name")
@click.option("--input", "input_pairs", multiple=True, metavar="NAME=VALUE",
              help="An input value (repeatable); the others take their defaults.")
@click.option("--queue", is_flag=True,
              help="Wait behind a run going or a manual run pending instead of being refused.")
@click.option("--detach", is_flag=True, help="Print the request's delivery id and return.")
@operator_option("Who asks (recorded on the run) [default: the OS user].")
@config_option
def run_now(name: str, input_pairs: tuple[str, ...], queue: bool, detach: bool,
            operator: str | None, config_path: Path) -> None:
    """Run NAME now, follow its log and exit with its outcome (0 success, 1 otherwise).

    Refused (exit 3) while the job has a run going or a manual run pending, unless --queue.
    Ctrl-C stops following, not the run.
    """
    rt = runtime()
    with open_state(config_path) as state:
        job_ = state.config.jobs.get(name)
        if job_ is None:
            fail(f"no job named {name!r} in {config_path}")
        try:
            inputs = intake.check_inputs(job_, parse_inputs(input_pairs))
        except intake.RequestRefused as refused:
            fail(str(refused))
        delivery_id = accept_manual(state, job_, inputs, queue,
                                    operator or default_operator(), rt)
        if not _started_now(state, rt, name, delivery_id, detach):
            return
        code = follow_manual(state, rt, name, delivery_id)
    raise SystemExit(code)


def _started_now(state: State, rt: Runtime, name: str, delivery_id: str, detach: bool) -> bool:
    """Wake the daemon; whether the run is worth following now. When it is not (detached, no
    daemon, a dry run), print the delivery id and say when the run will start."""
    daemon = wake_daemon(state, rt)
    if daemon is not None and not daemon.dry_run and not detach:
        return True
    click.echo(delivery_id)
    if daemon is None:
        click.echo(f"cronduit: no daemon is running; the run of {name} was accepted and "
                   "will start when the daemon starts (cronduit serve)", err=True)
    elif daemon.dry_run:
        click.echo(f"cronduit: the daemon runs in dry run; the run of {name} was accepted "
                   "and will start after a normal start", err=True)
    return False


# -- wait ---------------------------------------------------------------------------------


def describe_end(ended: RunEnd) -> str:
    return f"{ended.job} run {ended.run_id}: {ended.event} ({ended.outcome}) at " \
           f"{cell(ended.ended_at)}"


def end_json(ended: RunEnd) -> dict[str, object]:
    """The run-ended event as ``job wait --json`` prints it."""
    return {"job": ended.job, "run": ended.run_id, "event": ended.event,
            "outcome": ended.outcome, "ended_at": utc(ended.ended_at)}


def next_run_end(state: State, rt: Runtime, name: str, after: int,
                 timeout: int | None) -> RunEnd | None:
    """The job's first run end recorded after seq ``after``; None once ``timeout`` seconds
    have passed on the runtime's clock."""
    start = rt.clock.now()
    while True:
        with state.store.transaction() as tx:
            ended = tx.run_ends_after(name, after)
        if ended:
            return ended[0]
        if timeout is not None and (rt.clock.now() - start).total_seconds() >= timeout:
            return None
        rt.sleep(POLL_SECONDS)


@job.command("wait")
@click.argument("name")
@click.option("--timeout", "timeout_text", metavar="DURATION",
              help="Give up after this long (30s, 5m, 1h): exit 124.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the run-ended event as one JSON object.")
@config_option
def wait(name: str, timeout_text: str | None, as_json: bool, config_path: Path) -> None:
    """Wait for NAME's next run to end (after this command starts) and print how it ended.

    Exit 0 if it completed, 1 if it failed, timed out or was cancelled, 124 on --timeout.
    """
    rt = runtime()
    timeout = None
    if timeout_text is not None:
        try:
            timeout = parse_duration(timeout_text)
        except DurationError as error:
            fail(f"--timeout {timeout_text!r}: {error}")
    with open_state(config_path) as state:
        known_job(state, name)
        with state.store.transaction() as tx:
            after = tx.last_run_end_seq()  # ends recorded before the call are not "next"
        try:
            ended = next_run_end(state, rt, name, after, timeout)
        except KeyboardInterrupt:
            click.echo("\ncronduit: stopped waiting", err=True)
            raise SystemExit(INTERRUPTED) from None
    if ended is None:
        fail(f"no run of {name} ended within {timeout_text}", code=TIMED_OUT)
    if as_json:
        echo_json(end_json(ended))
    else:
        click.echo(describe_end(ended))
    raise SystemExit(WAIT_EVENTS.get(ended.event, 1))


# -- pause and resume ---------------------------------------------------------------------


def _control(state: State, rt: Runtime, name: str, act: str,
             work: Callable[[Transaction], Pause]) -> Pause:
    """Carry out a pause or resume of the configured job ``name`` in one transaction (exit 2
    for an unknown job or a bad request, 3 when refused), then wake the daemon."""
    if name not in state.config.jobs:
        fail(f"no job named {name!r} in {state.config_path}")
    try:
        with state.store.transaction() as tx:
            done = work(tx)
    except intake.RequestRefused as refused:
        fail(str(refused), code=3 if refused.status == 409 else 2)
    if wake_daemon(state, rt) is None:
        click.echo(f"cronduit: no daemon is running; the {act} is recorded and holds when "
                   "it starts", err=True)
    return done


@job.command("pause")
@click.argument("name")
@reason_option("Why (required; shown by status and audit).")
@click.option("--until", "until", metavar="TIME",
              help="Resume by itself then: a duration from now (2h, 1d) or an ISO 8601 "
                   "instant (UTC when it has no offset).")
@operator_option("Who pauses (recorded) [default: the OS user].")
@config_option
def pause(name: str, reason: str, until: str | None, operator: str | None,
          config_path: Path) -> None:
    """Pause NAME: its timers fire no runs (their slots are recorded missed, reason paused),
    its other triggers are recorded as skipped runs, and manual runs are refused.

    Refused (exit 3) when NAME is paused already; nothing is overwritten.
    """
    rt = runtime()
    who = operator or default_operator() or UNKNOWN_OPERATOR
    with open_state(config_path) as state:
        paused = _control(state, rt, name, "pause", lambda tx: control.pause(
            tx, name, reason, who, until, rt.clock.now()))
    click.echo(f"{name}: {describe(paused)}")


@job.command("resume")
@click.argument("name")
@operator_option("Who resumes (recorded) [default: the OS user].")
@config_option
def resume(name: str, operator: str | None, config_path: Path) -> None:
    """Resume NAME: its next slot runs; the slots missed while paused are not made up.

    Refused (exit 3) when NAME is not paused.
    """
    rt = runtime()
    who = operator or default_operator() or UNKNOWN_OPERATOR
    with open_state(config_path) as state:
        ended = _control(state, rt, name, "resume", lambda tx: control.resume(
            tx, name, who, rt.clock.now()))
    click.echo(f"{name}: resumed by {ended.resumed_by} (it was {describe(ended)})")


COMMANDS: list[click.Command] = [job]
