"""Hostile request bodies against a real ``cronduit serve``: JSON nested past the limit and
an operator that would forge a log line are refused with one reason, the daemon goes on,
and a body at the limit runs its job with the body whole."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx

from cronduit.core.json_depth import MAX_JSON_DEPTH
from cronduit.core.signing import webhook_token
from tests.acceptance.conftest import Deployment
from tests.acceptance.test_http import base_url

SECRETS = {"HOOK_KEY": "hook-secret-5e6f", "API_KEY": "api-token-7a8b",
           "GH_KEY": "github-secret-9c0d"}
CONFIG = """
settings:
  webhook_secret: HOOK_KEY
  api_token: API_KEY
  github_secret: GH_KEY
jobs:
  poke:
    run: 'cp "$CRONDUIT_TRIGGER_FILE" trigger-copy.json; echo "$REGION" >> pokes.txt'
    webhook: true
    inputs: {REGION: {enum: [eu, us], default: eu}}
  build: {run: 'echo built >> builds.txt'}
"""
FORGED = "ana\n2026-01-01T00:00:00Z run r0 of build ended: success"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_past_the_limit_is_refused_and_a_body_at_it_runs(
        deployment: Deployment) -> None:
    """Webhook, GitHub and run-now: 400/400/422 past the limit (never a 500, never a
    traceback); at the limit the run gets the body whole, its inputs and its record."""
    deployment.write(CONFIG)
    deployment.serve(extra_env=SECRETS)
    base = base_url(deployment)
    hook = f"{base}/hooks/poke/{webhook_token(SECRETS['HOOK_KEY'], 'poke')}"
    json_body = {"content-type": "application/json"}
    for depth in (MAX_JSON_DEPTH + 1, 100_000):
        body = '{"inputs": {"REGION": "us"}, "x": ' + nested(depth) + "}"
        answer = httpx.post(hook, content=body, headers=json_body, timeout=10)
        assert 400 == answer.status_code, answer.text
        assert f"more than {MAX_JSON_DEPTH} levels" in answer.json()["detail"]
        signed = "sha256=" + hmac.new(SECRETS["GH_KEY"].encode(), body.encode(),
                                      hashlib.sha256).hexdigest()
        delivery = httpx.post(f"{base}/github", content=body, timeout=10, headers={
            "X-GitHub-Event": "push", "X-GitHub-Delivery": f"d-{depth}",
            "X-Hub-Signature-256": signed, **json_body})
        assert 400 == delivery.status_code, delivery.text
        run_now = httpx.post(f"{base}/v1/jobs/build/run", content=body, timeout=10,
                             headers={"Authorization": f"Bearer {SECRETS['API_KEY']}"})
        assert 422 == run_now.status_code, run_now.text
    at_limit = '{"inputs": {"REGION": "us"}, "x": ' + nested(MAX_JSON_DEPTH - 1) + "}"
    assert 202 == httpx.post(hook, content=at_limit, headers=json_body, timeout=10).status_code
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("poke")] == ["success"])
    trigger = json.loads((deployment.folder / "trigger-copy.json").read_text())
    assert (at_limit, {"REGION": "us"}) == (trigger["body"], trigger["inputs"])
    assert ["us"] == deployment.lines("pokes.txt")
    [record] = deployment.history_json("poke")
    assert ({"REGION": "us"}, "success") == (record["inputs"], record["outcome"])
    assert [] == deployment.runs("build")
    assert_daemon_unharmed(deployment)


def test_an_operator_that_would_forge_a_log_line_is_refused(deployment: Deployment) -> None:
    """422 naming the field; nothing runs, and the daemon's log holds no forged line."""
    deployment.write(CONFIG)
    deployment.serve(extra_env=SECRETS)
    answer = httpx.post(f"{base_url(deployment)}/v1/jobs/build/run", timeout=10,
                        headers={"Authorization": f"Bearer {SECRETS['API_KEY']}"},
                        json={"operator": FORGED})
    assert 422 == answer.status_code, answer.text
    assert answer.json()["detail"].startswith("operator: control characters")
    assert [] == deployment.runs("build")
    assert "run r0 of build" not in deployment.daemon_log()
    assert_daemon_unharmed(deployment)


def assert_daemon_unharmed(deployment: Deployment) -> None:
    """Still serving, nothing logged as a crash, no secret in the log."""
    assert deployment.processes[-1].poll() is None
    log = deployment.daemon_log()
    assert "Traceback" not in log
    assert "RecursionError" not in log
    assert not [value for value in SECRETS.values() if value in log]
    assert 200 == httpx.get(f"{base_url(deployment)}/healthz", timeout=10).status_code
