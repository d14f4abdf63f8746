"""Job webhooks: who gets 404, the body limit, idempotency, inputs, and what is stored."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.routing import Mount

from cronduit.core.enums import TriggerKind
from cronduit.core.text import UNSAFE
from cronduit.intake import LABEL_BODY_CHARS
from tests.http.conftest import HOOK_SECRET, Api

pytestmark = pytest.mark.anyio


async def test_a_signed_webhook_is_accepted_once_durable(api: Api) -> None:
    answer = await api.client.post(api.hook("poke"), content=b'{"ref": "main"}',
                                   headers={"content-type": "application/json"})
    assert 202 == answer.status_code
    body = answer.json()
    event = api.event(body["delivery_id"])
    assert event is not None
    assert event.seq == body["event"]
    assert not body["duplicate"]
    assert (TriggerKind.WEBHOOK, "poke") == (event.kind, event.job)
    assert '{"ref": "main"}' == json.loads(event.payload.text)["body"]
    api.tick()
    assert ["webhook {\"ref\": \"main\"}"] == [run.label for run in api.history("poke")]


async def test_every_wrong_url_gets_the_same_404(api: Api) -> None:
    """Unknown job, a job without webhook: true and a wrong token read alike."""
    answers = [
        await api.client.post(api.hook("nosuch")),
        await api.client.post(api.hook("quiet")),
        await api.client.post(api.hook("poke", secret="another-secret")),
        await api.client.post("/hooks/poke/" + "0" * 64),
    ]
    assert [404] * 4 == [answer.status_code for answer in answers]
    assert 1 == len({answer.text for answer in answers})


async def test_a_body_over_one_mebibyte_is_refused_and_nothing_is_accepted(api: Api) -> None:
    limit = 1024 * 1024
    declared = await api.client.post(api.hook("poke"), content=b"x" * (limit + 1))
    assert 413 == declared.status_code
    assert "1,048,576" in declared.json()["detail"]

    async def stream():  # no Content-Length: the limit must hold while reading
        for _ in range(17):
            yield b"y" * 65536

    streamed = await api.client.post(api.hook("poke"), content=stream())
    assert 413 == streamed.status_code
    exact = await api.client.post(api.hook("poke"), content=b"z" * limit)
    assert 202 == exact.status_code
    api.tick()
    assert 1 == len(api.history("poke"))


async def test_an_idempotency_key_makes_a_retry_the_same_trigger(api: Api) -> None:
    first = await api.client.post(api.hook("poke"), content=b"a",
                                  headers={"Idempotency-Key": "build-41"})
    again = await api.client.post(api.hook("poke"), content=b"a",
                                  headers={"Idempotency-Key": "build-41"})
    by_request_id = await api.client.post(api.hook("poke"), content=b"b",
                                          headers={"X-Request-Id": "req-7"})
    assert [202, 202, 202] == [a.status_code for a in (first, again, by_request_id)]
    assert first.json()["event"] == again.json()["event"]
    assert (False, True) == (first.json()["duplicate"], again.json()["duplicate"])
    assert by_request_id.json()["event"] != first.json()["event"]
    bad = await api.client.post(api.hook("poke"), headers={"Idempotency-Key": "has space"})
    assert 400 == bad.status_code
    assert "Idempotency-Key" in bad.json()["detail"]


async def test_inputs_are_checked_before_anything_is_accepted(api: Api) -> None:
    wrong = await api.client.post(api.hook("inputs"),
                                  json={"inputs": {"REGION": "mars", "TAG": "v1x"}})
    assert 422 == wrong.status_code
    detail = wrong.json()["detail"]
    assert "REGION" in detail
    assert "TAG" in detail
    unknown = await api.client.post(api.hook("inputs"), json={"inputs": {"COLOR": "red"}})
    assert 422 == unknown.status_code
    assert "COLOR" in unknown.json()["detail"]
    right = await api.client.post(api.hook("inputs"), json={"inputs": {"REGION": "us"}})
    assert 202 == right.status_code
    api.tick()
    runs = api.history("inputs")
    assert 1 == len(runs)
    assert {"REGION": "us", "TAG": "v1"} == json.loads(runs[0].inputs or "{}")


async def test_a_body_declared_json_must_be_json(api: Api) -> None:
    answer = await api.client.post(api.hook("poke"), content=b"{not json",
                                   headers={"content-type": "application/json"})
    assert 400 == answer.status_code
    plain = await api.client.post(api.hook("poke"), content=b"{not json either")
    assert 202 == plain.status_code


async def test_the_label_clips_a_long_body_and_the_event_keeps_it_whole(api: Api) -> None:
    text = "word " * 100
    answer = await api.client.post(api.hook("poke"), content=text.encode())
    event = api.event(answer.json()["delivery_id"])
    assert event is not None
    assert event.label.startswith("webhook word word")
    assert len(event.label) == len("webhook ") + LABEL_BODY_CHARS
    assert event.label.endswith("…")
    assert text == json.loads(event.payload.text)["body"]


async def test_control_characters_in_a_body_reach_neither_label_nor_log_but_the_trigger(
        api: Api) -> None:
    """ESC and NUL are shown as escapes in the label and the log; the trigger keeps them."""
    body = b"deploy \x1b[2J\x1b]0;pwned\x07\x00 now"
    answer = await api.client.post(api.hook("poke"), content=body)
    assert 202 == answer.status_code
    api.tick()
    (run,) = api.history("poke")
    assert "webhook deploy \\x1b[2J\\x1b]0;pwned\\x07\\x00 now" == run.label
    (started,) = [line for line in api.lines if line.startswith("run poke ")]
    assert f"run poke {run.id}: started [{run.label}]" == started
    assert [] == [line for line in api.lines if UNSAFE.search(line)]
    (launched,) = api.runner.launched
    assert body.decode() == json.loads(launched.trigger.payload.text)["body"]


async def test_concurrent_webhooks_while_running_leave_one_pending_run_for_the_newest(
        api: Api) -> None:
    """Queue policy: a run goes; twenty webhooks arrive at once; when the run ends, exactly
    one run starts, consuming all twenty, and it reports the newest delivery."""
    first = await api.client.post(api.hook("poke"), content=b"first")
    assert 202 == first.status_code
    api.tick()
    (running,) = api.runner.running()
    answers = await asyncio.gather(*(
        api.client.post(api.hook("poke"), content=f"burst {n}".encode()) for n in range(20)))
    assert [202] * 20 == [answer.status_code for answer in answers]
    api.tick()
    assert 1 == len(api.history("poke"))  # nothing started beside the running one
    api.runner.finish(running, 0)
    api.tick()
    runs = api.history("poke")
    assert 2 == len(runs)
    newest = max(answers, key=lambda answer: answer.json()["event"])
    newest_event = api.event(newest.json()["delivery_id"])
    assert newest_event is not None
    assert runs[1].trigger_seq == newest_event.seq
    with api.store.transaction() as tx:
        consumed = tx.events_of_run(runs[1].id)
    assert 20 == len(consumed)


async def test_health_says_whether_the_scheduler_dispatches(api: Api, dry_api: Api) -> None:
    assert {"status": "ok", "dry_run": False, "jobs": 8} == (
        await api.client.get("/healthz")).json()
    assert (await dry_api.client.get("/healthz")).json()["dry_run"] is True


def served_paths(app: Any) -> set[str]:
    """Every API path the app serves: its Starlette routes and those of the apps it mounts,
    less the dashboard's pages."""
    found: set[str] = set()
    for route in app.routes:
        if isinstance(route, Mount):
            if hasattr(route.app, "routes"):  # not the dashboard's static files
                found |= served_paths(route.app)
        elif not getattr(route, "endpoint", None).__module__.startswith(DASHBOARD):
            found.add(route.path)
    return found


DASHBOARD = "cronduit.http.dashboard"
"""The dashboard's HTML pages, left out of the OpenAPI document on purpose."""


async def test_the_openapi_document_describes_every_route_and_its_models(api: Api) -> None:
    document = (await api.client.get("/openapi.json")).json()
    served = served_paths(api.app) - {"/openapi.json"}
    assert {"/v1/jobs", "/v1/runs/{run}/log", "/hooks/{job}/{token}"} <= served
    assert served == set(document["paths"])
    schemas = document["components"]["schemas"]
    assert {"Accepted", "DeliveryRecorded", "Health", "RunRequest", "RunStarted"} <= set(schemas)
    assert {"delivery_id", "event", "duplicate"} == set(schemas["Accepted"]["properties"])
    assert HOOK_SECRET not in json.dumps(document)
