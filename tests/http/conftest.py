"""The HTTP app over the ASGI transport, bound to a real engine and SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from cronduit.core.config import load_config
from cronduit.core.signing import webhook_token
from cronduit.daemon.edges import read_log
from cronduit.engine import Engine
from cronduit.http import Gateway, Reader, create_app
from cronduit.intake.acceptor import Acceptor
from cronduit.paths import StatePaths
from cronduit.ports import Event, Run, Store
from cronduit.store.postgres import PostgresStore
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner
from tests.helpers.postgres import fresh_schema, in_schema

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HOOK_SECRET = "hook-secret-value-7f3a"
API_TOKEN = "api-token-value-91bc"
GITHUB_SECRET = "github-secret-value-c0de"

CONFIG = """\
settings:
  webhook_secret: HOOK_KEY
  api_token: API_KEY
  github_secret: GITHUB_KEY
jobs:
  poke:   {run: "true", webhook: true}
  inputs: {run: "true", webhook: true,
           inputs: {REGION: {enum: [eu, us], default: eu},
                    TAG: {pattern: "v[0-9]+", default: v1}}}
  quiet:  {run: "true"}
  docs:   {run: "true",
           on: {events: [push], branches: [main], paths: ["docs/**", "!docs/draft/**"]}}
  any-push: {run: "true", on: {events: [push]}}
  red-main: {run: "true", on: {events: [check_suite.completed], branches: [main],
                               conclusions: [failure, timed_out]}}
  red-any:  {run: "true", on: {events: [check_suite.completed], conclusions: [failure]}}
  release:  {run: "true", on: {events: [release.published]}}
"""


@dataclass
class Api:
    """The app, its engine and store, and helpers that read like the scenario."""

    client: httpx.AsyncClient
    app: Starlette
    gateway: Gateway
    engine: Engine
    store: Store
    runner: FakeRunner
    clock: FakeClock
    lines: list[str]
    """What the engine logged, one line each."""
    paths: StatePaths
    """Where runs' files are: a test writes a run's log there, as its process would."""

    def hook(self, job: str, secret: str = HOOK_SECRET) -> str:
        return f"/hooks/{job}/{webhook_token(secret, job)}"

    def event(self, delivery_id: str) -> Event | None:
        with self.store.transaction() as tx:
            return tx.event_by_delivery(delivery_id)

    def history(self, job: str) -> list[Run]:
        with self.store.transaction() as tx:
            return list(reversed(tx.history(job, 1000)))

    def tick(self) -> None:
        self.engine.tick(self.clock.now())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "postgresql"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """The app on each backend: the routes answer alike on both."""
    if request.param == "sqlite":
        async for made in open_api(tmp_path, dispatch=True):
            yield made
        return
    with fresh_schema() as schema:
        async for made in open_api(tmp_path, dispatch=True, postgres=in_schema(schema)):
            yield made


@pytest.fixture
async def dry_api(tmp_path: Path) -> AsyncIterator[Api]:
    async for made in open_api(tmp_path, dispatch=False):
        yield made


@dataclass
class Wired:
    """The app and what it stands on, before any client: what a test drives by hand."""

    app: Starlette
    gateway: Gateway
    engine: Engine
    store: Store
    runner: FakeRunner
    clock: FakeClock
    lines: list[str]
    paths: StatePaths


@contextmanager
def wired(folder: Path, *, dispatch: bool = True, config_text: str = CONFIG,
          postgres: str | None = None) -> Iterator[Wired]:
    """The app over a store in ``folder`` (or in PostgreSQL at ``postgres``), on
    ``config_text`` (the shared CONFIG unless a test needs jobs of its own)."""
    config = load_config(config_text, "cronduit.yaml")

    def second_store(migrate: bool) -> Store:
        if postgres is not None:
            return PostgresStore(postgres, migrate=migrate)
        return SqliteStore(folder / "cronduit.db", migrate=migrate)

    store = second_store(True)
    runner = FakeRunner()
    clock = FakeClock(T0)
    lines: list[str] = []
    engine = Engine(config, store, runner, dispatch=dispatch, log=lines.append)
    engine.apply(config, clock.now())
    secrets = {"HOOK_KEY": HOOK_SECRET, "API_KEY": API_TOKEN, "GITHUB_KEY": GITHUB_SECRET}

    async def run_of(delivery_id: str, timeout: float) -> str | None:
        engine.tick(clock.now())  # the daemon would be woken; here the test routes at once
        with store.transaction() as tx:
            event = tx.event_by_delivery(delivery_id)
        return event.run_id if event is not None and event.state == "consumed" else None

    acceptor = Acceptor(lambda: second_store(False), lambda: None)
    reader = Reader(lambda: second_store(False))
    paths = StatePaths(folder)
    gateway = Gateway(config=lambda: engine.config, secret=secrets.get, acceptor=acceptor,
                      clock=clock, dispatching=lambda: engine.dispatch, run_of=run_of,
                      read=reader.read, run_folder=paths.run,
                      log=lambda run, attempt, at: read_log(paths, None, run, attempt, at))
    try:
        yield Wired(create_app(gateway), gateway, engine, store, runner, clock, lines, paths)
    finally:
        reader.close()
        acceptor.close()
        store.close()


async def open_api(folder: Path, *, dispatch: bool = True, config_text: str = CONFIG,
                   postgres: str | None = None) -> AsyncIterator[Api]:
    """:func:`wired`'s app with a client over the ASGI transport."""
    with wired(folder, dispatch=dispatch, config_text=config_text, postgres=postgres) as w:
        transport = httpx.ASGITransport(app=w.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://cronduit") as client:
            yield Api(client, w.app, w.gateway, w.engine, w.store, w.runner, w.clock, w.lines,
                      w.paths)
