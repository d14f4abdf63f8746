"""The secrets file under a running daemon: broken by the time of an apply, it is refused
like a broken config (the daemon, its config and its secrets stay); missing at start, it is
named in the log and the environment's secrets serve."""

from __future__ import annotations

import subprocess
import sys

import httpx

from cronduit.core.signing import webhook_token
from tests.acceptance.conftest import Deployment
from tests.acceptance.test_http import base_url

SECRET = "hook-secret-2b3c-never-shown"
CONFIG = """
settings:
  secrets_file: secrets.env
  webhook_secret: HOOK_KEY
jobs:
  poke: {run: 'echo poked >> pokes.txt', webhook: true}
"""


def test_an_apply_with_a_broken_secrets_file_is_refused_and_the_daemon_carries_on(
        deployment: Deployment) -> None:
    """``apply`` exits 2 naming FILE:LINE; webhooks still verify with the secret in force."""
    secrets = deployment.folder / "secrets.env"
    secrets.write_text(f"HOOK_KEY={SECRET}\n")
    deployment.write(CONFIG)
    daemon = deployment.serve()
    hook = f"{base_url(deployment)}/hooks/poke/{webhook_token(SECRET, 'poke')}"
    secrets.write_bytes(f"HOOK_KEY={SECRET}\n{SECRET}\n".encode())
    applied = subprocess.run([sys.executable, "-m", "cronduit", "apply", "-c",
                              str(deployment.config)], capture_output=True, text=True,
                             timeout=60, check=False)
    assert 2 == applied.returncode, applied.stdout + applied.stderr
    assert f"{secrets}:2: not NAME=value: the line has no '='" in applied.stderr.splitlines()
    assert 202 == httpx.post(hook, content=b"after", timeout=10).status_code
    deployment.wait_for(lambda: deployment.lines("pokes.txt") == ["poked"])
    assert daemon.poll() is None
    log = deployment.daemon_log()
    assert ("apply refused: the secrets file has errors; the running config and secrets stay"
            in log)
    assert "Traceback" not in log
    assert SECRET not in log + applied.stdout + applied.stderr


def test_a_missing_secrets_file_is_named_at_start_and_the_environment_serves(
        deployment: Deployment) -> None:
    deployment.write(CONFIG)
    deployment.serve(extra_env={"HOOK_KEY": SECRET})
    hook = f"{base_url(deployment)}/hooks/poke/{webhook_token(SECRET, 'poke')}"
    assert 202 == httpx.post(hook, timeout=10).status_code
    missing = deployment.folder / "secrets.env"
    assert (f"warning: settings.secrets_file names {missing}, which does not exist: secrets "
            "are read from the environment only") in deployment.daemon_log()
