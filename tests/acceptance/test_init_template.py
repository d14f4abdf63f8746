"""The first hour of a new user: ``cronduit init``, then ``serve``, then run every job."""

from __future__ import annotations

import subprocess
import sys

from cronduit.core.config import load_config
from cronduit.core.enums import Outcome
from tests.acceptance.conftest import Deployment


def cli(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cronduit", *args, "-c", str(deployment.config)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          cwd=deployment.folder)


def test_every_job_of_the_init_template_runs_by_hand_to_a_recorded_outcome(
    deployment: Deployment,
) -> None:
    """Each job the template declares, run with ``job run``, ends with an outcome on record;
    the daemon serves the template as written (only its port is left to the system)."""
    assert 0 == cli(deployment, "init", str(deployment.config)).returncode
    template = deployment.config.read_text()
    deployment.write(template.replace("listen: 127.0.0.1:8770", "listen: 127.0.0.1:0"))
    jobs = list(load_config(template, "cronduit.yaml").jobs)
    daemon = deployment.serve()
    deployment.wait_for(lambda: f"serving {len(jobs)} jobs" in deployment.daemon_log())
    results = {name: cli(deployment, "job", "run", name, "--queue") for name in jobs}
    assert dict.fromkeys(jobs, 0) == {name: r.returncode for name, r in results.items()}
    for name in jobs:
        manual = [run for run in deployment.runs(name) if run.kind == "manual"]
        assert [Outcome.SUCCESS] == [run.outcome for run in manual], name
    assert daemon.poll() is None  # still serving
    deployment.kill(daemon)
