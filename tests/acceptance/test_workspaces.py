"""Workspaces through the real daemon, with a local bare repository as the remote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.acceptance.conftest import Deployment
from tests.helpers.git import Remote


def run_now(deployment: Deployment, job: str) -> None:
    subprocess.run([sys.executable, "-m", "cronduit", "job", "run", job, "--detach", "-c",
                    str(deployment.config)], check=True, capture_output=True, timeout=30)


def test_a_fresh_worktree_at_the_remote_head_is_removed_after_success(
        deployment: Deployment) -> None:
    remote = Remote(deployment.folder)
    head = remote.commit("second.txt")
    deployment.write(f"""
jobs:
  build:
    run: 'ls > "$CRONDUIT_OUTPUT_DIR/files"; echo "$CRONDUIT_WORKSPACE_NOTE" >
      "$CRONDUIT_OUTPUT_DIR/note"'
    workspace: {{git: {remote.bare}, mode: fresh}}
""")
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    run_now(deployment, "build")
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("build")] == ["success"])
    (run,) = deployment.runs("build")
    output = deployment.folder / ".cronduit" / "runs" / run.id / "output"
    assert "second.txt" in (output / "files").read_text().split()
    assert f"fresh worktree at origin/main {head}" == (output / "note").read_text().strip()
    tree = deployment.folder / ".cronduit" / "workspaces" / "build" / "runs" / run.id
    deployment.wait_for(lambda: not tree.exists())
    assert f"fresh worktree at origin/main {head}" == deployment.history_json("build")[0][
        "workspace"]
    deployment.kill(daemon)


def test_two_runs_contend_for_the_shared_checkout(deployment: Deployment) -> None:
    """The first run holds the checkout; a commit lands; the second run is told it works
    one commit behind, and the checkout does not move under the first."""
    remote = Remote(deployment.folder)
    deployment.write(f"""
jobs:
  slow:
    run: 'touch "$CRONDUIT_OUTPUT_DIR/begun"; sleep 3; ls > "$CRONDUIT_OUTPUT_DIR/files"'
    workspace: {{git: {remote.bare}}}
  quick:
    run: 'echo "$CRONDUIT_WORKSPACE_NOTE" > "$CRONDUIT_OUTPUT_DIR/note"'
    workspace: {{git: {remote.bare}}}
""")
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 2 jobs" in deployment.daemon_log())
    run_now(deployment, "slow")
    deployment.wait_for(lambda: [r.state for r in deployment.runs("slow")] == ["running"])
    (slow,) = deployment.runs("slow")
    # The job itself has begun, so the checkout it holds was prepared before the commit.
    deployment.wait_for((deployment.folder / ".cronduit" / "runs" / slow.id / "output" /
                         "begun").exists)
    remote.commit("second.txt")
    run_now(deployment, "quick")
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("quick")] == ["success"])
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("slow")] == ["success"])
    state = deployment.folder / ".cronduit"
    (quick,) = deployment.runs("quick")
    (slow,) = deployment.runs("slow")
    assert "main checkout, 1 commit behind origin/main: 1 other run using the checkout" == (
        state / "runs" / quick.id / "output" / "note").read_text().strip()
    assert "second.txt" not in (state / "runs" / slow.id / "output" / "files").read_text()
    deployment.kill(daemon)


def test_an_unreachable_workspace_fails_the_run_with_the_step(deployment: Deployment) -> None:
    deployment.write(f"""
jobs:
  build:
    run: 'true'
    workspace: {{git: {Path(deployment.folder) / "no-such-repo.git"}}}
""")
    daemon = deployment.serve()
    deployment.wait_for(lambda: "serving 1 job " in deployment.daemon_log())
    run_now(deployment, "build")
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("build")] == ["failure"])
    (run,) = deployment.runs("build")
    assert "could not start: job build: workspace: git clone failed" in run.reason
    deployment.kill(daemon)
