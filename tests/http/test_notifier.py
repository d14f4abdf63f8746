"""Sending notifications to real endpoints on loopback: one that answers, one that fails, one
that is too slow, and one that is down. Fail-open, bounded, recorded, never the URL."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cronduit.core.config import load_config
from cronduit.core.notify import ATTEMPTS, RETRY_DELAYS
from cronduit.http import server
from cronduit.notifier import NotificationSender
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TOKEN = "S3CRET-PATH-TOKEN"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    """A port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_each_endpoint_gets_its_verdict_and_nothing_shows_a_url(tmp_path: Path) -> None:
    received: list[dict[str, Any]] = []

    async def ok(request: Request) -> Response:
        received.append(json.loads(await request.body()))
        return Response(status_code=204)

    async def fail(_: Request) -> Response:
        return Response("no", status_code=500)

    async def slow(_: Request) -> Response:
        await asyncio.sleep(2)
        return Response(status_code=200)

    app = Starlette(routes=[Route(f"/ok/{TOKEN}", ok, methods=["POST"]),
                            Route(f"/fail/{TOKEN}", fail, methods=["POST"]),
                            Route(f"/slow/{TOKEN}", slow, methods=["POST"])])
    endpoint = await server.start(app, server.bind("127.0.0.1", 0))
    host, port = endpoint.address
    base = f"http://{host}:{port}"
    config = load_config(f"""
notifiers:
  ok:   {{url: "{base}/ok/{TOKEN}", on: [failure]}}
  fail: {{url: "{base}/fail/{TOKEN}", on: [failure]}}
  slow: {{url: "{base}/slow/{TOKEN}", on: [failure]}}
  down: {{url: "http://127.0.0.1:{free_port()}/{TOKEN}", on: [failure]}}
jobs:
  backup: {{run: x}}
""", "cronduit.yaml")
    store = SqliteStore(tmp_path / "cronduit.db")
    clock = FakeClock(T0)
    body = json.dumps({"job": "backup", "run": "r1", "outcome": "failure"})
    with store.transaction() as tx:
        for name in ("ok", "fail", "slow", "down"):
            tx.insert_notification("r1", name, body, T0)
    lines: list[str] = []

    async def off_loop(work: Callable[..., Any], *args: Any) -> Any:
        return work(*args)

    sender = NotificationSender(lambda: config, store, clock, off_loop, lines.append,
                                timeout=0.5)
    try:
        began = asyncio.get_running_loop().time()
        assert 4 == await sender.send_due()
        assert asyncio.get_running_loop().time() - began < 1.5  # all at once, each bounded
        for delay in RETRY_DELAYS:
            clock.advance(timedelta(seconds=delay))
            assert 3 == await sender.send_due()
        clock.advance(timedelta(hours=1))
        assert 0 == await sender.send_due()
    finally:
        await sender.close()
        await endpoint.stop()
    with store.transaction() as tx:
        found = {n.notifier: n for n in tx.notifications_of_run("r1")}
        failed = [n.notifier for n in tx.failed_notifications(10)]
    store.close()
    assert [{"job": "backup", "run": "r1", "outcome": "failure"}] == received
    assert ("sent", 1) == (found["ok"].state, found["ok"].attempts)
    assert {"fail": "HTTP 500", "slow": "no answer within 0.5s", "down": "could not connect"} == {
        name: found[name].error for name in ("fail", "slow", "down")}
    assert {ATTEMPTS} == {found[name].attempts for name in ("fail", "slow", "down")}
    assert {"fail", "slow", "down"} == set(failed)
    assert any("given up" in line for line in lines)
    assert not any(TOKEN in line for line in lines)
    assert not any(TOKEN in n.error for n in found.values())
