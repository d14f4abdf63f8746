"""Every ``operator`` and ``reason`` of the API under the CLI's one rule: one line of
printable text, at most so long; anything else is a 422 naming the field, nothing written."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest

from cronduit.core.text import MAX_OPERATOR, MAX_REASON
from cronduit.ports import Pause
from tests.http.conftest import API_TOKEN, Api

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
BAD = [
    pytest.param("ana\n2026-06-01T12:00:00Z run r1 of quiet ended: success", "\\x0a",
                 id="newline"),
    pytest.param("ana\rbo", "\\x0d", id="carriage-return"),
    pytest.param("\x1b[31mana", "\\x1b", id="escape"),
    pytest.param("ana\u2028bo", "\\u2028", id="line-separator"),
    pytest.param("x" * (MAX_OPERATOR + 1), "at most 200 characters, not 201", id="too-long"),
    pytest.param("  ", "required, and not blank", id="blank"),
]
ROUTES = [
    pytest.param("run", {}, id="run-now"),
    pytest.param("pause", {"reason": "disk full"}, id="pause"),
    pytest.param("resume", {}, id="resume"),
]


async def post(api: Api, route: str, body: dict[str, str]) -> httpx.Response:
    """The body as JSON, with ``\\u`` escapes for what is not ASCII."""
    return await api.client.post(f"/v1/jobs/quiet/{route}", content=json.dumps(body),
                                 headers={**AUTH, "content-type": "application/json"})


def written(api: Api) -> tuple[int, list[str], int]:
    """Events, the operators of the pauses in force, audit entries."""
    runs = len(api.history("quiet"))
    with api.store.transaction() as tx:
        return (len(tx.new_events(100)) + runs, [pause.operator for pause in tx.pauses()],
                len(tx.audit(100)))


def refusal(detail: str, field: str, shown: str) -> None:
    assert detail.startswith(f"{field}: ")
    assert shown in detail
    assert 1 == len(detail.splitlines())
    assert not {"\x1b", "\u2028"} & set(detail)


@pytest.mark.parametrize(("route", "body"), ROUTES)
@pytest.mark.parametrize(("operator", "shown"), BAD)
async def test_an_operator_that_is_not_one_printable_line_is_422(
        api: Api, route: str, body: dict[str, str], operator: str, shown: str) -> None:
    """Run-now, pause and resume alike; the store is left as it was."""
    if route == "resume":
        with api.store.transaction() as tx:
            tx.insert_pause(Pause("quiet", "db migration", "ana", datetime.now(UTC), None))
    before = written(api)
    answer = await post(api, route, {**body, "operator": operator})
    assert 422 == answer.status_code, answer.text
    refusal(answer.json()["detail"], "operator", shown)
    assert before == written(api)


@pytest.mark.parametrize(("reason", "shown"), [
    *BAD[:-2], pytest.param("x" * (MAX_REASON + 1), "at most 500 characters, not 501",
                            id="too-long")])
async def test_a_pause_reason_is_held_to_the_same_rule(api: Api, reason: str,
                                                       shown: str) -> None:
    answer = await post(api, "pause", {"reason": reason})
    assert 422 == answer.status_code, answer.text
    refusal(answer.json()["detail"], "reason", shown)
    assert (0, [], 0) == written(api)


async def test_an_operator_at_the_limit_is_recorded_on_the_run(api: Api) -> None:
    """200 characters, spaces around it dropped; the label names it."""
    name = "a" * MAX_OPERATOR
    answer = await api.client.post("/v1/jobs/quiet/run", headers=AUTH,
                                   json={"operator": f" {name} "})
    assert 201 == answer.status_code, answer.text
    [run] = api.history("quiet")
    assert (name, f"manual by {name}") == (run.operator, run.label)
