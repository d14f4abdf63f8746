"""POST /v1/jobs/{job}/pause and /resume: the pause record, and the codes 200/401/404/409/422."""

from __future__ import annotations

import json

import pytest

from tests.http.conftest import API_TOKEN, Api

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}


async def pause(api: Api, job: str = "quiet", **body: object) -> object:
    return await api.client.post(f"/v1/jobs/{job}/pause", headers=AUTH,
                                 json={"reason": "disk full", **body})


async def test_a_pause_answers_200_with_the_pause_recorded(api: Api) -> None:
    """The record names the job, reason, operator (api by default), time and expiry."""
    answer = await api.client.post("/v1/jobs/quiet/pause", headers=AUTH,
                                   json={"reason": "disk full", "until": "2h"})
    assert 200 == answer.status_code
    assert {"job": "quiet", "reason": "disk full", "operator": "api",
            "paused_at": "2026-06-01T12:00:00Z", "until": "2026-06-01T14:00:00Z",
            "resumed_at": None, "resumed_by": None} == answer.json()
    with api.store.transaction() as tx:
        [entry] = tx.audit(10)
    assert ("pause", "api", "quiet") == (entry.action, entry.operator, entry.job)


async def test_pausing_a_paused_job_is_409_naming_who_when_and_why(api: Api) -> None:
    """The second pause changes nothing; its answer says who paused it, when and why."""
    await pause(api, operator="ana")
    again = await api.client.post("/v1/jobs/quiet/pause", headers=AUTH,
                                  json={"reason": "other", "operator": "bo"})
    assert 409 == again.status_code
    assert ("paused by ana since 2026-06-01T12:00:00Z: disk full"
            in again.json()["detail"])
    with api.store.transaction() as tx:
        assert ["ana"] == [p.operator for p in tx.pauses()]
        assert 1 == len(tx.audit(10))


async def test_a_resume_answers_200_with_the_pause_that_ended(api: Api) -> None:
    """The body is optional; the record shows who resumed and when."""
    await pause(api)
    answer = await api.client.post("/v1/jobs/quiet/resume", headers=AUTH,
                                   json={"operator": "bo"})
    assert 200 == answer.status_code
    assert ("bo", "2026-06-01T12:00:00Z") == (answer.json()["resumed_by"],
                                              answer.json()["resumed_at"])
    again = await api.client.post("/v1/jobs/quiet/resume", headers=AUTH)
    assert 409 == again.status_code
    assert "not paused" in again.json()["detail"]


async def test_pause_and_resume_need_the_api_token_and_a_known_job(api: Api) -> None:
    """401 without the bearer token, 404 for an unknown job; nothing is written."""
    assert 401 == (await api.client.post("/v1/jobs/quiet/pause",
                                         json={"reason": "x"})).status_code
    assert 401 == (await api.client.post("/v1/jobs/quiet/resume")).status_code
    assert 404 == (await pause(api, "nosuch")).status_code
    assert 404 == (await api.client.post("/v1/jobs/nosuch/resume", headers=AUTH)).status_code
    with api.store.transaction() as tx:
        assert [] == tx.pauses()


@pytest.mark.parametrize("body", [
    {}, {"reason": "   "}, {"reason": "line\nbreak"}, {"reason": "x" * 501},
    {"reason": "ok", "until": "yesterday"}, {"reason": "ok", "until": "2020-01-01T00:00:00Z"},
    {"reason": "ok", "colour": "red"},
])
async def test_a_bad_pause_body_is_422(api: Api, body: dict[str, object]) -> None:
    """A missing, blank, multi-line or too long reason, a bad until, an unknown key."""
    answer = await api.client.post("/v1/jobs/quiet/pause", headers=AUTH,
                                   content=json.dumps(body))
    assert 422 == answer.status_code
    with api.store.transaction() as tx:
        assert [] == tx.pauses()


async def test_a_run_now_on_a_paused_job_is_409(api: Api) -> None:
    """A manual run cannot get past a pause, not even queued; the answer says who paused."""
    await pause(api, operator="ana")
    for path in ("/v1/jobs/quiet/run", "/v1/jobs/quiet/run?queue=1"):
        refused = await api.client.post(path, headers=AUTH)
        assert 409 == refused.status_code
        assert "paused by ana" in refused.json()["detail"]
        assert "?queue=1" not in refused.json()["detail"]  # queueing cannot lift a pause
    assert [] == api.history("quiet")


async def test_a_webhook_on_a_paused_job_is_accepted_and_skipped(api: Api) -> None:
    """202 as ever; the engine records a skipped run with the reason paused."""
    await pause(api, "poke")
    answer = await api.client.post(api.hook("poke"), content=b"hello")
    assert 202 == answer.status_code
    api.tick()
    [run] = api.history("poke")
    assert ("skipped", "paused") == (run.outcome, run.reason)


async def test_a_body_key_with_a_newline_is_named_on_one_line(api: Api) -> None:
    """A key of the body is an outside value: the 422 names it with its escapes."""
    answer = await api.client.post("/v1/jobs/quiet/resume", headers=AUTH, json={"\n": 1})
    assert 422 == answer.status_code
    assert "\\x0a: Extra inputs are not permitted" == answer.json()["detail"]
