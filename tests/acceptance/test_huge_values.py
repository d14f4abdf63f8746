"""Numbers past their bounds, given to a running daemon: refused at check, refused by apply and
by SIGHUP, and the daemon keeps serving the config it had (once such an apply ended it)."""

from __future__ import annotations

import signal

from tests.acceptance.conftest import Deployment
from tests.acceptance.test_operations import cli

RUNNING = "jobs:\n  tick: {run: 'true', every: 1h}\n"
HUGE = """\
settings:
  kept_runs: 1000000000000000000000000000000
jobs:
  tick: {run: 'true', every: 3000000d, timeout: 9999999999999h}
  retried: {run: 'true', timeout: 3650d, retry: {attempts: 3, backoff: 9999999d}}
  late: {run: 'true', cron: '0 3 * * *', jitter: 9999999d, catch_up: 99999999d}
"""


def test_a_daemon_given_huge_values_keeps_running_and_keeps_its_config(
        deployment: Deployment) -> None:
    """``apply`` refuses the file before the daemon sees it, SIGHUP makes the daemon refuse
    it itself; either way the daemon serves on with the config it had, and a valid apply
    after is applied."""
    deployment.write(RUNNING)
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    deployment.write(HUGE)
    checked = cli(deployment, "check")
    refused = cli(deployment, "apply")
    assert (2, 2) == (checked.returncode, refused.returncode)
    assert [f"{deployment.config}:{error}" for error in (  # the deployment adds line 2
        "3:14: settings.kept_runs: must be at most 1000000",
        "5:30: jobs.tick.every: must be at most 3650d",
        "5:49: jobs.tick.timeout: must be at most 3650d",
        "6:72: jobs.retried.retry.backoff: must be at most 3650d",
        "7:50: jobs.late.jitter: must be at most 3650d",
        "7:70: jobs.late.catch_up: must be at most 3650d",
    )] == checked.stderr.splitlines()
    assert refused.stderr.startswith(checked.stderr)
    daemon.send_signal(signal.SIGHUP)
    deployment.wait_for(lambda: "apply refused: the config has errors" in deployment.daemon_log())
    assert daemon.poll() is None
    listed = cli(deployment, "schedule", "list")
    assert (0, ["tick"]) == (listed.returncode,
                             [line.split()[0] for line in listed.stdout.splitlines()[1:]])
    deployment.write(RUNNING + "  more: {run: 'true', every: 1h}\n")
    applied = cli(deployment, "apply")
    assert (0, "more: added") == (applied.returncode, applied.stdout.splitlines()[0])
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("more")] == ["success"])
    assert "Traceback" not in deployment.daemon_log()
    assert daemon.poll() is None
    deployment.kill(daemon)
