"""A real daemon on a PostgreSQL state whose URL carries a password (SPEC §10): the password is
in no line of its log and in no HTTP answer, and a ``state_password`` naming a secret that is
not set stops it before anything starts, saying which secret.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import httpx
import pytest

from cronduit.core.signing import webhook_token
from tests.acceptance.conftest import Deployment
from tests.acceptance.test_http import base_url
from tests.helpers.postgres import URL, fresh_schema

SECRET = "s3cret-Pw-42-never-shown"
HOOK_SECRET = "hook-secret-5c2a"
JOBS = """
  webhook_secret: HOOK_KEY
jobs:
  tick:
    run: 'echo tick >> ticks.txt'
    every: 1s
  poke:
    run: 'echo poked >> pokes.txt'
    webhook: true
"""


@pytest.fixture
def url() -> Iterator[str]:
    """A schema of the test server, named by a URL with a password (trust lets it in)."""
    with fresh_schema() as schema:
        yield (f"{URL}?options=-csearch_path%3D{schema}").replace(
            "postgresql://postgres@", f"postgresql://postgres:{SECRET}@")


def test_a_daemon_on_a_url_with_a_password_never_shows_it(deployment: Deployment,
                                                          url: str) -> None:
    deployment.write(f"settings:\n  state: '{url}'\n{JOBS}")
    daemon = deployment.serve(extra_env={"HOOK_KEY": HOOK_SECRET})
    base = base_url(deployment)
    hook = f"{base}/hooks/poke/{webhook_token(HOOK_SECRET, 'poke')}"
    answers = [httpx.get(f"{base}/healthz", timeout=10), httpx.get(f"{base}/openapi.json",
                                                                    timeout=10),
               httpx.post(hook, json={}, timeout=10),
               httpx.post(hook.replace("/poke/", "/none/"), json={}, timeout=10),
               httpx.post(f"{base}/v1/jobs/tick/run", json={}, timeout=10)]
    assert 202 == answers[2].status_code
    deployment.wait_for(lambda: deployment.lines("pokes.txt") == ["poked"])
    deployment.wait_for(lambda: len(deployment.lines("ticks.txt")) >= 2)
    second = deployment.serve()  # the same runs folder: refused, naming it
    assert 3 == second.wait(timeout=30)
    daemon.terminate()
    assert 0 == daemon.wait(timeout=30)
    for answer in answers:
        assert SECRET not in answer.text
        assert SECRET not in str(answer.headers)
    logs = deployment.daemon_log(0) + deployment.daemon_log(1)
    assert "serving 2 jobs" in logs
    assert "another cronduit daemon is serving" in logs
    assert SECRET not in logs


def test_a_state_password_naming_no_set_secret_stops_the_daemon_before_it_starts(
        deployment: Deployment, url: str) -> None:
    deployment.write(f"settings:\n  state: '{url}'\n  state_password: PG_PASS_UNSET\n{JOBS}")
    daemon: subprocess.Popen[bytes] = deployment.serve()
    assert 2 == daemon.wait(timeout=30)
    assert ("cronduit: settings.state_password names the secret PG_PASS_UNSET, which is not "
            "set (in the secrets file or the environment)\n") == deployment.daemon_log()
