"""The daemon's registry: the gauges show the config's jobs as last read from the store, a
scrape reads nothing from the store, and each daemon's registry is its own."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from cronduit.core.config import load_config
from cronduit.core.enums import Outcome
from cronduit.daemon.metrics import DaemonMetrics
from cronduit.engine import Engine
from cronduit.ports import NewEvent
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeRunner

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TWO = "jobs:\n  kept: {run: x, cron: '0 13 * * *'}\n  gone: {run: x, cron: '0 14 * * *'}\n"
ONE = "jobs:\n  kept: {run: x, cron: '0 13 * * *'}\n"


def jobs_of(metrics: DaemonMetrics, family: str) -> set[str]:
    return {sample.labels["job"]
            for found in text_string_to_metric_families(metrics.render().decode())
            if found.name == family for sample in found.samples}


def test_the_gauges_show_the_jobs_of_the_config_they_were_read_for(tmp_path: Path) -> None:
    """A job removed from the config leaves the gauges at the next reading, though its
    timer and triggers are still in the store."""
    store = SqliteStore(tmp_path / "cronduit.db")
    two, one = load_config(TWO, "c.yaml"), load_config(ONE, "c.yaml")
    Engine(two, store, FakeRunner()).apply(two, T0)
    with store.transaction() as tx:
        tx.insert_event(NewEvent("manual/1", "gone", "manual", "manual", T0))
    metrics = DaemonMetrics()
    metrics.refresh(store, two)
    assert {"kept", "gone"} == jobs_of(metrics, "cronduit_job_next_run_timestamp_seconds")
    metrics.refresh(store, one)
    for family in ("cronduit_job_next_run_timestamp_seconds", "cronduit_job_paused",
                   "cronduit_triggers_waiting"):
        assert {"kept"} == jobs_of(metrics, family), family
    store.close()


def test_a_scrape_renders_the_last_reading_without_the_store(tmp_path: Path) -> None:
    """Once read, the gauges are served with the store closed: a scrape never reads it."""
    store = SqliteStore(tmp_path / "cronduit.db")
    config = load_config(ONE, "c.yaml")
    Engine(config, store, FakeRunner()).apply(config, T0)
    metrics = DaemonMetrics()
    metrics.refresh(store, config)
    store.close()
    assert {"kept"} == jobs_of(metrics, "cronduit_job_next_run_timestamp_seconds")


def test_two_daemons_in_one_process_count_apart() -> None:
    first, second = DaemonMetrics(), DaemonMetrics()
    first.run_ended("job", Outcome.SUCCESS, 1.0)
    assert {"job"} == jobs_of(first, "cronduit_runs")
    assert set() == jobs_of(second, "cronduit_runs")
