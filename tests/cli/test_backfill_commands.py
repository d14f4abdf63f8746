"""``cronduit job backfill`` against a real store; where a daemon would run the slots, the
runtime's ``sleep`` plays one engine tick (on a fake runner) each time the command waits."""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.config import load_config
from cronduit.daemon.heartbeat import DaemonInfo, write_heartbeat
from cronduit.engine import Engine
from cronduit.ports import Pause, Store
from cronduit.store import open_store
from cronduit.testing import FakeClock, FakeRunner

T0 = datetime(2026, 10, 26, 12, 0, tzinfo=UTC)
CONFIG = """\
settings: {state: state}
jobs:
  halfhour: {run: ./h, cron: "*/30 * * * *", time_zone: Europe/London}
  nightly: {run: ./n, cron: "30 1 * * *", time_zone: Europe/London}
  adhoc: {run: ./a}
"""
WINDOW = ["--from", "2026-10-25T01:00", "--to", "2026-10-25T02:00"]
"""The fall-back night on London's wall clock: 01:00 and 01:30 twice, then 02:00."""


@dataclass
class Install:
    path: Path
    store: Store

    def invoke(self, *args: str, sleep: Callable[[float], None] = lambda _: None) -> Result:
        runtime = Runtime(clock=FakeClock(T0), sleep=sleep, nudge=lambda _: None)
        return CliRunner().invoke(cli, [*args, "-c", str(self.path)], obj=runtime)

    def heartbeat(self) -> None:
        info = DaemonInfo(os.getpid(), socket.gethostname(), T0.isoformat(), T0.isoformat(),
                          False)
        write_heartbeat(self.store, info)

    def daemon(self, exit_status: Callable[[str], int] = lambda _: 0) -> Callable[[float], None]:
        """A sleep that plays the daemon: one tick, then every attempt going exits."""
        config = load_config(CONFIG, str(self.path))
        runner = FakeRunner()
        engine = Engine(config, self.store, runner)

        def sleep(_: float) -> None:
            engine.tick(T0)
            with self.store.transaction() as tx:
                labels = {run.id: run.label for run in tx.active_runs()}
            for run_id in runner.running():
                runner.finish(run_id, exit_status(labels.get(run_id, "")))
            engine.tick(T0)
        return sleep


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    store = open_store(load_config(CONFIG, str(path)), path)
    yield Install(path, store)
    store.close()


def test_dry_run_lists_the_slots_of_the_fall_back_night_and_accepts_nothing(
    install: Install,
) -> None:
    """Wall-clock window: both passes through the repeated hour, nothing in the store."""
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, "--dry-run")
    assert (0, [
        "SLOT                  NAME",
        "2026-10-25T00:00:00Z  2026-10-25 01:00 Europe/London",
        "2026-10-25T00:30:00Z  2026-10-25 01:30 Europe/London",
        "2026-10-25T01:00:00Z  2026-10-25 01:00 Europe/London (repeated)",
        "2026-10-25T01:30:00Z  2026-10-25 01:30 Europe/London (repeated)",
        "2026-10-25T02:00:00Z  2026-10-25 02:00 Europe/London",
    ]) == (result.exit_code, result.stdout.splitlines())
    assert "dry run: 5 slots of halfhour would run; nothing was accepted\n" == result.stderr
    with install.store.transaction() as tx:
        assert [] == tx.new_events(10)


def test_dry_run_of_a_fixed_time_job_gives_the_spring_gap_slot_once(install: Install) -> None:
    """30 1 * * * over 28-30 March: the gap day's slot is 02:00 BST."""
    result = install.invoke("job", "backfill", "nightly", "--from", "2026-03-28T00:00Z",
                            "--to", "2026-03-30T23:00Z", "--dry-run")
    assert ["2026-03-28 01:30 Europe/London", "2026-03-29 02:00 Europe/London",
            "2026-03-30 01:30 Europe/London"] == [
        line.split("  ", 1)[1] for line in result.stdout.splitlines()[1:]]


@pytest.mark.parametrize(("args", "message"), [
    (["--from", "2026-10-26T00:00Z", "--to", "2026-10-27T00:00Z"],
     "cronduit: --to: 2026-10-27T00:00:00Z is in the future"),
    (["--from", "2026-10-25T03:00Z", "--to", "2026-10-25T01:00Z"],
     "cronduit: --from: 2026-10-25T03:00:00Z is after --to"),
    (["--from", "2026-10-25T00:01Z", "--to", "2026-10-25T00:29Z"],
     "cronduit: --from/--to: no slot of the job falls between"),
    (["--from", "2026-10-01T00:00Z", "--to", "2026-10-25T00:00Z", "--max", "10"],
     "cronduit: --max: the window holds more than 10 slots"),
    (["--from", "yesterday", "--to", "2026-10-25T00:00Z"],
     "cronduit: --from: 'yesterday' is not an ISO 8601 time"),
])
def test_a_bad_window_is_refused_with_exit_2_naming_the_option(
    install: Install, args: list[str], message: str,
) -> None:
    """Nothing is accepted; stderr names the option and its rule."""
    result = install.invoke("job", "backfill", "halfhour", *args)
    assert (2, True) == (result.exit_code, result.stderr.startswith(message)), result.stderr
    with install.store.transaction() as tx:
        assert [] == tx.new_events(10)


def test_an_untimed_job_is_refused_with_exit_2(install: Install) -> None:
    """A job without cron, at or every has no slots."""
    result = install.invoke("job", "backfill", "adhoc", *WINDOW)
    assert (2, "cronduit: job adhoc has no cron, at or every: it has no slots to backfill\n"
            ) == (result.exit_code, result.stderr)


def test_a_paused_job_is_refused_with_exit_3_naming_who_paused_it(install: Install) -> None:
    """The pause's operator and reason are in the message."""
    with install.store.transaction() as tx:
        tx.insert_pause(Pause("halfhour", "disk full", "bo", T0))
    result = install.invoke("job", "backfill", "halfhour", *WINDOW)
    assert (3, True) == (result.exit_code, "paused by bo since 2026-10-26T12:00:00Z: disk full"
                         in result.stderr)


def test_with_no_daemon_the_slots_are_accepted_to_run_when_it_starts(install: Install) -> None:
    """Five backfill triggers wait; stderr says when they will run; exit 0."""
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, "--operator", "ana")
    assert 0 == result.exit_code
    assert "no daemon is running; 5 slots of halfhour were accepted" in result.stderr
    with install.store.transaction() as tx:
        events = tx.new_events(10)
    assert ["backfill/halfhour/2026-10-25T00:00:00Z", "manual", "ana"] == [
        events[0].delivery_id, events[0].kind, events[0].operator]


def test_a_followed_backfill_prints_each_run_and_a_summary(install: Install) -> None:
    """The daemon runs the five slots one by one; plain lines, then the summary; exit 0."""
    install.heartbeat()
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, sleep=install.daemon())
    lines = result.stdout.splitlines()
    assert 0 == result.exit_code, result.output
    assert 5 == sum("success" in line and "[backfill 2026-10-25" in line for line in lines[:-1])
    assert "backfill: 5 slots, 5 runs: 5 succeeded, 0 failed, 0 skipped" == lines[-1]


def test_a_failed_slot_makes_the_backfill_exit_1(install: Install) -> None:
    """One slot exits 1: the summary counts it and the exit status says so."""
    install.heartbeat()
    sleep = install.daemon(lambda label: 1 if "(repeated)" in label else 0)
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, sleep=sleep)
    assert (1, "backfill: 5 slots, 5 runs: 3 succeeded, 2 failed, 0 skipped") == (
        result.exit_code, result.stdout.splitlines()[-1])


def test_the_same_backfill_twice_runs_nothing_new_and_says_so(install: Install) -> None:
    """Second time: every slot was accepted before; nothing is followed."""
    install.invoke("job", "backfill", "halfhour", *WINDOW)
    result = install.invoke("job", "backfill", "halfhour", *WINDOW)
    assert (0, "nothing new to run for halfhour\n") == (result.exit_code, result.stdout)
    assert "5 of 5 slots were backfilled before; they are not run again" in result.stderr


def test_history_json_marks_backfill_runs_with_their_slot(install: Install) -> None:
    """backfill: true and the slot it ran for, on every run the backfill started."""
    install.heartbeat()
    install.invoke("job", "backfill", "halfhour", *WINDOW, sleep=install.daemon())
    result = install.invoke("job", "history", "halfhour", "--json")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [True] * 5 == [record["backfill"] for record in records]
    assert "2026-10-25T01:30:00Z" == records[1]["slot"]
    assert "backfill 2026-10-25 01:30 Europe/London (repeated)" == records[1]["label"]


def test_backfill_json_is_one_summary_with_the_run_records(install: Install) -> None:
    """No progress lines: one document with the request, each run's record (marked as a
    backfill, with its slot) and the counts; a failed slot still exits 1."""
    install.heartbeat()
    sleep = install.daemon(lambda label: 1 if label.endswith("01:30 Europe/London") else 0)
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, "--json", sleep=sleep)
    [line] = result.stdout.splitlines()
    document = json.loads(line)
    runs = document.pop("runs")
    assert (1, {"job": "halfhour", "start": "2026-10-25T00:00:00Z",
                "end": "2026-10-25T02:00:00Z", "overlap": "serial", "slots": 5, "new": 5,
                "succeeded": 4, "failed": 1, "skipped": 0, "not_done": 0}) == (
        result.exit_code, document)
    assert [("2026-10-25T00:00:00Z", "success"), ("2026-10-25T00:30:00Z", "failure"),
            ("2026-10-25T01:00:00Z", "success"), ("2026-10-25T01:30:00Z", "success"),
            ("2026-10-25T02:00:00Z", "success")] == [
        (run["slot"], run["outcome"]) for run in runs if run["backfill"]]


def test_backfill_json_with_no_daemon_counts_every_slot_not_done(install: Install) -> None:
    """Accepted and waiting: no runs yet, every new slot not done, the note on stderr."""
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, "--json")
    document = json.loads(result.stdout)
    assert (0, [], 5, 5) == (result.exit_code, document["runs"], document["new"],
                             document["not_done"])
    assert "no daemon is running" in result.stderr


def test_backfill_json_asked_again_has_nothing_new(install: Install) -> None:
    """The second time, the document says no slot was new and nothing is left to do."""
    install.invoke("job", "backfill", "halfhour", *WINDOW)
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, "--json")
    document = json.loads(result.stdout)
    assert (0, 5, 0, 0, []) == (result.exit_code, document["slots"], document["new"],
                                document["not_done"], document["runs"])


def test_dry_run_json_is_one_slot_a_line(install: Install) -> None:
    """The slots it would run, as ``schedule slots --json`` names them; nothing accepted."""
    result = install.invoke("job", "backfill", "halfhour", *WINDOW, "--dry-run", "--json")
    assert (0, [{"slot": "2026-10-25T01:00:00Z", "name": "2026-10-25 01:00 Europe/London "
                                                        "(repeated)"}]) == (
        result.exit_code, [json.loads(line) for line in result.stdout.splitlines()][2:3])


def test_the_audit_table_says_a_backfill_in_words(install: Install) -> None:
    """Its window, how many slots and how many were new, and the overlap: not raw JSON."""
    install.invoke("job", "backfill", "halfhour", *WINDOW, "--operator", "ana")
    result = install.invoke("audit")
    assert (0, ["2026-10-26T12:00:00Z", "ana", "backfill", "halfhour",
                "2026-10-25T00:00:00Z to 2026-10-25T02:00:00Z: 5 slots, 5 new (overlap serial)"]
            ) == (result.exit_code, re.split(r" {2,}", result.stdout.splitlines()[1]))
