"""A PostgreSQL state's password never shows (SPEC §10): every command that opens a state it
cannot reach says so in one line without the password and exits 1; ``doctor`` and
``status`` on a state they reach show its URL without it; the password
``settings.state_password`` names reaches libpq as its own parameter.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime, open_configured_store
from cronduit.core.config import load_config
from cronduit.store.postgres import PostgresStore
from cronduit.testing import FakeClock
from tests.helpers.postgres import URL, fresh_schema
from tests.store.test_copy import T0

SECRET = "s3cret-Pw-42"
CLOSED = "127.0.0.1:18150"
"""A port of this suite's range that nothing listens on: every connection is refused."""
JOBS = """\
jobs:
  tick: {run: 'true', every: 1m, webhook: true}
"""
COMMANDS = [
    ("status",), ("status", "--json"), ("doctor",), ("doctor", "--json"),
    ("schedule", "list"), ("schedule", "slots", "tick"), ("job", "history", "tick"),
    ("job", "logs", "tick"), ("job", "run", "tick", "--detach"), ("job", "wait", "tick"),
    ("job", "pause", "tick", "--reason", "x"), ("job", "resume", "tick"),
    ("job", "backfill", "tick", "--from", "2026-06-01T08:00:00Z", "--to",
     "2026-06-01T08:30:00Z"),
    ("audit",), ("apply",), ("webhook", "url", "tick"),
]


def _write(tmp_path: Path, state: str, extra: str = "") -> Path:
    path = tmp_path / "cronduit.yaml"
    path.write_text(f"settings:\n  state: '{state}'\n  listen: 127.0.0.1:0\n"
                    f"  webhook_secret: HOOK\n{extra}{JOBS}")
    return path


def _url(schema: str) -> str:
    """The test server's URL with ``schema`` as its search_path, as settings.state names it."""
    assert URL.startswith("postgresql://postgres@")
    return f"{URL}?options=-csearch_path%3D{schema}"


def _invoke(path: Path, *args: str) -> Result:
    runtime = Runtime(clock=FakeClock(T0), nudge=lambda _: None, sleep=lambda _: None)
    return CliRunner(env={"HOOK": "hook-secret"}).invoke(cli, [*args, "-c", str(path)],
                                                         obj=runtime)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("password", [SECRET, "s3cret%ZZPw-42"], ids=["plain", "bad-escape"])
def test_every_command_on_a_state_it_cannot_reach_says_so_in_one_line_without_the_password(
        tmp_path: Path, args: tuple[str, ...], password: str) -> None:
    """A refused connection, and a URL libpq cannot parse (whose error quotes the password
    itself): exit 1, one line naming the state by its URL with *** for the password."""
    path = _write(tmp_path, f"postgresql://cronduit:{password}@{CLOSED}/test")
    result = _invoke(path, *args)
    assert 1 == result.exit_code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    [line] = result.stderr.splitlines()
    assert line.startswith(f"cronduit: cannot open the state store at postgresql://cronduit:***"
                           f"@{CLOSED}/test: ")
    assert "s3cret" not in result.output
    assert "Traceback" not in result.output


def test_serve_on_a_state_it_cannot_reach_says_so_in_one_line_without_the_password(
        tmp_path: Path) -> None:
    path = _write(tmp_path, f"postgresql://cronduit:s3cret%ZZPw-42@{CLOSED}/test")
    done = subprocess.run([sys.executable, "-m", "cronduit", "serve", "-c", str(path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (1, "") == (done.returncode, done.stdout)
    assert [f"cronduit: cannot use the state store at postgresql://cronduit:***@{CLOSED}/test: "
            'invalid percent-encoded token: "***"'] == done.stderr.splitlines()


@pytest.fixture
def reachable(tmp_path: Path) -> Iterator[Path]:
    """A config on a schema of the test server, its URL with a password (which the server's
    trust authentication lets in)."""
    with fresh_schema() as schema:
        url = _url(schema).replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@")
        assert SECRET in url
        yield _write(tmp_path, url)


@pytest.mark.parametrize("args", [("doctor",), ("doctor", "--json"), ("status",),
                                  ("status", "--json"), ("schedule", "list")], ids=" ".join)
def test_what_a_command_prints_of_a_state_it_reaches_never_has_the_password(
        reachable: Path, args: tuple[str, ...]) -> None:
    result = _invoke(reachable, *args)
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert SECRET not in result.output
    if args[0] == "doctor":
        assert "postgresql://postgres:***@127.0.0.1:5432/test?options=" in result.stdout


def test_doctor_says_where_a_postgresql_state_is_and_where_runs_files_go(
        reachable: Path) -> None:
    result = _invoke(reachable, "doctor")
    [line] = [line for line in result.stdout.splitlines() if line.startswith("state: ")]
    assert line.startswith("state: postgresql://postgres:***@127.0.0.1:5432/test?options=")
    assert line.endswith(f"(PostgreSQL, reached); runs' files in "
                         f"{reachable.parent / '.cronduit'} (writable)")


def _connection(store: Any) -> psycopg.Connection[Any]:
    assert isinstance(store, PostgresStore)
    with store.transaction() as tx:
        return tx._cursor.connection  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize("where", ["environment", "secrets file"])
def test_the_secret_state_password_names_is_the_connections_password(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Looked up like every secret: the secrets file, then the environment."""
    with fresh_schema() as schema:
        path = _write(tmp_path, _url(schema),
                      "  state_password: PG_PASS\n  secrets_file: secrets.env\n")
        if where == "environment":
            monkeypatch.setenv("PG_PASS", "from-the-secret-42")
        else:
            (tmp_path / "secrets.env").write_text("PG_PASS=from-the-secret-42\n")
        store = open_configured_store(load_config(path.read_text(), str(path)), path)
        try:
            assert "from-the-secret-42" == _connection(store).info.password
        finally:
            store.close()


def test_a_state_password_that_names_no_set_secret_is_refused(tmp_path: Path) -> None:
    """Trying the store without it would fail for a reason that does not say why."""
    path = _write(tmp_path, f"postgresql://cronduit@{CLOSED}/test",
                  "  state_password: PG_PASS_NOT_SET\n")
    result = _invoke(path, "status")
    assert (1, "cronduit: cannot open the state store: settings.state_password names the "
               "secret PG_PASS_NOT_SET, which is not set (in the secrets file or the "
               "environment)\n") == (result.exit_code, result.stderr)
