"""``cronduit job logs`` on a state shared by many hosts, for runs of other hosts.

A real PostgreSQL state (a schema of its own) named by the config file, as on every host;
this host is node ``here``. A run of another node has no folder here, as on any host but
the one that ran it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.config import load_config
from cronduit.core.enums import EventState, Outcome, RunState
from cronduit.core.log_tails import LogTail
from cronduit.daemon import DaemonInfo
from cronduit.daemon.heartbeat import write_heartbeat
from cronduit.paths import StatePaths
from cronduit.ports import NodeClaim, Run, Store
from cronduit.store import membership_of, open_store
from cronduit.testing import FakeClock
from tests.helpers.postgres import URL, fresh_schema

T0 = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)
CONFIG = """\
settings: {{state: '{url}', node: here}}
jobs:
  nightly: {{run: ./nightly, cron: "0 3 * * *"}}
"""
RUNNING = Run(id="r1", job="nightly", kind="timer", label="cron", state="running",
              created_at=T0, started_at=T0, attempts=1, node="web-2")


@dataclass
class Shared:
    """A config naming the shared state, its store, and this host's folder for runs."""

    path: Path
    store: Store
    paths: StatePaths

    def invoke(self, *args: str, sleep: Callable[[float], None] = lambda _: None) -> Result:
        runtime = Runtime(clock=FakeClock(T0), sleep=sleep)
        return CliRunner().invoke(cli, [*args, "-c", str(self.path)], obj=runtime)

    def add(self, run: Run) -> None:
        with self.store.transaction() as tx:
            tx.insert_run(run)


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Shared]:
    with fresh_schema() as schema:
        path = tmp_path / "cronduit.yaml"
        text = CONFIG.format(url=f"{URL}?options=-csearch_path%3D{schema}")
        path.write_text(text)
        config = load_config(text, str(path))
        store = open_store(config, path)
        try:
            yield Shared(path, store, StatePaths.of(config, path))
        finally:
            store.close()


def node_listening(store: Store, name: str, listen: str) -> None:
    """Another host's daemon holds node ``name`` and listens on ``listen``."""
    membership = membership_of(store)
    assert membership is not None
    membership.register(NodeClaim(name, "host-2", 4242, None, listen), 30.0,
                        lambda pid, start: False)


def never(_: float) -> None:
    raise AssertionError("it waits for a file that never comes")


def test_following_a_run_going_on_another_node_names_it_and_where_it_listens(
        shared: Shared) -> None:
    """No file here will ever grow: the command says which node has the log, and where that
    node's daemon listens, instead of waiting; exit 1."""
    node_listening(shared.store, "web-2", "10.0.0.2:8770")
    shared.add(RUNNING)
    result = shared.invoke("job", "logs", "nightly", "--follow", sleep=never)
    assert (1, b"", "cronduit: run r1 runs on node web-2 (its daemon listens on "
                    "10.0.0.2:8770): its log is there, and only there can it be followed; once "
                    "the attempt ends, cronduit job logs nightly --run r1 prints the tail "
                    "stored with the run\n") == (
        result.exit_code, result.stdout_bytes, result.stderr)


def test_following_a_run_of_a_node_the_nodes_table_lacks_names_the_node_only(
        shared: Shared) -> None:
    shared.add(RUNNING)
    result = shared.invoke("job", "logs", "nightly", "-f", sleep=never)
    assert (1, "cronduit: run r1 runs on node web-2: its log is there, and only there can it "
               "be followed; once the attempt ends, cronduit job logs nightly --run r1 prints "
               "the tail stored with the run\n") == (result.exit_code, result.stderr)


def test_a_run_going_on_another_node_without_a_stored_tail_says_where_its_log_is(
        shared: Shared) -> None:
    """Its first attempt has not ended, so no tail is stored yet: said, and exit 0."""
    shared.add(RUNNING)
    result = shared.invoke("job", "logs", "nightly")
    assert (0, "cronduit: run r1 runs on node web-2, which has its log; its tail is stored "
               "with the run when its attempt ends\n") == (result.exit_code, result.stderr)


def test_a_run_in_backoff_on_another_node_shows_the_tail_its_failed_attempt_left(
        shared: Shared) -> None:
    """Between attempts, the tail the first attempt's end stored is what there is to show."""
    shared.add(replace(RUNNING, state="backoff"))
    with shared.store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(b"attempt 1: \xff failed\n", 20), T0)
    result = shared.invoke("job", "logs", "nightly")
    assert (0, b"attempt 1: \xff failed\n", "cronduit: no log file of run r1 on this host (it "
                                            "ran on node web-2); the tail stored with the run "
                                            "when attempt 1 ended follows: all 20 bytes\n") == (
        result.exit_code, result.stdout_bytes, result.stderr)


def test_an_ended_run_of_another_host_prints_its_stored_tail(shared: Shared) -> None:
    """The log was written on the host that ran the run and its tail stored; that host's
    folder is not here: the tail is printed, raw."""
    shared.add(replace(RUNNING, state="ended", outcome="failure", finished_at=T0))
    log = shared.paths.log("r1")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"x" * 2_000_000 + b"\x1b[31mboom\x1b[0m\n")
    with shared.store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(log.read_bytes()[-(1 << 20):], 2_000_014), T0)
    shutil.rmtree(shared.paths.run("r1"))
    result = shared.invoke("job", "logs", "nightly", "--run", "r1")
    assert (0, b"x" * ((1 << 20) - 14) + b"\x1b[31mboom\x1b[0m\n",
            "cronduit: no log file of run r1 on this host (it ran on node web-2); the tail "
            "stored with the run when attempt 1 ended follows: its last 1048576 bytes of "
            "2000014\n") == (result.exit_code, result.stdout_bytes, result.stderr)


def test_a_run_this_node_runs_is_followed_from_its_file(shared: Shared) -> None:
    """The run goes on this host's node: its log is followed from the file until the run
    ends, as on one host."""
    shared.add(replace(RUNNING, node="here"))
    log = shared.paths.log("r1")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"here\n")

    def ends(_: float) -> None:
        with log.open("ab") as file:
            file.write(b"and done\n")
        with shared.store.transaction() as tx:
            tx.update_run("r1", state="ended", outcome="success", finished_at=T0)

    result = shared.invoke("job", "logs", "nightly", "--follow", sleep=ends)
    assert (0, b"here\nand done\n", "") == (result.exit_code, result.stdout_bytes, result.stderr)


def test_a_log_stored_whole_after_max_log_cut_it_says_so(shared: Shared) -> None:
    """A log within the tail's size is stored whole; what max_log had cut is told. With
    --follow, an ended run's stored tail is printed the same."""
    shared.add(replace(RUNNING, state="ended", outcome="success", finished_at=T0, attempts=2))
    with shared.store.transaction() as tx:
        tx.store_log_tail("r1", 2, LogTail(b"all of it\n", 10, cut=4096), T0)
    result = shared.invoke("job", "logs", "nightly", "--follow")
    assert (0, "all of it\n", "cronduit: no log file of run r1 on this host (it ran on node "
                              "web-2); the tail stored with the run when attempt 2 ended "
                              "follows: all 10 bytes (max_log had cut 4096 bytes out of its "
                              "middle)\n") == (result.exit_code, result.stdout, result.stderr)


def test_the_host_that_ran_the_run_prints_its_file_not_the_stored_tail(
        shared: Shared) -> None:
    """Where the log file is, it is read whole, and nothing says "stored"."""
    shared.add(replace(RUNNING, state="ended", outcome="success", finished_at=T0, node="here"))
    log = shared.paths.log("r1")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"the whole log\n")
    with shared.store.transaction() as tx:
        tx.store_log_tail("r1", 1, LogTail(b"whole log\n", 14), T0)
    result = shared.invoke("job", "logs", "nightly")
    assert (0, "the whole log\n", "") == (result.exit_code, result.stdout, result.stderr)


def test_an_ended_run_with_neither_a_file_nor_a_stored_tail_left_no_log(
        shared: Shared) -> None:
    shared.add(replace(RUNNING, state="ended", outcome="failure", finished_at=T0))
    result = shared.invoke("job", "logs", "nightly")
    assert (1, "cronduit: run r1 left no log\n") == (result.exit_code, result.stderr)


def test_a_run_asked_for_here_that_ran_on_another_host_prints_its_stored_tail(
        shared: Shared) -> None:
    """``job run`` follows the run it asked for; when another host's daemon ran it, what it
    prints is the tail stored with the run, then the outcome."""
    write_heartbeat(shared.store, DaemonInfo(4242, "host-2", T0.isoformat(), T0.isoformat(), False),
                    shared=True)
    ran = False

    def another_host_runs_it(_: float) -> None:
        nonlocal ran
        if ran:
            return
        ran = True
        with shared.store.transaction() as tx:
            (event,) = tx.waiting_events("nightly") or tx.new_events(10)
            run = replace(RUNNING, id="r9", kind="manual", state=RunState.ENDED,
                          outcome=Outcome.SUCCESS, finished_at=T0, trigger_seq=event.seq)
            tx.insert_run(run)
            tx.set_event_state([event.seq], EventState.CONSUMED, run.id)
            tx.store_log_tail(run.id, 1, LogTail(b"done elsewhere\n", 15), T0)

    result = shared.invoke("job", "run", "nightly", sleep=another_host_runs_it)
    assert 0 == result.exit_code, result.output
    assert "done elsewhere\n" in result.stdout
    assert "it ran on node web-2" in result.stderr
