"""Every ``--operator`` and ``--reason`` of the CLI under one rule: one line of printable
text, at most so long; anything else exits 2 with one line naming the option, and nothing is
written (no event, no pause, no audit entry, no apply asked for)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.config import load_config
from cronduit.core.text import MAX_OPERATOR, MAX_REASON
from cronduit.daemon.heartbeat import DaemonInfo, write_heartbeat
from cronduit.daemon.reload import APPLY_ASKED
from cronduit.ports import Pause, Store
from cronduit.store import open_store
from cronduit.testing import FakeClock

T0 = datetime(2026, 10, 26, 12, 0, tzinfo=UTC)
CONFIG = """\
settings: {state: state}
jobs:
  build: {run: ./build}
  nightly: {run: ./n, cron: "30 1 * * *"}
"""
FORGED = "ana\n2026-10-26T12:00:00Z run r1 of build ended: success"
BAD = [
    pytest.param(FORGED, "\\x0a", id="newline"),
    pytest.param("ana\rbo", "\\x0d", id="carriage-return"),
    pytest.param("\x1b[31mana", "\\x1b", id="escape"),
    pytest.param("ana\u2028bo", "\\u2028", id="line-separator"),
]
"""Values no operator or reason may hold, and the escape the refusal shows for each."""


@dataclass
class Install:
    path: Path
    store: Store

    def invoke(self, *args: str, env: dict[str, str] | None = None) -> Result:
        clock = FakeClock(T0)  # a command that waits gives up as time passes, never hangs
        runtime = Runtime(clock=clock, sleep=lambda s: clock.advance(timedelta(seconds=s)),
                          nudge=lambda _: None, reload=lambda _: None)
        return CliRunner().invoke(cli, [*args, "-c", str(self.path)], obj=runtime, env=env)

    def written(self) -> tuple[int, int, int, str | None]:
        """Events, pauses and audit entries in the store, and the apply asked for."""
        with self.store.transaction() as tx:
            return (len(tx.new_events(100)), len(tx.pauses()), len(tx.audit(100)),
                    tx.get_meta(APPLY_ASKED))

    def pause(self, job: str) -> None:
        with self.store.transaction() as tx:
            tx.insert_pause(Pause(job, "db migration", "ana", T0, None))

    def heartbeat(self) -> None:
        info = DaemonInfo(os.getpid(), socket.gethostname(), T0.isoformat(), T0.isoformat(),
                          False)
        write_heartbeat(self.store, info)


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    store = open_store(load_config(CONFIG, str(path)), path)
    yield Install(path, store)
    store.close()


COMMANDS = [
    pytest.param(["job", "run", "build", "--detach"], id="job-run"),
    pytest.param(["job", "pause", "nightly", "--reason", "db migration"], id="job-pause"),
    pytest.param(["job", "resume", "nightly"], id="job-resume"),
    pytest.param(["job", "backfill", "nightly", "--from", "2026-10-25T00:00",
                  "--to", "2026-10-25T02:00"], id="job-backfill"),
    pytest.param(["apply"], id="apply"),
]


def refused_alone(install: Install, result: Result, option: str, shown: str) -> None:
    """Exit 2, one line naming the option and the escape of what it held, nothing else."""
    assert 2 == result.exit_code, result.output
    assert "" == result.stdout
    assert 1 == len(result.stderr.splitlines()), result.stderr
    assert result.stderr.startswith(f"cronduit: {option}: ")
    assert shown in result.stderr
    assert not {"\x1b", "\u2028"} & set(result.stderr)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("value", "shown"), BAD)
def test_an_operator_that_is_not_one_printable_line_is_refused_everywhere(
        install: Install, command: list[str], value: str, shown: str) -> None:
    """job run, pause, resume, backfill and apply: exit 2, the store left as it was."""
    install.pause("nightly")
    install.heartbeat()  # apply would ask a daemon; it must be refused before that
    before = install.written()
    result = install.invoke(*command, "--operator", value)
    refused_alone(install, result, "--operator", shown)
    assert before == install.written()


@pytest.mark.parametrize("command", COMMANDS)
def test_an_operator_over_the_limit_is_refused_everywhere(install: Install,
                                                          command: list[str]) -> None:
    """201 characters: exit 2 saying the limit and the length, never the value."""
    install.pause("nightly")
    before = install.written()
    result = install.invoke(*command, "--operator", "x" * (MAX_OPERATOR + 1))
    refused_alone(install, result, "--operator", "at most 200 characters, not 201")
    assert "xxx" not in result.stderr
    assert before == install.written()


@pytest.mark.parametrize(("value", "shown"), [
    *BAD, pytest.param("x" * (MAX_REASON + 1), "at most 500 characters", id="too-long")])
def test_a_pause_reason_is_held_to_the_same_rule(install: Install, value: str,
                                                 shown: str) -> None:
    result = install.invoke("job", "pause", "nightly", "--reason", value)
    refused_alone(install, result, "--reason", shown)
    assert (0, 0, 0, None) == install.written()


def test_a_good_operator_is_recorded_as_typed_without_surrounding_spaces(
        install: Install) -> None:
    """Accents and inner spaces are kept; the run's label names the operator."""
    result = install.invoke("job", "run", "build", "--detach", "--operator", "  Ana Lúcia ")
    assert 0 == result.exit_code, result.output
    with install.store.transaction() as tx:
        [event] = tx.new_events(10)
    assert ("Ana Lúcia", "manual by Ana Lúcia") == (event.operator, event.label)


def test_an_os_user_name_that_breaks_the_rule_is_not_recorded(install: Install) -> None:
    """With no --operator the OS user is the default, but ``$USER`` is anyone's to set: one
    with a line break is dropped, and the run is recorded without an operator."""
    env = {"LOGNAME": FORGED, "USER": FORGED, "LNAME": FORGED, "USERNAME": FORGED}
    result = install.invoke("job", "run", "build", "--detach", env=env)
    assert 0 == result.exit_code, result.output
    with install.store.transaction() as tx:
        [event] = tx.new_events(10)
    assert (None, "manual") == (event.operator, event.label)
