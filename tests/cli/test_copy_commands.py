"""``cronduit state copy --to URL``: what it says and how it exits, on a real SQLite state
and a schema of the test server. What the copy writes is the store's (tests/store/test_copy.py).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.enums import RunState
from cronduit.daemon.heartbeat import DaemonInfo, write_heartbeat
from cronduit.daemon.lock import daemon_lock
from cronduit.paths import StatePaths
from cronduit.ports import AuditEntry, Run
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock
from tests.helpers.postgres import URL, fresh_schema
from tests.store.test_copy import T0, fill

CONFIG = """\
settings: {state: state, listen: 127.0.0.1:0}
jobs:
  report: {run: 'true', cron: '0 9 * * *'}
"""


class Install:
    """A config whose SQLite state holds a row in every table, and a target schema."""

    def __init__(self, folder: Path, target: str) -> None:
        self.path = folder / "cronduit.yaml"
        self.path.write_text(CONFIG)
        self.database = folder / "state" / "cronduit.db"
        self.target = target
        self.store = SqliteStore(self.database)
        fill(self.store)

    def invoke(self, *args: str, to: str | None = None) -> Result:
        runtime = Runtime(clock=FakeClock(T0))
        return CliRunner().invoke(
            cli, ["state", "copy", "--to", to or self.target, *args, "-c", str(self.path)],
            obj=runtime)


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    with fresh_schema() as schema:
        made = Install(tmp_path, f"{URL}?options=-csearch_path%3D{schema}")
        yield made
        made.store.close()


def test_a_copy_says_what_it_copied_and_what_to_do_next(install: Install) -> None:
    result = install.invoke()
    assert (0, [f"copied {install.database} to {install.target}: 1 timer, 2 ledger slots, "
                "1 run, 1 run end, 2 triggers, 1 delivery, 2 pauses, 1 audit entry, "
                "1 notification, 1 log tail, 1 meta entry, 1 execution, 2 execution steps, "
                "2 step attempts",
                "next: set settings.state to that URL, then start cronduit serve"]) == (
        result.exit_code, result.stdout.splitlines())


def test_copying_again_says_there_is_nothing_to_do_and_exits_0(install: Install) -> None:
    assert 0 == install.invoke().exit_code
    result = install.invoke()
    assert (0, f"already copied: {install.target} holds {install.database} as it is now; "
               "nothing to do\n") == (result.exit_code, result.stdout)
    document = json.loads(install.invoke("--json").stdout)
    assert (False, True, str(install.database), 2) == (
        document["copied"], document["already"], document["source"], document["rows"]["slots"])


def test_a_copy_while_a_daemon_holds_the_state_is_refused(install: Install) -> None:
    """The daemon lock: a daemon stopped with SIGSTOP holds it too, its heartbeat stale."""
    with daemon_lock(StatePaths(install.database.parent)):
        result = install.invoke()
    assert (3, f"cronduit: a cronduit daemon is serving {install.database.parent}: stop it "
               "first (the copy takes the state at rest)\n") == (result.exit_code,
                                                                 result.stderr)


def test_a_copy_while_a_heartbeat_is_fresh_is_refused(install: Install) -> None:
    """A daemon on another host of a shared folder holds no lock here: its heartbeat says."""
    write_heartbeat(install.store, DaemonInfo(4242, "elsewhere", T0.isoformat(),
                                              (T0 - timedelta(seconds=1)).isoformat(), False))
    result = install.invoke()
    assert (3, f"cronduit: a cronduit daemon is serving {install.database.parent} (pid 4242 "
               "on elsewhere): stop it first (the copy takes the state at rest)\n") == (
        result.exit_code, result.stderr)


def test_a_stale_heartbeat_does_not_stop_the_copy(install: Install) -> None:
    write_heartbeat(install.store, DaemonInfo(os.getpid() + 10**6, socket.gethostname(),
                                              T0.isoformat(), T0.isoformat(), False))
    assert 0 == install.invoke().exit_code


def test_runs_in_progress_refuse_the_copy_by_name(install: Install) -> None:
    with install.store.transaction() as tx:
        tx.insert_run(Run(id="r9", job="report", kind="manual", label="by hand",
                          state=RunState.RUNNING, created_at=T0))
    result = install.invoke()
    assert (3, "cronduit: not copied: runs in progress: report (run r9, running); a run's "
               "process cannot move to another host: wait for them to end (cronduit job wait "
               "JOB), then copy\n") == (result.exit_code, result.stderr)


def test_a_target_copied_from_another_state_is_refused(install: Install) -> None:
    assert 0 == install.invoke().exit_code
    with install.store.transaction() as tx:
        tx.insert_audit(AuditEntry("resume", "bob", T0, "report"))
    result = install.invoke()
    assert 3 == result.exit_code
    assert result.stderr.startswith(f"cronduit: not copied: the target already holds a copy "
                                    f"of {install.database} (made 2026-06-01T09:00:00Z) and "
                                    "this state has changed since")


def test_a_target_that_cannot_be_reached_fails_in_one_line_without_its_password(
        install: Install) -> None:
    result = install.invoke(to="postgresql://cronduit:s3cret-Pw-42@127.0.0.1:18151/test")
    assert 1 == result.exit_code
    [line] = result.stderr.splitlines()
    assert line.startswith("cronduit: not copied to postgresql://cronduit:***@127.0.0.1:18151"
                           "/test: connection failed: ")
    assert "s3cret" not in result.output


@pytest.mark.parametrize(("to", "said"), [
    ("/var/lib/cronduit", "--to: '/var/lib/cronduit' is not a postgresql:// URL"),
    ("mysql://u:s3cret@db/x", "--to: 'mysql://u:***@db/x' is not a postgresql:// URL"),
])
def test_a_target_that_is_not_a_postgresql_url_is_bad_input(install: Install, to: str,
                                                            said: str) -> None:
    result = install.invoke(to=to)
    assert (2, f"cronduit: {said}\n") == (result.exit_code, result.stderr)


def test_a_config_whose_state_is_postgresql_already_is_bad_input(install: Install) -> None:
    install.path.write_text("settings: {state: 'postgresql://u:s3cret@db/x'}\n")
    result = install.invoke()
    assert (2, "cronduit: settings.state is already PostgreSQL (postgresql://u:***@db/x); "
               "give the config whose state is the SQLite directory to copy\n") == (
        result.exit_code, result.stderr)


def test_a_config_with_no_state_yet_has_nothing_to_copy(install: Install,
                                                         tmp_path: Path) -> None:
    install.path.write_text("settings: {state: elsewhere}\n")
    result = install.invoke()
    assert (1, f"cronduit: no SQLite state at {tmp_path / 'elsewhere' / 'cronduit.db'}: "
               "nothing to copy\n") == (result.exit_code, result.stderr)
    assert not (tmp_path / "elsewhere").exists()


def test_a_state_password_naming_no_set_secret_is_refused(install: Install) -> None:
    install.path.write_text(CONFIG.replace("listen:", "state_password: PG_NOT_SET, listen:"))
    result = install.invoke()
    assert (1, "cronduit: settings.state_password names the secret PG_NOT_SET, which is not "
               "set (in the secrets file or the environment)\n") == (result.exit_code,
                                                                    result.stderr)
