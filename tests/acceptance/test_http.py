"""The daemon's HTTP server, for real: uvicorn on loopback in a real ``cronduit serve``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx

from cronduit.core.signing import webhook_token
from tests.acceptance.conftest import Deployment

HOOK_SECRET = "hook-secret-3d1e-never-shown"
API_TOKEN = "api-token-88aa-never-shown"
SECRETS = {"HOOK_KEY": HOOK_SECRET, "API_KEY": API_TOKEN}

CONFIG = """
settings:
  webhook_secret: HOOK_KEY
  api_token: API_KEY
jobs:
  poke:
    run: 'cp "$CRONDUIT_TRIGGER_FILE" trigger-copy.json; echo "$GREETING" >> pokes.txt'
    webhook: true
    inputs: {GREETING: {pattern: "[a-z]+", default: hello}}
  build:
    run: 'while [ -e hold ]; do sleep 0.01; done; echo built >> builds.txt'
  deploy:
    run: 'echo deployed >> deploys.txt'
    on: {after: {job: build, outcomes: [success]}}
"""


def base_url(deployment: Deployment) -> str:
    def listening() -> bool:
        return "listening on http://" in deployment.daemon_log()

    deployment.wait_for(listening)
    found = re.search(r"listening on (http://\S+)", deployment.daemon_log())
    assert found is not None
    return found.group(1)


def test_a_webhook_runs_its_job_with_the_whole_body_and_inputs(deployment: Deployment) -> None:
    deployment.write(CONFIG)
    daemon = deployment.serve(extra_env=SECRETS)
    url = f"{base_url(deployment)}/hooks/poke/{webhook_token(HOOK_SECRET, 'poke')}"
    body = {"inputs": {"GREETING": "hi"}, "note": "x" * 5000}
    answer = httpx.post(url, json=body, headers={"Idempotency-Key": "one"}, timeout=10)
    assert 202 == answer.status_code
    again = httpx.post(url, json=body, headers={"Idempotency-Key": "one"}, timeout=10)
    assert again.json()["duplicate"] is True
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("poke")] == ["success"])
    assert ["hi"] == deployment.lines("pokes.txt")
    trigger = json.loads((deployment.folder / "trigger-copy.json").read_text())
    assert ("webhook", body) == (trigger["kind"], json.loads(trigger["body"]))
    wrong = httpx.post(url.replace("/poke/", "/build/"), json=body, timeout=10)
    assert 404 == wrong.status_code
    deployment.kill(daemon)
    assert_no_secret_in(deployment)


def test_run_now_over_http_answers_201_then_409(deployment: Deployment) -> None:
    deployment.write(CONFIG.replace("echo built >>", "sleep 2; echo built >>"))
    daemon = deployment.serve(extra_env=SECRETS)
    url = f"{base_url(deployment)}/v1/jobs/build/run"
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    started = httpx.post(url, headers=auth, timeout=10)
    assert 201 == started.status_code, started.text
    run_id = started.json()["run_id"]
    assert [run_id] == [run.id for run in deployment.runs("build")]
    assert 409 == httpx.post(url, headers=auth, timeout=10).status_code
    assert 401 == httpx.post(url, timeout=10).status_code
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("deploy")] == ["success"])
    deployment.kill(daemon)
    assert_no_secret_in(deployment)


def test_a_chain_survives_a_kill_between_a_run_end_and_its_follower(
        deployment: Deployment) -> None:
    """build's end is committed, then the daemon dies before chaining: the next daemon
    starts deploy, once."""
    deployment.write(CONFIG)
    hold = deployment.folder / "hold"
    hold.touch()  # build waits for the answer: its end, and the crash, come after it
    first = deployment.serve(crash_at="ended", extra_env=SECRETS)
    url = f"{base_url(deployment)}/v1/jobs/build/run"
    assert 201 == httpx.post(url, headers={"Authorization": f"Bearer {API_TOKEN}"},
                             timeout=10).status_code
    hold.unlink()
    first.wait(timeout=15)
    assert -9 == first.returncode
    assert ["success"] == [run.outcome for run in deployment.runs("build")]
    assert [] == deployment.runs("deploy")
    second = deployment.serve(extra_env=SECRETS)
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("deploy")] == ["success"])
    deployment.wait_for_a_turn()  # a second chaining of build's end would have started by now
    deployment.wait_for(lambda: all(r.state == "ended" for r in deployment.runs("deploy")))
    assert ["deployed"] == deployment.lines("deploys.txt")
    assert ["built"] == deployment.lines("builds.txt")
    deployment.kill(second)
    assert_no_secret_in(deployment)


def test_a_port_in_use_stops_the_daemon_with_a_clear_error(deployment: Deployment) -> None:
    deployment.write(CONFIG)
    first = deployment.serve(extra_env=SECRETS)
    taken = base_url(deployment).removeprefix("http://")
    other = deployment.folder / "other"
    other.mkdir()
    clashing = CONFIG.replace("settings:\n", f"settings:\n  listen: {taken}\n", 1)
    (other / "cronduit.yaml").write_text(clashing)
    clash = Deployment(other)
    process = clash.serve(extra_env=SECRETS)
    assert 1 == process.wait(timeout=15)
    assert [f"cronduit: cannot listen on {taken} (settings.listen): Address already in use"
            ] == clash.daemon_log().splitlines()  # that one line: nothing started before it
    deployment.kill(first)


def assert_no_secret_in(deployment: Deployment) -> None:
    """No secret value in any daemon log, run log, trigger file or the store."""
    for path in Path(deployment.folder).rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in SECRETS.values():
                assert value.encode() not in data, f"{value!r} found in {path}"


def test_rotating_the_webhook_secret_and_applying_revokes_the_old_urls(
        deployment: Deployment) -> None:
    deployment.write(CONFIG.replace("settings:\n", "settings:\n  secrets_file: secrets.env\n", 1))
    secrets = deployment.folder / "secrets.env"
    secrets.write_text("HOOK_KEY=first-secret\nAPI_KEY=x\n")
    daemon = deployment.serve()
    path = "/hooks/poke/{}"
    old = base_url(deployment) + path.format(webhook_token("first-secret", "poke"))
    assert 202 == httpx.post(old, content=b"a", timeout=10).status_code
    secrets.write_text("HOOK_KEY=second-secret\nAPI_KEY=x\n")
    subprocess.run([sys.executable, "-m", "cronduit", "apply", "-c", str(deployment.config)],
                   check=True, capture_output=True, timeout=30)
    new = base_url(deployment) + path.format(webhook_token("second-secret", "poke"))
    assert 404 == httpx.post(old, content=b"b", timeout=10).status_code
    assert 202 == httpx.post(new, content=b"c", timeout=10).status_code
    deployment.kill(daemon)


def test_a_dry_run_accepts_run_now_from_the_api_and_the_cli_and_runs_both_later(
    deployment: Deployment,
) -> None:
    """SPEC §3: in ``serve --dry-run`` manual triggers are accepted and wait, whether they
    come by HTTP or by ``cronduit job run``; the next normal start runs them (coalesced)."""
    deployment.write(CONFIG)
    dry = deployment.serve("--dry-run", extra_env=SECRETS)
    answer = httpx.post(f"{base_url(deployment)}/v1/jobs/build/run?queue=1", timeout=10,
                        headers={"Authorization": f"Bearer {API_TOKEN}"})
    assert (201, "waiting", None) == (answer.status_code, answer.json()["state"],
                                      answer.json()["run_id"])
    assert "dry run" in answer.json()["note"]
    by_cli = subprocess.run([sys.executable, "-m", "cronduit", "job", "run", "build", "--queue",
                             "-c", str(deployment.config)], capture_output=True, text=True,
                            timeout=30, check=False)
    assert 0 == by_cli.returncode, by_cli.stderr
    assert "dry run" in by_cli.stderr
    assert [] == deployment.runs("build")
    dry.terminate()
    dry.wait(timeout=10)
    deployment.serve(extra_env=SECRETS)
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("build")] == ["success"])
    assert ["built"] == deployment.lines("builds.txt")
    (record,) = deployment.history_json("build")
    assert 2 == len(record["triggers"])  # type: ignore[arg-type]


def test_metrics_counts_a_webhooks_run_and_shows_no_secret_or_input(
        deployment: Deployment) -> None:
    """A real ``serve``: after a webhook's run, ``/metrics`` (uvicorn, the worker thread that
    renders it) counts its success, in the 0.0.4 text format, with no secret or input."""
    deployment.write(CONFIG)
    deployment.serve(extra_env=SECRETS)
    base = base_url(deployment)
    hook = f"{base}/hooks/poke/{webhook_token(HOOK_SECRET, 'poke')}"
    body = {"inputs": {"GREETING": "privatevalue"}}
    assert 202 == httpx.post(hook, json=body, timeout=10).status_code
    line = 'cronduit_runs_total{job="poke",outcome="success"} 1.0'

    def counted() -> bool:
        return line in httpx.get(f"{base}/metrics", timeout=10).text

    deployment.wait_for(counted)
    answer = httpx.get(f"{base}/metrics", timeout=10)
    assert "text/plain; version=0.0.4; charset=utf-8" == answer.headers["content-type"]
    for secret in (HOOK_SECRET, API_TOKEN, "privatevalue", webhook_token(HOOK_SECRET, "poke")):
        assert secret not in answer.text
