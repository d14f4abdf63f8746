"""The API's reader: reads on a store of their own, off the event loop; 503 while that store
cannot be reached, as the writes answer while it cannot be written."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cronduit.http import Reader
from cronduit.store.postgres import PostgresStore
from tests.http.conftest import open_api

pytestmark = pytest.mark.anyio

AWAY = "postgresql://127.0.0.1:9/nothing?connect_timeout=2"
"""A PostgreSQL server that is not there: nothing listens on the discard port."""


async def test_reads_answer_503_with_the_reason_while_the_store_is_away(
        tmp_path: Path) -> None:
    async for api in open_api(tmp_path):
        reader = Reader(lambda: PostgresStore(AWAY))
        api.gateway.read = reader.read
        try:
            answer = await api.client.get("/v1/jobs")
        finally:
            reader.close()
    assert (503, "5") == (answer.status_code, answer.headers["retry-after"])
    assert answer.json()["detail"].startswith("state store unavailable: ")


async def test_a_read_runs_on_the_readers_own_thread(tmp_path: Path) -> None:
    """The event loop's thread never waits for the database."""
    def probe(tx: object) -> str:
        return threading.current_thread().name

    async for api in open_api(tmp_path):
        name = await api.gateway.read(probe)
    assert name.startswith("cronduit-read")
