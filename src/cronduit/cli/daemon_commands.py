"""``cronduit serve`` and ``cronduit apply``: run the daemon, and reload its config."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import click

from cronduit.cli.job_commands import default_operator
from cronduit.cli.options import config_option, fail, load_config_and_text, load_config_file
from cronduit.clock import SystemClock
from cronduit.daemon import APPLY_ASKED, Daemon, ListenError
from cronduit.daemon_state import running_daemon
from cronduit.paths import StatePaths
from cronduit.runner import ProcessRunner
from cronduit.secrets import load_secrets
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
    config, text = load_config_and_text(config_path)
    paths = StatePaths.of(config, config_path)
    lock = _hold_daemon_lock(paths)
    store = open_store(config, config_path)
    daemon: Daemon | None = None

    def wake() -> None:
        if daemon is not None:
            daemon.wake()

    def secrets() -> Mapping[str, str]:
        return daemon.secrets if daemon is not None else {}

    runner = ProcessRunner(paths, config_path, secrets, wake)
    daemon = Daemon(config_path, config, store, runner, SystemClock(), dry_run=dry_run,
                    log=_log, checkpoint=_crash_point(os.environ.get(CRASH_VARIABLE)),
                    secrets=lambda current: load_secrets(current, config_path, os.environ),
                    open_store=lambda: open_store(config, config_path), config_text=text)
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as loop_runner:
            loop_runner.run(_serve(daemon, runner))
    except ListenError as error:
        fail(str(error), 1)
    finally:
        store.close()
        os.close(lock)


async def _serve(daemon: Daemon, runner: ProcessRunner) -> None:
    runner.attach(asyncio.get_running_loop())
    await daemon.serve()


@click.command()
@click.option("--operator", help="Who applies (in the audit log) [default: the OS user].")
@config_option
def apply(operator: str | None, config_path: Path) -> None:
    """Make the running daemon reload the config and print what changed."""
    config = load_config_file(config_path)
    store = open_store(config, config_path)
    try:
        info = running_daemon(store, datetime.now(UTC))
        if info is None:
            fail("no cronduit daemon is running for this state; the config is read when "
                 "it starts", 1)
        asked = datetime.now(UTC)
        with store.transaction() as tx:
            tx.set_meta(APPLY_ASKED, json.dumps({"operator": operator or default_operator(),
                                                 "at": asked.isoformat()}))
        os.kill(info.pid, signal.SIGHUP)
        deadline = time.monotonic() + APPLY_WAIT_SECONDS
        while time.monotonic() < deadline:
            with store.transaction() as tx:
                raw = tx.get_meta("last_apply")
            result = json.loads(raw) if raw else None
            if result and datetime.fromisoformat(result["at"]) >= asked:
                for line in result["lines"]:
                    click.echo(line, err=not result["ok"])
                if not result["ok"]:
                    fail("apply refused: the running config stays", 2)
                return
            time.sleep(0.1)
        fail("the daemon did not answer within 10s", 1)
    finally:
        store.close()


COMMANDS: list[click.Command] = [serve, apply]
