"""The daemon's metrics, served at ``/metrics`` in the Prometheus text format.

Two sources, so that a scrape never touches the store: the counters and histograms are fed
by the engine as it commits (this class is the engine's
:class:`~cronduit.engine.Observer`), and the gauges are read from the store by the daemon's
loop every :data:`GAUGES_EVERY` seconds, a few grouped queries for all jobs at once, and
kept as one snapshot. A scrape renders the registry (:meth:`DaemonMetrics.render`), whose
gauges collector reads that snapshot: its cost is the text it writes, not the jobs' history.

The registry is the daemon's own, not ``prometheus_client``'s global one, so two daemons in
one process (the tests) never share a series. Labels carry job names, outcomes, fates and
reason kinds only: never a reason's text, an input or a secret.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import prometheus_client
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cronduit.core.config.model import Config
from cronduit.core.enums import Outcome, SlotFate
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


class _Gauges(Collector):
    """The gauges, rendered from the last snapshot read (replaced whole, never changed)."""

    def __init__(self) -> None:
        self.read = JobGauges()

    def collect(self) -> Iterable[Metric]:
        read = self.read
        waiting = GaugeMetricFamily(
            "cronduit_triggers_waiting", "Triggers waiting in the job's work for a run",
            labels=["job"])
        next_run = GaugeMetricFamily(
            "cronduit_job_next_run_timestamp_seconds",
            "When the job's timer is next due (Unix time); none for a job without a timer",
            labels=["job"])
        success = GaugeMetricFamily(
            "cronduit_job_last_success_timestamp_seconds",
            "When the job's newest successful run ended (Unix time); none if it never "
            "succeeded", labels=["job"])
        paused = GaugeMetricFamily(
            "cronduit_job_paused", "1 while the job is paused, else 0", labels=["job"])
        for job in read.jobs:
            waiting.add_metric([job], read.waiting.get(job, 0))
            paused.add_metric([job], 1 if job in read.paused else 0)
            if job in read.next_due:
                next_run.add_metric([job], read.next_due[job])
            if job in read.last_success:
                success.add_metric([job], read.last_success[job])
        return [waiting, next_run, success, paused]


class DaemonMetrics:
    """One daemon's registry: the engine's observer, the gauges' snapshot, the process."""

    def __init__(self) -> None:
        # Each counter and histogram would otherwise add a _created series per label set:
        # with thousands of jobs, as many lines again in every scrape, for a value nobody
        # graphs (Prometheus works out resets without it).
        # (prometheus_client leaves this one function unannotated)
        prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self._runs = Counter("cronduit_runs", "Runs ended, by job and outcome",
                             ["job", "outcome"], registry=self.registry)
        self._duration = Histogram(
            "cronduit_run_duration_seconds", "Seconds from a run's start to its end, by job",
            ["job"], buckets=DURATION_BUCKETS, registry=self.registry)
        # Lateness is the scheduler's health rather than a job's, so one histogram for all
        # jobs: per job it would be as many lines again as the durations.
        self._lateness = Histogram(
            "cronduit_run_lateness_seconds",
            "Seconds from a timed run's slot (its due time, jitter included) to its start, "
            "all jobs", buckets=LATENESS_BUCKETS, registry=self.registry)
        self._slots = Counter(
            "cronduit_slots", "Slots of timed jobs given a fate, by job, fate and reason kind",
            ["job", "fate", "reason"], registry=self.registry)
        self._gauges = _Gauges()
        self.registry.register(self._gauges)

    def run_ended(self, job: str, outcome: Outcome, seconds: float | None) -> None:
        self._runs.labels(job, str(outcome)).inc()
        if seconds is not None:
            self._duration.labels(job).observe(seconds)

    def timed_run_started(self, job: str, lateness: float) -> None:
        self._lateness.observe(lateness)

    def slots_fated(self, job: str, fate: SlotFate, kind: str, count: int) -> None:
        self._slots.labels(job, str(fate), kind).inc(count)

    def refresh(self, store: Store, config: Config) -> None:
        """Read the gauges of the config's jobs from the store (off the event loop)."""
        self._gauges.read = read_gauges(store, config.jobs)

    def render(self) -> bytes:
        """The whole registry in the Prometheus text format."""
        return generate_latest(self.registry)
