"""The HTTP edge as the daemon wires it: the read routes on a real server, over a reader of
their own and the run logs of the state folder; a followed log streams as it is written."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from cronduit.core.config import load_config
from cronduit.core.enums import RunState
from cronduit.daemon.edges import HttpWiring, start_http
from cronduit.http import server
from cronduit.paths import StatePaths
from cronduit.ports import Run
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = "settings:\n  listen: 127.0.0.1:0\njobs:\n  tick: {run: 'true', every: 1h}\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, SqliteStore, StatePaths]]:
    """The daemon's HTTP edge on a port of its own: its base URL, the store, the folder."""
    config_path = tmp_path / "cronduit.yaml"
    config = load_config(CONFIG, str(config_path))
    paths = StatePaths.of(config, config_path)
    store = SqliteStore(paths.database)

    async def run_of(delivery_id: str, wait: float) -> str | None:
        return None

    wiring = HttpWiring(config_path=config_path, open_store=lambda: SqliteStore(paths.database),
                        config=lambda: config, secret=lambda _: None, dispatching=lambda: True,
                        run_of=run_of, wake=lambda: None, clock=FakeClock(T0),
                        log=lambda _: None, metrics=lambda: b"")
    sock = server.bind("127.0.0.1", 0)
    server.listen(sock)
    http, acceptor = await start_http(wiring, sock)
    host, port = http.address
    try:
        yield f"http://{host}:{port}", store, paths
    finally:
        await http.stop()
        acceptor.close()
        store.close()


def going(store: SqliteStore, paths: StatePaths, text: bytes) -> str:
    """A run of tick that is going, having written ``text`` to its log."""
    with store.transaction() as tx:
        tx.insert_run(Run(id="r1", job="tick", kind="manual", label="manual",
                          state=RunState.RUNNING, created_at=T0, started_at=T0, attempts=1))
    paths.log("r1").parent.mkdir(parents=True)
    paths.log("r1").write_bytes(text)
    return "r1"


async def test_the_reads_are_served_from_the_state_folder(
        served: tuple[str, SqliteStore, StatePaths]) -> None:
    base, store, paths = served
    run_id = going(store, paths, b"hello\n")
    async with httpx.AsyncClient(base_url=base) as client:
        jobs = await client.get("/v1/jobs")
        record = await client.get(f"/v1/runs/{run_id}")
        log = await client.get(f"/v1/runs/{run_id}/log")
    assert ["tick"] == [job["job"] for job in jobs.json()["jobs"]]
    assert (200, "r1") == (record.status_code, record.json()["run"])
    assert (200, "hello\n") == (log.status_code, log.text)


async def test_a_followed_log_streams_each_line_and_ends_with_the_run(
        served: tuple[str, SqliteStore, StatePaths]) -> None:
    """The first line arrives while the run goes on (streamed, not held back until the
    end); the stream closes once the run has ended."""
    base, store, paths = served
    run_id = going(store, paths, b"first\n")
    async with httpx.AsyncClient(base_url=base, timeout=30) as client, client.stream(
            "GET", f"/v1/runs/{run_id}/log", params={"follow": "1"}) as answer:
        lines = answer.aiter_lines()
        assert "data: first" == await asyncio.wait_for(anext(lines), 20)
        with paths.log(run_id).open("ab") as log:
            log.write(b"second\n")
        assert "" == await asyncio.wait_for(anext(lines), 20)
        assert "data: second" == await asyncio.wait_for(anext(lines), 20)
        with store.transaction() as tx:
            tx.update_run(run_id, state=RunState.ENDED, outcome="success", finished_at=T0)
        rest = [line async for line in lines]
    assert ["", "event: end", 'data: {"run": "r1", "outcome": "success", "reason": ""}',
            ""] == rest
