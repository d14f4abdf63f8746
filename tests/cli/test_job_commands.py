"""``cronduit job history | logs | run | wait`` against a real store, with no daemon running.

Where a daemon would act (route a manual run, end a run), the test plays it: either the
runtime's ``sleep`` does one step of the daemon's work each time the command waits, or a
background thread writes the run's end after a short delay.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime, SystemClock
from cronduit.core.config import load_config
from cronduit.daemon.heartbeat import DaemonInfo, write_heartbeat
from cronduit.executor.logcap import PUNCH, cut, open_capped
from cronduit.paths import StatePaths
from cronduit.ports import Clock, Event, NewEvent, Run, Store
from cronduit.store import open_store
from cronduit.testing import FakeClock

T0 = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)
CONFIG = """\
settings: {state: state, kept_runs: 5}
jobs:
  build:
    run: ./build
    inputs:
      MODE: {enum: [fast, slow], default: fast}
      TAG: {pattern: "v[0-9]+", default: v1}
  nightly: {run: ./nightly, cron: "0 3 * * *"}
"""
RECORD_KEYS = ["run", "job", "trigger", "label", "triggers", "started_at", "finished_at",
               "duration_s", "attempts", "exit_status", "outcome", "reason", "inputs",
               "operator"]


@dataclass
class Install:
    """A config file, its store and its state directory, as the CLI finds them."""

    path: Path
    store: Store
    paths: StatePaths
    nudged: list[DaemonInfo] = field(default_factory=list)

    def invoke(self, *args: str, clock: Clock | None = None,
               sleep: Callable[[float], None] = lambda _: None) -> Result:
        runtime = Runtime(clock=clock or FakeClock(T0), sleep=sleep, nudge=self.nudged.append)
        return CliRunner().invoke(cli, [*args, "-c", str(self.path)], obj=runtime)

    def add(self, *runs: Run) -> None:
        with self.store.transaction() as tx:
            for run in runs:
                tx.insert_run(run)

    def accept(self, delivery_id: str, job: str = "nightly", kind: str = "timer",
               run_id: str | None = None) -> int:
        with self.store.transaction() as tx:
            seq = tx.insert_event(NewEvent(delivery_id, job, kind, kind, T0))
            assert seq is not None
            if run_id is not None:
                tx.set_event_state([seq], "consumed", run_id)
        return seq

    def write_log(self, run_id: str, text: str) -> None:
        log = self.paths.log(run_id)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as file:
            file.write(text)

    def events(self) -> list[Event]:
        with self.store.transaction() as tx:
            return tx.new_events(100)

    def heartbeat(self, dry_run: bool = False) -> DaemonInfo:
        info = DaemonInfo(os.getpid(), socket.gethostname(), T0.isoformat(), T0.isoformat(),
                          dry_run)
        write_heartbeat(self.store, info)
        return info


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    config = load_config(CONFIG, str(path))
    store = open_store(config, path)
    yield Install(path, store, StatePaths.of(config, path))
    store.close()


def ended(run_id: str, outcome: str = "success", *, job: str = "nightly", minutes_ago: int = 60,
          **values: object) -> Run:
    finished = T0 - timedelta(minutes=minutes_ago)
    run = Run(id=run_id, job=job, kind="timer", label="cron 2026-03-30 03:00 UTC", state="ended",
              created_at=finished - timedelta(seconds=4), outcome=outcome, attempts=1,
              started_at=finished - timedelta(seconds=4), finished_at=finished,
              exit_status=0 if outcome == "success" else 1, exclusive=False)
    return replace(run, **values)


def running(run_id: str, job: str = "nightly") -> Run:
    return Run(id=run_id, job=job, kind="manual", label="manual by bob", state="running",
               created_at=T0, started_at=T0, attempts=1, operator="bob")


def cells(table: str) -> list[list[str]]:
    """A plain table's rows, cut where two or more spaces separate its columns."""
    return [re.split(r" {2,}", line) for line in table.splitlines()]


# -- history ------------------------------------------------------------------------------


def test_history_json_prints_the_run_record_with_exactly_the_spec_keys(install: Install) -> None:
    """Newest first; every trigger a run consumed is listed; a run going has no outcome."""
    install.add(ended("r1", inputs='{"MODE": "slow"}', operator="alice"),
                running("r2"))
    install.accept("slot/nightly/2026-03-30T03:00:00Z", run_id="r1")
    install.accept("manual/nightly/abc", kind="manual", run_id="r1")
    install.accept("manual/nightly/def", kind="manual", run_id="r2")
    result = install.invoke("job", "history", "nightly", "--json")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert (0, [RECORD_KEYS, RECORD_KEYS]) == (result.exit_code, [list(r) for r in records])
    assert [
        {"run": "r2", "job": "nightly", "trigger": "manual", "label": "manual by bob",
         "triggers": ["manual/nightly/def"], "started_at": "2026-03-30T12:00:00Z",
         "finished_at": None, "duration_s": None, "attempts": 1, "exit_status": None,
         "outcome": None, "reason": "", "inputs": {}, "operator": "bob"},
        {"run": "r1", "job": "nightly", "trigger": "timer", "label": "cron 2026-03-30 03:00 UTC",
         "triggers": ["slot/nightly/2026-03-30T03:00:00Z", "manual/nightly/abc"],
         "started_at": "2026-03-30T10:59:56Z", "finished_at": "2026-03-30T11:00:00Z",
         "duration_s": 4.0, "attempts": 1, "exit_status": 0, "outcome": "success",
         "reason": "", "inputs": {"MODE": "slow"}, "operator": "alice"},
    ] == records


def test_history_table_shows_the_newest_n_runs(install: Install) -> None:
    """``-n 2`` keeps the two newest; outcomes read as status does."""
    install.add(ended("r1", minutes_ago=90),
                ended("r2", "failure", minutes_ago=60, attempts=3),
                ended("r3", "skipped", minutes_ago=30, started_at=None, attempts=0,
                      exit_status=None, reason="a run was already going (overlap: skip)"))
    result = install.invoke("job", "history", "nightly", "-n", "2")
    assert (0, [
        ["RUN", "TRIGGER", "STARTED", "OUTCOME", "OPERATOR"],
        ["r3", "cron 2026-03-30 03:00 UTC", "2026-03-30T11:30:00Z",
         "skipped: a run was already going (overlap: skip)", "-"],
        ["r2", "cron 2026-03-30 03:00 UTC", "2026-03-30T10:59:56Z",
         "failure after 4.0s, 3 attempts (exit status 1)", "-"],
    ]) == (result.exit_code, cells(result.stdout))


@pytest.mark.parametrize("command", [("job", "history", "nightly", "-n"), ("audit", "-n"),
                                     ("job", "backfill", "nightly", "--from", "2026-03-29",
                                      "--to", "2026-03-30", "--max")])
def test_a_count_past_its_bound_is_a_one_line_usage_error(install: Install,
                                                          command: tuple[str, ...]) -> None:
    """``-n 99999999999999999999999`` once reached SQLite and ended in an OverflowError
    traceback: refused by the option's range, in one line, exit 2."""
    result = install.invoke(*command, "99999999999999999999999")
    [line] = result.stderr.splitlines()
    assert (2, "") == (result.exit_code, result.stdout)
    assert re.fullmatch(r"cronduit: Invalid value for '(-n|--max)': 99999999999999999999999 is "
                        r"not in the range 1<=x<=(1000000|100000); see '.* --help'",
                        line)


def test_history_takes_up_to_a_million_runs(install: Install) -> None:
    """The bound itself is a count SQLite takes."""
    install.add(ended("r1"))
    result = install.invoke("job", "history", "nightly", "-n", "1000000")
    assert (0, "r1") == (result.exit_code, cells(result.stdout)[1][0])


def test_wait_refuses_a_timeout_past_ten_years(install: Install) -> None:
    """Durations the CLI takes have the config's bound."""
    result = install.invoke("job", "wait", "nightly", "--timeout", "99999999999999d")
    assert (2, "cronduit: --timeout '99999999999999d': must be at most 3650d\n") == (
        result.exit_code, result.stderr)


def test_history_of_an_unknown_job_exits_2(install: Install) -> None:
    """A name neither in the config nor in the store is refused, naming it."""
    result = install.invoke("job", "history", "nope")
    assert (2, f"cronduit: no job named 'nope' in {install.path}\n") == (
        result.exit_code, result.stderr)


def test_history_of_a_removed_job_still_shows_its_record(install: Install) -> None:
    """Coordination history outlives the job; stderr says the job is no longer configured."""
    install.add(ended("g1", job="gone"))
    result = install.invoke("job", "history", "gone", "--json")
    assert (0, ["g1"], f"cronduit: gone is not in {install.path} (removed?); showing what the "
                       "state store recorded\n") == (
        result.exit_code, [json.loads(line)["run"] for line in result.stdout.splitlines()],
        result.stderr)


# -- logs ---------------------------------------------------------------------------------


def test_logs_print_the_newest_run_that_ran(install: Install) -> None:
    """A newer skipped run never had a log, so the run before it is shown."""
    install.add(ended("r1", minutes_ago=60), ended("r2", "skipped", minutes_ago=30))
    install.write_log("r1", "line one\nline two\n")
    result = install.invoke("job", "logs", "nightly")
    assert (0, "line one\nline two\n") == (result.exit_code, result.stdout)


def test_logs_of_a_pruned_run_say_retention_deleted_them(install: Install) -> None:
    """``kept_runs`` deleted the file; the message says so rather than "no such file"."""
    install.add(ended("r0", files_pruned=True))
    result = install.invoke("job", "logs", "nightly", "--run", "r0")
    assert (1, "cronduit: the log of run r0 was deleted by retention (only the newest 5 runs "
               "keep their files: settings.kept_runs)\n") == (result.exit_code, result.stderr)


def test_logs_refuse_a_run_of_another_job_as_bad_input(install: Install) -> None:
    """``--run`` must name a run of the job given: a usage error, exit 2."""
    install.add(ended("b1", job="build"))
    result = install.invoke("job", "logs", "nightly", "--run", "b1")
    assert (2, "cronduit: no run b1 of job nightly\n") == (result.exit_code, result.stderr)


def test_logs_of_an_unknown_run_id_exit_2(install: Install) -> None:
    """A ``--run`` id the store does not hold is bad input, like any other usage error."""
    install.add(ended("r1"))
    result = install.invoke("job", "logs", "nightly", "--run", "BADID")
    assert (2, "cronduit: no run BADID of job nightly\n") == (result.exit_code, result.stderr)


def test_logs_follow_prints_new_bytes_until_the_run_ends(install: Install) -> None:
    """Each wait, the job writes a line; the second time it also ends, and its last line
    still comes out."""
    install.add(running("r1"))
    install.write_log("r1", "one\n")

    def last_words() -> None:
        install.write_log("r1", "three\n")
        end_run(install.store, "r1", "success")

    steps = iter([lambda: install.write_log("r1", "two\n"), last_words])
    result = install.invoke("job", "logs", "nightly", "--follow", sleep=lambda _: next(steps)())
    assert (0, "one\ntwo\nthree\n") == (result.exit_code, result.stdout)


def capped_at_1mib(install: Install) -> Callable[[], None]:
    """Set ``max_log: 1MiB`` and give run r1 a log as its job's is (append mode), with what
    cuts it as the supervisor would, by punching a hole: a file system without collapse."""
    install.path.write_text(CONFIG.replace("kept_runs: 5}", "kept_runs: 5, max_log: 1MiB}"))
    install.write_log("r1", "")
    job = os.open(install.paths.log("r1"), os.O_WRONLY | os.O_APPEND)
    capped = open_capped(job, 1 << 20)
    assert capped is not None
    capped.ways[:] = [PUNCH]

    def cut_now() -> None:
        cut(capped, final=True)
        capped.close()

    return cut_now


def test_logs_of_a_cut_log_show_head_marker_and_tail_without_the_hole(install: Install) -> None:
    """The punched hole reads as NUL bytes to anyone else; the log shown leaves it out."""
    install.add(ended("r1"))
    cut_now = capped_at_1mib(install)
    install.write_log("r1", "FIRST\n" + "y\n" * 1_500_000 + "LAST\n")
    cut_now()
    result = install.invoke("job", "logs", "nightly")
    head, tail = re.split(r"\n\[cronduit: [0-9]+ bytes cut here; max_log 1MiB\]\n",
                          result.stdout)
    assert (0, True, True, True, 0) == (
        result.exit_code, head.startswith("FIRST\ny\n"), tail.endswith("y\ny\nLAST\n"),
        len(result.stdout) <= 1 << 20, result.stdout.count("\0"))


def test_logs_follow_marks_a_cut_of_bytes_it_had_not_printed(install: Install) -> None:
    """Between two looks the log grew and was cut: what was cut unseen is one marker line,
    counted, and the tail follows it."""
    install.add(running("r1"))
    cut_now = capped_at_1mib(install)
    install.write_log("r1", "a\n" * 300_000)

    def grow_cut_and_end() -> None:
        install.write_log("r1", "b\n" * 300_000 + "LAST\n")
        cut_now()
        end_run(install.store, "r1", "success")

    steps = iter([grow_cut_and_end])
    result = install.invoke("job", "logs", "nightly", "--follow", sleep=lambda _: next(steps)())
    printed, told, rest = re.split(r"\n\[cronduit: ([0-9]+) bytes cut here; max_log 1MiB\]\n",
                                   result.stdout)
    written = "a\n" * 300_000 + "b\n" * 300_000 + "LAST\n"
    assert (0, written[:600_000], written[600_000 + int(told):]) == (
        result.exit_code, printed, rest)


def end_run(store: Store, run_id: str, outcome: str) -> None:
    with store.transaction() as tx:
        run = tx.get_run(run_id)
        assert run is not None
        finished = T0 + timedelta(seconds=3)
        tx.update_run(run_id, state="ended", outcome=outcome, finished_at=finished,
                      exit_status=0 if outcome == "success" else 1)
        event = "completed" if outcome == "success" else "failed"
        tx.insert_run_end(run.job, run_id, event, outcome, finished)


# -- run ----------------------------------------------------------------------------------


def test_a_manual_run_is_refused_while_the_job_runs(install: Install) -> None:
    """Exit 3 with the reason, and nothing is accepted."""
    install.add(running("b1", job="build"))
    result = install.invoke("job", "run", "build")
    assert (3, "cronduit: job build: the job has a run going; queue the manual run to wait "
               "behind it (with --queue)\n", []) == (
        result.exit_code, result.stderr, install.events())


def test_a_manual_run_is_refused_while_another_is_pending(install: Install) -> None:
    """A manual run not routed yet (the daemon is down) counts as pending."""
    install.accept("manual/build/first", job="build", kind="manual")
    result = install.invoke("job", "run", "build")
    assert (3, "cronduit: job build: a manual run is already waiting; queue this one to wait "
               "behind it (with --queue)\n") == (result.exit_code, result.stderr)


def test_queue_accepts_a_manual_run_behind_the_one_going(install: Install) -> None:
    """``--queue`` waits instead of being refused."""
    install.add(running("b1", job="build"))
    result = install.invoke("job", "run", "build", "--queue", "--operator", "carol")
    events = install.events()
    assert (0, [("build", "manual", "manual by carol", "carol")]) == (
        result.exit_code, [(e.job, e.kind, e.label, e.operator) for e in events])


def test_invalid_inputs_exit_2_naming_the_input_and_the_rule(install: Install) -> None:
    """Every problem at once, and nothing is accepted."""
    result = install.invoke("job", "run", "build", "--input", "MODE=turbo",
                            "--input", "COLOR=red")
    assert (2, "cronduit: unknown input COLOR (declared: MODE, TAG); input MODE: must be one "
               "of fast, slow\n", []) == (result.exit_code, result.stderr, install.events())


def test_a_manual_run_while_the_daemon_is_down_is_accepted_and_says_so(install: Install) -> None:
    """The event is durable with its inputs and operator; it starts when the daemon does."""
    result = install.invoke("job", "run", "build", "--input", "TAG=v7", "--operator", "dana")
    [event] = install.events()
    assert (0, f"{event.delivery_id}\n", "cronduit: no daemon is running; the run of build was "
               "accepted and will start when the daemon starts (cronduit serve)\n") == (
        result.exit_code, result.stdout, result.stderr)
    assert ("build", "manual", "manual by dana", "dana", {"inputs": {"MODE": "fast", "TAG": "v7"}},
            []) == (event.job, event.kind, event.label, event.operator,
                    json.loads(event.payload.text), install.nudged)
    assert event.delivery_id.startswith("manual/build/")


def test_detach_prints_the_delivery_id_of_a_durable_event_and_wakes_the_daemon(
    install: Install, tmp_path: Path,
) -> None:
    """With a daemon up, ``--detach`` returns at once; the event is in the store file."""
    daemon = install.heartbeat()
    result = install.invoke("job", "run", "build", "--detach", "--operator", "erin")
    config = load_config(CONFIG, str(install.path))
    reopened = open_store(config, install.path)
    try:
        with reopened.transaction() as tx:
            event = tx.event_by_delivery(result.stdout.strip())
    finally:
        reopened.close()
    assert (0, "", [daemon]) == (result.exit_code, result.stderr, install.nudged)
    assert event is not None
    assert ("build", "new", "erin") == (event.job, event.state, event.operator)


@pytest.mark.parametrize(("outcome", "code", "summary"), [
    ("success", 0, "success after 3.0s, 1 attempt"),
    ("failure", 1, "failure after 3.0s, 1 attempt (exit status 1)"),
])
def test_a_followed_manual_run_streams_its_log_and_exits_with_its_outcome(
    install: Install, outcome: str, code: int, summary: str,
) -> None:
    """The test plays the daemon: it starts the run on the first wait and ends it on the
    second; stdout is the log alone, stderr the run id and the outcome."""
    install.heartbeat()

    def start() -> None:
        [event] = install.events()
        with install.store.transaction() as tx:
            tx.insert_run(Run(id="m1", job="build", kind="manual", label=event.label,
                              state="running", created_at=T0, started_at=T0, attempts=1))
            tx.set_event_state([event.seq], "consumed", "m1")
        install.write_log("m1", "building\n")

    def finish() -> None:
        install.write_log("m1", "done\n")
        end_run(install.store, "m1", outcome)

    steps = iter([start, finish])
    result = install.invoke("job", "run", "build", "--operator", "fay",
                            sleep=lambda _: next(steps)())
    assert (code, "building\ndone\n", "cronduit: run m1 of build [manual by fay]\n"
                                      f"cronduit: run m1: {summary}\n") == (
        result.exit_code, result.stdout, result.stderr)


def test_a_followed_run_says_when_it_waits_between_attempts(install: Install) -> None:
    """Attempt 1 fails and the run sleeps 30s: stderr (not a terminal here) gets one line
    with the attempt, its exit status and when the next starts, however often the command
    looks during the backoff; stdout stays the log alone."""
    install.heartbeat()
    clock = FakeClock(T0)

    def start() -> None:
        [event] = install.events()
        with install.store.transaction() as tx:
            tx.insert_run(Run(id="m1", job="build", kind="manual", label=event.label,
                              state="running", created_at=T0, started_at=T0, attempts=1))
            tx.set_event_state([event.seq], "consumed", "m1")
        install.write_log("m1", "try 1\n")

    def back_off() -> None:
        with install.store.transaction() as tx:
            tx.update_run("m1", state="backoff", exit_status=1, reason="exit status 1",
                          next_attempt_at=T0 + timedelta(seconds=30))

    def retry() -> None:
        with install.store.transaction() as tx:
            tx.update_run("m1", state="running", attempts=2, next_attempt_at=None)
        install.write_log("m1", "try 2\n")

    def succeed() -> None:
        with install.store.transaction() as tx:
            tx.update_run("m1", reason="")  # as the engine ends a run: with its own reason
        end_run(install.store, "m1", "success")

    steps = iter([start, back_off, lambda: clock.advance(timedelta(seconds=10)), retry,
                  succeed])
    result = install.invoke("job", "run", "build", "--operator", "fay", clock=clock,
                            sleep=lambda _: next(steps)())
    assert (0, "try 1\ntry 2\n", [
        "cronduit: run m1 of build [manual by fay]",
        "cronduit: attempt 1 failed (exit status 1); attempt 2 at 2026-03-30T12:00:30Z (in 30s)",
        "cronduit: run m1: success after 3.0s, 2 attempts",
    ]) == (result.exit_code, result.stdout, result.stderr.splitlines())


def test_running_an_unknown_job_exits_2(install: Install) -> None:
    """Only configured jobs can be run."""
    result = install.invoke("job", "run", "nope")
    assert (2, f"cronduit: no job named 'nope' in {install.path}\n") == (
        result.exit_code, result.stderr)


# -- wait ---------------------------------------------------------------------------------


def end_later(install: Install, run_id: str, outcome: str) -> threading.Thread:
    """End a run from another thread after a short delay, as the daemon would."""
    install.add(running(run_id))

    def later() -> None:
        time.sleep(0.3)
        end_run(install.store, run_id, outcome)

    thread = threading.Thread(target=later)
    thread.start()
    return thread


@pytest.mark.parametrize(("outcome", "event", "code"), [
    ("success", "completed", 0),
    ("failure", "failed", 1),
])
def test_wait_exits_with_the_next_run_end(install: Install, outcome: str, event: str,
                                          code: int) -> None:
    """``job wait`` polls until the run ends, prints the event and exits 0 only on success."""
    thread = end_later(install, "w1", outcome)
    result = install.invoke("job", "wait", "nightly", "--timeout", "30s", clock=SystemClock(),
                            sleep=time.sleep)
    thread.join()
    assert (code, f"nightly run w1: {event} ({outcome}) at 2026-03-30T12:00:03Z\n") == (
        result.exit_code, result.stdout)


def test_wait_times_out_with_124_and_ignores_ends_from_before_the_call(
    install: Install,
) -> None:
    """A run that ended before the call is not "the next" one; the fake clock runs out."""
    install.add(ended("old"))
    with install.store.transaction() as tx:
        tx.insert_run_end("nightly", "old", "completed", "success", T0 - timedelta(hours=1))
    clock = FakeClock(T0)
    result = install.invoke("job", "wait", "nightly", "--timeout", "30s", clock=clock,
                            sleep=lambda seconds: clock.advance(timedelta(seconds=seconds)))
    assert (124, "", "cronduit: no run of nightly ended within 30s\n") == (
        result.exit_code, result.stdout, result.stderr)


@pytest.mark.parametrize(("outcome", "event", "code"), [
    ("success", "completed", 0),
    ("failure", "failed", 1),
])
def test_wait_json_prints_the_run_end_and_keeps_the_exit_status(
    install: Install, outcome: str, event: str, code: int,
) -> None:
    """One JSON document on stdout; the exit status is the one the plain output gives."""
    install.add(running("w1"))
    result = install.invoke("job", "wait", "nightly", "--json",
                            sleep=lambda _: end_run(install.store, "w1", outcome))
    assert (code, {"job": "nightly", "run": "w1", "event": event, "outcome": outcome,
                   "ended_at": "2026-03-30T12:00:03Z"}) == (
        result.exit_code, json.loads(result.stdout))


def test_wait_json_that_times_out_prints_nothing_and_exits_124(install: Install) -> None:
    """No document on a timeout: stdout stays empty and stderr has its one line."""
    clock = FakeClock(T0)
    result = install.invoke("job", "wait", "nightly", "--json", "--timeout", "1s", clock=clock,
                            sleep=lambda seconds: clock.advance(timedelta(seconds=seconds)))
    assert (124, "", "cronduit: no run of nightly ended within 1s\n") == (
        result.exit_code, result.stdout, result.stderr)


def test_wait_refuses_a_bad_timeout(install: Install) -> None:
    """``--timeout`` takes a duration such as 30s."""
    result = install.invoke("job", "wait", "nightly", "--timeout", "30")
    assert (2, "cronduit: --timeout '30': must be a duration such as 30s, 15m, 6h, 1d or 1h30m "
               "(units d, h, m, s)\n") == (result.exit_code, result.stderr)


def test_ctrl_c_stops_following_a_manual_run_but_not_the_run(install: Install) -> None:
    """Exit 130, a line that says the run goes on and how to follow it again; the run is
    still going in the store."""
    install.heartbeat()

    def start() -> None:
        [event] = install.events()
        with install.store.transaction() as tx:
            tx.insert_run(running("m1", job="build"))
            tx.set_event_state([event.seq], "consumed", "m1")

    def interrupt() -> None:
        raise KeyboardInterrupt

    steps = iter([start, interrupt])
    result = install.invoke("job", "run", "build", sleep=lambda _: next(steps)())
    with install.store.transaction() as tx:
        still = tx.get_run("m1")
    assert (130, "cronduit: run m1 of build [manual by bob]\n\ncronduit: stopped following; "
                 "run m1 goes on (cronduit job logs build --run m1 --follow)\n", "running") == (
        result.exit_code, result.stderr, still.state if still else None)


def test_logs_of_an_ended_run_without_a_log_file_exit_1(install: Install) -> None:
    """A run whose process never wrote a file says so instead of printing nothing."""
    install.add(ended("r1"))
    result = install.invoke("job", "logs", "nightly")
    assert (1, "", "cronduit: run r1 left no log\n") == (
        result.exit_code, result.stdout, result.stderr)


def test_a_manual_run_under_a_dry_run_daemon_is_accepted_and_not_followed(
    install: Install,
) -> None:
    """A dry run holds work, so following would never end: the command says so and returns."""
    daemon = install.heartbeat(dry_run=True)
    result = install.invoke("job", "run", "build")
    [event] = install.events()
    assert (0, f"{event.delivery_id}\n", "cronduit: the daemon runs in dry run; the run of "
               "build was accepted and will start after a normal start\n", [daemon]) == (
        result.exit_code, result.stdout, result.stderr, install.nudged)
