"""``cronduit serve`` and ``cronduit apply``: run the daemon, and reload its config."""

from __future__ import annotations

import socket
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import click

from cronduit import daemon
from cronduit.cli.context import Runtime, State, cannot_open_line, open_state, runtime
from cronduit.cli.job_commands import default_operator
from cronduit.cli.options import config_option, fail, load_config_and_text, operator_option
from cronduit.cli.render import echo_json, utc
from cronduit.core.config import Config
from cronduit.ports import NodeTaken
from cronduit.secrets import SecretsError, load_secrets
from cronduit.store import driver_errors

APPLY_WAIT_SECONDS = 10.0


@click.command()
@config_option
@click.option("--dry-run", is_flag=True,
              help="Arm no timers and start no runs; accept triggers and hold them.")
def serve(config_path: Path, dry_run: bool) -> None:
    """Run the daemon: timers, triggers and runs, logged one line each to stderr."""
    config, text = load_config_and_text(config_path)
    _check_secrets_file(config, config_path)  # before anything starts: nothing half-started
    try:
        daemon.serve(config_path, config, text, dry_run=dry_run)
    except daemon.AlreadyServing as error:
        fail(str(error), 3)
    except daemon.ListenError as error:
        fail(str(error), 1)
    except NodeTaken as error:
        fail(str(error), 3)
    except SecretsError as error:  # the file went bad since the check above
        fail(str(error))
    except driver_errors() as error:  # one the daemon does not live through: a bad URL
        fail(cannot_open_line(config, config_path, error, failed="cannot use"), 1)


def _check_secrets_file(config: Config, config_path: Path) -> None:
    """Exit 2 with one line (``FILE:LINE: problem``) when the secrets file cannot be read."""
    try:
        load_secrets(config, config_path, {})
    except SecretsError as error:
        fail(str(error))


@click.command()
@operator_option("Who applies (in the audit log) [default: the OS user].")
@click.option("--json", "as_json", is_flag=True,
              help="Print the daemon's answer as one JSON object: ok, at, changes, errors.")
@config_option
def apply(operator: str | None, as_json: bool, config_path: Path) -> None:
    """Make the running daemon reload the config and print what changed.

    Exit 0 when applied, 2 when the daemon refused the config (the running one stays), 1 when
    no daemon runs or it did not answer.
    """
    rt = runtime()
    with open_state(config_path, the_file=True) as state:
        result = _ask_apply(state, rt, operator or default_operator())
    if as_json:
        echo_json(_apply_json(result))
    else:
        for line in result["lines"]:
            click.echo(line, err=not result["ok"])
    if not result["ok"]:
        fail("apply refused: the running config stays", 2)


def _ask_apply(state: State, rt: Runtime, operator: str | None) -> dict[str, Any]:
    """Leave who asks in the store, signal the daemon and wait for its answer (``last_apply``:
    at, ok, lines); exit 1 when there is no daemon or no answer in time."""
    info = daemon.running_daemon(state.store, rt.clock.now())
    if info is None:
        fail("no cronduit daemon is running for this state; the config is read when "
             "it starts", 1)
    if info.host != socket.gethostname():  # its pid names another process here
        fail(f"the daemon runs on {info.host}: run cronduit apply there", 1)
    asked = rt.clock.now()
    with state.store.transaction() as tx:
        daemon.ask_apply(tx, operator, asked)
    rt.reload(info)
    deadline = asked + timedelta(seconds=APPLY_WAIT_SECONDS)
    while True:
        with state.store.transaction() as tx:
            result = daemon.apply_answer(tx, asked)
        if result is not None:
            return result
        if rt.clock.now() >= deadline:
            fail(f"the daemon did not answer within {APPLY_WAIT_SECONDS:.0f}s", 1)
        rt.sleep(0.1)


def _apply_json(result: dict[str, Any]) -> dict[str, object]:
    """``apply --json``: the change lines of an apply, or the errors of a refused one."""
    lines = [line for line in result["lines"] if line != daemon.NO_CHANGES]
    return {"ok": result["ok"], "at": utc(datetime.fromisoformat(result["at"])),
            "changes": lines if result["ok"] else [], "errors": [] if result["ok"] else lines}


COMMANDS: list[click.Command] = [serve, apply]
