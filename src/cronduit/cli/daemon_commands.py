"""``cronduit serve`` and ``cronduit apply``: run the daemon, and reload its config."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import click

from cronduit.cli.context import Runtime, State, open_state, runtime
from cronduit.cli.job_commands import default_operator
from cronduit.cli.options import config_option, fail, load_config_and_text, operator_option
from cronduit.cli.render import echo_json, utc
from cronduit.clock import SystemClock
from cronduit.core.config import Config
from cronduit.daemon.heartbeat import running_daemon
from cronduit.daemon.loop import APPLY_ASKED, NO_CHANGES, Daemon, ListenError
from cronduit.daemon.memory import limit_malloc_arenas
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.secrets import SecretsError, load_secrets
from cronduit.store import open_store

APPLY_WAIT_SECONDS = 10.0
CRASH_VARIABLE = "CRONDUIT_CRASH_AT"
"""For crash tests: the engine step (fired, routed, launching) after which the daemon
SIGKILLs itself, once, exactly as a power cut or an OOM kill would stop it."""


def _crash_point(step: str | None) -> Callable[[str], None] | None:
    if not step:
        return None

    def checkpoint(name: str) -> None:
        if name == step:
            _log(f"crash test: SIGKILL after {name}")
            os.kill(os.getpid(), signal.SIGKILL)

    return checkpoint


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed (it comes with uvicorn's standard extras): the same
    asyncio API, with the socket and timer work done in C, which is most of a webhook's cost
    on the loop. The standard loop otherwise."""
    try:
        import uvloop  # noqa: PLC0415 - optional
    except ImportError:
        return None
    return uvloop.new_event_loop


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _hold_daemon_lock(paths: StatePaths) -> int:
    """One daemon per state directory: an exclusive lock held for the daemon's life."""
    paths.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.root / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        fail(f"another cronduit daemon is serving {paths.root}", 3)
    return fd


@click.command()
@config_option
@click.option("--dry-run", is_flag=True,
              help="Arm no timers and start no runs; accept triggers and hold them.")
def serve(config_path: Path, dry_run: bool) -> None:
    """Run the daemon: timers, triggers and runs, logged one line each to stderr."""
    limit_malloc_arenas()  # before any thread starts
    config, text = load_config_and_text(config_path)
    _check_secrets_file(config, config_path)  # before anything starts: nothing half-started
    paths = StatePaths.of(config, config_path)
    lock = _hold_daemon_lock(paths)
    store = open_store(config, config_path, daemon=True)
    daemon: Daemon | None = None

    def wake() -> None:
        if daemon is not None:
            daemon.wake()

    def secrets() -> Mapping[str, str]:
        return daemon.secrets if daemon is not None else {}

    def max_log() -> int:
        return (daemon.engine.config if daemon is not None else config).settings.max_log

    runner = ProcessRunner(paths, config_path, secrets, wake, max_log=max_log)
    try:
        daemon = Daemon(config_path, config, store, runner, SystemClock(), dry_run=dry_run,
                        log=_log, checkpoint=_crash_point(os.environ.get(CRASH_VARIABLE)),
                        secrets=lambda current: load_secrets(current, config_path, os.environ),
                        open_store=lambda: open_store(config, config_path, daemon=True),
                        config_text=text)
        with asyncio.Runner(loop_factory=_loop_factory()) as loop_runner:
            loop_runner.run(_serve(daemon, runner))
    except ListenError as error:
        fail(str(error), 1)
    except SecretsError as error:  # the file went bad since the check above
        fail(str(error))
    finally:
        store.close()
        os.close(lock)


def _check_secrets_file(config: Config, config_path: Path) -> None:
    """Exit 2 with one line (``FILE:LINE: problem``) when the secrets file cannot be read."""
    try:
        load_secrets(config, config_path, {})
    except SecretsError as error:
        fail(str(error))


async def _serve(daemon: Daemon, runner: ProcessRunner) -> None:
    runner.attach(asyncio.get_running_loop())
    await daemon.serve()


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
    info = running_daemon(state.store, rt.clock.now())
    if info is None:
        fail("no cronduit daemon is running for this state; the config is read when "
             "it starts", 1)
    if info.host != socket.gethostname():  # its pid names another process here
        fail(f"the daemon runs on {info.host}: run cronduit apply there", 1)
    asked = rt.clock.now()
    with state.store.transaction() as tx:
        tx.set_meta(APPLY_ASKED, json.dumps({"operator": operator, "at": asked.isoformat()}))
    rt.reload(info)
    deadline = asked + timedelta(seconds=APPLY_WAIT_SECONDS)
    while True:
        with state.store.transaction() as tx:
            raw = tx.get_meta("last_apply")
        result: dict[str, Any] | None = json.loads(raw) if raw else None
        if result and datetime.fromisoformat(result["at"]) >= asked:
            return result
        if rt.clock.now() >= deadline:
            fail(f"the daemon did not answer within {APPLY_WAIT_SECONDS:.0f}s", 1)
        rt.sleep(0.1)


def _apply_json(result: dict[str, Any]) -> dict[str, object]:
    """``apply --json``: the change lines of an apply, or the errors of a refused one."""
    lines = [line for line in result["lines"] if line != NO_CHANGES]
    return {"ok": result["ok"], "at": utc(datetime.fromisoformat(result["at"])),
            "changes": lines if result["ok"] else [], "errors": [] if result["ok"] else lines}


COMMANDS: list[click.Command] = [serve, apply]
