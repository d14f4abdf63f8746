"""``cronduit execution list | inspect | resume | abandon``: durable multi-step executions
(SPEC §8), read from and asked of the store.

As with ``job run``, nothing here needs the daemon: a resume is a trigger accepted in the
store, which the daemon starts under the job's overlap policy (``--wait`` follows it to its
end), and an abandon is written at once. So each command works while the daemon is down.
"""

from __future__ import annotations

from pathlib import Path

import click

from cronduit import intake
from cronduit.cli.context import Runtime, State, open_state, runtime, wake_daemon
from cronduit.cli.job_commands import default_operator, follow_manual
from cronduit.cli.options import config_option, fail, operator_option
from cronduit.cli.render import cell, echo_json, echo_table
from cronduit.core.limits import MAX_LISTED
from cronduit.core.text import clean
from cronduit.ports import Execution, Transaction


@click.group("execution")
def execution() -> None:
    """Durable multi-step executions: list, inspect, resume where one failed, abandon."""


@execution.command("list")
@click.option("-n", "limit", default=20, show_default=True, type=click.IntRange(1, MAX_LISTED),
              help="How many, newest first.")
@click.option("--job", "job_name", metavar="JOB", help="Only JOB's executions.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per execution.")
@config_option
def list_executions(limit: int, job_name: str | None, as_json: bool, config_path: Path) -> None:
    """The newest executions, with their state and how far their steps got."""
    with open_state(config_path) as state, state.store.transaction() as tx:
        found = [intake.execution_summary(x, tx.execution_steps(x.id))
                 for x in tx.executions(job_name, limit)]
    if as_json:
        for each in found:
            echo_json(each)
        return
    if not found:
        click.echo("no executions recorded" + (f" for {clean(job_name)}" if job_name else ""))
        return
    echo_table(["EXECUTION", "JOB", "STATE", "STEPS", "ACTIVATIONS", "FAILED STEP", "STARTED"],
               [[cell(x["execution"]), cell(x["job"]), cell(x["state"]),
                 f"{x['steps_done']}/{x['steps']}", cell(x["activations"]),
                 cell(x["failed_step"] or "-"), cell(x["created_at"])] for x in found])


@execution.command("inspect")
@click.argument("execution_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="The whole inspection as one object.")
@config_option
def inspect(execution_id: str, as_json: bool, config_path: Path) -> None:
    """One execution: its inputs, each step's state, attempts and outputs, and whether it
    can be resumed (or why not)."""
    rt = runtime()
    with open_state(config_path) as state, state.store.transaction() as tx:
        shown = intake.execution_detail(tx, state.config, _known(tx, execution_id),
                                        rt.clock.now())
    if as_json:
        echo_json(shown)
        return
    _print_inspection(shown)


def _print_inspection(shown: dict[str, object]) -> None:
    click.echo(f"execution {shown['execution']} of {shown['job']}: {shown['state']}, "
               f"{shown['steps_done']}/{shown['steps']} steps done, "
               f"{shown['activations']} activation(s); started {shown['created_at']}, "
               f"resumable until {shown['expires_at']}")
    inputs = shown["inputs"]
    assert isinstance(inputs, dict)
    click.echo("inputs: " + (" ".join(f"{k}={clean(str(v))}" for k, v in sorted(inputs.items()))
                             or "none"))
    rows = []
    details = shown["step_details"]
    assert isinstance(details, list)
    for step in details:
        for tried in step["tries"] or [{}]:
            rows.append([cell(step["step"]), cell(step["state"]), cell(tried.get("run", "-")),
                         cell(tried.get("attempt", "-")), cell(tried.get("attempt_id", "-")),
                         cell(tried.get("outcome") or "-"), cell(tried.get("reason") or ""),
                         cell(tried.get("log", ""))])
    echo_table(["STEP", "STATE", "RUN", "ATTEMPT", "ATTEMPT ID", "OUTCOME", "REASON", "LOG"],
               rows)
    for step in details:
        if step["outputs"]:
            shown_outputs = " ".join(f"{k}={clean(str(v), 200)}"
                                     for k, v in sorted(step["outputs"].items()))
            click.echo(f"outputs of {step['step']}: {shown_outputs}")
    click.echo("resumable: yes" if shown["resumable"] else f"resumable: no, {shown['why_not']}")


def _known(tx: Transaction, execution_id: str) -> Execution:
    try:
        return intake.known_execution(tx, execution_id)
    except intake.RequestRefused as refused:
        fail(str(refused), code=1)


def _wake(state: State, rt: Runtime, what: str) -> None:
    if wake_daemon(state, rt) is None:
        click.echo(f"cronduit: no daemon is running; the {what} is recorded and starts when it "
                   "starts", err=True)


@execution.command("resume")
@click.argument("execution_id", metavar="ID")
@click.option("--wait", "wait_for_it", is_flag=True,
              help="Follow the new activation's logs until it ends; exit 0 on success.")
@operator_option("Who resumes (recorded) [default: the OS user].")
@config_option
def resume(execution_id: str, wait_for_it: bool, operator: str | None,
           config_path: Path) -> None:
    """Resume a failed execution where it failed: completed steps are skipped and their
    saved outputs reused; its inputs never change. A new activation, with the job's whole
    deadline. Refused (exit 3, with the reason) when the job's steps changed since it began,
    it succeeded, was abandoned, expired, or reached 100 activations."""
    rt = runtime()
    with open_state(config_path) as state:
        try:
            with state.store.transaction() as tx:
                accepted = intake.accept_resume(tx, state.config, execution_id,
                                                operator=operator or default_operator(),
                                                now=rt.clock.now())
        except intake.RequestRefused as refused:
            fail(str(refused), code=3 if refused.status == 409 else 1)
        _wake(state, rt, "resume")
        event = accepted.event
        if not wait_for_it:
            click.echo(f"execution {execution_id}: resume accepted ({event.delivery_id})")
            return
        raise SystemExit(follow_manual(state, rt, event.job, event.delivery_id))


@execution.command("abandon")
@click.argument("execution_id", metavar="ID")
@operator_option("Who abandons (recorded) [default: the OS user].")
@config_option
def abandon(execution_id: str, operator: str | None, config_path: Path) -> None:
    """End an execution's resumability. Refused (exit 3) while it runs, and when it
    succeeded or was abandoned already."""
    rt = runtime()
    with open_state(config_path) as state:
        try:
            with state.store.transaction() as tx:
                done = intake.abandon(tx, execution_id, operator=operator or default_operator(),
                                      now=rt.clock.now())
        except intake.RequestRefused as refused:
            fail(str(refused), code=3 if refused.status == 409 else 1)
    click.echo(f"execution {done.id} of {done.job}: abandoned")


COMMANDS: list[click.Command] = [execution]
