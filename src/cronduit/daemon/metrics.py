"""The daemon's metrics, served at ``/metrics`` in the Prometheus text format.

Two sources, so that a scrape never touches the store: the counters and histograms are fed
by the engine as it commits (this class is the engine's
:class:`~cronduit.engine.Observer`), and the gauges are read from the store by the daemon's
loop every :data:`GAUGES_EVERY` seconds, a few grouped queries for all jobs at once.

A scrape must stay cheap with 10,000 jobs, some 170,000 lines, which ``prometheus_client``
takes a second or more to write sample by sample. So each family keeps its values and the
text it was last written as, key by key, and writes again only the keys whose values changed
since the last render (a run ended, a slot fated, a gauge that moved at the last reading),
each from a pattern ``prometheus_client`` wrote once for the family
(:class:`~cronduit.daemon.metric_text.KeptFamily`). What it serves is as new as the scrape
for the counters and histograms, and as the last reading of the gauges, at most
:data:`GAUGES_EVERY` seconds old, for the gauges.

The families are the daemon's own, not ``prometheus_client``'s global registry, so two
daemons in one process (the tests) never share a series. Labels carry job names, outcomes,
fates and reason kinds only: never a reason's text, an input or a secret.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from cronduit.core.config.model import Config
from cronduit.core.enums import Outcome, SlotFate
from cronduit.daemon.metric_text import KeptFamily, Key, count_written, written
from cronduit.ports import Store

__all__ = ["DURATION_BUCKETS", "GAUGES_EVERY", "LATENESS_BUCKETS", "DaemonMetrics",
           "JobGauges", "read_gauges"]

GAUGES_EVERY = 5.0
"""Seconds between two readings of the gauges from the store, at most (the loop's clock)."""

DURATION_BUCKETS = (1.0, 10.0, 60.0, 300.0, 1800.0, 7200.0)
"""Upper bounds of ``cronduit_run_duration_seconds``, from a quick job to a nightly batch:
few, since each is a series per job (with 10,000 jobs, each bucket is 10,000 lines in every
scrape)."""
LATENESS_BUCKETS = (0.1, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0, 3600.0)
"""Upper bounds of ``cronduit_run_lateness_seconds``: a healthy daemon starts a timed run
within a fraction of a second; minutes and hours are outages caught up."""


@dataclass(frozen=True)
class JobGauges:
    """What the gauges show of each configured job, as read from the store at one time."""

    jobs: tuple[str, ...] = ()
    waiting: dict[str, int] = field(default_factory=dict)
    next_due: dict[str, float] = field(default_factory=dict)
    """Unix seconds at which the job's timer is next due (its jitter included)."""
    last_success: dict[str, float] = field(default_factory=dict)
    paused: frozenset[str] = frozenset()


def read_gauges(store: Store, jobs: Collection[str]) -> JobGauges:
    """The gauges of ``jobs``, read in one transaction of four grouped queries."""
    with store.transaction() as tx:
        waiting = tx.waiting_counts()
        timers = tx.timers()
        paused = frozenset(pause.job for pause in tx.pauses())
        successes = tx.last_successes(jobs)
    wanted = set(jobs)
    return JobGauges(
        jobs=tuple(sorted(wanted)),
        waiting={job: count for job, count in waiting.items() if job in wanted},
        next_due={timer.job: timer.due_at.timestamp() for timer in timers
                  if timer.job in wanted},
        last_success={job: at.timestamp() for job, at in successes.items()},
        paused=paused & wanted)


Histogram = tuple[tuple[int, ...], float]
"""A histogram's value: its observations counted in each bucket (not cumulated, the last
one past every bound), and their sum."""


def _le(bounds: tuple[float, ...]) -> tuple[str, ...]:
    """The ``le`` labels of buckets ending at ``bounds``, written as ``prometheus_client``
    writes them, and the last, ``+Inf``."""
    return (*map(written, bounds), "+Inf")


def observed(value: Histogram, bounds: tuple[float, ...], amount: float) -> Histogram:
    """``value`` with ``amount`` observed: counted in the first bucket whose bound it does
    not exceed, as ``prometheus_client``'s own histograms count."""
    counts, total = value
    at = bisect_left(bounds, amount)
    return (*counts[:at], counts[at] + 1, *counts[at + 1:]), total + amount


def _histogram(name: str, documentation: str, bounds: tuple[float, ...],
               labels: tuple[str, ...]) -> KeptFamily[Histogram]:
    le = _le(bounds)

    def add(metric: Metric, key: Key, value: Histogram) -> None:
        assert isinstance(metric, HistogramMetricFamily)
        counts, total = value
        metric.add_metric(key, list(zip(le, accumulate(counts), strict=True)), total)

    def samples(value: Histogram) -> tuple[str, ...]:
        """The buckets cumulated, the count and the sum: what ``add`` adds, in its order."""
        counts, total = value
        cumulated = tuple(map(count_written, accumulate(counts)))
        return (*cumulated, cumulated[-1], written(total))

    return KeptFamily(lambda: HistogramMetricFamily(name, documentation, labels=labels),
                      len(labels), add, samples, ((0,) * (len(bounds) + 1), 0.0))


def _one(value: float) -> tuple[str]:
    """The one sample of a counter or a gauge, a count (an int) kept as written."""
    return (count_written(value) if isinstance(value, int) else written(value),)


def _counter(name: str, documentation: str, labels: tuple[str, ...]) -> KeptFamily[float]:
    def add(metric: Metric, key: Key, value: float) -> None:
        assert isinstance(metric, CounterMetricFamily)
        metric.add_metric(key, value)

    return KeptFamily(lambda: CounterMetricFamily(name, documentation, labels=labels),
                      len(labels), add, _one, 0.0)


def _gauge(name: str, documentation: str) -> KeptFamily[float]:
    def add(metric: Metric, key: Key, value: float) -> None:
        assert isinstance(metric, GaugeMetricFamily)
        metric.add_metric(key, value)

    return KeptFamily(lambda: GaugeMetricFamily(name, documentation, labels=["job"]), 1, add,
                      _one, 0.0)


class DaemonMetrics:
    """One daemon's metrics: the engine's observer, the gauges' last reading, the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Held to change a value (the engine's thread, the loop's reading) and to take
        what changed (a scrape): briefly, never while rendering."""
        self._rendering = threading.Lock()
        """Held by a scrape while it renders: two at once render each change once."""
        self._process = CollectorRegistry()
        ProcessCollector(registry=self._process)
        self._runs = _counter("cronduit_runs", "Runs ended, by job and outcome",
                              ("job", "outcome"))
        self._duration = _histogram(
            "cronduit_run_duration_seconds", "Seconds from a run's start to its end, by job",
            DURATION_BUCKETS, ("job",))
        # Lateness is the scheduler's health rather than a job's, so one histogram for all
        # jobs: per job it would be as many lines again as the durations.
        self._lateness = _histogram(
            "cronduit_run_lateness_seconds",
            "Seconds from a timed run's slot (its due time, jitter included) to its start, "
            "all jobs", LATENESS_BUCKETS, ())
        self._slots = _counter(
            "cronduit_slots", "Slots of timed jobs given a fate, by job, fate and reason kind",
            ("job", "fate", "reason"))
        self._waiting = _gauge("cronduit_triggers_waiting",
                               "Triggers waiting in the job's work for a run")
        self._next_run = _gauge(
            "cronduit_job_next_run_timestamp_seconds",
            "When the job's timer is next due (Unix time); none for a job without a timer")
        self._last_success = _gauge(
            "cronduit_job_last_success_timestamp_seconds",
            "When the job's newest successful run ended (Unix time); none if it never "
            "succeeded")
        self._paused = _gauge("cronduit_job_paused", "1 while the job is paused, else 0")
        self._families: tuple[KeptFamily[Any], ...] = (
            self._runs, self._duration, self._lateness, self._slots, self._waiting,
            self._next_run, self._last_success, self._paused)
        self._lateness.set((), ((0,) * (len(LATENESS_BUCKETS) + 1), 0.0))

    def run_ended(self, job: str, outcome: Outcome, seconds: float | None) -> None:
        with self._lock:
            key = (job, str(outcome))
            self._runs.set(key, self._runs.values.get(key, 0) + 1)
            if seconds is not None:
                self._observe(self._duration, (job,), DURATION_BUCKETS, seconds)

    def timed_run_started(self, job: str, lateness: float) -> None:
        with self._lock:
            self._observe(self._lateness, (), LATENESS_BUCKETS, lateness)

    def slots_fated(self, job: str, fate: SlotFate, kind: str, count: int) -> None:
        with self._lock:
            key = (job, str(fate), kind)
            self._slots.set(key, self._slots.values.get(key, 0) + count)

    @staticmethod
    def _observe(family: KeptFamily[Histogram], key: Key,
                 bounds: tuple[float, ...], amount: float) -> None:
        empty = ((0,) * (len(bounds) + 1), 0.0)
        family.set(key, observed(family.values.get(key, empty), bounds, amount))

    def refresh(self, store: Store, config: Config) -> None:
        """Read the gauges of the config's jobs from the store (off the event loop)."""
        self.show(read_gauges(store, config.jobs))

    def show(self, read: JobGauges) -> None:
        """Make the gauges show ``read``: only the jobs whose figures moved are rendered
        again at the next scrape."""
        with self._lock:
            self._waiting.replace({(job,): read.waiting.get(job, 0) for job in read.jobs})
            self._next_run.replace({(job,): due for job, due in read.next_due.items()})
            self._last_success.replace({(job,): at for job, at in read.last_success.items()})
            self._paused.replace({(job,): 1 if job in read.paused else 0 for job in read.jobs})

    def pending(self) -> int:
        """How many keys changed since the last render (a hint: read without the lock)."""
        return sum(family.pending for family in self._families)

    def write_changes(self) -> int:
        """Render the keys changed since the last render, ahead of the next scrape (the
        daemon's loop asks after each of its turns that changed some, off its event loop and
        off the engine's thread): a scrape then renders only what changed since. The number
        of keys rendered."""
        with self._rendering:
            return self._write_changes()

    def _write_changes(self) -> int:
        with self._lock:
            changes = [(family, family.stale()) for family in self._families]
        return sum(family.write(changed) for family, changed in changes)

    def render(self) -> bytes:
        """Everything in the Prometheus text format, the jobs changed since the last render
        rendered again and the others' text reused."""
        with self._rendering:
            self._write_changes()
            return b"".join([generate_latest(self._process),
                             *(family.text() for family in self._families)])
