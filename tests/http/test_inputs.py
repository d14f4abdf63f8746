"""Every input rule, enforced at the HTTP edge before anything is accepted (SPEC §7)."""

from __future__ import annotations

import pytest

from tests.http.conftest import API_TOKEN, Api

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}

BAD_VALUES = [
    pytest.param({"TAG": 'v1"'}, "double quote", id="quote"),
    pytest.param({"TAG": "v1\\"}, "backslash", id="backslash"),
    pytest.param({"TAG": "v1\n"}, "control character", id="newline"),
    pytest.param({"TAG": "v\x7f1"}, "control character", id="delete"),
    pytest.param({"TAG": "v\x851"}, "control character", id="c1-control"),
    pytest.param({"TAG": "v" + "1" * 256}, "at most 256 bytes", id="257-bytes"),
    pytest.param({"TAG": "v1-beta"}, "whole pattern", id="partial-match"),
    pytest.param({"REGION": "EU"}, "one of eu, us", id="enum-is-exact"),
    pytest.param({"COLOR": "crimson-777"}, "COLOR", id="undeclared"),
]


@pytest.mark.parametrize(("inputs", "rule"), BAD_VALUES)
async def test_a_webhook_with_a_bad_input_is_refused_and_nothing_runs(
        api: Api, inputs: dict[str, str], rule: str) -> None:
    answer = await api.client.post(api.hook("inputs"), json={"inputs": inputs})
    assert 422 == answer.status_code
    assert rule in answer.json()["detail"]
    assert not any(value in answer.text for value in inputs.values())  # never echoed
    api.tick()
    assert [] == api.history("inputs")


@pytest.mark.parametrize(("inputs", "rule"), BAD_VALUES)
async def test_a_run_now_with_a_bad_input_is_refused_and_nothing_runs(
        api: Api, inputs: dict[str, str], rule: str) -> None:
    answer = await api.client.post("/v1/jobs/inputs/run", headers=AUTH, json={"inputs": inputs})
    assert 422 == answer.status_code
    assert rule in answer.json()["detail"]
    assert [] == api.history("inputs")


async def test_a_value_of_exactly_256_bytes_is_accepted(api: Api) -> None:
    answer = await api.client.post(api.hook("inputs"),
                                   json={"inputs": {"TAG": "v" + "1" * 255}})
    assert 202 == answer.status_code


async def test_a_non_string_value_is_refused(api: Api) -> None:
    hook = await api.client.post(api.hook("inputs"), json={"inputs": {"TAG": 7}})
    run = await api.client.post("/v1/jobs/inputs/run", headers=AUTH, json={"inputs": {"TAG": 7}})
    assert [422, 422] == [hook.status_code, run.status_code]
