"""GET /v1/executions, GET /v1/executions/{id}, POST .../resume and .../abandon (SPEC §8):
the answers and the codes 200/202/401/404/409/422, against the real engine and store."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.http.conftest import API_TOKEN, CONFIG, Api, open_api

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
STEPS = CONFIG + """\
  etl:
    retry: {attempts: 1}
    steps:
      - {id: sync, run: ./sync, outputs: [SNAPSHOT]}
      - {id: index, run: ./index, inputs: {FROM: sync.SNAPSHOT}}
"""


@pytest.fixture
async def steps_api(tmp_path: Path) -> AsyncIterator[Api]:
    async for made in open_api(tmp_path, config_text=STEPS):
        yield made


async def failed_execution(api: Api) -> str:
    """Run etl once: sync saves its output, index fails; the execution's id."""
    started = await api.client.post("/v1/jobs/etl/run", headers=AUTH)
    assert 201 == started.status_code
    run_id = started.json()["run_id"]
    api.runner.finish(run_id, 0, outputs=json.dumps({"SNAPSHOT": "s-1"}).encode())
    api.tick()
    api.runner.finish(run_id, 3)
    api.tick()
    [run] = api.history("etl")
    assert run.execution_id is not None
    return run.execution_id


async def test_executions_are_listed_and_inspected(steps_api: Api) -> None:
    """The list has the failed execution; the detail its inputs, steps, tries and outputs,
    and that it can be resumed; reads need no token."""
    api = steps_api
    execution = await failed_execution(api)
    listed = await api.client.get("/v1/executions", params={"job": "etl", "limit": "5"})
    assert 200 == listed.status_code
    [summary] = listed.json()["executions"]
    assert (execution, "failed", 1, 2, "index") == (
        summary["execution"], summary["state"], summary["steps_done"], summary["steps"],
        summary["failed_step"])
    detail = (await api.client.get(f"/v1/executions/{execution}")).json()
    sync, index = detail["step_details"]
    assert (True, {"SNAPSHOT": "s-1"}, "failed") == (detail["resumable"], sync["outputs"],
                                                     index["state"])
    assert [("failure", "exit status 3")] == [(t["outcome"], t["reason"]) for t in index["tries"]]
    assert 404 == (await api.client.get("/v1/executions/nope")).status_code
    assert 422 == (await api.client.get("/v1/executions", params={"limit": "0"})).status_code


async def test_resume_needs_the_token_and_starts_at_the_failed_step(steps_api: Api) -> None:
    api = steps_api
    execution = await failed_execution(api)
    assert 401 == (await api.client.post(f"/v1/executions/{execution}/resume")).status_code
    resumed = await api.client.post(f"/v1/executions/{execution}/resume", headers=AUTH,
                                    json={"operator": "ana"})
    assert 202 == resumed.status_code
    assert {"execution": execution, "delivery_id": f"resume/{execution}/2"} == resumed.json()
    api.tick()
    last = api.runner.launched[-1]
    assert last.step is not None
    assert ("index", {"FROM": "s-1"}) == (last.step.step.id, dict(last.step.variables))
    again = await api.client.post(f"/v1/executions/{execution}/resume", headers=AUTH)
    assert (409, "execution " + execution + " cannot be resumed: it is running") == (
        again.status_code, again.json()["detail"])


async def test_abandon_ends_resumability_and_is_refused_twice(steps_api: Api) -> None:
    api = steps_api
    execution = await failed_execution(api)
    assert 401 == (await api.client.post(f"/v1/executions/{execution}/abandon")).status_code
    done = await api.client.post(f"/v1/executions/{execution}/abandon", headers=AUTH)
    assert (200, "abandoned", False) == (done.status_code, done.json()["state"],
                                         done.json()["resumable"])
    twice = await api.client.post(f"/v1/executions/{execution}/abandon", headers=AUTH)
    assert 409 == twice.status_code
    refused = await api.client.post(f"/v1/executions/{execution}/resume", headers=AUTH)
    assert (409, True) == (refused.status_code, "was abandoned" in refused.json()["detail"])
    bad = await api.client.post(f"/v1/executions/{execution}/abandon", headers=AUTH,
                                json={"nope": 1})
    assert 422 == bad.status_code
    with api.store.transaction() as tx:
        actions = [entry.action for entry in tx.audit(10)]
    assert "execution abandon" in actions


async def test_a_durable_runs_log_gives_its_step_attempts_in_order(steps_api: Api) -> None:
    """As ``job logs`` prints it: each step attempt's own log, one after another, or only
    ``?attempt=N``'s; and the run's record names its step attempts."""
    api = steps_api
    await failed_execution(api)
    [run] = api.history("etl")
    for attempt, text in ((1, b"synced\n"), (2, b"index failed\n")):
        log = api.paths.step_log(run.id, attempt)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(text)
    whole = await api.client.get(f"/v1/runs/{run.id}/log")
    second = await api.client.get(f"/v1/runs/{run.id}/log", params={"attempt": "2"})
    record = (await api.client.get(f"/v1/runs/{run.id}")).json()
    assert ("synced\nindex failed\n", "index failed\n") == (whole.text, second.text)
    assert ["sync", "index"] == [step["step"] for step in record["steps"]]
    assert record["execution"] == run.execution_id
