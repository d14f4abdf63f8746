"""``cronduit schedule list``, ``schedule slots`` and ``status`` read a store the test fills.

No daemon runs: each test writes timers, runs and slot fates straight into a real SQLite
store, then runs the command in process on a fake clock and compares what it prints.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.cli.state_commands import progress_lines
from cronduit.core.config import load_config
from cronduit.core.config.model import Config
from cronduit.daemon.heartbeat import DaemonInfo, write_applied, write_heartbeat
from cronduit.ports import NewEvent, Run, SlotRecord, Store, Timer
from cronduit.store import open_store
from cronduit.testing import FakeClock
from tests.helpers.store import put_timer, record_slot

T0 = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)  # a Monday; London is on BST (UTC+1) since 29 March
CONFIG = """\
settings: {state: state}
jobs:
  report: {run: ./report, cron: "0 9 * * *", time_zone: Europe/London}
  tick: {run: ./tick, every: 5m}
  hand: {run: ./once}
"""
REPORT_SLOT = datetime(2026, 3, 31, 8, 0, tzinfo=UTC)  # 09:00 in London


@dataclass
class Install:
    """A config file and its store, as the CLI finds them."""

    path: Path
    config: Config
    store: Store

    def invoke(self, *args: str) -> Result:
        runtime = Runtime(clock=FakeClock(T0), nudge=lambda _: None)
        return CliRunner().invoke(cli, [*args, "-c", str(self.path)], obj=runtime)

    def arm(self, job: str, due: datetime, slot_name: str) -> None:
        key = self.config.jobs[job].timing_key or ""
        with self.store.transaction() as tx:
            put_timer(tx, Timer(job, key, due, slot_name, due, None))

    def arm_all(self) -> None:
        self.arm("report", REPORT_SLOT, "2026-03-31 09:00 Europe/London")
        self.arm("tick", T0 + timedelta(minutes=5), "2026-03-30 12:05:00 UTC")

    def add(self, *runs: Run) -> None:
        with self.store.transaction() as tx:
            for run in runs:
                tx.insert_run(run)


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    config = load_config(CONFIG, str(path))
    store = open_store(config, path)
    yield Install(path, config, store)
    store.close()


def ended(run_id: str, outcome: str, minutes_ago: int, *, job: str = "report",
          took: float = 12.3, attempts: int = 1, exit_status: int | None = None,
          reason: str = "") -> Run:
    finished = T0 - timedelta(minutes=minutes_ago)
    skipped = outcome == "skipped"
    return Run(id=run_id, job=job, kind="timer", label="cron", state="ended",
               created_at=finished - timedelta(seconds=took), exclusive=not skipped,
               outcome=outcome, reason=reason, attempts=0 if skipped else attempts,
               started_at=None if skipped else finished - timedelta(seconds=took),
               finished_at=finished, exit_status=exit_status)


def skipped(run_id: str, minutes_ago: int) -> Run:
    return ended(run_id, "skipped", minutes_ago, reason="a run was already going (overlap: skip)")


# -- schedule list ------------------------------------------------------------------------


def test_schedule_list_shows_every_job_with_its_timer_state_and_next_elapse(
    install: Install,
) -> None:
    """An armed timer shows its due time; an interval job not armed yet is due at once."""
    install.arm("report", REPORT_SLOT, "2026-03-31 09:00 Europe/London")
    result = install.invoke("schedule", "list")
    assert (0, [
        ["JOB", "TIMING", "TIMER", "NEXT ELAPSE", "SLOT"],
        ["report", "cron 0 9 * * * Europe/London", "armed", "2026-03-31T08:00:00Z",
         "2026-03-31 09:00 Europe/London"],
        ["tick", "every 5m", "unarmed", "2026-03-30T12:00:00Z", "2026-03-30 12:00:00 UTC"],
        ["hand", "manual", "none", "-", "-"],
    ]) == (result.exit_code, cells(result.stdout))


def cells(table: str) -> list[list[str]]:
    """A plain table's rows, cut where two or more spaces separate its columns."""
    return [re.split(r" {2,}", line) for line in table.splitlines()]


def test_schedule_list_json_prints_one_object_per_job(install: Install) -> None:
    """Each line is a JSON object with the job, timing, timer state and next elapse."""
    install.arm("report", REPORT_SLOT, "2026-03-31 09:00 Europe/London")
    result = install.invoke("schedule", "list", "--json")
    keys = ("job", "timing", "timer", "next_elapse", "next_slot")
    assert [
        {"job": "report", "timing": "cron 0 9 * * * Europe/London", "timer": "armed",
         "next_elapse": "2026-03-31T08:00:00Z", "next_slot": "2026-03-31 09:00 Europe/London"},
        {"job": "tick", "timing": "every 5m", "timer": "unarmed",
         "next_elapse": "2026-03-30T12:00:00Z", "next_slot": "2026-03-30 12:00:00 UTC"},
        {"job": "hand", "timing": "manual", "timer": "none", "next_elapse": None,
         "next_slot": None},
    ] == [{key: row[key] for key in keys}
          for row in map(json.loads, result.stdout.splitlines())]


def test_schedule_list_and_status_give_the_same_facts_of_each_job(install: Install) -> None:
    """Parity: ``schedule list --json`` prints, one a line, the jobs of ``status --json``
    (the facts ``GET /v1/jobs`` gives too)."""
    install.arm_all()
    install.add(ended("r1", "failure", 60, exit_status=1))
    listed = [json.loads(line) for line in
              install.invoke("schedule", "list", "--json").stdout.splitlines()]
    assert json.loads(install.invoke("status", "--json").stdout)["jobs"] == listed


def test_the_next_slots_of_a_calendar_job_are_listed_with_their_due_times(
        install: Install) -> None:
    report = json.loads(install.invoke("schedule", "list", "--json").stdout.splitlines()[0])
    assert ("At 09:00", 5) == (report["described"], len(report["next_slots"]))
    assert {"slot": "2026-03-31T08:00:00Z", "name": "2026-03-31 09:00 Europe/London",
            "due": "2026-03-31T08:00:00Z"} == report["next_slots"][0]


def test_schedule_list_computes_the_next_slot_of_a_cron_job_not_armed_yet(
    install: Install,
) -> None:
    """Without a timer row the next slot after now is shown, in UTC."""
    result = install.invoke("schedule", "list", "--json")
    report = json.loads(result.stdout.splitlines()[0])
    assert ("unarmed", "2026-03-31T08:00:00Z") == (report["timer"], report["next_elapse"])


# -- status -------------------------------------------------------------------------------


def test_status_of_healthy_jobs_exits_0(install: Install) -> None:
    """Armed timers and a successful last run: no divergence, and the daemon is down."""
    install.arm_all()
    install.add(ended("r1", "success", 60, took=2.5))
    result = install.invoke("status")
    assert (0, [
        "daemon: down (timers fire and accepted runs start when it starts: cronduit serve)",
        "report  cron 0 9 * * * Europe/London",
        "  next: 2026-03-31T08:00:00Z (timer armed)",
        "  last: success after 2.5s, 1 attempt, ended 2026-03-30T11:00:00Z",
        "tick  every 5m",
        "  next: 2026-03-30T12:05:00Z (timer armed)",
        "  last: no run yet",
        "hand  manual",
        "  next: - (no timing)",
        "  last: no run yet",
        "3 jobs, no divergence",
    ]) == (result.exit_code, result.stdout.splitlines())


def test_status_exits_1_when_the_last_run_failed(install: Install) -> None:
    """A failed last run is divergence, shown with its duration, attempts and exit status."""
    install.arm_all()
    install.add(ended("r1", "failure", 60, attempts=3, exit_status=1))
    result = install.invoke("status")
    lines = result.stdout.splitlines()
    assert (1, [
        "  last: failure after 12.3s, 3 attempts (exit status 1), ended 2026-03-30T11:00:00Z",
        "  divergence: the last run failed",
    ], "1 job of 3 diverging") == (result.exit_code, lines[3:5], lines[-1])


def test_status_exits_1_when_the_last_run_timed_out(install: Install) -> None:
    """A timeout is divergence too."""
    install.arm_all()
    install.add(ended("r1", "timeout", 60, reason="deadline 1h passed"))
    result = install.invoke("status")
    assert (1, "  divergence: the last run timed out") == (
        result.exit_code, result.stdout.splitlines()[4])


def test_skips_never_clear_a_failure(install: Install) -> None:
    """Two skips after a failure: the failure stays the last outcome, and still diverges."""
    install.arm_all()
    install.add(ended("r1", "failure", 60, exit_status=2), skipped("s1", 30), skipped("s2", 10))
    result = install.invoke("status")
    assert (1, [
        "  last: failure after 12.3s, 1 attempt (exit status 2), ended 2026-03-30T11:00:00Z",
        "  nothing has run since: 2 skipped",
        "  divergence: the last run failed",
    ]) == (result.exit_code, result.stdout.splitlines()[3:6])


def test_two_skips_after_a_success_are_not_divergence(install: Install) -> None:
    """Skips are news about timing; only three in a row is a warning sign."""
    install.arm_all()
    install.add(ended("r1", "success", 60), skipped("s1", 30), skipped("s2", 10))
    assert 0 == install.invoke("status").exit_code


def test_three_skips_in_a_row_are_divergence(install: Install) -> None:
    """The newest three runs all skipped: the job's triggers keep missing it."""
    install.arm_all()
    install.add(ended("r1", "success", 60), skipped("s1", 30), skipped("s2", 20),
                skipped("s3", 10))
    result = install.invoke("status")
    assert (1, [
        "  last: success after 12.3s, 1 attempt, ended 2026-03-30T11:00:00Z",
        "  nothing has run since: 3 skipped",
        "  divergence: the newest 3 runs were all skipped",
    ]) == (result.exit_code, result.stdout.splitlines()[3:6])


def test_a_timed_job_without_a_timer_is_divergence(install: Install) -> None:
    """The interval job has no timer row: it should be armed and is not."""
    install.arm("report", REPORT_SLOT, "2026-03-31 09:00 Europe/London")
    result = install.invoke("status")
    assert (1, [
        "tick  every 5m",
        "  next: 2026-03-30T12:00:00Z (timer unarmed)",
        "  last: no run yet",
        "  divergence: no timer is armed for its timing (apply the config or start the daemon)",
    ]) == (result.exit_code, result.stdout.splitlines()[4:8])


def test_a_daemon_in_dry_run_arms_no_timers_and_that_is_not_divergence(
    install: Install,
) -> None:
    """``serve --dry-run`` arms nothing on purpose; status names the daemon and its mode."""
    heartbeat(install.store, dry_run=True)
    result = install.invoke("status")
    assert (0, f"daemon: running in dry run (no timers fire, no runs start), pid {os.getpid()} "
               f"on {socket.gethostname()} since 2026-03-30T11:00:00Z") == (
        result.exit_code, result.stdout.splitlines()[0])


def heartbeat(store: Store, dry_run: bool = False) -> None:
    info = DaemonInfo(os.getpid(), socket.gethostname(), (T0 - timedelta(hours=1)).isoformat(),
                      T0.isoformat(), dry_run)
    write_heartbeat(store, info)


def test_status_shows_the_attempt_in_progress_and_a_retry_waiting(install: Install) -> None:
    """A running attempt says since when; a run in backoff says when it retries."""
    install.arm_all()
    start = T0 - timedelta(minutes=2)
    install.add(
        Run(id="r2", job="report", kind="timer", label="cron", state="running",
            created_at=start, started_at=start, attempts=1),
        Run(id="t1", job="tick", kind="timer", label="every 5m", state="backoff",
            created_at=start, started_at=start, attempts=2, reason="exit status 1",
            next_attempt_at=T0 + timedelta(seconds=30)),
    )
    result = install.invoke("status")
    assert (0, [
        "  running attempt 1 since 2026-03-30T11:58:00Z (run r2)",
        "  attempt 2 failed (exit status 1); retry at 2026-03-30T12:00:30Z (run t1)",
    ]) == (result.exit_code, [line for line in result.stdout.splitlines()
                              if "attempt" in line])


def test_status_json_is_one_document_with_the_verdict(install: Install) -> None:
    """``--json``: the daemon, whether all is healthy, and each job's facts and divergences."""
    install.arm_all()
    install.add(ended("r1", "failure", 60, exit_status=1), skipped("s1", 10))
    result = install.invoke("status", "--json")
    document = json.loads(result.stdout)
    assert (1, None, False) == (result.exit_code, document["daemon"], document["healthy"])
    report = document["jobs"][0]
    assert "2026-03-31T08:00:00Z" == report.pop("next_slots")[0]["slot"]
    assert {
        "job": "report",
        "timing": "cron 0 9 * * * Europe/London",
        "described": "At 09:00",
        "timer": "armed",
        "next_elapse": "2026-03-31T08:00:00Z",
        "next_slot": "2026-03-31 09:00 Europe/London",
        "last": {"run": "r1", "outcome": "failure", "reason": "",
                 "started_at": "2026-03-30T10:59:47Z", "finished_at": "2026-03-30T11:00:00Z",
                 "duration_s": 12.3, "attempts": 1, "exit_status": 1},
        "skipped_since": 1,
        "in_progress": [],
        "waiting": 0,
        "divergences": ["the last run failed"],
        "paused": None,
        "reminder": None,
    } == report


def test_status_as_a_real_process_exits_1_on_divergence(install: Install) -> None:
    """``python -m cronduit status`` reads the same store and exits with the verdict."""
    install.arm_all()
    install.add(ended("r1", "failure", 60, exit_status=1))
    result = subprocess.run([sys.executable, "-m", "cronduit", "status", "-c", str(install.path)],
                            capture_output=True, text=True, check=False)
    assert (1, "", "  divergence: the last run failed") == (
        result.returncode, result.stderr, result.stdout.splitlines()[4])


# -- schedule slots -----------------------------------------------------------------------


def fill_ledger(install: Install) -> None:
    """Four fates: a counted outage, a missed slot, a slot that ran, one skipped by overlap."""
    day = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
    with install.store.transaction() as tx:
        record_slot(tx, SlotRecord("report", datetime(2025, 1, 1, 9, 0, tzinfo=UTC), "", "missed",
                                   "missed during a long outage (counted, not listed)", T0,
                                   count=4123, until_slot=datetime(2026, 3, 19, 9, 0, tzinfo=UTC)))
        record_slot(tx, SlotRecord("report", day, "2026-03-20 09:00 Europe/London", "missed",
                                   "outside the catch-up window", T0))
        for offset, run_id, outcome in ((1, "r1", "success"), (2, "s1", "skipped")):
            slot = day + timedelta(days=offset)
            name = f"2026-03-2{offset} 09:00 Europe/London"
            seq = tx.insert_event(NewEvent(f"slot/report/{slot:%Y-%m-%dT%H:%M:%SZ}", "report",
                                           "timer", f"cron {name}", slot, slot=slot))
            assert seq is not None
            record_slot(tx, SlotRecord("report", slot, name, "ran", "", slot, event_seq=seq))
            run = ended(run_id, outcome, 0, reason="a run was already going (overlap: skip)"
                        if outcome == "skipped" else "")
            tx.insert_run(run)
            tx.set_event_state([seq], "consumed", run_id)


def test_schedule_slots_lists_every_fate_with_a_counted_row(install: Install) -> None:
    """Counted outage, missed, ran (with its run) and skipped-by-overlap, oldest first."""
    fill_ledger(install)
    result = install.invoke("schedule", "slots", "report")
    assert (0, [
        ["SLOT", "NAME", "FATE", "REASON", "RUN"],
        ["2025-01-01T09:00:00Z", "-", "missed ×4123", "from 2025-01-01T09:00:00Z to "
         "2026-03-19T09:00:00Z: missed during a long outage (counted, not listed)", "-"],
        ["2026-03-20T09:00:00Z", "2026-03-20 09:00 Europe/London", "missed",
         "outside the catch-up window", "-"],
        ["2026-03-21T09:00:00Z", "2026-03-21 09:00 Europe/London", "ran", "-", "r1"],
        ["2026-03-22T09:00:00Z", "2026-03-22 09:00 Europe/London", "skipped",
         "a run was already going (overlap: skip)", "s1"],
    ]) == (result.exit_code, cells(result.stdout))


def test_schedule_slots_json_and_window(install: Install) -> None:
    """``--from``/``--to`` bound the slots; a time without offset is on the job's clock."""
    fill_ledger(install)
    result = install.invoke("schedule", "slots", "report", "--json",
                            "--from", "2026-03-21T00:00", "--to", "2026-03-22T10:00:00Z")
    assert [
        {"slot": "2026-03-21T09:00:00Z", "name": "2026-03-21 09:00 Europe/London",
         "fate": "ran", "reason": "", "run": "r1", "count": 1, "until": None},
        {"slot": "2026-03-22T09:00:00Z", "name": "2026-03-22 09:00 Europe/London",
         "fate": "skipped", "reason": "a run was already going (overlap: skip)", "run": "s1",
         "count": 1, "until": None},
    ] == [json.loads(line) for line in result.stdout.splitlines()]


def test_schedule_slots_of_an_unknown_job_exits_2(install: Install) -> None:
    """A name that is neither configured nor in the store is a usage error."""
    result = install.invoke("schedule", "slots", "nope")
    assert (2, "", "cronduit: no job named 'nope' in " + str(install.path) + "\n") == (
        result.exit_code, result.stdout, result.stderr)


def test_schedule_slots_refuses_a_bad_time(install: Install) -> None:
    """``--from`` must be ISO 8601."""
    result = install.invoke("schedule", "slots", "report", "--from", "yesterday")
    assert (2, "cronduit: --from: 'yesterday' is not an ISO 8601 time such as "
               "2026-03-29T00:00:00Z\n") == (result.exit_code, result.stderr)


def test_status_notes_a_timer_armed_for_an_older_timing(install: Install) -> None:
    """The config's timing was edited but not applied: the timer still runs the old one."""
    install.arm_all()
    with install.store.transaction() as tx:
        put_timer(tx, Timer("report", "cron 0 8 * * *", REPORT_SLOT, "old", REPORT_SLOT, None))
    result = install.invoke("status")
    assert "  next: 2026-03-31T08:00:00Z (timer armed for an older timing: apply the config)" \
        == result.stdout.splitlines()[2]


def test_a_later_attempt_names_when_its_run_started() -> None:
    """The store records when a run started, not each attempt, so attempt 2 says so."""
    start = T0 - timedelta(minutes=2)
    run = Run(id="r2", job="report", kind="timer", label="cron", state="running",
              created_at=start, started_at=start, attempts=2)
    assert ["running attempt 2 (run r2 started 2026-03-30T11:58:00Z)"] == progress_lines(run)


def test_an_armed_timer_that_did_not_fire_is_divergence(install: Install) -> None:
    """Due more than a minute ago and still armed for that slot: nothing is firing it."""
    install.arm_all()
    install.arm("tick", T0 - timedelta(minutes=2), "2026-03-30 11:58:00 UTC")
    result = install.invoke("status")
    assert 1 == result.exit_code
    assert ("  divergence: the timer is overdue: due 2026-03-30T11:58:00Z and not fired (is "
            "the daemon running?)") in result.stdout.splitlines()
    install.arm("tick", T0 - timedelta(seconds=30), "2026-03-30 11:59:30 UTC")
    assert 0 == install.invoke("status").exit_code  # within the minute a firing may take


# -- the config in force ------------------------------------------------------------------


def apply_config(install: Install, text: str) -> None:
    """What the daemon does at start and at each apply: keep the text it applied."""
    with install.store.transaction() as tx:
        write_applied(tx, text, str(install.path), T0 - timedelta(hours=1))


def test_read_commands_work_from_the_applied_config_while_the_file_is_broken(
    install: Install,
) -> None:
    """A half-edited file on disk does not block status, schedule list or job history: they
    go by the config the daemon applied, and say once that the file differs."""
    apply_config(install, CONFIG)
    install.arm_all()
    install.add(ended("r1", "success", 3, job="tick"))
    install.path.write_text(CONFIG.replace("every: 5m", "every: soon"))
    warning = (f"cronduit: warning: {install.path} differs from the config the daemon applied "
               f"(2026-03-30T11:00:00Z) and does not validate (an error: cronduit check -c "
               f"{install.path}); showing the applied config")
    for command in (["status"], ["schedule", "list"], ["job", "history", "tick"]):
        result = install.invoke(*command)
        assert (0, [warning]) == (result.exit_code, result.stderr.splitlines()), command
    assert "tick" in install.invoke("schedule", "list").stdout


def test_a_broken_file_with_no_config_ever_applied_still_exits_2_with_its_errors(
    install: Install,
) -> None:
    """Nothing to fall back on: the file's own errors, as check prints them."""
    install.path.write_text(CONFIG.replace("every: 5m", "every: soon"))
    result = install.invoke("status")
    assert 2 == result.exit_code
    assert f"{install.path}:4:" in result.stderr


def test_while_a_daemon_runs_a_job_added_to_the_file_but_not_applied_is_not_shown(
    install: Install,
) -> None:
    """The daemon runs what it applied; the edit earns a warning that names apply."""
    apply_config(install, CONFIG)
    heartbeat(install.store)
    install.path.write_text(CONFIG + "  extra: {run: ./more}\n")
    result = install.invoke("schedule", "list")
    assert (0, ["report", "tick", "hand"]) == (
        result.exit_code, [line.split()[0] for line in result.stdout.splitlines()[1:]])
    assert "cronduit apply applies the file" in result.stderr


@pytest.mark.parametrize(("command", "option"), [
    (("schedule", "slots", "report", "--to"), "--to"),
    (("schedule", "slots", "report", "--from"), "--from"),
    (("job", "backfill", "report", "--to", "2026-03-30", "--from"), "--from"),
])
def test_window_options_refuse_instants_outside_the_calendar(
        install: Install, command: tuple[str, ...], option: str) -> None:
    """Year 1 once ended ``job backfill`` in an OverflowError: one line, exit 2."""
    result = install.invoke(*command, "0001-01-01T00:00:00Z")
    assert (2, f"cronduit: {option}: '0001-01-01T00:00:00Z' is outside the instants cronduit "
               "takes (from 1970-01-01 to 9000-01-01, UTC)\n") == (result.exit_code,
                                                                  result.stderr)
