"""No secret value anywhere: a whole session of the real daemon and CLI, scanned.

Every kind of secret is set (webhook, GitHub, API token, a GitHub token, a job's secret);
webhooks, GitHub deliveries, run-now, pause, refusals and failures are exercised; then every
file the deployment wrote (daemon log, run logs, trigger files, the store), every HTTP answer
and every CLI output is searched for each value. Only ``doctor --deep`` prints credentials,
and those are tokens derived from the webhook secret, never the secret itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import subprocess
import sys
from pathlib import Path

import httpx

from cronduit.core.signing import webhook_token
from tests.acceptance.conftest import Deployment

SECRETS = {
    "HOOK_KEY": "hook-secret-9f8e7d",
    "GH_KEY": "github-secret-6c5b4a",
    "API_KEY": "api-token-3e2d1c",
    "GH_TOKEN": "github-token-0f1e2d",
    "DB_PASSWORD": "db-password-a1b2c3",
}
CONFIG = """
settings:
  secrets_file: secrets.env
  webhook_secret: HOOK_KEY
  github_secret: GH_KEY
  github_token: GH_TOKEN
  api_token: API_KEY
jobs:
  poke: {run: 'test -n "$DB_PASSWORD" && echo got it', webhook: true, secrets: [DB_PASSWORD]}
  build:
    run: 'exit 3'
    secrets: [DB_PASSWORD]
    on: {events: [check_suite.completed], branches: [main], conclusions: [failure]}
"""


def cli(deployment: Deployment, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "cronduit", *args, "-c",
                           str(deployment.config)], capture_output=True, text=True, timeout=60,
                          check=False)  # doctor and refusals exit non-zero by design
    return done.stdout + done.stderr


def test_no_secret_value_appears_in_any_output_file_or_answer(deployment: Deployment) -> None:
    (deployment.folder / "secrets.env").write_text(
        "".join(f"{name}={value}\n" for name, value in SECRETS.items()))
    deployment.write(CONFIG)
    daemon = deployment.serve()
    deployment.wait_for(lambda: "listening on" in deployment.daemon_log())
    found = re.search(r"listening on (http://\S+)", deployment.daemon_log())
    assert found is not None
    base = found.group(1)
    answers: list[str] = []
    token = webhook_token(SECRETS["HOOK_KEY"], "poke")
    answers.append(httpx.post(f"{base}/hooks/poke/{token}", json={"a": 1}, timeout=10).text)
    answers.append(httpx.post(f"{base}/hooks/poke/wrong", timeout=10).text)
    suite = json.loads((Path(__file__).parents[1] / "fixtures" / "github" /
                        "check_suite_completed.json").read_text())
    body = json.dumps(suite).encode()
    signature = "sha256=" + hmac.new(SECRETS["GH_KEY"].encode(), body,
                                     hashlib.sha256).hexdigest()
    answers.append(httpx.post(f"{base}/github", content=body, timeout=10, headers={
        "X-GitHub-Event": "check_suite", "X-GitHub-Delivery": "d-1",
        "X-Hub-Signature-256": signature}).text)
    answers.append(httpx.post(f"{base}/github", content=body, timeout=10, headers={
        "X-GitHub-Event": "check_suite", "X-GitHub-Delivery": "d-2",
        "X-Hub-Signature-256": "sha256=" + "0" * 64}).text)
    auth = {"Authorization": f"Bearer {SECRETS['API_KEY']}"}
    answers.append(httpx.post(f"{base}/v1/jobs/build/run", headers=auth, timeout=10).text)
    answers.append(httpx.post(f"{base}/v1/jobs/build/run", timeout=10,
                              headers={"Authorization": "Bearer wrong"}).text)
    answers.append(httpx.get(f"{base}/openapi.json", timeout=10).text)
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("poke")] == ["success"])
    deployment.wait_for(lambda: "failure" in [r.outcome for r in deployment.runs("build")])
    outputs = [cli(deployment, "status"), cli(deployment, "status", "--json"),
               cli(deployment, "doctor"), cli(deployment, "job", "history", "build", "--json"),
               cli(deployment, "job", "logs", "poke"), cli(deployment, "audit", "--json"),
               cli(deployment, "job", "pause", "build", "--reason", "scan"),
               cli(deployment, "check")]
    deep = cli(deployment, "doctor", "--deep")
    assert token in deep  # the signed URL, by design; the secret behind it stays out
    deployment.kill(daemon)
    assert "got it" in (deployment.folder / ".cronduit").joinpath(
        "runs", deployment.runs("poke")[0].id, "log").read_text()  # the job had its secret
    texts = {f"answer {i}": text for i, text in enumerate(answers)}
    texts.update({f"cli output {i}": text for i, text in enumerate([*outputs, deep])})
    for path in deployment.folder.rglob("*"):
        if path.is_file() and path.name != "secrets.env":
            texts[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    for name, value in SECRETS.items():
        leaks = [where for where, text in texts.items() if value in text]
        assert [] == leaks, f"{name} leaked into {leaks}"
