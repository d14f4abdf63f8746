"""``cronduit state copy --to postgresql://…``: move one host's SQLite state into PostgreSQL.

The copy itself is the store's (:mod:`cronduit.store.copy`); this command finds the SQLite
state the config names, makes sure no daemon serves it (the daemon lock, held for the copy,
and the heartbeat), gets the password ``settings.state_password`` names, and says what was
done. Exit 0 when copied or already copied, 3 when refused (a daemon serving the state, runs
in progress, a target that holds other rows), 1 when the copy failed, 2 for bad input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cronduit.cli.context import runtime
from cronduit.cli.options import config_option, fail, load_config_file
from cronduit.cli.render import echo_json
from cronduit.core.config.model import Config
from cronduit.daemon import AlreadyServing, daemon_lock, running_daemon
from cronduit.paths import StatePaths
from cronduit.secrets import SecretsError, state_password
from cronduit.store import driver_errors, open_store, redacted, scrubbed

if TYPE_CHECKING:
    from cronduit.store.copy import Copied

_SCHEMES = ("postgresql://", "postgres://")
_WORDS = {"timers": ("timer", "timers"), "slots": ("ledger slot", "ledger slots"),
          "runs": ("run", "runs"), "run_ends": ("run end", "run ends"),
          "events": ("trigger", "triggers"), "deliveries": ("delivery", "deliveries"),
          "pauses": ("pause", "pauses"), "audit": ("audit entry", "audit entries"),
          "notifications": ("notification", "notifications"),
          "run_logs": ("log tail", "log tails"), "meta": ("meta entry", "meta entries"),
          "executions": ("execution", "executions"),
          "execution_steps": ("execution step", "execution steps"),
          "step_attempts": ("step attempt", "step attempts")}
"""How the summary names each table's rows, one and many."""


@click.group("state")
def state() -> None:
    """The state store as a whole: moving it from one host's SQLite file to PostgreSQL."""


@state.command("copy")
@click.option("--to", "target", required=True, metavar="URL",
              help="The PostgreSQL database to copy into (postgresql://…; its search_path's "
                   "first schema takes the tables), empty or holding this very copy.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
@config_option
def copy(target: str, as_json: bool, config_path: Path) -> None:
    """Copy the SQLite state the config names into an empty PostgreSQL database: timers, the
    slot ledger, runs, triggers, pauses, audit, notifications. Then set settings.state to
    the URL and serve: every timer continues where it stopped.

    Refused (exit 3) while a daemon serves the SQLite state or runs are in progress (wait for
    them to end), and for a target that already holds rows, unless they are this same copy:
    copying again then does nothing (exit 0).
    """
    config = load_config_file(config_path)
    if config.settings.uses_postgres:
        fail(f"settings.state is already PostgreSQL ({redacted(config.settings.state)}); "
             "give the config whose state is the SQLite directory to copy")
    if not target.startswith(_SCHEMES):
        fail(f"--to: {redacted(target)!r} is not a postgresql:// URL")
    paths = StatePaths.of(config, config_path)
    if not paths.database.is_file():
        fail(f"no SQLite state at {paths.database}: nothing to copy", code=1)
    try:
        password = state_password(config, config_path, os.environ)
    except SecretsError as error:
        fail(str(error), code=1)
    result = _copied(config, config_path, target, password)
    if as_json:
        echo_json({"copied": not result.already, "already": result.already,
                   "source": result.source, "target": result.target,
                   "rows": dict(result.rows), "fingerprint": result.fingerprint})
    elif result.already:
        click.echo(f"already copied: {result.target} holds {result.source} as it is now; "
                   "nothing to do")
    else:
        click.echo(f"copied {result.source} to {result.target}: {_summary(result)}")
        click.echo("next: set settings.state to that URL, then start cronduit serve")


def _copied(config: Config, config_path: Path, target: str, password: str | None) -> Copied:
    """The copy made with the daemon lock held; every refusal and failure exits here."""
    from cronduit.store.copy import CopyFailed, CopyRefused, copy_state  # noqa: PLC0415 - psycopg

    paths = StatePaths.of(config, config_path)
    now = runtime().clock.now()
    unreachable: tuple[type[Exception], ...] = (OSError, *driver_errors())  # psycopg's too
    try:
        with daemon_lock(paths):
            _refuse_a_live_daemon(config, config_path, paths)
            return copy_state(paths.database, target, at=now, password=password)
    except AlreadyServing:
        fail(f"a cronduit daemon is serving {paths.root}: stop it first (the copy takes the "
             "state at rest)", code=3)
    except CopyRefused as refused:
        fail(f"not copied: {refused}", code=3)
    except CopyFailed as failed:
        fail(f"not copied: {failed}", code=1)
    except unreachable as error:
        why = " ".join(scrubbed(str(error), target, password).split())
        fail(f"not copied to {redacted(target)}: {why or type(error).__name__}", code=1)


def _refuse_a_live_daemon(config: Config, config_path: Path, paths: StatePaths) -> None:
    """A daemon whose heartbeat is fresh serves the state from elsewhere (another host on a
    shared folder): exit 3 as for one that holds the lock."""
    store = open_store(config, config_path)
    try:
        serving = running_daemon(store, runtime().clock.now())
    finally:
        store.close()
    if serving is not None:
        fail(f"a cronduit daemon is serving {paths.root} (pid {serving.pid} on "
             f"{serving.host}): stop it first (the copy takes the state at rest)", code=3)


def _summary(result: Copied) -> str:
    """``3 timers, 120 ledger slots, 1 run, …``: the tables with rows, timers first."""
    order = list(_WORDS)
    parts = []
    for name, count in sorted(result.rows.items(),
                              key=lambda item: order.index(item[0]) if item[0] in order
                              else len(order)):
        one, many = _WORDS.get(name, (f"{name} row", f"{name} rows"))
        if count:
            parts.append(f"{count} {one if count == 1 else many}")
    return ", ".join(parts) or "no rows"


COMMANDS: list[click.Command] = [state]
