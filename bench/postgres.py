"""PostgreSQL scale-out: durable firings, webhooks and failover, 1 daemon against 3; with peers.

Five parts, one run, each in schemas of its own (``benchpg_<random>``, dropped after), each
printing cronduit's figures next to the limit or the peer and the targets (issue 13):

1. The machine's limit: the rows a firing writes (its timer advanced under its version
   guard, its event inserted, its slot-ledger row) for 10,000 due timers, written with plain
   ``executemany`` on one psycopg connection (pipelined), batches of 500, a commit each, into
   cronduit's own schema (same indexes). Firings/s, best of three.
2. APScheduler 3.11 with ``SQLAlchemyJobStore`` on the same server (``BackgroundScheduler``,
   its defaults): interval no-op jobs due every second, 1,000 and 2,000 of them; executions/s
   of the slots due in the window.
3. cronduit's durable firings/s. *The firing path*: 10,000 due timers fired by the engine's
   timer path (``engine.firing.fire_timers``: per batch of 500, one transaction that claims
   due timers ``FOR UPDATE SKIP LOCKED``, accepts each trigger, writes its ledger row and
   re-arms its timer), as ``bench/engine.py`` measures it, in one process and in 3 processes
   at once on one schema. *Daemons*: 1 and 3 real ``cronduit serve`` processes on one
   schema (distinct ``settings.node`` names and ports) with 10,000 jobs ``every: 1m``: the
   measured slot is the second one, when all 10,000 timers fall due at once. Nothing is
   launched for it, so the figure is firing (and routing), not process starts: each job's
   first run (``/bin/false``, at the arming slot) failed into a one-hour retry backoff,
   which the measured slot's triggers join. Firings are counted from the store: seconds
   from the first ledger row's firing to the moment no measured timer is left due. Slots
   doubled (more than one event for a job's slot; the ledger's key forbids a second row) and
   lost (slots due in the case's window with no ledger row) are checked.
4. Webhook ``202``/s and p99 with 1 daemon and with 3 (the load spread over the 3), from the
   load generator of ``bench/webhooks.py`` (``_load.py``, its own process), against the
   server's rate of one-row commits on one connection. The job's first run lasts the
   window, so the other webhooks wait in its queue (acceptance and routing). A case in which
   a daemon exits prints its error instead of figures.
5. Failover: 3 daemons, ``settings.lease: 6s``, jobs due every second whose runs last 30 s;
   SIGKILL a daemon that owns a run going, and time kill -> the run's own process gone (its
   supervisor ends it before the lease could run out), kill -> the run recorded ``failure``
   (node lost), and kill -> its retry's process started on another daemon; 10 kills, the
   killed daemon restarted between them. Target: within lease + 10 s every time. Then the
   ledger over the part: every second's slot of every job has a row, none fired twice (a
   gap is printed with how late the slot before it fired and what the daemons logged).

Parts 3 (daemons), 4 and 5 need a cronduit that serves a ``postgresql://`` state with many
daemons: where ``cronduit check`` refuses such a config, or (for more than one daemon) the
state keeps no node leases, the part prints why instead of a figure. Parts run one after
another, never at once (the machine has 2 cores).

Run:  python bench/postgres.py [--quick] [--part N]   (needs: pip install -e '.[bench]' and
      a PostgreSQL server: 127.0.0.1:5432, database test, or CRONDUIT_BENCH_POSTGRES)
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).parent))

from _cluster import Cluster, Node, Settings, cluster, unavailable
from _daemon import cpu_seconds
from _postgres import in_schema, leftover_schemas, scratch_schema, server_problem, sqlalchemy_url
from cronduit.core.config import load_config
from cronduit.core.config.model import Config
from cronduit.core.signing import webhook_token
from cronduit.engine import BATCH, Engine, firing
from cronduit.engine.outbox import Outbox
from cronduit.store.postgres import PostgresStore
from cronduit.testing import FakeRunner

HERE = Path(__file__).parent
PEER = HERE / "_apscheduler_peer.py"
LOAD = HERE / "_load.py"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
"""Where the firing path's timers are armed: a fixed instant, as the engine never reads the
clock."""
SECRET = "bench-webhook-secret"


@dataclass(frozen=True)
class Plan:
    """How much of each part to run: the full run, or ``--quick``."""

    timers: int = 10_000
    passes: int = 3
    processes: int = 3
    peer_jobs: tuple[int, ...] = (1_000, 2_000)
    peer_seconds: int = 10
    serve_jobs: int = 10_000
    serve_every: int = 60
    daemons: int = 3
    webhook_seconds: float = 10.0
    webhook_rates: tuple[int, ...] = (500, 1_000, 2_000)
    kills: int = 10
    lease: str = "6s"
    failover_jobs: int = 6
    failover_run: int = 30


FULL = Plan()
QUICK = Plan(timers=5_000, passes=1, peer_jobs=(1_000,), peer_seconds=5, serve_jobs=5_000,
             serve_every=40, webhook_seconds=5.0, webhook_rates=(2_000,), kills=3)


@contextmanager
def scratch() -> Iterator[Path]:
    """A temporary folder for a case's daemons (their configs, logs and runs' files)."""
    with tempfile.TemporaryDirectory(prefix="benchpg-") as folder:
        yield Path(folder)


def wait_until(check: Callable[[], bool], timeout: float, every: float = 0.01) -> bool:
    """Poll ``check`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def ratio(mine: float, theirs: float) -> str:
    return "-" if not theirs or math.isnan(mine) or math.isnan(theirs) else f"{mine / theirs:.2f}"


def verdict(ok: bool) -> str:
    return "met" if ok else "not met"


@dataclass
class Figures:
    """What the parts measured, for the ratios at the end (NaN: not measured)."""

    limit: float = math.nan
    peer: float = math.nan
    path_one: float = math.nan
    path_many: float = math.nan
    serve_one: float = math.nan
    serve_many: float = math.nan
    doubled: int = 0
    lost: int = 0
    checked_slots: int = 0


# -- 1. the limit ----------------------------------------------------------------------------

RAW_TIMER_ROW = ("INSERT INTO timers (job, timing_key, slot, slot_name, due_at)"
                 " VALUES (%s, 'every 1m', %s, %s, %s)")
RAW_EVENT = ("INSERT INTO events (seq, delivery_id, job, kind, label, slot, late, payload,"
             " operator, accepted_at) VALUES (%s, %s, %s, 'timer', 'every 1m', %s, false, '{}',"
             " NULL, %s)")
RAW_SLOT = ("INSERT INTO slots (job, slot, name, fate, reason, event_seq, recorded_at, count,"
            " until_slot) VALUES (%s, %s, %s, 'ran', '', %s, %s, 1, NULL)")
RAW_TIMER = ("UPDATE timers SET slot = %s, slot_name = %s, due_at = %s, last_name = %s,"
             " version = version + 1 WHERE job = %s AND version = 0")


def limit_rate(plan: Plan) -> float:
    """Firings/s of the same rows written plainly: ``executemany`` per table, 500 rows a
    batch, one commit each, on one connection (psycopg pipelines each ``executemany`` into
    one round trip). Event seqs are handed out by the writer, as only a single writer can."""
    best = 0.0
    slot, after = T0, T0 + timedelta(minutes=1)
    name, next_name = "2026-01-01 00:00 UTC", "2026-01-01 00:01 UTC"
    jobs = [f"j{i:05d}" for i in range(plan.timers)]
    events = [(i + 1, f"slot/{job}/2026-01-01T00:00:00Z", job, slot, slot)
              for i, job in enumerate(jobs)]
    slots = [(job, slot, name, i + 1, slot) for i, job in enumerate(jobs)]
    timers = [(after, next_name, after, name, job) for job in jobs]
    for _ in range(plan.passes):
        with scratch_schema() as schema:
            url = in_schema(schema)
            PostgresStore(url).close()  # the schema, by cronduit's migrations
            with psycopg.connect(url) as db:
                with db.cursor() as cursor:
                    cursor.executemany(RAW_TIMER_ROW, [(job, slot, name, slot) for job in jobs])
                db.commit()
                began = time.perf_counter()
                for start in range(0, plan.timers, BATCH):
                    with db.cursor() as cursor:
                        cursor.executemany(RAW_EVENT, events[start:start + BATCH])
                        cursor.executemany(RAW_SLOT, slots[start:start + BATCH])
                        cursor.executemany(RAW_TIMER, timers[start:start + BATCH])
                        if cursor.rowcount != len(timers[start:start + BATCH]):
                            raise AssertionError("a timer's version guard refused its move")
                    db.commit()
                took = time.perf_counter() - began
        best = max(best, plan.timers / took)
    return best


def part_limit(plan: Plan, figures: Figures) -> None:
    print(f"== 1. The limit: a firing's rows, plain executemany, {plan.timers:,} timers, "
          f"batches of {BATCH}; best of {plan.passes} ==\n")
    figures.limit = limit_rate(plan)
    print(f"psycopg executemany, one connection, commit per {BATCH}: "
          f"{figures.limit:,.0f} firings/s\n")


# -- 2. APScheduler --------------------------------------------------------------------------


def apscheduler_rate(jobs: int, seconds: int) -> tuple[int, int]:
    """(slots due in the window, slots that ran) of APScheduler's SQLAlchemy store on this
    server, ``jobs`` no-op jobs every second."""
    with scratch_schema() as schema, scratch() as folder:
        out = folder / "result.json"
        subprocess.run([sys.executable, str(PEER), "--store", "postgresql", "--url",
                        sqlalchemy_url(), "--schema", schema, "--jobs", str(jobs), "--seconds",
                        str(seconds), "--work", "noop", "--result", str(out)],
                       capture_output=True, text=True, check=True, timeout=600)
        result: dict[str, Any] = json.loads(out.read_text())
    return int(result["expected"]), len(result["lateness"])


def part_apscheduler(plan: Plan, figures: Figures) -> None:
    print(f"== 2. APScheduler 3.11, SQLAlchemyJobStore on the same PostgreSQL; no-op interval "
          f"jobs every 1 s, window {plan.peer_seconds} s ==\n")
    header = f"{'jobs':>6} {'slots':>7} {'ran':>7} {'missed':>7} {'executions/s':>12}"
    print(header)
    print("-" * len(header))
    best = 0.0
    for jobs in plan.peer_jobs:
        expected, ran = apscheduler_rate(jobs, plan.peer_seconds)
        rate = ran / plan.peer_seconds
        best = max(best, rate)
        print(f"{jobs:>6,} {expected:>7,} {ran:>7,} {1 - ran / expected:>6.1%} {rate:>12,.0f}")
    figures.peer = best
    print(f"\nAPScheduler's best: {best:,.0f} executions/s\n")


# -- 3. cronduit's firings -------------------------------------------------------------------


def timed_config(count: int, timing: str, state: str = "state") -> Config:
    jobs = "\n".join(f"  j{i:05d}: {{command: [/bin/true], {timing}}}" for i in range(count))
    return load_config(f"settings:\n  state: {state}\njobs:\n{jobs}\n", "bench.yaml")


def _fire_all(url: str, config: Config, barrier: Barrier, results: Any) -> None:
    """One firing process: its own store and engine; after the barrier, fire batches until
    none is left due to it; report (began, ended, fired) on the monotonic clock, which all
    processes of the machine share."""
    store = PostgresStore(url, migrate=False)
    engine = Engine(config, store, FakeRunner())
    with store.transaction() as tx:
        tx.timers()  # the pool's connection opened and warm, as a daemon's is
    barrier.wait()
    began, fired = time.monotonic(), 0
    while True:
        with store.transaction() as tx:
            count = firing.fire_timers(engine.stage, tx, T0, Outbox())
        fired += count
        if count == 0:
            break
    results.put((began, time.monotonic(), fired))
    store.close()


def firing_path_rate(plan: Plan, processes: int) -> float:
    """Firings/s of the firing path in ``processes`` processes at once on one schema, all
    ``plan.timers`` timers due at T0; best of the passes."""
    config = timed_config(plan.timers, "every: 1m")
    context = multiprocessing.get_context("fork")
    best = 0.0
    for _ in range(plan.passes):
        with scratch_schema() as schema:
            url = in_schema(schema)
            store = PostgresStore(url)
            Engine(config, store, FakeRunner()).apply(config, T0)
            store.close()
            barrier, results = context.Barrier(processes), context.Queue()
            workers = [context.Process(target=_fire_all, args=(url, config, barrier, results))
                       for _ in range(processes)]
            for worker in workers:
                worker.start()
            reports = [results.get(timeout=600) for _ in workers]
            for worker in workers:
                worker.join()
            with psycopg.connect(url) as db:
                rows = db.execute("SELECT COUNT(*) FROM slots").fetchone()
            if sum(fired for _, _, fired in reports) != plan.timers or rows != (plan.timers,):
                raise AssertionError(f"fired {reports}, ledger {rows}: not each timer once")
            took = max(end for _, end, _ in reports) - min(began for began, _, _ in reports)
        best = max(best, plan.timers / took)
    return best


SERVE_JOB = ("j{index:05d}: {{command: [/bin/false], every: {every}s, timeout: 3h, "
             "retry: {{attempts: 2, backoff: 1h, max_backoff: 1h}}}}")


@dataclass(frozen=True)
class Served:
    """One case of daemons firing a slot due for every job at once."""

    daemons: int
    jobs: int
    rate: float
    first_late: float
    ready: bool
    """Every job's first run was in its backoff before the measured slot (nothing was
    launching while it fired)."""
    doubled: int
    lost: int
    slots: int
    runs: int


def serve_jobs(plan: Plan) -> list[str]:
    return [SERVE_JOB.format(index=index, every=plan.serve_every)
            for index in range(plan.serve_jobs)]


def serve_case(plan: Plan, daemons: int, first_port: int) -> Served | str:
    """``daemons`` daemons on one schema and ``plan.serve_jobs`` jobs; or why not."""
    jobs = serve_jobs(plan)
    with scratch_schema() as schema, scratch() as folder:
        settings = Settings(in_schema(schema))
        why = unavailable(folder, settings, jobs[:1], daemons)
        if why is not None:
            return why
        with cluster(folder, settings, jobs, daemons, first_port), \
                psycopg.connect(settings.state, autocommit=True) as db:
            return _measure_slot(db, plan, daemons)


def _count(db: psycopg.Connection[Any], query: str, *values: object) -> int:
    row = db.execute(query.encode(), values).fetchone()
    return 0 if row is None else int(row[0])


def _measure_slot(db: psycopg.Connection[Any], plan: Plan, daemons: int) -> Served:
    jobs = plan.serve_jobs
    budget = plan.serve_every + 60.0
    if not wait_until(lambda: _count(db, "SELECT COUNT(*) FROM slots") >= jobs, budget, 0.2):
        raise TimeoutError("the arming slot did not fire for every job")
    first_slot = db.execute("SELECT MIN(slot) FROM slots").fetchone()[0]  # type: ignore[index]
    due = db.execute("SELECT MIN(due_at) FROM timers").fetchone()[0]  # type: ignore[index]
    ready = wait_until(lambda: _count(db, "SELECT COUNT(*) FROM runs WHERE state = 'backoff'")
                       >= jobs, max(0.0, due.timestamp() - time.time() - 1), 0.2)
    time.sleep(max(0.0, due.timestamp() - time.time() - 0.2))
    if not wait_until(lambda: not _count(db, "SELECT COUNT(*) FROM (SELECT 1 FROM timers WHERE"
                                            " due_at <= %s LIMIT 1) AS due", due), 300.0):
        raise TimeoutError("the measured slot did not fire for every job")
    ended = time.time()
    first = db.execute("SELECT MIN(recorded_at) FROM slots WHERE slot = %s", (due,)).fetchone()
    started = first[0].timestamp()  # type: ignore[index]
    fired = _count(db, "SELECT COUNT(*) FROM slots WHERE slot = %s AND fate = 'ran'", due)
    doubled = _count(db, "SELECT COUNT(*) FROM (SELECT job, slot FROM events WHERE kind ="
                         " 'timer' GROUP BY job, slot HAVING COUNT(*) > 1) AS twice")
    window = _count(db, "SELECT COUNT(DISTINCT slot) FROM slots WHERE slot <= %s", due)
    recorded = _count(db, "SELECT COUNT(*) FROM slots WHERE slot >= %s AND slot <= %s",
                      first_slot, due)
    return Served(daemons, jobs, fired / (ended - started), started - due.timestamp(), ready,
                  doubled, jobs * window - recorded, recorded,
                  _count(db, "SELECT COUNT(*) FROM runs"))


def part_firings(plan: Plan, figures: Figures) -> None:
    print(f"== 3. cronduit's durable firings on PostgreSQL: {plan.timers:,} timers due at once "
          f"==\n")
    figures.path_one = firing_path_rate(plan, 1)
    figures.path_many = firing_path_rate(plan, plan.processes)
    rows: list[tuple[str, float]] = [
        ("limit: psycopg executemany (part 1)", figures.limit),
        ("cronduit firing.fire_timers, 1 process", figures.path_one),
        (f"cronduit firing.fire_timers, {plan.processes} processes", figures.path_many),
    ]
    cases: list[Served | str] = [serve_case(plan, 1, 18500),
                                 serve_case(plan, plan.daemons, 18510)]
    for case, count in zip(cases, (1, plan.daemons), strict=True):
        plural = "s" if count > 1 else ""
        label = f"cronduit serve, {count} daemon{plural}, {plan.serve_jobs:,} jobs"
        rows.append((label, case.rate if isinstance(case, Served) else math.nan))
    rows.append(("APScheduler 3.11 SQLAlchemy/PostgreSQL (part 2)", figures.peer))
    header = f"{'path':52} {'firings/s':>10} {'x limit':>8} {'x APS':>6}"
    print(header)
    print("-" * len(header))
    for label, rate in rows:
        shown = "n/a" if math.isnan(rate) else f"{rate:,.0f}"
        print(f"{label:52} {shown:>10} {ratio(rate, figures.limit):>8} "
              f"{ratio(rate, figures.peer):>6}")
    print()
    for case, count in zip(cases, (1, plan.daemons), strict=True):
        if isinstance(case, str):
            print(f"cronduit serve, {count} daemon(s): not available: {case}")
            continue
        figures.doubled += case.doubled
        figures.lost += case.lost
        figures.checked_slots += case.slots
        print(f"cronduit serve, {count} daemon(s): first firing {case.first_late * 1000:,.0f} ms "
              f"after the slot; {case.slots:,} ledger rows over the case, {case.doubled} slots "
              f"doubled, {case.lost} lost; {case.runs:,} runs (the first slot's); nothing "
              f"launching while it fired: {'yes' if case.ready else 'no'}")
    one, many = cases
    figures.serve_one = one.rate if isinstance(one, Served) else math.nan
    figures.serve_many = many.rate if isinstance(many, Served) else math.nan
    print()


# -- 4. webhooks -----------------------------------------------------------------------------


def raw_commit_rate(seconds: float) -> float:
    """Commits/s of one event row each on one connection, into cronduit's schema."""
    with scratch_schema() as schema:
        url = in_schema(schema)
        PostgresStore(url).close()
        with psycopg.connect(url) as db:
            count, end = 0, time.perf_counter() + seconds
            began = time.perf_counter()
            while time.perf_counter() < end:
                db.execute("INSERT INTO events (delivery_id, job, kind, label, accepted_at)"
                           " VALUES (%s, 'poke', 'webhook', 'webhook', now())", (f"raw/{count}",))
                db.commit()
                count += 1
            return count / (time.perf_counter() - began)


def load(mode: str, ports: list[int], path: str, seconds: float, amount: float
         ) -> dict[str, Any] | None:
    """The load generator in its own process, its requests spread over ``ports``; None when
    it failed (a server closed a connection with a request unanswered)."""
    argv = [sys.executable, str(LOAD), mode, "127.0.0.1", ",".join(map(str, ports)), path,
            str(seconds), str(round(amount) if mode == "closed" else amount)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        return None
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def webhook_case(daemons: int, mode: str, amount: float, seconds: float,
                 first_port: int) -> dict[str, Any] | str:
    """One load against ``daemons`` daemons on a fresh schema; or why it cannot run."""
    jobs = ["hook00: {run: 'sleep 60', webhook: true}"]
    with scratch_schema() as schema, scratch() as folder:
        (folder / "secrets.env").write_text(f"HOOK_KEY={SECRET}\n")
        settings = Settings(in_schema(schema), extra=(f"secrets_file: {folder / 'secrets.env'}",
                                                      "webhook_secret: HOOK_KEY"))
        why = unavailable(folder, settings, jobs, daemons)
        if why is not None:
            return why
        with cluster(folder, settings, jobs, daemons, first_port) as nodes, \
                psycopg.connect(settings.state, autocommit=True) as db:
            path = f"/hooks/hook00/{webhook_token(SECRET, 'hook00')}"
            before = [cpu_seconds(node.served.process) for node in nodes.nodes if node.served]
            result = load(mode, [nodes.log_port(node) for node in nodes.nodes], path, seconds,
                          amount)
            time.sleep(0.5)
            exited = nodes.exited()
            if result is None and not exited:  # a daemon that dropped a connection dying
                wait_until(lambda: bool(nodes.exited()), 5.0, 0.1)
                exited = nodes.exited()
            if result is None or exited:
                accepted = _count(db, "SELECT COUNT(*) FROM events WHERE kind = 'webhook'")
                return (f"failed ({accepted:,} webhooks accepted): "
                        + ("; ".join(exited) or "a daemon closed a connection unanswered"))
            after = [cpu_seconds(node.served.process) for node in nodes.nodes if node.served]
            result["cpu_s"] = sum(sum(a) - sum(b) for a, b in zip(after, before, strict=True))
            result["events"] = _count(db, "SELECT COUNT(*) FROM events WHERE kind = 'webhook'")
        return result


def _webhook_row(label: str, result: dict[str, Any] | str, raw: float) -> str:
    if isinstance(result, str):
        said = result if result.startswith("failed") else f"not available: {result}"
        return f"{label:<44} {said}"
    statuses: dict[str, int] = result["statuses"]
    accepted = int(statuses.get("202", 0))
    other = sum(int(count) for code, count in statuses.items() if code != "202")
    per_s = float(result["per_s"])
    return (f"{label:<44} {per_s:>7,.0f} {per_s / raw:>6.2f} {accepted:>8,} {other:>6,} "
            f"{result['events']:>8,} {float(result['p50_ms']):>7.1f} "
            f"{float(result['p99_ms']):>7.1f} {float(result['max_ms']):>7.1f} "
            f"{float(result['cpu_s']):>6.1f}")


def part_webhooks(plan: Plan, figures: Figures) -> None:
    del figures
    print(f"== 4. Webhooks: 202/s and latency, 1 daemon and {plan.daemons}; window "
          f"{plan.webhook_seconds:.0f} s ==\n")
    raw = raw_commit_rate(2.0)
    print(f"raw PostgreSQL, one event row per commit on one connection: {raw:,.0f} commits/s\n")
    cases: list[tuple[str, str, float]] = [("closed loop, 32 connections", "closed", 32)]
    cases += [(f"open loop, offered {rate:,}/s", "open", rate) for rate in plan.webhook_rates]
    header = (f"{'case':<44} {'202/s':>7} {'x raw':>6} {'202s':>8} {'other':>6} {'events':>8} "
              f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'CPU s':>6}")
    print(header)
    print("-" * len(header))
    port = 18600
    for name, mode, amount in cases:
        for daemons in (1, plan.daemons):
            result = webhook_case(daemons, mode, amount, plan.webhook_seconds, port)
            port += 10
            label = f"{name}, {daemons} daemon{'s' if daemons > 1 else ''}"
            print(_webhook_row(label, result, raw), flush=True)
    print("\n(p99 of an open loop is timed from when each request was due; CPU is the daemons' "
          "with their children)\n")


# -- 5. failover -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Trial:
    """One kill: seconds from it to the killed node's run recorded lost (polled every 20 ms)
    and to the retry's process start (its kernel start time; NaN: not within the trial's
    time), the node the retry went on, and the latest firing of a slot due from the kill
    to the retry."""

    node: str
    run_id: str
    lost: float
    retried: float
    retry_node: str | None
    slot_late: float
    ended: float
    """Seconds from the kill until the lost run's own process was gone (its supervisor
    ends it before the node's lease runs out; NaN: still there when the trial ended)."""


def failover_jobs(plan: Plan) -> list[str]:
    """Jobs due every second whose runs outlast the lease and the bound: at any instant
    each has a run going on some node, and the triggers that arrive meanwhile queue."""
    return [f"f{index}: {{run: 'sleep {plan.failover_run}', every: 1s, timeout: 1h, "
            f"retry: {{attempts: 3, backoff: 1s}}}}" for index in range(plan.failover_jobs)]


def lease_seconds(lease: str) -> float:
    from cronduit.core.durations import parse_duration  # noqa: PLC0415

    return float(parse_duration(lease))


def _run_row(db: psycopg.Connection[Any], run_id: str) -> dict[str, Any]:
    cursor = db.execute("SELECT reason, state, attempts, pid, pid_start, node FROM runs"
                        " WHERE id = %s", (run_id,))
    row = cursor.fetchone()
    assert row is not None
    return dict(zip([column.name for column in cursor.description or ()], row, strict=True))


def process_start(ticks: int) -> float:
    """The wall-clock instant a process started, from its kernel start time as the daemon
    records it with the run (``/proc/<pid>/stat`` field 22: clock ticks since boot), placed
    mid-tick: within 5 ms, however late the daemon recorded it."""
    boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return boot + (ticks + 0.5) / os.sysconf("SC_CLK_TCK")


def _owned_run(nodes: Cluster, db: psycopg.Connection[Any]) -> tuple[Node, str] | None:
    """A live daemon and a run going there with its process started, on its first attempt
    (a run retried after an earlier trial is left out), if any."""
    live = {node.name: node for node in nodes.nodes if node.alive}
    for run_id, name in db.execute("SELECT id, node FROM runs WHERE state = 'running' AND pid"
                                   " IS NOT NULL AND attempts = 1 AND node = ANY(%s)"
                                   " ORDER BY seq", (list(live),)).fetchall():
        return live[name], run_id
    return None


Timeline = list[tuple[float, str]]
"""What the bench did to the daemons, and when (wall clock): kills and restarts."""


def _trial(nodes: Cluster, db: psycopg.Connection[Any], timeout: float,
           timeline: Timeline) -> Trial | str:
    """Kill a daemon that owns a run; time the takeover of that run; restart the daemon."""
    owned = None
    deadline = time.monotonic() + 60
    while owned is None and time.monotonic() < deadline:
        owned = _owned_run(nodes, db)
        time.sleep(0.1)
    if owned is None:
        return "no daemon owned a running run for 60 s"
    victim, run_id = owned
    before = _run_row(db, run_id)
    process = psutil.Process(before["pid"])
    nodes.kill(victim)
    killed, killed_at = time.monotonic(), time.time()
    timeline.append((killed_at, f"killed {victim.name}"))
    lost = retried = ended = math.nan
    retry_node = None
    while time.monotonic() - killed < timeout:
        row = _run_row(db, run_id)
        elapsed = time.monotonic() - killed
        if math.isnan(ended) and not process.is_running():
            ended = elapsed
        if (math.isnan(lost) and str(row["reason"]).startswith("node lost")
                and row["reason"] != before["reason"]):
            lost = elapsed
        if row["attempts"] > before["attempts"] and row["pid"] is not None:
            retried, retry_node = process_start(row["pid_start"]) - killed_at, row["node"]
            break
        time.sleep(0.02)
    window = (datetime.fromtimestamp(killed_at, UTC), datetime.fromtimestamp(time.time(), UTC))
    late = db.execute("SELECT MAX(EXTRACT(EPOCH FROM recorded_at - slot)) FROM slots"
                      " WHERE slot >= %s AND slot < %s", window).fetchone()
    timeline.append((time.time(), f"restarting {victim.name}"))
    up = nodes.restart(victim)
    timeline.append((time.time(), f"{victim.name} listening, {up:.2f} s after its start"))
    return Trial(victim.name, run_id, lost, retried, retry_node,
                 math.nan if late is None or late[0] is None else float(late[0]), ended)


def _missed(db: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    """The ledger's missed slots by reason (an interval timer a second or more behind runs
    once and records the slots it passed over as missed)."""
    rows = db.execute("SELECT reason, SUM(count) FROM slots WHERE fate = 'missed'"
                      " GROUP BY reason ORDER BY reason").fetchall()
    return [(str(reason), int(count)) for reason, count in rows]


def _ledger_check(db: psycopg.Connection[Any]) -> tuple[int, int, int, list[Gap]]:
    """(slots due over the part, of them with no ledger row, of them fired twice, the gaps):
    each job's every-second slots from its first to its last recorded."""
    rows = db.execute("SELECT job, slot, count, until_slot, recorded_at FROM slots"
                      " ORDER BY job, slot").fetchall()
    due = lost = 0
    gaps: list[Gap] = []
    previous: dict[str, tuple[datetime, datetime]] = {}
    for job, slot, count, until, recorded in rows:
        last = until or slot
        if job in previous:
            before, fired = previous[job]
            missing = round((slot - before).total_seconds()) - 1
            if missing > 0:
                gaps.append(Gap(job, before, slot, fired, recorded))
                lost += missing
            due += missing + count
        else:
            due += count
        previous[job] = (last, recorded)
    doubled = _count(db, "SELECT COUNT(*) FROM (SELECT job, slot FROM events WHERE kind ="
                         " 'timer' GROUP BY job, slot HAVING COUNT(*) > 1) AS twice")
    return due, lost, doubled, gaps


@dataclass(frozen=True)
class Gap:
    """Slots of a job with no ledger row: between two that have one, and when those fired."""

    job: str
    before: datetime
    after: datetime
    before_fired: datetime
    after_fired: datetime

    def __str__(self) -> str:
        missing = round((self.after - self.before).total_seconds()) - 1
        late = (self.before_fired - self.before).total_seconds()
        return (f"{self.job}: {missing} slot{'s' if missing > 1 else ''} after "
                f"{self.before:%H:%M:%S} with no row; that slot fired {late:.2f} s late, at "
                f"{self.before_fired:%H:%M:%S.%f}, the next ({self.after:%H:%M:%S}) at "
                f"{self.after_fired:%H:%M:%S.%f}")


def _nearest(timeline: Timeline, instant: datetime) -> str:
    """What the bench did last before ``instant``, and how long before."""
    at = instant.timestamp()
    done = [(when, what) for when, what in timeline if when <= at + 0.5]
    if not done:
        return "nothing yet"
    when, what = done[-1]
    return f"{what} {at - when:.2f} s before that slot"


def _log_lines_near(nodes: Cluster, instant: datetime, seconds: float = 3.0) -> list[str]:
    """The daemons' log lines within ``seconds`` of ``instant`` other than triggers and runs
    (outages, leases, sweeps, restarts), each prefixed with its node."""
    found = []
    for node in nodes.nodes:
        for line in (node.folder / "log").read_text().splitlines():
            stamp, _, text = line.partition(" ")
            if text.startswith(("trigger ", "run ")):
                continue
            with suppress(ValueError):
                at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
                if abs((at - instant).total_seconds()) <= seconds:
                    found.append(f"{node.name}: {line}")
    return found


def part_failover(plan: Plan, figures: Figures) -> None:
    lease = lease_seconds(plan.lease)
    bound = lease + 10
    print(f"== 5. Failover: {plan.daemons} daemons, lease {plan.lease}, {plan.failover_jobs} jobs "
          f"every 1 s running {plan.failover_run} s (retry: 3 attempts, backoff 1 s); SIGKILL "
          f"a daemon owning a run, {plan.kills} times ==\n")
    jobs = failover_jobs(plan)
    with scratch_schema() as schema, scratch() as folder:
        settings = Settings(in_schema(schema), lease=plan.lease)
        why = unavailable(folder, settings, jobs, plan.daemons)
        if why is not None:
            print(f"not available: {why}\n")
            return
        trials: list[Trial] = []
        timeline: Timeline = [(time.time(), "starting the daemons")]
        with cluster(folder, settings, jobs, plan.daemons, 18800) as nodes, \
                psycopg.connect(settings.state, autocommit=True) as db:
            timeline.append((time.time(), "every daemon listening"))
            for number in range(plan.kills):
                trial = _trial(nodes, db, bound + 20, timeline)
                if isinstance(trial, str):
                    print(f"trial {number + 1}: {trial}")
                    continue
                trials.append(trial)
                print(f"trial {number + 1:>2}: killed {trial.node} owning run {trial.run_id}: "
                      f"node lost recorded after {trial.lost:.2f} s, retry started on "
                      f"{trial.retry_node} after {trial.retried:.2f} s; the lost run's process "
                      f"gone after {trial.ended:.2f} s; slots due until then fired at most "
                      f"{trial.slot_late * 1000:,.0f} ms late", flush=True)
            due, lost, doubled, gaps = _ledger_check(db)
            figures.checked_slots += due
            figures.lost += lost
            figures.doubled += doubled
            print(f"\nledger over the part: {due:,} slots due, {lost} with no ledger row, "
                  f"{doubled} fired twice")
            for reason, count in _missed(db):
                print(f"  missed, with a row saying why: {count:,} x {reason}")
            shown: set[datetime] = set()
            for gap in gaps:
                print(f"  {gap}")
                if gap.before_fired in shown:
                    continue  # the other jobs of one stall: the same context
                shown.add(gap.before_fired)
                print(f"    bench: {_nearest(timeline, gap.before)}")
                for line in _log_lines_near(nodes, gap.before_fired)[:8]:
                    print(f"    {line}")
        report_failover(trials, bound, plan.kills)


def report_failover(trials: list[Trial], bound: float, kills: int) -> None:
    if not trials:
        print("no trial measured\n")
        return
    for name, values in (("kill -> the lost run's process gone", [t.ended for t in trials]),
                         ("kill -> node lost recorded", [t.lost for t in trials]),
                         ("kill -> retry started elsewhere", [t.retried for t in trials])):
        known = [v for v in values if not math.isnan(v)]
        shown = (f"median {statistics.median(known):.2f} s, max {max(known):.2f} s"
                 if known else "never")
        print(f"{name}: {shown} over {len(known)} of {kills} kills")
    apart = sum(t.ended < t.retried for t in trials)
    print(f"the lost run's process was gone before its retry started: {apart} of "
          f"{len(trials)} trials")
    print(f"slots due in the trials fired at most {max(t.slot_late for t in trials) * 1000:,.0f}"
          " ms late (every daemon fires; none waits for the lost one)")
    worst = max(t.retried for t in trials)
    ok = len(trials) == kills and not any(math.isnan(t.retried) or t.retried > bound
                                          for t in trials)
    print(f"target: takeover <= lease + 10 s = {bound:.0f} s in every trial: max "
          f"{worst:.2f} s, {verdict(ok)}\n")


# -- the ratios ------------------------------------------------------------------------------


def report_ratios(plan: Plan, figures: Figures) -> None:
    print("== Ratios ==\n")
    path = figures.path_one / figures.limit
    print(f"cronduit firing path / limit: {ratio(figures.path_one, figures.limit)} "
          f"(1 process), {ratio(figures.path_many, figures.limit)} ({plan.processes} processes)")
    print(f"cronduit serve / limit: {ratio(figures.serve_one, figures.limit)} (1 daemon), "
          f"{ratio(figures.serve_many, figures.limit)} ({plan.daemons} daemons)")
    print(f"{plan.daemons} / 1: firing path {ratio(figures.path_many, figures.path_one)}, "
          f"daemons {ratio(figures.serve_many, figures.serve_one)}")
    print(f"cronduit / APScheduler: firing path {ratio(figures.path_one, figures.peer)}, "
          f"1 daemon {ratio(figures.serve_one, figures.peer)}, {plan.daemons} daemons "
          f"{ratio(figures.serve_many, figures.peer)}\n")
    targets = [
        ("firing path >= 40% of the limit", path, f"{path:.0%}", path >= 0.4),
        ("1 daemon >= 40% of the limit", figures.serve_one / figures.limit,
         f"{figures.serve_one / figures.limit:.0%}", figures.serve_one >= 0.4 * figures.limit),
        (f"{plan.daemons} daemons fire >= 1.0x one", figures.serve_many / figures.serve_one,
         f"{figures.serve_many / figures.serve_one:.2f}x",
         figures.serve_many >= figures.serve_one),
    ]
    for name, value, shown, ok in targets:
        print(f"target: {name}: " + ("not measured" if math.isnan(value)
                                     else f"{shown}, {verdict(ok)}"))
    if figures.checked_slots:
        print(f"target: 0 slots doubled or lost: {figures.doubled} doubled, {figures.lost} lost "
              f"of {figures.checked_slots:,} checked, "
              f"{verdict(not figures.doubled and not figures.lost)}")
    print()


PARTS = (part_limit, part_apscheduler, part_firings, part_webhooks, part_failover)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer timers, shorter windows")
    parser.add_argument("--part", type=int, choices=range(1, 6), action="append",
                        help="run only this part (repeatable); default all five")
    parser.add_argument("--kills", type=int, help="failover trials (default: the plan's)")
    parser.add_argument("--lease", help="settings.lease of the failover part (default 6s)")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C: the daemons started are stopped, the schemas dropped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plan = QUICK if args.quick else FULL
    if args.kills:
        plan = replace(plan, kills=args.kills)
    if args.lease:
        plan = replace(plan, lease=args.lease)
    problem = server_problem()
    if problem is not None:
        print(f"PostgreSQL cannot be reached: {problem}")
        return 1
    left = leftover_schemas()
    if left:
        print(f"note: schemas left by an earlier run, not touched: {', '.join(left)}\n")
    with closing(psycopg.connect(in_schema("public"))) as db:
        version = db.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        synchronous = db.execute("SHOW synchronous_commit").fetchone()[0]  # type: ignore[index]
    began = time.perf_counter()
    print(f"python {sys.version.split()[0]}; PostgreSQL {version} (synchronous_commit "
          f"{synchronous}); {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the "
          f"start; {'quick' if plan is QUICK else 'full'} run\n")
    figures = Figures()
    chosen = sorted(set(args.part or range(1, 6)))
    for number in chosen:
        started = time.perf_counter()
        PARTS[number - 1](plan, figures)
        print(f"(this part took {time.perf_counter() - started:.0f} s)\n")
    if 3 in chosen:
        report_ratios(plan, figures)
    print(f"total {time.perf_counter() - began:.0f} s; load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
