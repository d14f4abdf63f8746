"""What a job sees when the real daemon runs it, and what never leaks."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from tests.acceptance.conftest import Deployment

SECRET = "s3cr3t-value-that-must-not-leak"

CONFIG = """
settings:
  secrets_file: secrets.env
jobs:
  show:
    run: 'env > env.txt; cat "$CRONDUIT_TRIGGER_FILE" > trigger.json; pwd > pwd.txt'
    dir: work
    env: {STAGE: blue}
    secrets: [API_TOKEN]
    inputs:
      TARGET: {enum: [staging, production], default: staging}
"""


def test_the_job_gets_the_environment_contract_and_secrets_stay_out_of_records(
    deployment: Deployment,
) -> None:
    """CRONDUIT_* variables, inputs, env and secrets reach the job; the secret is nowhere else."""
    (deployment.folder / "work").mkdir()
    (deployment.folder / "secrets.env").write_text(f"API_TOKEN={SECRET}\n")
    deployment.write(CONFIG)
    daemon = deployment.serve(extra_env={"UNRELATED_DAEMON_VARIABLE": "x"})
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    subprocess.run([sys.executable, "-m", "cronduit", "job", "run", "show", "--input",
                    "TARGET=production", "-c", str(deployment.config)], check=True,
                   capture_output=True)
    work = deployment.folder / "work"
    seen = dict(line.split("=", 1) for line in (work / "env.txt").read_text().splitlines()
                if "=" in line)
    [run] = deployment.runs("show")
    assert {
        "CRONDUIT_JOB": "show",
        "CRONDUIT_RUN_ID": run.id,
        "CRONDUIT_TRIGGER": "manual",
        "CRONDUIT_ATTEMPT": "1",
        "TARGET": "production",
        "STAGE": "blue",
        "API_TOKEN": SECRET,
    }.items() <= seen.items()
    assert "UNRELATED_DAEMON_VARIABLE" not in seen
    assert str(work) == (work / "pwd.txt").read_text().strip()
    output_dir = deployment.folder / ".cronduit" / "runs" / run.id / "output"
    assert str(output_dir) == seen["CRONDUIT_OUTPUT_DIR"]
    trigger = json.loads((work / "trigger.json").read_text())
    assert ("manual", {"TARGET": "production"}, run.id) == (
        trigger["kind"], trigger["inputs"], trigger["run"])
    deployment.kill(daemon)
    database = sqlite3.connect(deployment.folder / ".cronduit" / "cronduit.db")
    dump = "\n".join(database.iterdump())
    assert SECRET not in dump
    assert SECRET not in deployment.daemon_log()
