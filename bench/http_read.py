"""HTTP reads at scale: the read API, the dashboard and ``/metrics`` with 10,000 jobs and a
history of 1,000,000 runs, against the cost of the same reads in-process.

A SQLite store is built with cronduit's own schema (its migrations) and filled in bulk with
1,000,000 ended runs spread over the jobs, outcomes, triggers and two months (each with its
trigger and, for a timed one, its slot in the ledger); then a real ``cronduit serve`` runs
on it (listening on 127.0.0.1:0). Each case is asked in turn over one keep-alive client,
p50 and p99 of 200 requests (or what 20 s allow), beside the same read done in-process
with no HTTP: the store call the route makes in its reading transaction, timed alike. The
ratio is what HTTP, validation and JSON add.

``/v1/jobs`` is paged in config order: its first page, a page 90% of the names in, and a page of
one job with no divergence (``?limit=1`` after the second last name: the talker, which has
not run yet), where ``healthy`` must weigh every job through the batched reads: the dearest
page. The dashboard's home page is asked without a filter and with ``state=failing`` and
``state=diverged``, each beside its read in-process (the filter, the page's statuses and
strips; not the render).

``/metrics`` is asked once the daemon has run one webhook of each of a fifth of the jobs
(series of runs exist only for jobs that ran since the daemon started; the gauges are there
for every job); beside it, a scrape in-process of 10,000 jobs that have all run, with runs
ending between scrapes.

Webhook throughput (``bench/webhooks.py``'s closed loop, 32 connections) is measured on the
same daemon twice: alone, and while a client keeps the dashboard's home page open (asking it
every second) and follows a run's log with ``?follow=1``.

Targets: every page and API answer p99 < 100 ms; ``/metrics`` p99 < 250 ms; webhook
throughput unchanged (>= 0.9x) with the dashboard open.

    .venv/bin/python bench/http_read.py            # 10,000 jobs, 1,000,000 runs
    .venv/bin/python bench/http_read.py --quick    # 1,000 jobs, 50,000 runs
    .venv/bin/python bench/http_read.py --reads-only   # no webhook loads, no in-process scrape
    .venv/bin/python bench/http_read.py --home   # the dashboard home page's three cases only
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import statistics
import sys
import threading
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from _daemon import cpu_seconds, daemon
from cronduit.core.config import load_config
from cronduit.core.config.model import Config
from cronduit.core.enums import Outcome
from cronduit.core.signing import webhook_token
from cronduit.core.status import daemon_state, timers_expected
from cronduit.intake import job_statuses, reports, run_record
from cronduit.ports import RunFilter, Transaction
from cronduit.store.sql.transaction import to_text
from cronduit.store.sqlite import SqliteStore
from metrics_scrape import filled
from webhooks import SECRET, load, scratch, stop_runs

NOW = datetime.now(UTC).replace(microsecond=0)
HISTORY = timedelta(days=60)
"""How far back the runs go."""
REQUESTS = 200
CASE_SECONDS = 20.0
"""A case stops at this many seconds even short of :data:`REQUESTS` (a slow one)."""
TALKER = "talker"
"""A job that writes a line every tenth of a second for a minute: the log followed."""
OUTCOMES = [("success", 0.85), ("failure", 0.1), ("timeout", 0.03), ("cancelled", 0.02)]
KINDS = [("timer", 0.7), ("webhook", 0.2), ("manual", 0.07), ("github", 0.03)]


@dataclass(frozen=True)
class Sizes:
    jobs: int
    runs: int
    seeded: int
    """Jobs given one webhook each before ``/metrics`` is asked."""


def job_name(index: int) -> str:
    return f"job{index:05d}"


def is_webhook(index: int) -> bool:
    return index % 5 == 0


def write_config(folder: Path, jobs: int) -> Path:
    """``jobs`` jobs: four in five daily at a time of their own (a handful fire during the
    bench), one in five a webhook job; two webhook jobs for the throughput loads (their
    first run lasts the whole load, so the loads measure acceptance), and the talker."""
    (folder / "secrets.env").write_text(f"HOOK_KEY={SECRET}\n")
    lines = ["settings:", "  state: state", "  listen: 127.0.0.1:0",
             "  secrets_file: secrets.env", "  webhook_secret: HOOK_KEY", "jobs:"]
    for index in range(jobs):
        if is_webhook(index):
            lines.append(f"  {job_name(index)}: {{run: 'true', webhook: true}}")
        else:
            lines.append(f"  {job_name(index)}: {{run: 'true', "
                         f"cron: '{index % 60} {index // 60 % 24} * * *'}}")
    lines += ["  hook-alone: {run: 'sleep 60', webhook: true}",
              "  hook-dash: {run: 'sleep 60', webhook: true}",
              f"  {TALKER}: {{run: 'for i in $(seq 600); do echo line $i; sleep 0.1; done', "
              "webhook: true}"]
    path = folder / "cronduit.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def pick(rng: random.Random, weighted: list[tuple[str, float]]) -> str:
    return rng.choices([name for name, _ in weighted], [w for _, w in weighted])[0]


def build_store(path: Path, jobs: int, runs: int, rng: random.Random) -> float:
    """The store with ``runs`` ended runs spread over the jobs and :data:`HISTORY`, oldest
    first, each with the trigger it consumed and a timed one's slot; seconds it took."""
    began = time.perf_counter()
    SqliteStore(path).close()  # cronduit's schema, through its migrations
    start = NOW - HISTORY
    step = HISTORY / runs
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA synchronous = OFF")
        db.execute("BEGIN")
        batch: tuple[list[tuple[object, ...]], list[tuple[object, ...]],
                     list[tuple[object, ...]]] = ([], [], [])
        for seq in range(1, runs + 1):
            _one_run(seq, start + step * seq, rng.randrange(jobs), rng, batch)
            if seq % 50_000 == 0 or seq == runs:
                _flush(db, batch)
        db.execute("COMMIT")
        db.execute("ANALYZE")
    return time.perf_counter() - began


def _one_run(seq: int, created: datetime, index: int, rng: random.Random,
             batch: tuple[list[tuple[object, ...]], list[tuple[object, ...]],
                          list[tuple[object, ...]]]) -> None:
    events, runs, slots = batch
    job = job_name(index)
    kind = "webhook" if is_webhook(index) else pick(rng, KINDS)
    kind = "timer" if kind == "webhook" and not is_webhook(index) else kind
    outcome = pick(rng, OUTCOMES)
    run_id = f"{int(created.timestamp() * 1000):011x}{seq:09x}"
    took = timedelta(seconds=rng.expovariate(1 / 30))
    at, ended = to_text(created), to_text(created + took)
    slot = to_text(created.replace(second=0)) if kind == "timer" else None
    delivery = f"{kind}/{job}/{slot}" if slot is not None else f"{kind}/{job}/{seq}"
    events.append((seq, delivery, job, kind, kind, slot, at, run_id))
    runs.append((seq, run_id, job, seq, kind, kind, outcome,
                 "" if outcome == "success" else f"{outcome}: exit status 1", at, at, ended,
                 1, 0 if outcome == "success" else 1))
    if slot is not None:
        slots.append((job, slot, slot[:16], seq, at))


def _flush(db: sqlite3.Connection, batch: tuple[list[tuple[object, ...]], ...]) -> None:
    events, runs, slots = batch
    db.executemany(
        "INSERT INTO events (seq, delivery_id, job, kind, label, slot, accepted_at, state,"
        " run_id) VALUES (?, ?, ?, ?, ?, ?, ?, 'consumed', ?)", events)
    db.executemany(
        "INSERT INTO runs (seq, id, job, trigger_seq, kind, label, state, outcome, reason,"
        " created_at, started_at, finished_at, attempts, exit_status, files_pruned, node)"
        " VALUES (?, ?, ?, ?, ?, ?, 'ended', ?, ?, ?, ?, ?, ?, ?, 1, 'local')", runs)
    db.executemany(
        "INSERT OR IGNORE INTO slots (job, slot, name, fate, reason, event_seq, recorded_at)"
        " VALUES (?, ?, ?, 'ran', '', ?, ?)", slots)
    for rows in batch:
        rows.clear()


def quantiles(times: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    ordered = sorted(times)
    return (statistics.median(ordered) * 1000,
            ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000)


def timed(work: Callable[[], object], count: int = REQUESTS,
          seconds: float = CASE_SECONDS) -> list[float]:
    """Seconds each of ``count`` calls took (fewer if ``seconds`` run out), after one."""
    work()
    times: list[float] = []
    end = time.perf_counter() + seconds
    while len(times) < count and time.perf_counter() < end:
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return times


@dataclass(frozen=True)
class Case:
    name: str
    path: str
    direct: Callable[[Transaction], object] | None
    """The same read in-process, in a reading transaction; None: none to compare with."""
    target_ms: float = 100.0


def cases(config: Config, known: dict[str, str]) -> list[Case]:
    """Every read, with the store call its route makes."""
    job, timed_job, run_id, deep = known["job"], known["timed"], known["run"], known["deep"]
    expected = timers_expected(daemon_state(True, False))

    def page(where: RunFilter, after: str | None) -> Callable[[Transaction], object]:
        def read(tx: Transaction) -> object:
            found = tx.find_runs(where, after, 20)
            tx.find_runs(where, found[-1].id, 1)
            return [run_record(tx, run) for run in found]
        return read

    def statuses(only: str | None) -> Callable[[Transaction], object]:
        def read(tx: Transaction) -> object:
            now = datetime.now(UTC)
            return [reports.job_facts(status, now) for status
                    in job_statuses(tx, config, now, expected, only=only)]
        return read

    names = list(config.jobs)

    def job_page(after: str | None, limit: int = 100) -> Callable[[Transaction], object]:
        """What ``GET /v1/jobs`` reads: a page of jobs judged whole, and healthy over
        every job (the batched pass only when no job of the page diverges)."""
        start = 0 if after is None else names.index(after) + 1
        shown = names[start:start + limit]

        def read(tx: Transaction) -> object:
            now = datetime.now(UTC)
            facts = [reports.job_facts(status, now) for status in
                     reports.statuses_of(tx, config, shown, now, expected)]
            healthy = not any(job["divergences"] for job in facts) and not (
                reports.diverging_jobs(tx, config, names, now, expected))
            return facts, healthy
        return read

    def home(state: str) -> Callable[[Transaction], object]:
        """What the dashboard's home page reads (its first page, no name filter)."""
        def read(tx: Transaction) -> object:
            now = datetime.now(UTC)
            chosen = list(config.jobs)
            if state == "failing":
                chosen = reports.failing_jobs(tx, chosen)
            if state == "diverged":
                chosen = reports.diverging_jobs(tx, config, chosen, now, expected)
            marks = tx.run_marks(chosen[:PAGE], views.STRIP)
            return [views.job_row(status, marks.get(status.job.name, []), now)
                    for status in reports.statuses_of(tx, config, chosen[:PAGE], now,
                                                      expected)]
        return read

    def one_run(tx: Transaction) -> object:
        found = tx.get_run(run_id)
        assert found is not None
        return run_record(tx, found)

    def ledger(tx: Transaction) -> object:
        return [reports.slot_facts(reports.slot_view(tx, record))
                for record in tx.slots(timed_job, None, None)]

    from cronduit.http.cursors import (  # noqa: PLC0415 - the API's own cursors
        encode_cursor,
        encode_job_cursor,
    )
    from cronduit.http.dashboard import PAGE, views  # noqa: PLC0415
    nine = names[len(names) * 9 // 10]
    return [
        Case("GET /v1/runs (first page)", "/v1/runs", page(RunFilter(), None)),
        Case("GET /v1/runs?cursor=<500k rows in>", f"/v1/runs?cursor={encode_cursor(deep)}",
             page(RunFilter(), deep)),
        Case("GET /v1/runs?job=J", f"/v1/runs?job={job}", page(RunFilter(job=job), None)),
        Case("GET /v1/jobs (first page)", "/v1/jobs", job_page(None)),
        Case("GET /v1/jobs?cursor=<90% in>",
             f"/v1/jobs?cursor={encode_job_cursor(nine, names.index(nine))}", job_page(nine)),
        Case("GET /v1/jobs?limit=1 (all weighed)",
             f"/v1/jobs?limit=1&cursor={encode_job_cursor(names[-2], len(names) - 2)}",
             job_page(names[-2], 1)),
        Case("GET /v1/jobs/J", f"/v1/jobs/{timed_job}", statuses(timed_job)),
        Case("GET /v1/jobs/J/slots", f"/v1/jobs/{timed_job}/slots", ledger),
        Case("GET /v1/runs/ID", f"/v1/runs/{run_id}", one_run),
        Case("GET / (dashboard home)", "/", home("all")),
        Case("GET /?state=failing", "/?state=failing", home("failing")),
        Case("GET /?state=diverged", "/?state=diverged", home("diverged")),
    ]


def known_ids(db: Path, runs: int) -> dict[str, str]:
    """A job with runs, a timed job, a run from the middle, and the run 500k rows in (half
    the history in --quick)."""
    with closing(sqlite3.connect(db)) as conn:
        def one(query: str, *args: object) -> str:
            return str(conn.execute(query, args).fetchone()[0])
        deep_seq = max(1, runs - min(500_000, runs // 2))
        return {"job": job_name(5), "timed": job_name(1),
                "run": one("SELECT id FROM runs WHERE seq = ?", runs // 2),
                "deep": one("SELECT id FROM runs WHERE seq = ?", deep_seq)}


def ask_case(client: httpx.Client, store: SqliteStore, case: Case) -> str:
    """One row: HTTP p50/p99, the in-process p50/p99, the ratio, and the target."""
    first = client.get(case.path)
    if case.direct is None and first.status_code == 404:
        return f"{case.name:<38} dashboard not built (GET / answers 404): skipped"
    assert first.status_code == 200, (case.path, first.status_code, first.text[:300])
    http = quantiles(timed(lambda: client.get(case.path).raise_for_status()))
    line = f"{case.name:<38} {http[0]:>8.1f} {http[1]:>8.1f}"
    if case.direct is not None:
        direct = case.direct

        def read() -> object:
            with store.reading() as tx:
                return direct(tx)
        alone = quantiles(timed(read))
        line += f" {alone[0]:>8.1f} {alone[1]:>8.1f} {http[0] / alone[0]:>6.1f}"
    else:
        line += f" {'-':>8} {'-':>8} {'-':>6}"
    met = "met" if http[1] < case.target_ms else "NOT met"
    return f"{line}  p99 < {case.target_ms:.0f} ms: {met}"


def seed_runs(client: httpx.Client, jobs: int, seeded: int) -> int:
    """One webhook to each of ``seeded`` webhook jobs; the number sent."""
    sent = 0
    for index in range(0, jobs, 5):
        if sent == seeded:
            break
        name = job_name(index)
        client.post(f"/hooks/{name}/{webhook_token(SECRET, name)}", json={}).raise_for_status()
        sent += 1
    return sent


def wait_ended(db: Path, since: str, count: int, timeout: float = 600.0) -> float:
    """Seconds until ``count`` runs created since ``since`` have ended."""
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        with closing(sqlite3.connect(db)) as conn:
            ended = conn.execute("SELECT COUNT(*) FROM runs WHERE created_at >= ? AND "
                                 "state = 'ended'", (since,)).fetchone()[0]
        if ended >= count:
            return time.perf_counter() - began
        time.sleep(0.5)
    raise TimeoutError(f"{count} runs not ended after {timeout}s")


def metrics_in_process(jobs: int) -> tuple[float, float, float, int]:
    """A scrape in-process of ``jobs`` jobs that all ran (each a success and a failure, its
    durations, slots ran and missed, its gauges), 100 runs ending between two scrapes: the
    first scrape's ms, p50 and p99 of the others, and the lines."""
    rng = random.Random(7)
    names = [job_name(index) for index in range(jobs)]
    metrics = filled(names, rng)  # as bench/metrics_scrape.py fills them
    began = time.perf_counter()
    text = metrics.render()
    first = time.perf_counter() - began

    def scrape() -> None:
        for _ in range(100):
            metrics.run_ended(rng.choice(names), Outcome.SUCCESS, rng.expovariate(1 / 30))
        metrics.render()
    p50, p99 = quantiles(timed(scrape, 50))
    return first * 1000, p50, p99, text.count(b"\n")


class DashboardOpen:
    """A client with the dashboard's home page open (asked every second) and a run's log
    followed (``?follow=1``), on threads of their own, until :meth:`close`."""

    def __init__(self, base: str, run_id: str, home: bool) -> None:
        self._stop = threading.Event()
        self.pages = 0
        self.lines = 0
        self._threads = [threading.Thread(target=self._follow, args=(base, run_id))]
        if home:
            self._threads.append(threading.Thread(target=self._poll, args=(base,)))
        for thread in self._threads:
            thread.start()

    def _poll(self, base: str) -> None:
        with httpx.Client(base_url=base, timeout=30) as client:
            while not self._stop.is_set():
                client.get("/").raise_for_status()
                self.pages += 1
                self._stop.wait(1.0)

    def _follow(self, base: str, run_id: str) -> None:
        with httpx.Client(base_url=base, timeout=30) as client, client.stream(
                "GET", f"/v1/runs/{run_id}/log", params={"follow": "1"}) as answer:
            for line in answer.iter_lines():
                if line.startswith("data:"):
                    self.lines += 1
                if self._stop.is_set():
                    return

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)


def port_of(log: str) -> int:
    found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log)
    assert found is not None
    return int(found.group(1))


def talker_run(client: httpx.Client) -> str:
    """Start the talker; its run's id once it is going."""
    client.post(f"/hooks/{TALKER}/{webhook_token(SECRET, TALKER)}", json={}).raise_for_status()
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:
        runs = client.get("/v1/runs", params={"job": TALKER}).json()["runs"]
        if runs and runs[0]["started_at"] is not None and runs[0]["finished_at"] is None:
            return str(runs[0]["run"])
        time.sleep(0.2)
    raise TimeoutError("the talker did not start")


def webhook_rows(port: int, base: str, home: bool, window: float) -> list[str]:
    """The closed loop alone, then with the dashboard open and a log followed."""
    alone = load("closed", port, [f"/hooks/hook-alone/{webhook_token(SECRET, 'hook-alone')}"],
                 window, 32)
    with httpx.Client(base_url=base, timeout=30) as client:
        talker = talker_run(client)
    watching = DashboardOpen(base, talker, home)
    try:
        dash = load("closed", port, [f"/hooks/hook-dash/{webhook_token(SECRET, 'hook-dash')}"],
                    window, 32)
    finally:
        watching.close()
    ratio = float(dash["per_s"]) / float(alone["per_s"])  # type: ignore[arg-type]
    opened = (f"home page asked {watching.pages} times" if home
              else "dashboard not built: home page not asked")
    return [
        f"closed loop, 32 connections, alone:              {float(alone['per_s']):>7,.0f}/s"  # type: ignore[arg-type]
        f"  p50 {float(alone['p50_ms']):.1f} ms  p99 {float(alone['p99_ms']):.1f} ms",  # type: ignore[arg-type]
        f"closed loop, 32 connections, dashboard open:     {float(dash['per_s']):>7,.0f}/s"  # type: ignore[arg-type]
        f"  p50 {float(dash['p50_ms']):.1f} ms  p99 {float(dash['p99_ms']):.1f} ms"  # type: ignore[arg-type]
        f"  ({opened}, {watching.lines} log lines followed)",
        f"ratio {ratio:.2f}x: {'unchanged' if ratio >= 0.9 else 'NOT unchanged'} (>= 0.9x)",
    ]


def header() -> str:
    return (f"{'case':<38} {'p50 ms':>8} {'p99 ms':>8} {'sql p50':>8} {'sql p99':>8} "
            f"{'x sql':>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 jobs, 50,000 runs")
    parser.add_argument("--reads-only", action="store_true",
                        help="the read cases and /metrics only: no in-process scrape, no "
                             "webhook loads")
    parser.add_argument("--home", action="store_true",
                        help="the dashboard home page's three cases only (no API case, no "
                             "/metrics, no webhook loads): to measure a change to the page")
    args = parser.parse_args()
    sizes = Sizes(1_000, 50_000, 200) if args.quick else Sizes(10_000, 1_000_000, 2_000)
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} at the start; {sizes.jobs:,} jobs, {sizes.runs:,} runs\n")
    with scratch() as folder:
        config_path = write_config(folder, sizes.jobs)
        db = folder / "state" / "cronduit.db"
        db.parent.mkdir()
        took = build_store(db, sizes.jobs, sizes.runs, random.Random(15))
        print(f"store built in {took:.1f} s ({db.stat().st_size / 1e6:,.0f} MB)")
        config = load_config(config_path.read_text(), str(config_path))
        try:
            run(folder, config_path, config, db, sizes, args.quick, args.reads_only,
                args.home)
        finally:
            stop_runs(folder)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


def is_home(case: Case) -> bool:
    """A case of the dashboard's home page (with a filter or not)."""
    return case.path == "/" or case.path.startswith("/?")


def run(folder: Path, config_path: Path, config: Config, db: Path, sizes: Sizes,
        quick: bool, reads_only: bool, home_only: bool = False) -> None:
    started = time.perf_counter()
    with daemon(config_path) as served:
        served.wait_for("listening on", timeout=600)
        print(f"cronduit serve listening after {time.perf_counter() - started:.1f} s")
        base = f"http://127.0.0.1:{port_of(served.log.read_text())}"
        with httpx.Client(base_url=base, timeout=120) as client, closing(
                SqliteStore(db, migrate=False)) as store:
            since = to_text(datetime.now(UTC))
            assert since is not None
            sent = seed_runs(client, sizes.jobs, sizes.seeded)
            waited = wait_ended(db, since, sent)
            time.sleep(6)  # a reading of the gauges after the last run ended
            print(f"{sent:,} jobs run once by webhook, all ended {waited:.1f} s after\n")
            print(header())
            home = True
            for case in cases(config, known_ids(db, sizes.runs)):
                if home_only and not is_home(case):
                    continue
                row = ask_case(client, store, case)
                home = home and "dashboard not built" not in row
                print(row, flush=True)
            if home_only:
                return
            scrape = quantiles(timed(lambda: client.get("/metrics").raise_for_status()))
            lines = client.get("/metrics").text.count("\n")
            print(f"{'GET /metrics':<38} {scrape[0]:>8.1f} {scrape[1]:>8.1f} "
                  f"{'-':>8} {'-':>8} {'-':>6}  p99 < 250 ms: "
                  f"{'met' if scrape[1] < 250 else 'NOT met'} ({lines:,} lines)")
        if reads_only:
            return
        first, p50, p99, lines = metrics_in_process(sizes.jobs)
        print(f"in-process scrape, {sizes.jobs:,} jobs all run ({lines:,} lines), 100 runs "
              f"ended between scrapes: first {first:,.0f} ms, then p50 {p50:.1f} ms, "
              f"p99 {p99:.1f} ms")
        before = cpu_seconds(served.process)
        print("\nwebhooks (bench/webhooks.py's closed loop) on this daemon:")
        port = port_of(served.log.read_text())
        for line in webhook_rows(port, base, home, 5.0 if quick else 10.0):
            print(line, flush=True)
        after = cpu_seconds(served.process)
        print(f"daemon CPU during the webhook loads: {sum(after) - sum(before):.1f} s")


if __name__ == "__main__":
    raise SystemExit(main())
