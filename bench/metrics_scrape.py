"""``/metrics`` in-process at 10,000 jobs: what a scrape costs the daemon, with no HTTP and
no store (a scrape reads neither), from the first after a start to one where every job's
figures changed since the last.

Every job has run (a success and a failure, their durations, slots ran and missed) and has
its four gauges, some 170,000 lines. Cases, each p50 and p99 of repeated scrapes:

* first: the first render of everything, as the first scrape after a start would pay it
  if nothing had rendered ahead (a fresh :class:`DaemonMetrics` each time);
* 100 changed: 100 runs ended between two scrapes;
* all changed: every job ended a run and its next run and last success moved (every-minute
  jobs scraped every minute), then a reading of the gauges;
* gauges moved: only every job's next run moved (a reading of the gauges);
* nothing changed.

    .venv/bin/python bench/metrics_scrape.py              # 10,000 jobs
    .venv/bin/python bench/metrics_scrape.py --jobs 1000
    .venv/bin/python bench/metrics_scrape.py --profile all  # cProfile of one case
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable

from cronduit.core.enums import Outcome, SlotFate
from cronduit.daemon.metrics import DaemonMetrics, JobGauges

TARGET_MS = 250.0


def job_name(index: int) -> str:
    return f"job{index:05d}"


def filled(names: list[str], rng: random.Random) -> DaemonMetrics:
    """Metrics of ``names`` that all ran, with their gauges read once."""
    metrics = DaemonMetrics()
    for name in names:
        metrics.run_ended(name, Outcome.SUCCESS, rng.expovariate(1 / 30))
        metrics.run_ended(name, Outcome.FAILURE, rng.expovariate(1 / 30))
        metrics.timed_run_started(name, rng.random())
        metrics.slots_fated(name, SlotFate.RAN, "none", 3)
        metrics.slots_fated(name, SlotFate.MISSED, "outside_window", 1)
    metrics.show(gauges(names, 1.7e9))
    return metrics


def gauges(names: list[str], at: float) -> JobGauges:
    """Every job's next run at ``at`` plus its index, its last success a minute before."""
    return JobGauges(jobs=tuple(names), waiting={},
                     next_due={name: at + index for index, name in enumerate(names)},
                     last_success={name: at - 60 + index for index, name in enumerate(names)},
                     paused=frozenset())


class Cases:
    """The scrapes timed, each preceded (untimed) by the changes it renders."""

    def __init__(self, jobs: int) -> None:
        self.rng = random.Random(15)
        self.names = [job_name(index) for index in range(jobs)]
        self.metrics = filled(self.names, self.rng)
        self.metrics.render()
        self.minute = 1.7e9

    def first(self) -> tuple[Callable[[], None], Callable[[], object]]:
        fresh: list[DaemonMetrics] = []

        def prepare() -> None:
            fresh[:] = [filled(self.names, random.Random(1))]

        def scrape() -> bytes:
            return fresh[0].render()
        return prepare, scrape

    def some_changed(self) -> tuple[Callable[[], None], Callable[[], object]]:
        def prepare() -> None:
            for _ in range(100):
                self.metrics.run_ended(self.rng.choice(self.names), Outcome.SUCCESS,
                                       self.rng.expovariate(1 / 30))
        return prepare, self.metrics.render

    def all_changed(self) -> tuple[Callable[[], None], Callable[[], object]]:
        def prepare() -> None:
            for name in self.names:
                self.metrics.run_ended(name, Outcome.SUCCESS, self.rng.expovariate(1 / 30))
                self.metrics.timed_run_started(name, self.rng.random())
                self.metrics.slots_fated(name, SlotFate.RAN, "none", 1)
            self.minute += 60
            self.metrics.show(gauges(self.names, self.minute))
        return prepare, self.metrics.render

    def gauges_moved(self) -> tuple[Callable[[], None], Callable[[], object]]:
        def prepare() -> None:
            self.minute += 60
            self.metrics.show(gauges(self.names, self.minute))
        return prepare, self.metrics.render

    def nothing(self) -> tuple[Callable[[], None], Callable[[], object]]:
        return lambda: None, self.metrics.render


def timed(prepare: Callable[[], None], scrape: Callable[[], object], count: int,
          seconds: float) -> list[float]:
    """Seconds each scrape took, ``count`` of them or what ``seconds`` allow (at least 3)."""
    times: list[float] = []
    end = time.perf_counter() + seconds
    while len(times) < count and (len(times) < 3 or time.perf_counter() < end):
        prepare()
        began = time.perf_counter()
        scrape()
        times.append(time.perf_counter() - began)
    return times


def quantiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return (statistics.median(ordered) * 1000,
            ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--count", type=int, default=50, help="scrapes per case, at most")
    parser.add_argument("--seconds", type=float, default=20.0, help="per case, at most")
    parser.add_argument("--profile", choices=["first", "some", "all", "gauges"],
                        help="print cProfile's top functions of one scrape of this case")
    args = parser.parse_args()
    cases = Cases(args.jobs)
    chosen = {"first": cases.first(), "100 changed": cases.some_changed(),
              "all changed": cases.all_changed(), "gauges moved": cases.gauges_moved(),
              "nothing changed": cases.nothing()}
    if args.profile is not None:
        name = {"first": "first", "some": "100 changed", "all": "all changed",
                "gauges": "gauges moved"}[args.profile]
        prepare, scrape = chosen[name]
        prepare()
        profile = cProfile.Profile()
        profile.runcall(scrape)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
        return 0
    lines = cases.metrics.render().count(b"\n")
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} at the start; {args.jobs:,} jobs, {lines:,} lines, "
          f"{len(cases.metrics.render()) / 1e6:.1f} MB\n")
    print(f"{'case':<18} {'scrapes':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for name, (prepare, scrape) in chosen.items():
        times = timed(prepare, scrape, args.count, args.seconds)
        p50, p99 = quantiles(times)
        verdict = "met" if p99 < TARGET_MS else "NOT met"
        print(f"{name:<18} {len(times):>7} {p50:>8.1f} {p99:>8.1f}  p99 < {TARGET_MS:.0f} ms: "
              f"{verdict}", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
