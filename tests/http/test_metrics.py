"""``GET /metrics``: the daemon's metrics in the Prometheus text format, after a scenario of
webhooks, timed runs late and missed, failures and a pause; every family the issue names,
with its labels, and no secret or input value anywhere in it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cronduit.core.config import load_config
from cronduit.core.signing import webhook_token
from cronduit.daemon.metrics import DaemonMetrics
from cronduit.engine import Engine
from cronduit.http import Gateway, Reader, create_app
from cronduit.intake import pausing as control
from cronduit.intake.acceptor import Acceptor
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner

T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
HOOK_SECRET = "hook-secret-value-5d1e"
INPUT_VALUE = "input-value-a9f3"

CONFIG = """\
settings:
  webhook_secret: HOOK_KEY
jobs:
  poke: {run: "true", webhook: true, inputs: {TAG: {pattern: "[a-z0-9-]+", default: x}}}
  tick: {run: "true", cron: "*/5 * * * *", catch_up: 1h}
  idle: {run: "true", cron: "0 3 * * *"}
"""

FAMILIES = {
    "cronduit_runs": ("counter", {"job", "outcome"}),
    "cronduit_run_duration_seconds": ("histogram", {"job"}),
    "cronduit_run_lateness_seconds": ("histogram", set()),
    "cronduit_slots": ("counter", {"job", "fate", "reason"}),
    "cronduit_triggers_waiting": ("gauge", {"job"}),
    "cronduit_job_next_run_timestamp_seconds": ("gauge", {"job"}),
    "cronduit_job_last_success_timestamp_seconds": ("gauge", {"job"}),
    "cronduit_job_paused": ("gauge", {"job"}),
}
"""Each family the issue names (a counter's name without ``_total``): its type and labels."""


@dataclass
class Scene:
    client: httpx.AsyncClient
    engine: Engine
    store: SqliteStore
    runner: FakeRunner
    clock: FakeClock
    metrics: DaemonMetrics

    def tick(self) -> None:
        self.engine.tick(self.clock.now())

    async def post(self, path: str, body: dict[str, object]) -> None:
        """A webhook, accepted, then routed (the daemon would be woken)."""
        assert 202 == (await self.client.post(path, json=body)).status_code
        self.tick()

    def finish_all(self, status: int) -> None:
        for run_id in self.runner.running():
            self.runner.finish(run_id, status)
        self.tick()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    config = load_config(CONFIG, "cronduit.yaml")
    store = SqliteStore(tmp_path / "cronduit.db")
    runner, clock, metrics = FakeRunner(), FakeClock(T0), DaemonMetrics()
    engine = Engine(config, store, runner, observer=metrics)
    engine.apply(config, T0)
    engine.start(T0)

    async def run_of(delivery_id: str, timeout: float) -> str | None:
        engine.tick(clock.now())
        return None

    acceptor = Acceptor(lambda: SqliteStore(tmp_path / "cronduit.db", migrate=False),
                        lambda: None)
    reader = Reader(lambda: SqliteStore(tmp_path / "cronduit.db", migrate=False))
    gateway = Gateway(config=lambda: engine.config, secret={"HOOK_KEY": HOOK_SECRET}.get,
                      acceptor=acceptor, clock=clock, dispatching=lambda: True, run_of=run_of,
                      read=reader.read, metrics=metrics.render)
    transport = httpx.ASGITransport(app=create_app(gateway))
    async with httpx.AsyncClient(transport=transport, base_url="http://cronduit") as client:
        yield Scene(client, engine, store, runner, clock, metrics)
    reader.close()
    acceptor.close()
    store.close()


async def play(scene: Scene) -> None:
    """A webhook with an input that succeeds after 3 s, one that fails, a timed run 20 s
    late, a 3-hour outage (slots missed outside the 1h window), a pause, a webhook left
    waiting behind a run going, and the gauges read."""
    hook = f"/hooks/poke/{webhook_token(HOOK_SECRET, 'poke')}"
    await scene.post(hook, {"inputs": {"TAG": INPUT_VALUE}})
    scene.clock.advance(timedelta(seconds=3))
    scene.finish_all(0)
    await scene.post(hook, {})
    scene.finish_all(1)
    scene.clock.set(T0 + timedelta(minutes=5, seconds=20))
    scene.tick()
    scene.finish_all(0)
    scene.clock.set(T0 + timedelta(hours=3, minutes=5))
    scene.tick()
    with scene.store.transaction() as tx:
        control.pause(tx, "idle", "disk full", "ana", None, scene.clock.now())
    await scene.post(hook, {})
    await scene.post(hook, {})  # waits behind the run going
    scene.metrics.refresh(scene.store, scene.engine.config)


def samples(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {family.name: [(s.name, s.labels, s.value) for s in family.samples]
            for family in text_string_to_metric_families(text)}


@pytest.mark.anyio
async def test_metrics_has_every_family_with_its_labels_after_a_scenario(scene: Scene) -> None:
    await play(scene)
    answer = await scene.client.get("/metrics")
    assert 200 == answer.status_code
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {family.name: family for family in text_string_to_metric_families(answer.text)}
    for name, (kind, labels) in FAMILIES.items():
        family = families[name]
        assert kind == family.type, name
        assert family.samples, name
        for sample in family.samples:
            assert labels == set(sample.labels) - {"le"}, name
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes"} <= {
        sample.name for family in families.values() for sample in family.samples}
    found = samples(answer.text)
    runs = {(labels["job"], labels["outcome"]): value
            for _, labels, value in found["cronduit_runs"]}
    assert {("poke", "success"): 1.0, ("poke", "failure"): 1.0} == {
        key: value for key, value in runs.items() if key[0] == "poke"}
    slots = {(labels["fate"], labels["reason"]) for _, labels, _ in found["cronduit_slots"]}
    assert {("ran", "none"), ("missed", "outside_window"), ("missed", "superseded")} <= slots
    buckets = {labels["le"]: value for name, labels, value
               in found["cronduit_run_lateness_seconds"]
               if name.endswith("_bucket")}
    assert (1.0, 2.0) == (buckets["5.0"], buckets["30.0"])  # on time after the outage; 20 s
    gauges = {(name, labels["job"]): value for name in (
        "cronduit_job_paused", "cronduit_triggers_waiting",
        "cronduit_job_last_success_timestamp_seconds")
        for _, labels, value in found[name]}
    assert (1.0, 0.0) == (gauges[("cronduit_job_paused", "idle")],
                          gauges[("cronduit_job_paused", "tick")])
    assert T0.timestamp() + 3 == gauges[("cronduit_job_last_success_timestamp_seconds", "poke")]
    assert 1.0 == gauges[("cronduit_triggers_waiting", "poke")]
    next_runs = {labels["job"] for _, labels, _ in
                 found["cronduit_job_next_run_timestamp_seconds"]}
    assert {"tick", "idle"} == next_runs


@pytest.mark.anyio
async def test_metrics_shows_no_secret_and_no_input_value(scene: Scene) -> None:
    await play(scene)
    text = (await scene.client.get("/metrics")).text
    assert HOOK_SECRET not in text
    assert webhook_token(HOOK_SECRET, "poke") not in text
    assert INPUT_VALUE not in text
    assert "disk full" not in text  # a pause's reason is free text too
