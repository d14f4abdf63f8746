"""The daemon's metrics: the gauges show the config's jobs as last read from the store, a
scrape reads nothing from the store, each daemon's metrics are its own, and a scrape renders
again only what changed, yet writes what prometheus_client writes rendered whole."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from cronduit.core.config import load_config
from cronduit.core.enums import Outcome, SlotFate
from cronduit.daemon.metric_text import Key, pattern_of
from cronduit.daemon.metrics import DURATION_BUCKETS, LATENESS_BUCKETS, DaemonMetrics, JobGauges
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


def samples_of(text: str) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    """Every sample but the process's and ``_created`` ones, as a comparable set."""
    return {(sample.name, tuple(sorted(sample.labels.items())), sample.value)
            for family in text_string_to_metric_families(text) for sample in family.samples
            if not sample.name.startswith("process_") and not sample.name.endswith("_created")}


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(list(Outcome)),
                          st.floats(0, 10_000), st.booleans()), max_size=40))
@settings(max_examples=40, deadline=None)
def test_rendering_only_what_changed_writes_what_prometheus_client_writes_whole(
        ends: list[tuple[str, Outcome, float, bool]]) -> None:
    """Runs ended between scrapes, each scrape rendering only the jobs that changed: the
    last scrape shows what prometheus_client's own counter and histograms, fed the same
    runs, show rendered whole."""
    metrics, registry = DaemonMetrics(), CollectorRegistry()
    runs = Counter("cronduit_runs", "x", ["job", "outcome"], registry=registry)
    durations = Histogram("cronduit_run_duration_seconds", "x", ["job"],
                          buckets=DURATION_BUCKETS, registry=registry)
    lateness = Histogram("cronduit_run_lateness_seconds", "x", buckets=LATENESS_BUCKETS,
                         registry=registry)
    for job, outcome, seconds, scrape in ends:
        metrics.run_ended(job, outcome, seconds)
        metrics.timed_run_started(job, seconds / 100)
        runs.labels(job, str(outcome)).inc()
        durations.labels(job).observe(seconds)
        lateness.observe(seconds / 100)
        if scrape:
            metrics.render()
    assert samples_of(generate_latest(registry).decode()) == samples_of(
        metrics.render().decode())


def test_a_scrape_renders_again_only_the_jobs_whose_figures_changed() -> None:
    """A run ended renders its job's count and durations again, and nothing else; a reading
    of the gauges renders the gauges that moved, and none when none did."""
    metrics = DaemonMetrics()
    read = JobGauges(jobs=("a", "b", "c"), next_due={"a": 1.0, "b": 2.0, "c": 3.0})
    for job in read.jobs:
        metrics.run_ended(job, Outcome.SUCCESS, 1.0)
    metrics.show(read)
    metrics.render()
    assert 0 == metrics.write_changes()
    metrics.run_ended("b", Outcome.SUCCESS, 2.0)
    assert 2 == metrics.write_changes()  # b's count and b's durations
    metrics.show(read)
    assert 0 == metrics.write_changes()
    metrics.show(replace(read, next_due={"a": 1.0, "b": 2.0, "c": 4.0}, paused=frozenset("a")))
    assert 2 == metrics.write_changes()  # c's next run, a's pause
    text = metrics.render().decode()
    assert ("cronduit_runs_total", (("job", "b"), ("outcome", "success")), 2.0) in \
        samples_of(text)
    assert ("cronduit_job_next_run_timestamp_seconds", (("job", "c"),), 4.0) in \
        samples_of(text)
    assert ("cronduit_job_paused", (("job", "a"),), 1.0) in samples_of(text)


def test_a_scrape_shows_what_changed_since_the_text_rendered_ahead() -> None:
    """Text rendered ahead (after a reading of the gauges) is never served stale: a run
    that ends after it is in the next scrape."""
    metrics = DaemonMetrics()
    metrics.run_ended("a", Outcome.FAILURE, 1.0)
    metrics.write_changes()
    metrics.run_ended("a", Outcome.FAILURE, 1.0)
    assert ("cronduit_runs_total", (("job", "a"), ("outcome", "failure")), 2.0) in \
        samples_of(metrics.render().decode())


LABEL_VALUES = st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
"""Job names and reason kinds with anything in them: quotes, backslashes, newlines, braces."""


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[object, ...]]:
    """What a daemon's metrics are told between scrapes, over a few jobs: runs ended, timed
    runs started, slots fated, readings of the gauges, renders ahead and scrapes."""
    jobs = draw(st.lists(st.one_of(st.sampled_from(['odd"job', "back\\slash", "new\nline",
                                                    "{0}", "job-1"]), LABEL_VALUES),
                         min_size=1, max_size=4, unique=True))
    job = st.sampled_from(jobs)
    seconds = st.floats(0, 1e7, allow_nan=False)
    stamps = st.floats(0, 4e9, allow_nan=False)
    reading = st.builds(
        lambda shown, waiting, due, success, paused: JobGauges(
            jobs=tuple(shown), waiting=dict(zip(shown, waiting, strict=False)),
            next_due=dict(zip(shown, due, strict=False)),
            last_success=dict(zip(shown[1:], success, strict=False)),
            paused=frozenset(shown[:paused])),
        st.lists(job, unique=True), st.lists(st.integers(0, 3_000_000)),
        st.lists(stamps), st.lists(stamps), st.integers(0, 2))
    return draw(st.lists(st.one_of(
        st.tuples(st.just("end"), job, st.sampled_from(list(Outcome)),
                  st.one_of(st.none(), seconds)),
        st.tuples(st.just("late"), job, seconds),
        st.tuples(st.just("slots"), job, st.sampled_from(list(SlotFate)), LABEL_VALUES,
                  st.integers(1, 3_000_000)),
        st.tuples(st.just("gauges"), reading),
        st.tuples(st.just("ahead")), st.tuples(st.just("scrape"))), max_size=30))


class Reference:
    """The same families in prometheus_client's own metrics, rendered whole."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.runs = Counter("cronduit_runs", "x", ["job", "outcome"], registry=registry)
        self.durations = Histogram("cronduit_run_duration_seconds", "x", ["job"],
                                   buckets=DURATION_BUCKETS, registry=registry)
        self.lateness = Histogram("cronduit_run_lateness_seconds", "x",
                                  buckets=LATENESS_BUCKETS, registry=registry)
        self.slots = Counter("cronduit_slots", "x", ["job", "fate", "reason"],
                             registry=registry)
        self.gauges = {name: Gauge(name, "x", ["job"], registry=registry) for name in (
            "cronduit_triggers_waiting", "cronduit_job_next_run_timestamp_seconds",
            "cronduit_job_last_success_timestamp_seconds", "cronduit_job_paused")}

    def show(self, read: JobGauges) -> None:
        shown: tuple[Mapping[str, float], ...] = (
            {job: read.waiting.get(job, 0) for job in read.jobs}, read.next_due,
            read.last_success, {job: int(job in read.paused) for job in read.jobs})
        for gauge, values in zip(self.gauges.values(), shown, strict=True):
            gauge.clear()
            for job, value in values.items():
                gauge.labels(job).set(value)

    def text(self) -> str:
        return generate_latest(self.registry).decode()


def families_of(text: str) -> dict[str, tuple[str, list[str]]]:
    """Each family's TYPE line and its sample lines, sorted (a family's keys are in the order
    they were first set, prometheus_client's in its own), leaving out the process's and
    ``_created`` families and the HELP lines (the reference's documentation is not ours).
    Label values are escaped, so every sample is one line."""
    families: dict[str, tuple[str, list[str]]] = {}
    name = ""
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
        elif line.startswith("# TYPE "):
            families[name] = (line, [])
        else:
            families[name][1].append(line)
    return {name: (kind, sorted(lines)) for name, (kind, lines) in families.items()
            if not name.startswith("process_") and not name.endswith("_created")}


@given(histories())
@settings(max_examples=150, deadline=None)
def test_what_a_scrape_writes_is_what_prometheus_client_writes_whole(
        history: list[tuple[object, ...]]) -> None:
    """Whatever the daemon was told and whenever it rendered (ahead or scraped), each scrape
    writes every family's lines exactly as prometheus_client's own metrics, told the same,
    write them rendered whole: the same series, values written alike, label values with
    quotes, backslashes, newlines and braces escaped alike; and its parser reads it."""
    metrics, reference = DaemonMetrics(), Reference()
    for step in [*history, ("scrape",)]:
        match step:
            case ("end", str(job), Outcome() as outcome, seconds):
                assert seconds is None or isinstance(seconds, float)
                metrics.run_ended(job, outcome, seconds)
                reference.runs.labels(job, str(outcome)).inc()
                if seconds is not None:
                    reference.durations.labels(job).observe(seconds)
            case ("late", str(job), float(seconds)):
                metrics.timed_run_started(job, seconds)
                reference.lateness.observe(seconds)
            case ("slots", str(job), SlotFate() as fate, str(kind), int(count)):
                metrics.slots_fated(job, fate, kind, count)
                reference.slots.labels(job, str(fate), kind).inc(count)
            case ("gauges", JobGauges() as read):
                metrics.show(read)
                reference.show(read)
            case ("ahead",):
                metrics.write_changes()
            case ("scrape",):
                text = metrics.render().decode()
                assert families_of(reference.text()) == families_of(text)
                assert samples_of(reference.text()) == samples_of(text)


def test_a_family_whose_key_prometheus_client_writes_in_two_blocks_is_refused() -> None:
    """A key's lines must be one block after the family's header to be kept as a pattern:
    a counter given its ``_created`` time is written in a family of its own, and refused."""
    def add(metric: Metric, key: Key, value: float) -> None:
        assert isinstance(metric, CounterMetricFamily)
        metric.add_metric(key, value, created=1.0)

    with pytest.raises(ValueError, match="not one block"):
        pattern_of(lambda: CounterMetricFamily("c", "x", labels=["job"]), 1, add, 0.0)
