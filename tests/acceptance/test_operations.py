"""Operating the real daemon: apply, dry run, manual runs and waits through the CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

from tests.acceptance.conftest import Deployment


def cli(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cronduit", *args, "-c", str(deployment.config)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          cwd=deployment.folder)


BY_HAND = """
jobs:
  hello:
    run: 'echo "hello $GREETING"'
    inputs:
      GREETING: {enum: [world, you], default: world}
"""


def test_a_manual_run_follows_its_log_and_exits_with_the_outcome(deployment: Deployment) -> None:
    """job run prints the job's output and exits 0 on success."""
    deployment.write(BY_HAND)
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    result = cli(deployment, "job", "run", "hello", "--input", "GREETING=you")
    assert (0, "hello you\n") == (result.returncode, result.stdout)
    [record] = deployment.history_json("hello")
    assert {"GREETING": "you"} == record["inputs"]
    deployment.kill(daemon)


def test_a_manual_run_asked_while_the_daemon_is_down_runs_when_it_starts(
    deployment: Deployment,
) -> None:
    """Accepted durably with a note on the terminal; the next daemon runs it."""
    deployment.write(BY_HAND)
    result = cli(deployment, "job", "run", "hello")
    assert 0 == result.returncode
    assert "daemon" in result.stderr
    daemon = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("hello")] == ["success"])
    deployment.kill(daemon)


def test_job_wait_returns_with_the_next_run_end(deployment: Deployment) -> None:
    """job wait, called while a 3-second run goes, exits 0 when that run completes."""
    deployment.write("jobs:\n  slow:\n    run: 'sleep 3'\n")
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    assert 0 == cli(deployment, "job", "run", "slow", "--detach").returncode
    waited: list[int] = []
    waiter = threading.Thread(
        target=lambda: waited.append(cli(deployment, "job", "wait", "slow",
                                         "--timeout", "20s").returncode))
    waiter.start()
    waiter.join(timeout=30)
    assert [0] == waited
    deployment.kill(daemon)


def test_apply_reloads_and_an_invalid_config_is_refused(deployment: Deployment) -> None:
    """apply prints what changed; a broken file is refused and the running config stays."""
    deployment.write(BY_HAND)
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    deployment.write(BY_HAND + "  tick:\n    run: 'true'\n    every: 1h\n")
    applied = cli(deployment, "apply")
    assert 0 == applied.returncode
    assert "tick: added" in applied.stdout
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("tick")] == ["success"])
    deployment.write("jobs:\n  tick:\n    run: 'true'\n    every: 1h\n    timezone: UTC\n")
    refused = cli(deployment, "apply")
    assert 2 == refused.returncode
    assert "unknown key 'timezone'" in refused.stderr
    daemon.send_signal(signal.SIGHUP)  # the daemon's own check, for a file changed behind apply
    deployment.wait_for(lambda: "apply refused" in deployment.daemon_log())
    assert daemon.poll() is None
    assert "apply refused: the config has errors; the running config stays" in (
        deployment.daemon_log())
    deployment.write(BY_HAND + "  tick:\n    run: 'true'\n    every: 1h\n")
    assert 0 == cli(deployment, "job", "run", "hello").returncode
    deployment.kill(daemon)


def test_a_dry_run_accepts_and_holds_then_a_normal_start_runs_once(
    deployment: Deployment,
) -> None:
    """serve --dry-run arms no timers and starts nothing; two held requests run as one."""
    deployment.write(BY_HAND)
    dry = deployment.serve("--dry-run")
    deployment.wait_for(lambda: "dry run" in deployment.daemon_log())
    assert 0 == cli(deployment, "job", "run", "hello", "--detach").returncode
    assert 0 == cli(deployment, "job", "run", "hello", "--detach", "--queue").returncode
    deployment.kill(dry)
    assert [] == deployment.runs("hello")
    daemon = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("hello")] == ["success"])
    [record] = deployment.history_json("hello")
    assert 2 == len(record["triggers"])  # type: ignore[arg-type]
    deployment.kill(daemon)


def test_a_second_daemon_on_the_same_state_is_refused(deployment: Deployment) -> None:
    """One daemon per state directory: the second exits 3 and says why."""
    deployment.write(BY_HAND)
    first = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    second = deployment.serve()
    assert 3 == second.wait(timeout=15)
    assert "another cronduit daemon" in deployment.daemon_log()
    deployment.kill(first)


def test_a_job_whose_dir_is_missing_fails_and_the_daemon_goes_on(
    deployment: Deployment,
) -> None:
    deployment.write("""
jobs:
  lost: {run: "echo never", every: 1h, dir: /nonexistent/cronduit-test}
  fine: {run: "echo ran >> fine.txt", every: 1h}
""")
    daemon = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("lost")] == ["failure"])
    deployment.wait_for(lambda: deployment.lines("fine.txt") == ["ran"])
    (lost,) = deployment.runs("lost")
    assert lost.reason == "could not start: No such file or directory: /nonexistent/cronduit-test"
    assert daemon.poll() is None  # still serving
    deployment.kill(daemon)


def test_applies_and_pauses_are_in_the_audit_log(deployment: Deployment) -> None:
    """apply --operator names who applied and what changed; a pause made through the CLI
    holds in the running daemon (a manual run is refused) and both show in audit --json."""
    deployment.write(BY_HAND)
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    deployment.write(BY_HAND + "  tick:\n    run: 'true'\n    every: 1h\n")
    assert 0 == cli(deployment, "apply", "--operator", "ana").returncode
    assert 0 == cli(deployment, "job", "pause", "hello", "--reason", "broken",
                    "--operator", "bo").returncode
    refused = cli(deployment, "job", "run", "hello", "--detach")
    assert 3 == refused.returncode
    assert "paused by bo" in refused.stderr
    audit = cli(deployment, "audit", "--json")
    entries = [json.loads(line) for line in audit.stdout.splitlines()]
    assert [("pause", "bo"), ("apply", "ana")] == [(e["action"], e["operator"])
                                                   for e in entries[:2]]
    assert "tick: added" in entries[1]["detail"]["changes"]
    deployment.kill(daemon)


def test_a_half_edited_file_leaves_reads_working_and_a_refused_apply_explained(
    deployment: Deployment,
) -> None:
    """With a broken file on disk, status and job history go by the config the daemon
    applied (one warning says so), and the refused SIGHUP logs each error where it is."""
    deployment.write(BY_HAND)
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    assert 0 == cli(deployment, "job", "run", "hello").returncode
    deployment.config.write_text(deployment.config.read_text().replace("default: world",
                                                                       "default: nobody"))
    for command, shown in ((("status",), "hello"), (("job", "history", "hello"), "success"),
                           (("schedule", "list"), "hello")):
        result = cli(deployment, *command)
        assert 0 == result.returncode, result.stderr
        assert [f"cronduit: warning: {deployment.config} differs from the config the daemon "
                "applied"] == [line.split(" (")[0] for line in result.stderr.splitlines()]
        assert shown in result.stdout
    assert 2 == cli(deployment, "apply").returncode  # refused before asking the daemon
    daemon.send_signal(signal.SIGHUP)
    deployment.wait_for(lambda: "apply refused: " + str(deployment.config) + ":8:7: "
                        in deployment.daemon_log())
    deployment.kill(daemon)


def test_serve_warns_once_for_each_secret_the_config_names_and_nobody_set(
    deployment: Deployment,
) -> None:
    """A webhook secret and an API token that are not set: one warning line each at start,
    saying what stays off; the values, when set, never appear."""
    deployment.write("settings:\n  webhook_secret: HOOK_KEY\n  api_token: API_KEY\n"
                     "jobs:\n  poke: {run: 'true', webhook: true}\n")
    daemon = deployment.serve(extra_env={"API_KEY": "a-value-never-logged"})
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    warnings = [line.split(" ", 1)[1] for line in deployment.daemon_log().splitlines()
                if " warning: " in line]
    assert ["warning: settings.webhook_secret names the secret HOOK_KEY, which is not set "
            "(neither in the secrets file nor in the environment): job webhooks answer 404 "
            "until it is set"] == warnings
    assert "a-value-never-logged" not in deployment.daemon_log()
    deployment.kill(daemon)
