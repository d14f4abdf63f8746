"""``cronduit job pause | resume``, ``cronduit audit`` and how status and schedule list show
a pause, against a real store with no daemon running."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.config import load_config
from cronduit.daemon.heartbeat import DaemonInfo, write_heartbeat
from cronduit.ports import Run, Store, Timer
from cronduit.store import open_store
from cronduit.testing import FakeClock
from tests.helpers.store import put_timer

T0 = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)
CONFIG = """\
settings: {state: state}
jobs:
  build:
    run: ./build
    inputs:
      MODE: {enum: [fast, slow], default: fast}
  nightly: {run: ./nightly, cron: "0 3 * * *"}
"""


@dataclass
class Install:
    path: Path
    store: Store
    clock: FakeClock = field(default_factory=lambda: FakeClock(T0))
    nudged: list[DaemonInfo] = field(default_factory=list)

    def invoke(self, *args: str) -> Result:
        runtime = Runtime(clock=self.clock, sleep=lambda _: None, nudge=self.nudged.append)
        return CliRunner().invoke(cli, [*args, "-c", str(self.path)], obj=runtime)


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    store = open_store(load_config(CONFIG, str(path)), path)
    yield Install(path, store)
    store.close()


def test_pause_records_who_when_and_why(install: Install) -> None:
    """Exit 0, one line saying so; the pause is in the store and the audit log."""
    result = install.invoke("job", "pause", "nightly", "--reason", "db migration",
                            "--operator", "ana")
    assert 0 == result.exit_code, result.output
    assert ("nightly: paused by ana since 2026-03-30T12:00:00Z: db migration\n"
            == result.stdout)
    with install.store.transaction() as tx:
        [pause] = tx.pauses()
        [entry] = tx.audit(5)
    assert ("ana", T0, "db migration") == (pause.operator, pause.paused_at, pause.reason)
    assert ("pause", "ana", "nightly") == (entry.action, entry.operator, entry.job)


def test_pausing_a_paused_job_exits_3_and_names_the_pause(install: Install) -> None:
    """Nothing is overwritten: the first pause stays, with its operator and reason."""
    install.invoke("job", "pause", "nightly", "--reason", "db migration", "--operator", "ana")
    again = install.invoke("job", "pause", "nightly", "--reason", "other", "--operator", "bo")
    assert 3 == again.exit_code
    assert "paused by ana since 2026-03-30T12:00:00Z: db migration" in again.stderr
    with install.store.transaction() as tx:
        assert ["db migration"] == [pause.reason for pause in tx.pauses()]


def test_resume_ends_the_pause_and_resuming_again_exits_3(install: Install) -> None:
    """The first resume exits 0; a job that is not paused cannot be resumed."""
    install.invoke("job", "pause", "nightly", "--reason", "x", "--operator", "ana")
    install.clock.advance(timedelta(hours=1))
    first = install.invoke("job", "resume", "nightly", "--operator", "bo")
    assert 0 == first.exit_code, first.output
    assert first.stdout.startswith("nightly: resumed by bo")
    again = install.invoke("job", "resume", "nightly", "--operator", "bo")
    assert (3, "cronduit: job nightly is not paused; nothing was changed\n") == (
        again.exit_code, again.stderr)


@pytest.mark.parametrize(("args", "says"), [
    (["--reason", ""], "reason: required"),
    (["--reason", "a\tb"], "control characters"),
    (["--reason", "x" * 501], "at most 500"),
    (["--reason", "x", "--until", "soon"], "neither a duration"),
    (["--reason", "x", "--until", "2026-03-30T11:00:00Z"], "not in the future"),
])
def test_a_bad_pause_request_exits_2_and_writes_nothing(install: Install, args: list[str],
                                                        says: str) -> None:
    """Blank, control characters, too long, an until that is not a future time."""
    result = install.invoke("job", "pause", "nightly", *args)
    assert 2 == result.exit_code
    assert says in result.stderr
    with install.store.transaction() as tx:
        assert ([], []) == (tx.pauses(), tx.audit(5))


def test_pause_needs_a_reason_and_a_known_job(install: Install) -> None:
    """--reason is required; an unknown job exits 2."""
    assert 2 == install.invoke("job", "pause", "nightly").exit_code
    unknown = install.invoke("job", "pause", "nosuch", "--reason", "x")
    assert 2 == unknown.exit_code
    assert "no job named 'nosuch'" in unknown.stderr


def test_pause_until_a_duration_from_now(install: Install) -> None:
    """--until 2h is two hours from the clock's now, and the output says until when."""
    result = install.invoke("job", "pause", "nightly", "--reason", "x", "--until", "2h",
                            "--operator", "ana")
    assert result.stdout.rstrip().endswith("(until 2026-03-30T14:00:00Z)")


def test_pause_wakes_a_running_daemon_and_says_when_none_runs(install: Install) -> None:
    """No daemon: a note on stderr. A daemon on this host: it is nudged."""
    down = install.invoke("job", "pause", "nightly", "--reason", "x")
    assert "no daemon is running" in down.stderr
    assert [] == install.nudged
    info = DaemonInfo(os.getpid(), socket.gethostname(), T0.isoformat(), T0.isoformat(), False)
    write_heartbeat(install.store, info)
    install.invoke("job", "resume", "nightly")
    assert [info] == install.nudged


def test_a_manual_run_of_a_paused_job_exits_3(install: Install) -> None:
    """Even with --queue; the refusal names the pause and does not suggest --queue, which
    cannot get past it."""
    install.invoke("job", "pause", "build", "--reason", "broken", "--operator", "ana")
    for extra in ([], ["--queue"]):
        result = install.invoke("job", "run", "build", "--detach", *extra)
        assert 3 == result.exit_code
        assert "paused by ana" in result.stderr
        assert "--queue" not in result.stderr


def test_status_shows_the_pause_and_its_stopped_timer_is_not_divergence(install: Install
                                                                        ) -> None:
    """PAUSED by USER since TIME: REASON, with until; no timer armed, still exit 0."""
    install.invoke("job", "pause", "nightly", "--reason", "db migration", "--until", "1d",
                   "--operator", "ana")
    result = install.invoke("status")
    assert 0 == result.exit_code, result.output
    assert ("  PAUSED by ana since 2026-03-30T12:00:00Z: db migration "
            "(until 2026-03-31T12:00:00Z)") in result.stdout.splitlines()
    assert "reminder" not in result.stdout
    document = json.loads(install.invoke("status", "--json").stdout)
    nightly = next(job for job in document["jobs"] if job["job"] == "nightly")
    assert ({"by": "ana", "since": "2026-03-30T12:00:00Z", "reason": "db migration",
             "until": "2026-03-31T12:00:00Z"}, "paused", []) == (
        nightly["paused"], nightly["timer"], nightly["divergences"])


def test_status_reminds_of_a_pause_older_than_a_week(install: Install) -> None:
    """Eight days on the reminder shows; it is not divergence."""
    install.invoke("job", "pause", "nightly", "--reason", "x", "--operator", "ana")
    install.clock.advance(timedelta(days=8))
    result = install.invoke("status")
    assert 0 == result.exit_code
    assert "  reminder: paused for 8 days" in result.stdout


def test_skips_of_a_paused_job_are_not_divergence(install: Install) -> None:
    """Three skipped (paused) runs in a row are what the pause asked for."""
    install.invoke("job", "pause", "build", "--reason", "x")
    with install.store.transaction() as tx:
        put_timer(tx, Timer("nightly", "k", T0, "x", T0 + timedelta(hours=15), None))
        for number in range(3):
            tx.insert_run(Run(id=f"s{number}", job="build", kind="webhook", label="webhook",
                              state="ended", created_at=T0, exclusive=False,
                              outcome="skipped", reason="paused", finished_at=T0))
    assert 0 == install.invoke("status").exit_code
    install.invoke("job", "resume", "build")
    assert 1 == install.invoke("status").exit_code


def test_schedule_list_shows_the_timer_paused(install: Install) -> None:
    """TIMER paused and no next elapse while the job is paused."""
    with install.store.transaction() as tx:
        put_timer(tx, Timer("nightly", "cron 0 3 * * *", T0, "x", T0, None))
    install.invoke("job", "pause", "nightly", "--reason", "x")
    rows = [json.loads(line) for line in install.invoke("schedule", "list", "--json")
            .stdout.splitlines()]
    nightly = next(row for row in rows if row["job"] == "nightly")
    assert ("paused", None) == (nightly["timer"], nightly["next_elapse"])


def test_audit_lists_pauses_resumes_and_manual_runs_newest_first(install: Install) -> None:
    """Table and --json; -n limits; manual runs show their inputs."""
    install.invoke("job", "pause", "nightly", "--reason", "db migration", "--operator", "ana")
    install.clock.advance(timedelta(minutes=5))
    install.invoke("job", "resume", "nightly", "--operator", "bo")
    install.invoke("job", "run", "build", "--detach", "--input", "MODE=slow",
                   "--operator", "cy")
    table = install.invoke("audit")
    assert 0 == table.exit_code
    lines = table.stdout.splitlines()
    assert ["AT", "OPERATOR", "ACTION", "JOB", "DETAIL"] == lines[0].split()
    assert ["cy", "run", "build", "inputs:", "MODE=slow"] == lines[1].split()[1:]
    assert ["bo", "resume", "nightly", "resumed;"] == lines[2].split()[1:5]
    assert ["ana", "pause", "nightly", "db", "migration"] == lines[3].split()[1:]
    entries = [json.loads(line) for line in install.invoke("audit", "--json", "-n", "2")
               .stdout.splitlines()]
    assert [("run", "cy"), ("resume", "bo")] == [(e["action"], e["operator"]) for e in entries]
    assert {"MODE": "slow"} == entries[0]["detail"]["inputs"]
    assert {"seq", "at", "operator", "action", "job", "detail"} == set(entries[0])


def test_an_empty_audit_log_says_so(install: Install) -> None:
    result = install.invoke("audit")
    assert (0, "the audit log is empty\n") == (result.exit_code, result.stdout)
