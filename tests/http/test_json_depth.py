"""Deeply nested JSON at every route that reads JSON: up to the limit it is read as any
body is; past it the answer is a 400 (webhooks, GitHub) or a 422 (the API's bodies, as for
any body that is not JSON there) naming the limit, never a 500, and nothing is accepted."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx
import pytest

from cronduit.core.json_depth import MAX_JSON_DEPTH
from tests.helpers.store import get_delivery
from tests.http.conftest import API_TOKEN, GITHUB_SECRET, Api
from tests.http.test_github import fixture

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
TOO_DEEP = (f"body: JSON nested more than {MAX_JSON_DEPTH} levels deep (arrays and objects "
            f"inside one another); at most {MAX_JSON_DEPTH} are read")
PAST_THE_LIMIT = [pytest.param(MAX_JSON_DEPTH + 1, id="limit+1"),
                  pytest.param(1_000, id="1000"), pytest.param(100_000, id="100000")]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def with_extra(document: dict[str, Any], depth: int) -> str:
    """``document`` with one more key whose value brings the whole to ``depth`` levels."""
    text = json.dumps({**document, "extra": "HERE"})
    return text.replace('"HERE"', nested(depth - 1))


async def webhook(api: Api, body: str, content_type: str | None = "application/json"
                  ) -> httpx.Response:
    headers = {} if content_type is None else {"content-type": content_type}
    return await api.client.post(api.hook("inputs"), content=body.encode(), headers=headers)


async def github(api: Api, body: str) -> httpx.Response:
    """A push delivery signed with the test secret."""
    signature = "sha256=" + hmac.new(GITHUB_SECRET.encode(), body.encode(),
                                     hashlib.sha256).hexdigest()
    return await api.client.post("/github", content=body.encode(), headers={
        "X-GitHub-Event": "push", "X-GitHub-Delivery": "d-1",
        "X-Hub-Signature-256": signature, "content-type": "application/json"})


def accepted(api: Api) -> int:
    with api.store.transaction() as tx:
        return len(tx.new_events(1000))


async def test_a_webhook_body_at_the_limit_is_accepted_with_its_inputs(api: Api) -> None:
    """64 levels: read as any JSON body is; its inputs count and the body is kept whole."""
    body = with_extra({"inputs": {"REGION": "us"}}, MAX_JSON_DEPTH)
    answer = await webhook(api, body)
    assert 202 == answer.status_code, answer.text
    event = api.event(answer.json()["delivery_id"])
    assert event is not None
    assert {"inputs": {"REGION": "us", "TAG": "v1"}, "body": body} == json.loads(event.payload.text)
    api.tick()
    [run] = api.history("inputs")
    assert '{"REGION": "us", "TAG": "v1"}' == run.inputs


@pytest.mark.parametrize("depth", PAST_THE_LIMIT)
@pytest.mark.parametrize("content_type", ["application/json", None, "text/plain"])
async def test_a_webhook_body_past_the_limit_is_400_whatever_its_type(
        api: Api, depth: int, content_type: str | None) -> None:
    """Its inputs could not be read, so it is not accepted without them either."""
    answer = await webhook(api, with_extra({"inputs": {"REGION": "us"}}, depth), content_type)
    assert (400, {"detail": TOO_DEEP}) == (answer.status_code, answer.json())
    assert 0 == accepted(api)


async def test_a_plain_text_body_full_of_brackets_is_still_the_callers_own(api: Api) -> None:
    """Text that does not open with an array or an object is no JSON to refuse."""
    body = "build failed at step [" * 200
    answer = await webhook(api, body, "text/plain")
    assert 202 == answer.status_code, answer.text


async def test_a_github_delivery_at_the_limit_is_recorded(api: Api) -> None:
    answer = await github(api, with_extra(fixture("push"), MAX_JSON_DEPTH))
    assert 202 == answer.status_code, answer.text
    assert "any-push" in answer.json()["triggered"]


@pytest.mark.parametrize("depth", PAST_THE_LIMIT)
async def test_a_signed_github_delivery_past_the_limit_is_400(api: Api, depth: int) -> None:
    answer = await github(api, with_extra(fixture("push"), depth))
    assert (400, {"detail": TOO_DEEP}) == (answer.status_code, answer.json())
    with api.store.transaction() as tx:
        assert None is get_delivery(tx, "d-1")
    assert 0 == accepted(api)


async def test_an_unsigned_deep_delivery_is_401_before_it_is_read(api: Api) -> None:
    body = nested(100_000).encode()
    answer = await api.client.post("/github", content=body, headers={
        "X-GitHub-Event": "push", "X-GitHub-Delivery": "d-1",
        "X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert 401 == answer.status_code


ROUTES = [pytest.param("run", {"inputs": {}}, id="run-now"),
          pytest.param("pause", {"reason": "disk full"}, id="pause"),
          pytest.param("resume", {}, id="resume")]


@pytest.mark.parametrize(("route", "document"), ROUTES)
async def test_an_api_body_at_the_limit_is_judged_by_its_fields_not_its_depth(
        api: Api, route: str, document: dict[str, Any]) -> None:
    """64 levels reach the model, which names the unknown key that holds them."""
    answer = await api.client.post(f"/v1/jobs/quiet/{route}", headers=AUTH,
                                   content=with_extra(document, MAX_JSON_DEPTH))
    assert 422 == answer.status_code
    assert "extra: Extra inputs are not permitted" == answer.json()["detail"]


@pytest.mark.parametrize("depth", PAST_THE_LIMIT)
@pytest.mark.parametrize(("route", "document"), ROUTES)
async def test_an_api_body_past_the_limit_is_422_naming_the_limit(
        api: Api, route: str, document: dict[str, Any], depth: int) -> None:
    answer = await api.client.post(f"/v1/jobs/quiet/{route}", headers=AUTH,
                                   content=with_extra(document, depth))
    assert (422, {"detail": TOO_DEEP}) == (answer.status_code, answer.json())
    assert 0 == accepted(api)
    assert [] == api.history("quiet")
