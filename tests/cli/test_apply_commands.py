"""``cronduit apply`` against a real store; the runtime's ``reload`` plays the daemon, which
answers in the store as the real one does (``last_apply``: at, ok, lines)."""

from __future__ import annotations

import json
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
from cronduit.daemon.heartbeat import DaemonInfo, write_heartbeat
from cronduit.daemon.reload import APPLY_ASKED
from cronduit.ports import Store
from cronduit.store import open_store
from cronduit.testing import FakeClock

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
CONFIG = "settings: {state: state}\njobs:\n  tick: {run: ./t, every: 1h}\n"


@dataclass
class Install:
    path: Path
    store: Store
    clock: FakeClock

    def invoke(self, *args: str, answer: tuple[bool, list[str]] | None = None) -> Result:
        """Run the command; ``answer`` is what the daemon says when asked to reload."""
        def play_the_daemon(_: DaemonInfo) -> None:
            if answer is not None:
                self.answer(*answer)

        def sleep(seconds: float) -> None:
            self.clock.advance(timedelta(seconds=seconds))

        runtime = Runtime(clock=self.clock, sleep=sleep, nudge=lambda _: None,
                          reload=play_the_daemon)
        return CliRunner().invoke(cli, ["apply", *args, "-c", str(self.path)], obj=runtime)

    def answer(self, ok: bool, lines: list[str]) -> None:
        with self.store.transaction() as tx:
            tx.set_meta("last_apply", json.dumps({"at": self.clock.now().isoformat(),
                                                  "ok": ok, "lines": lines}))

    def heartbeat(self, host: str | None = None) -> None:
        info = DaemonInfo(os.getpid(), host or socket.gethostname(), T0.isoformat(),
                          T0.isoformat(), False)
        write_heartbeat(self.store, info)


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    store = open_store(load_config(CONFIG, str(path)), path)
    yield Install(path, store, FakeClock(T0))
    store.close()


def test_apply_prints_what_changed_and_leaves_who_asked(install: Install) -> None:
    """The daemon's change lines on stdout; the operator is in the store for its audit."""
    install.heartbeat()
    result = install.invoke("--operator", "ana", answer=(True, ["nightly: added"]))
    with install.store.transaction() as tx:
        asked = json.loads(tx.get_meta(APPLY_ASKED) or "{}")
    assert (0, "nightly: added\n", "", "ana") == (
        result.exit_code, result.stdout, result.stderr, asked["operator"])


def test_apply_json_is_one_document_with_the_changes(install: Install) -> None:
    """ok, when, the change lines and no errors."""
    install.heartbeat()
    result = install.invoke("--json", answer=(True, ["nightly: added", "tick: changed"]))
    assert (0, {"ok": True, "at": "2026-12-01T10:00:00Z",
                "changes": ["nightly: added", "tick: changed"], "errors": []}) == (
        result.exit_code, json.loads(result.stdout))


def test_apply_json_of_an_unchanged_config_has_no_change_lines(install: Install) -> None:
    """The daemon's "no changes" line is an empty list, so a script can test for it."""
    install.heartbeat()
    result = install.invoke("--json", answer=(True, ["no changes"]))
    assert (0, []) == (result.exit_code, json.loads(result.stdout)["changes"])


def test_a_refused_apply_json_gives_the_errors_and_still_exits_2(install: Install) -> None:
    """The config's errors in the document; the refusal is one line on stderr, as without
    --json."""
    install.heartbeat()
    errors = ["cronduit.yaml:3:9: jobs.tick.every: must be a duration such as 30s"]
    result = install.invoke("--json", answer=(False, errors))
    assert (2, {"ok": False, "at": "2026-12-01T10:00:00Z", "changes": [], "errors": errors},
            "cronduit: apply refused: the running config stays\n") == (
        result.exit_code, json.loads(result.stdout), result.stderr)


def test_apply_with_no_daemon_exits_1_with_nothing_on_stdout(install: Install) -> None:
    """--json does not change the exit status or where the error goes."""
    result = install.invoke("--json")
    assert (1, "", "cronduit: no cronduit daemon is running for this state; the config is "
                   "read when it starts\n") == (result.exit_code, result.stdout, result.stderr)


def test_apply_gives_up_when_the_daemon_does_not_answer(install: Install) -> None:
    """The wait is counted on the runtime's clock: ten seconds, then exit 1."""
    install.heartbeat()
    result = install.invoke("--json")
    assert (1, "", "cronduit: the daemon did not answer within 10s\n") == (
        result.exit_code, result.stdout, result.stderr)


def test_apply_does_not_signal_a_daemon_on_another_host(install: Install) -> None:
    """Its pid means another process here: exit 1 naming the host, no signal sent and
    nothing left for the daemon."""
    install.heartbeat(host="elsewhere.example")
    signalled: list[DaemonInfo] = []
    runtime = Runtime(clock=install.clock, sleep=lambda _: None, reload=signalled.append)
    result = CliRunner().invoke(cli, ["apply", "-c", str(install.path)], obj=runtime)
    with install.store.transaction() as tx:
        asked = tx.get_meta(APPLY_ASKED)
    assert (1, "cronduit: the daemon runs on elsewhere.example: run cronduit apply there\n",
            [], None) == (result.exit_code, result.stderr, signalled, asked)
