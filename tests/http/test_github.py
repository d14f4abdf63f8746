"""POST /github: signatures, one record per delivery, one trigger per matching job."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cronduit.core.enums import TriggerKind
from tests.helpers.store import get_delivery
from tests.http.conftest import GITHUB_SECRET, Api, open_api

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent.parent / "fixtures" / "github"


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return loaded


def signed(payload: object, secret: str = GITHUB_SECRET) -> tuple[bytes, str]:
    body = json.dumps(payload).encode()
    return body, "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def deliver(api: Api, event: str, payload: object, delivery: str = "d-1",
                  secret: str = GITHUB_SECRET) -> Any:
    body, signature = signed(payload, secret)
    return await api.client.post("/github", content=body, headers={
        "X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": signature, "content-type": "application/json"})


async def test_a_push_triggers_the_jobs_whose_filters_it_passes(api: Api) -> None:
    payload = fixture("push")
    payload["commits"] = [{"id": payload["after"], "added": ["docs/guide.md"], "removed": [],
                           "modified": ["src/app.py"]}]
    answer = await deliver(api, "push", payload)
    assert 202 == answer.status_code, answer.text
    body = answer.json()
    assert (["docs", "any-push"], False) == (body["triggered"], body["duplicate"])
    assert body["label"].startswith("push ")
    with api.store.transaction() as tx:
        recorded = get_delivery(tx, "d-1")
        triggers = tx.events_of_delivery("d-1")
    assert recorded is not None
    assert 2 == recorded.triggers
    assert {TriggerKind.EVENT} == {t.kind for t in triggers}
    facts = json.loads(triggers[0].payload.text)["delivery"]
    assert ("d-1", "main", ["docs/guide.md", "src/app.py"]) == (
        facts["id"], facts["branch"], sorted(facts["files"]))
    api.tick()
    assert [body["label"]] == [run.label for run in api.history("docs")]


async def test_an_excluded_path_and_another_branch_trigger_only_the_unfiltered_job(
        api: Api) -> None:
    payload = fixture("push")
    payload["commits"] = [{"id": payload["after"], "added": ["docs/draft/idea.md"],
                           "removed": [], "modified": []}]
    assert ["any-push"] == (await deliver(api, "push", payload, "d-2")).json()["triggered"]
    payload["ref"] = "refs/heads/feature"
    payload["commits"][0]["added"] = ["docs/guide.md"]
    assert ["any-push"] == (await deliver(api, "push", payload, "d-3")).json()["triggered"]


async def test_an_unknown_file_list_lets_path_filtered_jobs_run(api: Api) -> None:
    payload = fixture("push")
    del payload["commits"]
    assert ["docs", "any-push"] == (await deliver(api, "push", payload)).json()["triggered"]


async def test_a_deleted_branch_triggers_nothing(api: Api) -> None:
    answer = await deliver(api, "push", fixture("push_deleted_branch"))
    assert (202, []) == (answer.status_code, answer.json()["triggered"])


async def test_a_redelivery_is_recorded_once(api: Api) -> None:
    first = await deliver(api, "push", fixture("push"), "same")
    again = await deliver(api, "push", fixture("push"), "same")
    assert first.json()["triggered"] == again.json()["triggered"]
    assert (False, True) == (first.json()["duplicate"], again.json()["duplicate"])
    with api.store.transaction() as tx:
        assert 2 == len(tx.events_of_delivery("same"))


async def test_a_bad_or_missing_signature_is_401_and_nothing_is_recorded(api: Api) -> None:
    wrong = await deliver(api, "push", fixture("push"), "d-x", secret="not-the-secret")
    body, _ = signed(fixture("push"))
    unsigned = await api.client.post("/github", content=body, headers={
        "X-GitHub-Event": "push", "X-GitHub-Delivery": "d-y"})
    assert [401, 401] == [wrong.status_code, unsigned.status_code]
    assert GITHUB_SECRET not in wrong.text + unsigned.text
    with api.store.transaction() as tx:
        assert get_delivery(tx, "d-x") is None
        assert get_delivery(tx, "d-y") is None


async def test_a_delivery_without_an_id_or_with_a_malformed_payload_is_refused(
        api: Api) -> None:
    body, signature = signed(fixture("push"))
    no_id = await api.client.post("/github", content=body, headers={
        "X-GitHub-Event": "push", "X-Hub-Signature-256": signature})
    assert 400 == no_id.status_code
    assert "X-GitHub-Delivery" in no_id.json()["detail"]
    broken = fixture("check_suite_completed")
    del broken["check_suite"]["head_sha"]
    answer = await deliver(api, "check_suite", broken)
    assert 422 == answer.status_code
    assert "head_sha" in answer.json()["detail"]


async def test_a_failed_check_suite_without_a_confirmed_branch_runs_only_unfiltered_jobs(
        api: Api) -> None:
    """No workspace and no token: nothing can confirm the head branch, so the job that
    filters on main does not run; the one that only asks for failure does."""
    answer = await deliver(api, "check_suite", fixture("check_suite_completed"))
    assert ["red-any"] == answer.json()["triggered"]
    assert answer.json()["label"].endswith(" failure")


async def test_a_forks_main_is_never_ours(api: Api, tmp_path: Path) -> None:
    fork = fixture("check_suite_completed_fork")
    fork["check_suite"]["conclusion"] = "failure"
    api.gateway.workspace = lambda _: tmp_path  # even with a clone to ask, nothing is asked
    assert ["red-any"] == (await deliver(api, "check_suite", fork)).json()["triggered"]


async def test_a_head_confirmed_in_the_workspace_clone_names_the_branch(
        api: Api, tmp_path: Path) -> None:
    clone, head = make_clone(tmp_path)
    api.gateway.workspace = lambda _: clone
    payload = fixture("check_suite_completed")
    payload["check_suite"]["head_sha"] = head
    answer = await deliver(api, "check_suite", payload)
    assert ["red-main", "red-any"] == answer.json()["triggered"]
    with api.store.transaction() as tx:
        (first, _) = tx.events_of_delivery("d-1")
    assert True is json.loads(first.payload.text)["delivery"]["branch_verified"]


WAITING = """\
settings: {{github_secret: GITHUB_KEY}}
jobs:
  {0}: {{run: "true", on: {{events: [check_suite.completed], branches: [main]}}}}
  {1}: {{run: "true", on: {{events: [check_suite.completed], branches: [main]}}}}
"""


@pytest.mark.parametrize("order", [("bare", "cloned"), ("cloned", "bare")])
async def test_any_waiting_jobs_clone_confirms_the_branch_whatever_the_config_order(
        tmp_path: Path, order: tuple[str, str]) -> None:
    """Two jobs wait on main and only ``cloned`` has a clone: its clone answers for both."""
    clone, head = make_clone(tmp_path)
    payload = fixture("check_suite_completed")
    payload["check_suite"]["head_sha"] = head
    async for api in open_api(tmp_path / "state", config_text=WAITING.format(*order)):
        api.gateway.workspace = lambda name: clone if name == "cloned" else None
        answer = await deliver(api, "check_suite", payload)
    assert list(order) == answer.json()["triggered"]


async def test_a_release_and_a_ping(api: Api) -> None:
    release = await deliver(api, "release", fixture("release_published"), "r-1")
    assert (["release"], "release.published v1.2.0") == (
        release.json()["triggered"], release.json()["label"])
    ping = await deliver(api, "ping", fixture("ping"), "p-1")
    assert (202, [], "ping") == (ping.status_code, ping.json()["triggered"],
                                 ping.json()["label"])


def make_clone(folder: Path) -> tuple[Path, str]:
    """A clone of an upstream whose ``main`` has one commit, and that commit's id."""
    upstream, clone = folder / "upstream", folder / "clone"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    (upstream / "a.txt").write_text("a\n")
    git(upstream, "add", "a.txt")
    git(upstream, "commit", "-q", "-m", "a")
    git(folder, "clone", "-q", str(upstream), str(clone))
    return clone, git(upstream, "rev-parse", "HEAD")


def git(cwd: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()
