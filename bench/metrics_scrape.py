"""``/metrics`` at 10,000 jobs: what a scrape costs the daemon, in-process (no HTTP, and no
store: a scrape never reads it) or over HTTP, from the first render of everything to one
where every job's figures changed since the last.

Every job has run (a success and a failure, their durations, slots ran and missed) and has
its four gauges, some 170,000 lines. Cases, each p50 and p99 of repeated scrapes:

* first: the first render of everything, as the first scrape after a start would pay it
  if nothing had rendered ahead (a fresh :class:`DaemonMetrics` each time);
* 100 changed: 100 runs ended between two scrapes;
* all changed: every job ended a run, started one late and had a slot fated, and its next
  run and last success moved at a reading of the gauges (every-minute jobs scraped every
  minute);
* gauges moved: only every job's next run moved (a reading of the gauges);
* nothing changed.

With ``--http``, the same cases (but the first) over HTTP: the metrics are served by
cronduit's own HTTP app and uvicorn in a child process (``--serve``), which makes each
case's changes when the bench asks on its stdin, then the bench times ``GET /metrics`` with
httpx from its own process: the render, Starlette, uvicorn and 10.9 MB over loopback.

    .venv/bin/python bench/metrics_scrape.py              # 10,000 jobs
    .venv/bin/python bench/metrics_scrape.py --jobs 1000
    .venv/bin/python bench/metrics_scrape.py --http       # over HTTP
    .venv/bin/python bench/metrics_scrape.py --profile all  # cProfile of one case
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from cronduit.clock import SystemClock
from cronduit.core.config import load_config
from cronduit.core.enums import Outcome, SlotFate
from cronduit.daemon.metrics import DaemonMetrics, JobGauges
from cronduit.http import Gateway, Reader, create_app
from cronduit.http.server import bind, listen, start
from cronduit.intake.acceptor import Acceptor
from cronduit.store.sqlite import SqliteStore

TARGET_MS = 250.0
NEWLINE = b"\n"


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

    def chosen(self) -> dict[str, tuple[Callable[[], None], Callable[[], object]]]:
        """Each case by name: its changes, and its scrape."""
        return {"first": self.first(), "100 changed": self.some_changed(),
                "all changed": self.all_changed(), "gauges moved": self.gauges_moved(),
                "nothing changed": self.nothing()}


async def _serve(metrics: DaemonMetrics, folder: Path, said: Callable[[str], None]) -> None:
    """Serve ``metrics`` at ``/metrics`` through cronduit's HTTP app until cancelled."""
    path = folder / "cronduit.db"
    SqliteStore(path).close()

    def open_store() -> SqliteStore:
        return SqliteStore(path, migrate=False)

    async def run_of(delivery_id: str, timeout: float) -> str | None:
        return None

    config = load_config("jobs:\n  one: {run: 'true'}\n", "cronduit.yaml")
    reader = Reader(open_store)
    gateway = Gateway(config=lambda: config, secret=lambda _: None,
                      acceptor=Acceptor(open_store, lambda: None), clock=SystemClock(),
                      dispatching=lambda: True, run_of=run_of, read=reader.read,
                      metrics=metrics.render)
    sock = bind("127.0.0.1", 0)
    listen(sock)
    server = await start(create_app(gateway), sock, [reader.close])
    said(f"port {server.address[1]}")
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def serve(jobs: int) -> int:
    """The child of ``--http``: serves the metrics of ``jobs`` jobs, and makes a case's
    changes for each line on stdin naming it, answering ``done`` once made."""
    cases = Cases(jobs)
    chosen = cases.chosen()
    lock = threading.Lock()

    def said(line: str) -> None:
        with lock:
            print(line, flush=True)

    def changes() -> None:
        for line in sys.stdin:
            chosen[line.strip()][0]()
            said("done")
        os._exit(0)

    threading.Thread(target=changes, daemon=True).start()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_serve(cases.metrics, Path(folder), said))
    return 0


def over_http(jobs: int, count: int, seconds: float) -> None:
    """The cases (the first aside: it is the daemon's start) over HTTP, from this process
    to a ``--serve`` child."""
    child = subprocess.Popen([sys.executable, __file__, "--serve", "--jobs", str(jobs)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None
    assert child.stdout is not None
    stdin, stdout = child.stdin, child.stdout
    port = int(stdout.readline().split()[1])

    def asked(name: str) -> Callable[[], None]:
        def prepare() -> None:
            stdin.write(f"{name}\n")
            stdin.flush()
            assert "done" == stdout.readline().strip()
        return prepare

    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            body = client.get("/metrics").raise_for_status().content
            print(f"over HTTP: {size(body)}\n")
            print(header())
            for name in ("100 changed", "all changed", "gauges moved", "nothing changed"):
                times = timed(asked(name), lambda: client.get("/metrics").raise_for_status(),
                              count, seconds)
                print(row(f"GET /metrics, {name}", times), flush=True)
    finally:
        stdin.close()
        child.wait(timeout=60)


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


def size(text: bytes) -> str:
    return f"{text.count(NEWLINE):,} lines, {len(text) / 1e6:.1f} MB"


def header() -> str:
    return f"{'case':<30} {'scrapes':>7} {'p50 ms':>8} {'p99 ms':>8}"


def row(name: str, times: list[float]) -> str:
    p50, p99 = quantiles(times)
    verdict = "met" if p99 < TARGET_MS else "NOT met"
    return (f"{name:<30} {len(times):>7} {p50:>8.1f} {p99:>8.1f}  p99 < {TARGET_MS:.0f} ms: "
            f"{verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--count", type=int, default=50, help="scrapes per case, at most")
    parser.add_argument("--seconds", type=float, default=20.0, help="per case, at most")
    parser.add_argument("--profile", choices=["first", "some", "all", "gauges"],
                        help="print cProfile's top functions of one scrape of this case")
    parser.add_argument("--http", action="store_true",
                        help="over HTTP, from a child process serving the metrics")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.jobs)
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} at the start; {args.jobs:,} jobs")
    if args.http:
        over_http(args.jobs, args.count, args.seconds)
    else:
        in_process(Cases(args.jobs), args.count, args.seconds, args.profile)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


def in_process(cases: Cases, count: int, seconds: float, profile: str | None) -> None:
    chosen = cases.chosen()
    if profile is not None:
        name = {"first": "first", "some": "100 changed", "all": "all changed",
                "gauges": "gauges moved"}[profile]
        prepare, scrape = chosen[name]
        prepare()
        profiler = cProfile.Profile()
        profiler.runcall(scrape)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return
    text = cases.metrics.render()
    print(f"in-process: {size(text)}\n")
    print(header())
    for name, (prepare, scrape) in chosen.items():
        print(row(name, timed(prepare, scrape, count, seconds)), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
