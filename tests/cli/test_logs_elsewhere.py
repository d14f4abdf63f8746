"""``cronduit job logs`` on a state shared by many hosts, for a run this host did not run.

The command's body (:func:`~cronduit.cli.job_commands.show_log`) runs on a PostgreSQL store
with a state built in code: a config file cannot name a PostgreSQL state in this version yet.
The run's folder is absent from this host, as on any host but the one that ran it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from cronduit.cli.context import Runtime, State
from cronduit.cli.job_commands import show_log
from cronduit.core.config.model import Config, Settings
from cronduit.core.log_tails import LogTail
from cronduit.paths import StatePaths
from cronduit.ports import Run
from cronduit.testing import FakeClock
from tests.helpers.postgres import URL, postgres_store

T0 = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)
RUNNING = Run(id="r1", job="nightly", kind="timer", label="cron", state="running",
              created_at=T0, started_at=T0, attempts=1)


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[State]:
    """A state shared by many hosts, as this host's CLI opens it."""
    config = Config(settings=Settings(state=URL), filename=str(tmp_path / "cronduit.yaml"))
    with postgres_store() as store:
        yield State(config, tmp_path / "cronduit.yaml", store, StatePaths(tmp_path / "runs"))


def shown(state: State, run: Run, follow: bool,
          sleep: Callable[[float], None] = lambda _: None) -> Result:
    """What ``job logs`` prints for ``run``, as the command would, with its exit status;
    ``sleep`` plays the world while it waits between looks."""
    with state.store.transaction() as tx:
        tx.insert_run(run)

    @click.command()
    def logs() -> None:
        show_log(state, Runtime(clock=FakeClock(T0), sleep=sleep), run, follow)

    return CliRunner().invoke(logs)


def test_following_a_run_going_on_another_host_says_so_and_exits_1(shared: State) -> None:
    """No file here will ever grow: the command says where the log is instead of waiting
    (the run record names no node in this version, so no node is named)."""
    def waits(_: float) -> None:
        raise AssertionError("it waits for a file that never comes")

    result = shown(shared, RUNNING, follow=True, sleep=waits)
    assert (1, b"", "cronduit: run r1 runs on another host: its log is there, and only there "
                    "can it be followed; once the attempt ends, cronduit job logs nightly --run "
                    "r1 prints the tail stored with the run\n") == (
        result.exit_code, result.stdout_bytes, result.stderr)


def test_a_run_going_on_another_host_without_a_stored_tail_says_where_its_log_is(
        shared: State) -> None:
    """Its first attempt has not ended, so no tail is stored yet: said, and exit 0."""
    result = shown(shared, RUNNING, follow=False)
    assert (0, "cronduit: run r1 runs on another host, which has its log; its tail is stored "
               "with the run when its attempt ends\n") == (result.exit_code, result.stderr)


def test_a_run_in_backoff_on_another_host_shows_the_tail_its_failed_attempt_left(
        shared: State) -> None:
    """Between attempts, the tail the first attempt's end stored is what there is to show."""
    with shared.store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(b"attempt 1: \xff failed\n", 20), T0)
    result = shown(shared, replace(RUNNING, state="backoff"), follow=False)
    assert (0, b"attempt 1: \xff failed\n") == (result.exit_code, result.stdout_bytes)
    assert "when attempt 1 ended follows: all 20 bytes\n" in result.stderr


def test_a_run_this_host_runs_is_followed_from_its_file(shared: State) -> None:
    """The run's folder is here: its log is followed from the file until the run ends, as
    on one host."""
    log = shared.paths.log("r1")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"here\n")

    def ends() -> None:
        with log.open("ab") as file:
            file.write(b"and done\n")
        with shared.store.transaction() as tx:
            tx.update_run("r1", state="ended", outcome="success", finished_at=T0)

    result = shown(shared, RUNNING, follow=True, sleep=lambda _: ends())
    assert (0, b"here\nand done\n", "") == (
        result.exit_code, result.stdout_bytes, result.stderr)
