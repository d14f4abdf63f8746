"""What the state commands get from the world: the clock, a way to wait, the store, the daemon.

Commands never read the time, sleep or signal the daemon directly; they ask :func:`runtime`,
which is the real thing unless a caller passed another :class:`Runtime` as click's context
object. Tests do that (``CliRunner().invoke(cli, args, obj=Runtime(clock, sleep=...))``) so
that following a log, waiting for a run end or an apply's answer needs neither patches nor
real time: their ``sleep`` moves their clock, and their ``reload`` plays the daemon.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click

from cronduit.cli.options import fail, read_config_text, refuse_config
from cronduit.clock import SystemClock
from cronduit.core.config import ConfigErrors, Settings, load_config
from cronduit.core.config.in_force import InForce, config_in_force
from cronduit.core.config.loader import load_settings
from cronduit.core.config.model import Config, Job
from cronduit.daemon import DaemonInfo, read_applied, running_daemon, signal_daemon
from cronduit.paths import StatePaths
from cronduit.ports import Clock, Store
from cronduit.secrets import SecretsError, state_password
from cronduit.store import driver_errors, open_store, scrubbed, state_location

POLL_SECONDS = 0.2
"""How often following and waiting commands look at the store again."""


def cannot_open() -> tuple[type[Exception], ...]:
    """What opening the state store raises when it cannot be opened, whatever its backend
    (asked when an error is caught: a PostgreSQL state's driver loads with its store)."""
    return (OSError, *driver_errors())


def open_configured_store(config: Config, config_path: Path) -> Store:
    """The store ``config`` names, with the password ``settings.state_password`` names.
    When it cannot be opened (a server down or refusing, a disk that fails), exit 1 with one
    line naming where the state is and why, never a traceback, never a password."""
    password = None
    try:
        password = state_password(config, config_path, os.environ)
        return open_store(config, config_path, password=password)
    except NotImplementedError as error:
        fail(str(error), code=1)
    except SecretsError as error:
        fail(f"cannot open the state store: {error}", code=1)
    except cannot_open() as error:
        fail(cannot_open_line(config, config_path, error, password), code=1)


def cannot_open_line(config: Config, config_path: Path, error: Exception,
                     password: str | None = None, *, failed: str = "cannot open") -> str:
    """Why the state store cannot be opened (or, with ``failed``, what else failed), in one
    line: where the state is (a URL without its password) and the driver's reason (scrubbed
    of any password it quotes)."""
    why = " ".join(scrubbed(str(error), config.settings.state, password).split())
    where = "at" if config.settings.uses_postgres else "in"
    return (f"{failed} the state store {where} {state_location(config, config_path)}: "
            f"{why or type(error).__name__}")


def nudge_daemon(info: DaemonInfo) -> None:
    """Ask a daemon on this host to look at its work now (SIGUSR1); best effort."""
    if info.host != socket.gethostname():
        return  # another host's daemon finds the event on its next tick
    with contextlib.suppress(OSError):
        signal_daemon(info, signal.SIGUSR1)


def ask_reload(info: DaemonInfo) -> None:
    """Ask the daemon on this host to reload its config (SIGHUP); exit 1 when it cannot be
    signalled (its process is gone, whatever has its pid now, or is another user's)."""
    try:
        signal_daemon(info, signal.SIGHUP)
    except OSError as error:
        fail(f"cannot signal the daemon (pid {info.pid}): {error.strerror or error}", code=1)


@dataclass(frozen=True)
class Runtime:
    """The clock, the wait between looks at the store, and how to wake the daemon or make it
    reload."""

    clock: Clock = field(default_factory=SystemClock)
    sleep: Callable[[float], None] = time.sleep
    nudge: Callable[[DaemonInfo], None] = nudge_daemon
    reload: Callable[[DaemonInfo], None] = ask_reload


def runtime() -> Runtime:
    """The runtime the caller passed as the context object, else the real one."""
    found = click.get_current_context().find_object(Runtime)
    return found if found is not None else Runtime()


@dataclass(frozen=True)
class State:
    """A command's view of one installation: its config, store and state directory."""

    config: Config
    config_path: Path
    store: Store
    paths: StatePaths


@contextlib.contextmanager
def open_state(config_path: Path, *, the_file: bool = False) -> Iterator[State]:
    """Open the state the config names (exit 1 if that fails), with the config in force:
    the file, or the config the daemon applied when the file is not the one it runs (one
    warning on stderr says so; see :mod:`cronduit.core.config.in_force`). A file that does
    not validate, with no config ever applied, exits 2 with its errors.

    ``the_file`` is for a command about the file itself (``apply``): it must validate, and
    is the config the command gets."""
    text = read_config_text(config_path)
    file: Config | ConfigErrors
    try:
        file = load_config(text, str(config_path))
        settings: Settings | None = file.settings
    except ConfigErrors as errors:
        file = errors
        settings = load_settings(text, str(config_path))
    located = Config(settings=settings or Settings(), filename=str(config_path))
    paths = StatePaths.of(located, config_path)
    if isinstance(file, ConfigErrors) and (the_file or not paths.database.exists()):
        refuse_config(file)  # no state there, so nothing was ever applied
    store = open_configured_store(located, config_path)
    try:
        in_force = InForce(file) if isinstance(file, Config) and the_file else config_in_force(
            file, read_applied(store), running_daemon(store, runtime().clock.now()) is not None,
            str(config_path))
        if in_force is None:
            assert isinstance(file, ConfigErrors)
            refuse_config(file)
        if in_force.warning is not None:
            click.echo(f"cronduit: warning: {in_force.warning}", err=True)
        yield State(in_force.config, config_path, store, paths)
    finally:
        store.close()


def known_job(state: State, name: str) -> Job | None:
    """The configured job ``name``; ``None`` for a job removed from the config whose history
    the store still holds (its record stays readable, with a note on stderr). Any other name
    exits 2."""
    job = state.config.jobs.get(name)
    if job is not None:
        return job
    with state.store.transaction() as tx:
        has_history = bool(tx.history(name, 1))
    if not has_history:
        fail(f"no job named {name!r} in {state.config_path}")
    click.echo(f"cronduit: {name} is not in {state.config_path} (removed?); "
               "showing what the state store recorded", err=True)
    return None


def wake_daemon(state: State, rt: Runtime) -> DaemonInfo | None:
    """Ask the daemon serving this state to look at its work now (what a command just
    recorded); the daemon, or None when none is running."""
    daemon = running_daemon(state.store, rt.clock.now())
    if daemon is not None:
        rt.nudge(daemon)
    return daemon
