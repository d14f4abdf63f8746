"""POST /v1/jobs/{job}/run: the status codes of SPEC §4 and the run it starts."""

from __future__ import annotations

import json

import pytest

from cronduit.engine import Engine
from tests.http.conftest import API_TOKEN, Api

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}


async def test_a_run_now_answers_201_with_the_run_it_started(api: Api) -> None:
    answer = await api.client.post("/v1/jobs/quiet/run", headers=AUTH)
    assert 201 == answer.status_code
    body = answer.json()
    assert "started" == body["state"]
    (run,) = api.history("quiet")
    assert (body["run_id"], "manual", "manual by api") == (run.id, run.kind, run.label)


async def test_without_a_valid_token_the_answer_is_401(api: Api) -> None:
    missing = await api.client.post("/v1/jobs/quiet/run")
    wrong = await api.client.post("/v1/jobs/quiet/run",
                                  headers={"Authorization": "Bearer nope"})
    basic = await api.client.post("/v1/jobs/quiet/run",
                                  headers={"Authorization": f"Basic {API_TOKEN}"})
    assert [401, 401, 401] == [a.status_code for a in (missing, wrong, basic)]
    assert all(API_TOKEN not in a.text for a in (missing, wrong, basic))
    assert [] == api.history("quiet")


async def test_an_unknown_job_is_404(api: Api) -> None:
    assert 404 == (await api.client.post("/v1/jobs/nosuch/run", headers=AUTH)).status_code


async def test_a_second_request_while_running_is_409_unless_queued(api: Api) -> None:
    first = await api.client.post("/v1/jobs/quiet/run", headers=AUTH)
    assert 201 == first.status_code
    refused = await api.client.post("/v1/jobs/quiet/run", headers=AUTH)
    assert 409 == refused.status_code
    assert ("job quiet: the job has a run going; queue the manual run to wait behind it (with "
            "?queue=1)") == refused.json()["detail"]
    queued = await api.client.post("/v1/jobs/quiet/run?queue=1", headers=AUTH)
    assert 201 == queued.status_code
    assert (None, "waiting") == (queued.json()["run_id"], queued.json()["state"])
    pending = await api.client.post("/v1/jobs/quiet/run", headers=AUTH)
    assert 409 == pending.status_code  # a manual run is pending now
    assert 1 == len(api.history("quiet"))


async def test_a_dry_run_accepts_the_run_and_holds_it_until_a_normal_start(dry_api: Api) -> None:
    """SPEC §3: manual triggers are accepted in a dry run and wait; a normal start runs it."""
    answer = await dry_api.client.post("/v1/jobs/quiet/run", headers=AUTH)
    assert (201, None, "waiting") == (answer.status_code, answer.json()["run_id"],
                                      answer.json()["state"])
    assert "dry run" in answer.json()["note"]
    dry_api.engine.tick(dry_api.clock.now())
    with dry_api.store.transaction() as tx:
        held = tx.event_by_delivery(answer.json()["delivery_id"])
    assert ("waiting", []) == (held.state if held else None, dry_api.history("quiet"))
    normal = Engine(dry_api.engine.config, dry_api.store, dry_api.runner)
    normal.start(dry_api.clock.now())
    assert ["manual by api"] == [run.label for run in dry_api.history("quiet")]


async def test_inputs_and_operator_travel_with_the_run(api: Api) -> None:
    answer = await api.client.post("/v1/jobs/inputs/run", headers=AUTH,
                                   json={"inputs": {"TAG": "v9"}, "operator": "ana"})
    assert 201 == answer.status_code
    (run,) = api.history("inputs")
    assert {"REGION": "eu", "TAG": "v9"} == json.loads(run.inputs or "{}")
    assert "ana" == run.operator


async def test_bad_bodies_are_refused_naming_the_field(api: Api) -> None:
    bad_input = await api.client.post("/v1/jobs/inputs/run", headers=AUTH,
                                      json={"inputs": {"REGION": "mars"}})
    assert 422 == bad_input.status_code
    assert "REGION" in bad_input.json()["detail"]
    unknown_key = await api.client.post("/v1/jobs/inputs/run", headers=AUTH,
                                        json={"input": {}})
    assert 422 == unknown_key.status_code
    assert "input" in unknown_key.json()["detail"]
    not_json = await api.client.post("/v1/jobs/inputs/run", headers=AUTH, content=b"{oops")
    assert 422 == not_json.status_code
    assert [] == api.history("inputs")


async def test_a_run_now_is_written_to_the_audit_log_with_its_inputs(api: Api) -> None:
    """The operator, the job and the inputs the run got (defaults included)."""
    answer = await api.client.post("/v1/jobs/inputs/run", headers=AUTH,
                                   json={"inputs": {"REGION": "us"}, "operator": "ana"})
    assert 201 == answer.status_code
    with api.store.transaction() as tx:
        [entry] = tx.audit(10)
    assert ("run", "ana", "inputs") == (entry.action, entry.operator, entry.job)
    assert {"REGION": "us", "TAG": "v1"} == json.loads(entry.detail)["inputs"]
