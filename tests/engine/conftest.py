"""A real engine on a real store (SQLite or PostgreSQL), with a fake clock and a fake runner.

On PostgreSQL the rig's config names a PostgreSQL state, as a daemon's would: what the
engine does only there (keeping log tails) happens in its scenarios too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from cronduit.core.config import Config, load_config
from cronduit.core.payload import Payload
from cronduit.engine import Engine
from cronduit.ports import NewEvent, Run, Store
from cronduit.store.postgres import PostgresStore
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner
from tests.helpers.postgres import URL, fresh_schema, in_schema


@dataclass
class Rig:
    """Everything a scenario needs, with helpers that read like the scenario."""

    store: Store
    runner: FakeRunner
    clock: FakeClock
    engine: Engine
    lines: list[str]
    backend: str = "sqlite"

    def tick(self) -> datetime | None:
        return self.engine.tick(self.clock.now())

    def at(self, instant: datetime) -> datetime | None:
        self.clock.set(instant)
        return self.tick()

    def advance(self, by: timedelta) -> datetime | None:
        self.clock.advance(by)
        return self.tick()

    def run_until(self, end: datetime, on_launch: int | None = 0) -> None:
        """Tick at every due instant up to ``end``; each launched attempt exits ``on_launch``
        right away (None leaves attempts running)."""
        while True:
            if on_launch is not None:
                for run_id in self.runner.running():
                    self.runner.finish(run_id, on_launch)
            due = self.tick()
            if on_launch is not None and self.runner.running():
                continue
            if due is None or due > end:
                self.clock.set(end)
                self.tick()
                return
            self.clock.set(max(due, self.clock.now()))

    def accept(self, delivery: str, job: str, kind: str, payload: dict[str, object] | None = None
               ) -> int | None:
        with self.store.transaction() as tx:
            return tx.insert_event(NewEvent(delivery, job, kind, f"{kind} {delivery}",
                                            self.clock.now(),
                                            payload=Payload(json.dumps(payload or {}))))

    def history(self, job: str) -> list[Run]:
        with self.store.transaction() as tx:
            return list(reversed(tx.history(job, 1000)))

    def restart(self, text: str | None = None, *, dispatch: bool = True) -> None:
        """A new engine on the same store (a daemon restart), optionally with a new config."""
        config = configured(load_config(text, "test.yaml"), self.backend) if text else (
            self.engine.config)
        self.engine = Engine(config, self.store, self.runner, dispatch=dispatch,
                             log=self.lines.append)
        self.engine.apply(config, self.clock.now())
        self.engine.start(self.clock.now())


def configured(config: Config, backend: str) -> Config:
    """The config as a daemon on ``backend`` would have it: on PostgreSQL, its state is a
    PostgreSQL URL (the store the rig opened; the engine never connects through it)."""
    if backend == "sqlite":
        return config
    return config.model_copy(update={"settings": config.settings.model_copy(
        update={"state": URL})})


@pytest.fixture(params=["sqlite", "postgresql"])
def make_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """Rigs on each backend: the engine's stages hold to the same behaviour on both."""
    stores: list[Store] = []
    schemas = ExitStack()

    def open_store() -> Store:
        if request.param == "sqlite":
            return SqliteStore(tmp_path / f"cronduit-{len(stores)}.db")
        return PostgresStore(in_schema(schemas.enter_context(fresh_schema())))

    def build(text: str, start: datetime, *, dispatch: bool = True) -> Rig:
        store = open_store()
        stores.append(store)
        clock = FakeClock(start)
        runner = FakeRunner()
        lines: list[str] = []
        config = configured(load_config(text, "test.yaml"), request.param)
        engine = Engine(config, store, runner, dispatch=dispatch, log=lines.append)
        engine.apply(config, clock.now())
        engine.start(clock.now())
        return Rig(store, runner, clock, engine, lines, request.param)

    with schemas:
        yield build
        for store in stores:
            store.close()
