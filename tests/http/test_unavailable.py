"""Webhooks, deliveries and run-now while the state folder is full, on a real full tmpfs:
503 with the reason, never 202 without a commit, and 202 again once there is room."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from cronduit.intake.acceptor import Acceptor
from cronduit.store.sqlite import SqliteStore
from tests.helpers.mounts import fill, free, small_tmpfs
from tests.http.conftest import API_TOKEN, Api, open_api

pytestmark = pytest.mark.anyio

REFUSED = ("state store unavailable: database or disk is full; nothing was accepted, try "
           "again later")


async def test_a_full_disk_answers_503_until_space_is_back_and_keeps_every_202(
        tmp_path: Path) -> None:
    """Webhooks go on being accepted while the write-ahead log has room, then get 503 with
    the reason and a Retry-After; every one answered 202 is stored, none answered 503 is;
    the log says so once each way; once space is back the refused one is accepted."""
    with small_tmpfs(tmp_path / "state") as state:
        async for api in open_api(state):
            lines: list[str] = []
            acceptor = Acceptor(lambda: SqliteStore(state / "cronduit.db", migrate=False),
                                lambda: None, lines.append)
            api.gateway.acceptor = acceptor
            try:
                await _scenario(api, state, lines)
            finally:
                acceptor.close()


async def _scenario(api: Api, state: Path, lines: list[str]) -> None:
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    assert 201 == (await api.client.post("/v1/jobs/quiet/run", headers=auth)).status_code
    filler = fill(state)
    accepted, refused = await _post_until_refused(api)
    assert 503 == refused.status_code
    assert (REFUSED, "5") == (refused.json()["detail"], refused.headers["retry-after"])
    # Refused for the run going, having written nothing: not a sign the disk takes writes.
    busy = await api.client.post("/v1/jobs/quiet/run", headers=auth)
    assert 409 == busy.status_code
    run_now = await api.client.post("/v1/jobs/poke/run", headers=auth)
    assert (503, REFUSED) == (run_now.status_code, run_now.json()["detail"])
    pause = await api.client.post("/v1/jobs/quiet/pause", headers=auth,
                                  json={"reason": "disk"})
    assert 503 == pause.status_code
    assert [f"key-{n}" for n in range(len(accepted))] == accepted
    assert all(api.event(f"webhook/poke/key/{key}") is not None for key in accepted)
    assert api.event(f"webhook/poke/key/key-{len(accepted)}") is None
    free(filler)
    again = await api.client.post(api.hook("poke"),
                                  headers={"Idempotency-Key": f"key-{len(accepted)}"})
    assert 202 == again.status_code
    assert ["refusing triggers with 503: state store unavailable: database or disk is full"
            ] == [line for line in lines if "refusing" in line]
    assert 1 == len([line for line in lines if line.startswith("accepting triggers again")])


async def _post_until_refused(api: Api) -> tuple[list[str], httpx.Response]:
    """Post webhooks (keys key-0, key-1...) until one is not answered 202: the keys
    accepted, and that answer."""
    accepted: list[str] = []
    for n in range(2000):
        answer = await api.client.post(api.hook("poke"), content=b"x" * 2000,
                                       headers={"Idempotency-Key": f"key-{n}"})
        if answer.status_code != 202:
            return accepted, answer
        accepted.append(f"key-{n}")
    raise AssertionError("a full disk accepted 2000 webhooks")
