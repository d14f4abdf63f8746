"""SIGKILL the real daemon at chosen points; nothing is lost and nothing runs twice."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from tests.acceptance.conftest import Deployment

INTERVAL = """
jobs:
  once:
    run: 'echo started >> starts.txt'
    every: 1h
"""


def test_a_kill_after_the_firing_commits_and_before_routing_runs_the_slot_once(
    deployment: Deployment,
) -> None:
    """The firing is durable: the next daemon routes and runs it, exactly once."""
    deployment.write(INTERVAL)
    first = deployment.serve(crash_at="fired")
    first.wait(timeout=15)
    assert -9 == first.returncode
    assert [] == deployment.lines("starts.txt")
    second = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("once")] == ["success"])
    deployment.wait_for_a_turn()  # a second routing of the firing would have started by now
    deployment.wait_for(lambda: all(r.state == "ended" for r in deployment.runs("once")))
    assert ["started"] == deployment.lines("starts.txt")
    deployment.kill(second)


def test_a_kill_before_the_launch_starts_the_run_once_on_restart(
    deployment: Deployment,
) -> None:
    """The run row committed but no process began: the restart launches it, once."""
    deployment.write(INTERVAL)
    first = deployment.serve(crash_at="launching")
    first.wait(timeout=15)
    assert [] == deployment.lines("starts.txt")
    second = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("once")] == ["success"])
    assert ["started"] == deployment.lines("starts.txt")
    deployment.kill(second)


def test_a_restart_does_not_run_an_interval_job_that_is_not_due(
    deployment: Deployment,
) -> None:
    """every 1h ran at the first start; a restart a moment later runs nothing."""
    deployment.write(INTERVAL)
    first = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("once")] == ["success"])
    deployment.kill(first)
    second = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    deployment.wait_for_a_turn()  # past its first tick, where a job it took as due would fire
    assert 1 == len(deployment.runs("once"))
    deployment.kill(second)


SLOW = """
jobs:
  slow:
    run: 'echo started >> starts.txt; sleep 2; exit 3'
    every: 1h
"""


def test_a_run_survives_a_daemon_kill_and_is_adopted_with_its_real_exit_status(
    deployment: Deployment,
) -> None:
    """Kill the daemon mid-run; the job finishes; the next daemon records exit 3, once."""
    deployment.write(SLOW)
    first = deployment.serve()
    deployment.wait_for(lambda: deployment.lines("starts.txt") == ["started"])
    deployment.kill(first)
    second = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("slow")] == ["failure"])
    [record] = deployment.history_json("slow")
    assert (3, "failure", 1) == (record["exit_status"], record["outcome"], record["attempts"])
    assert ["started"] == deployment.lines("starts.txt")
    deployment.kill(second)


FLAKY = """
jobs:
  flaky:
    run: |
      echo started >> starts.txt
      if [ ! -e failed-once ]; then
        touch failed-once
        echo 2s > "$CRONDUIT_RETRY_AFTER_FILE"
        exit 75
      fi
    every: 1h
"""


def test_a_kill_during_a_retry_backoff_resumes_the_retry(deployment: Deployment) -> None:
    """Attempt 1 asks for a retry in 2s; the daemon dies in the backoff; attempt 2 still runs."""
    deployment.write(FLAKY)
    first = deployment.serve()
    deployment.wait_for(lambda: any(r.state == "backoff" for r in deployment.runs("flaky")))
    deployment.kill(first)
    second = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("flaky")] == ["success"])
    [run] = deployment.runs("flaky")
    assert 2 == run.attempts
    assert ["started", "started"] == deployment.lines("starts.txt")
    deployment.kill(second)


def test_a_clean_sigterm_leaves_the_run_going_for_the_next_daemon(
    deployment: Deployment,
) -> None:
    """SIGTERM stops the daemon, not the run; the next daemon records the run's end."""
    deployment.write(SLOW)
    first = deployment.serve()
    deployment.wait_for(lambda: deployment.lines("starts.txt") == ["started"])
    first.terminate()
    first.wait(timeout=10)
    assert 0 == first.returncode
    assert "stopped; runs going carry on" in deployment.daemon_log()
    second = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("slow")] == ["failure"])
    assert ["started"] == deployment.lines("starts.txt")
    deployment.kill(second)


def test_a_run_killed_while_the_daemon_was_down_is_recorded_as_killed(
    deployment: Deployment,
) -> None:
    """Daemon killed, then the run's whole process group: the supervisor, which outlives the
    daemon, recorded the real end, and the next daemon reports it."""
    deployment.write(SLOW.replace("sleep 2", "sleep 30"))
    first = deployment.serve()
    deployment.wait_for(lambda: deployment.lines("starts.txt") == ["started"])
    deployment.wait_for(lambda: deployment.runs("slow")[0].pid is not None)
    [run] = deployment.runs("slow")
    deployment.kill(first)
    assert run.pid is not None
    os.killpg(run.pid, signal.SIGKILL)
    second = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("slow")] == ["failure"])
    [ended] = deployment.runs("slow")
    assert "killed by signal 9" == ended.reason
    deployment.kill(second)


def test_a_run_whose_process_vanished_while_the_daemon_was_down_is_a_failure(
    deployment: Deployment,
) -> None:
    """Daemon and supervisor killed, then the run's whole process group: nobody was left to
    record how it ended, so it is a failure that says so, and it never runs again."""
    deployment.write(SLOW.replace("sleep 2", "sleep 30"))
    first = deployment.serve()
    deployment.wait_for(lambda: deployment.lines("starts.txt") == ["started"])
    deployment.wait_for(lambda: deployment.runs("slow")[0].pid is not None)
    [run] = deployment.runs("slow")
    supervisors = _supervisors_of(first.pid)
    deployment.kill(first)
    for pid in supervisors:
        os.kill(pid, signal.SIGKILL)
    assert run.pid is not None
    os.killpg(run.pid, signal.SIGKILL)
    second = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("slow")] == ["failure"])
    [ended] = deployment.runs("slow")
    assert (1, "process vanished while cronduit was down", ["started"]) == (
        len(supervisors), ended.reason, deployment.lines("starts.txt"))
    deployment.kill(second)


def _supervisors_of(daemon: int) -> list[int]:
    """The supervisor processes a daemon started (its children running the supervisor)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat[stat.rindex(b")") + 2:].split()[1])
        if parent == daemon and b"cronduit.executor.supervisor import main" in command:
            found.append(int(entry.name))
    return found


EACH_SECOND = """
jobs:
  tick:
    run: 'echo ran >> ticks.txt'
    every: 1s
"""


def test_a_daemon_stopped_for_seconds_leaves_no_interval_slot_without_a_fate(
    deployment: Deployment,
) -> None:
    """SIGSTOP the daemon of an every-1s job for 3.5 s, then SIGCONT: one late run, and
    `schedule slots --json` gives every second from the first slot to the last a row, the
    seconds passed over as missed with the reason; the jobs' own output matches the runs."""
    deployment.write(EACH_SECOND)
    daemon = deployment.serve()
    deployment.wait_for(lambda: len(deployment.lines("ticks.txt")) >= 2)
    daemon.send_signal(signal.SIGSTOP)
    time.sleep(3.5)  # the stall itself is the case: a daemon frozen past three slots
    daemon.send_signal(signal.SIGCONT)
    stopped_at = len(deployment.lines("ticks.txt"))
    deployment.wait_for(lambda: len(deployment.lines("ticks.txt")) >= stopped_at + 3)
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=15)
    out = subprocess.run([sys.executable, "-m", "cronduit", "schedule", "slots", "tick",
                          "--json", "-c", str(deployment.config)],
                         capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    seconds = [datetime.fromisoformat(str(row["slot"]).replace("Z", "+00:00")) for row in rows]
    assert [timedelta(seconds=1)] * (len(seconds) - 1) == [
        later - earlier for earlier, later in itertools.pairwise(seconds)]
    missed = [row for row in rows if row["fate"] == "missed"]
    assert len(missed) >= 2, rows
    assert all("an interval job runs once, not a burst" in str(row["reason"]) for row in missed)
    ran = [row for row in rows if row["fate"] == "ran"]
    assert len(ran) == len(deployment.runs("tick"))
    # a run launched just before the stop may write its line a moment after the daemon left
    deployment.wait_for(lambda: len(deployment.lines("ticks.txt")) == len(ran))
