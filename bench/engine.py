"""The engine: durable firings, runs through the real daemon, and an idle daemon; with peers.

Three parts, one run, each printing cronduit's figures next to the peers' and the targets:

1. Durable firings, no process: 10,000 timers all due, fired by the engine's timer path
   (``engine.firing.fire_timers``: per batch of 500, one transaction that accepts each trigger
   event, writes its slot-ledger row and re-arms its timer) on a fresh SQLite store (WAL,
   synchronous=FULL) in a temporary folder; against the physical limit, the same rows (an
   event insert, a ledger insert and a timer update per firing) written with plain
   ``sqlite3.executemany`` in batches of 500 into the same schema; and against APScheduler
   3.11 (``BackgroundScheduler``, ``SQLAlchemyJobStore`` on SQLite) firing 1,000 no-op
   interval jobs every second. Best of three passes for the first two.
2. 500 jobs due every second running ``/bin/true``, through ``cronduit serve`` (a subprocess,
   a temporary folder); APScheduler runs the same with ``subprocess`` in its thread pool,
   on both job stores. Lateness is from a slot to its process's start: for cronduit the
   kernel's start time of the run's wrapper process, which the daemon records with the run
   (``runs.pid_start``; in 10 ms clock ticks, placed mid-tick; why not a file's time:
   ``_daemon.firings``); for APScheduler the moment ``Popen`` returned (after the child's
   ``exec``). A slot due in the window that has no started process ``GRACE``
   seconds after the window counts as missed. CPU is the scheduler process and its reaped
   children over the window and the grace. Then cronduit's job count moves along a ladder
   (shorter windows), down from 500 or up, to the boundary of the sustained rate: no slot
   missed and every run started within 1 s of its slot (before its job's next one),
   compared with the machine's bare process start rate (``measure_spawn_rate``), measured
   in the same run.
3. An idle daemon with 10,000 cron jobs armed a month or more ahead: time from starting the
   process to its ``serving 10000 jobs`` line (fresh store, then a restart), CPU over the
   idle window, and RSS per job (RSS minus a 1-job daemon's, over 10,000).

Peers run one after another, never at once (the machine has 2 cores).

Run:  python bench/engine.py [--quick]      (needs: pip install -e '.[bench]')
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

from _apscheduler_peer import far_cron
from _daemon import Served, cpu_seconds, daemon, firings, thread_cpu_seconds, write_config
from _helpers import TRUE, measure_spawn_rate, supervisor_pid
from cronduit.core.config import load_config
from cronduit.core.config.model import Config
from cronduit.engine import BATCH, Engine, firing
from cronduit.engine.outbox import Outbox
from cronduit.executor import LaunchSpec, wait
from cronduit.executor.spawn import begin_launch
from cronduit.store.sql.transaction import to_text
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeRunner

PEER = Path(__file__).with_name("_apscheduler_peer.py")
GRACE = 2.0
"""Seconds after a window for its last slots to start before they count as missed."""
SETTLE = 1.0
"""Seconds an idle daemon is left alone after its ``serving`` line before measuring."""
T0 = datetime(2026, 1, 1, tzinfo=UTC)
"""Where part 1's timers are armed: a fixed instant, as the engine never reads the clock."""


@dataclass(frozen=True)
class Plan:
    """How much of each part to run: the full run, or ``--quick``."""

    timers: int = 10_000
    passes: int = 3
    tick_row: bool = True
    peer_firing_jobs: int = 1_000
    peer_firing_seconds: int = 10
    jobs: int = 500
    window: int = 20
    ladder: tuple[int, ...] = (50, 100, 175, 250, 375, 500, 750, 1000)
    ramp_window: int = 10
    spawn_seconds: float = 2.0
    idle_jobs: int = 10_000
    idle_seconds: float = 10.0
    one_job_idle_seconds: float = 2.0
    idle_peer_stores: tuple[str, ...] = ("sqlite", "memory")


FULL = Plan()
QUICK = Plan(passes=1, tick_row=False, peer_firing_seconds=4, window=8, ramp_window=8,
             ladder=(100, 250, 500, 1000), spawn_seconds=1.0, idle_seconds=3.0,
             one_job_idle_seconds=1.0, idle_peer_stores=("memory",))


_SCRATCH = tempfile.TemporaryDirectory(prefix="cronduit-bench-")
"""Every case's folder lives under this one, deleted when the bench exits."""


@contextmanager
def scratch() -> Iterator[Path]:
    """A new folder on the same disk as the project's state would be, kept to the end.

    Not deleted after its case: deleting tens of thousands of files taxes every file the
    next case creates on a file system without a journal (the kernel skips recently freed
    inodes one by one), which would bill one case for the one before it.
    """
    yield Path(tempfile.mkdtemp(dir=_SCRATCH.name))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1000:,.0f}"


def run_peer(*args: str) -> dict[str, object]:
    with scratch() as folder:
        out = folder / "result.json"
        subprocess.run([sys.executable, str(PEER), *args, "--result", str(out)],
                       capture_output=True, text=True, check=True, timeout=600)
        result: dict[str, object] = json.loads(out.read_text())
    return result


# -- 1. durable firings ----------------------------------------------------------------------


def timed_config(count: int, timing: str) -> Config:
    """``count`` jobs with the same ``timing`` (``every: 1m``, ``cron: ...``)."""
    jobs = "\n".join(f"  j{i:05d}: {{command: [/bin/true], {timing}}}" for i in range(count))
    return load_config(f"settings:\n  state: state\njobs:\n{jobs}\n", "bench.yaml")


def slot_rows(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT COUNT(*) FROM slots").fetchone()[0])


def engine_rate(config: Config, plan: Plan, arm_at: datetime, fire_at: datetime,
                step: Callable[[Engine, datetime], object]) -> float:
    """Firings per second of ``step`` on timers armed at ``arm_at``, best of the passes."""
    best = 0.0
    for _ in range(plan.passes):
        with scratch() as folder:
            store = SqliteStore(folder / "cronduit.db")
            engine = Engine(config, store, FakeRunner())
            engine.apply(config, arm_at)
            began = time.perf_counter()
            step(engine, fire_at)
            took = time.perf_counter() - began
            store.close()
            if slot_rows(folder / "cronduit.db") != plan.timers:
                raise AssertionError("not every timer fired")
        best = max(best, plan.timers / took)
    return best


def fire_timers(engine: Engine, now: datetime) -> None:
    """The durable timer path alone, nothing routed or launched: a batch per transaction."""
    while True:
        with engine.store.transaction() as tx:
            fired = firing.fire_timers(engine.stage, tx, now, Outbox())
        if fired < BATCH:
            return


def tick(engine: Engine, now: datetime) -> None:
    """Whole ticks (fire, route, record runs) until nothing more is due at ``now``."""
    while (due := engine.tick(now)) is not None and due <= now:
        pass


RAW_EVENT = ("INSERT INTO events (seq, delivery_id, job, kind, label, slot, late, payload,"
             " operator, accepted_at) VALUES (?, ?, ?, 'timer', 'every 1m', ?, 0, '{}', NULL, ?)")
RAW_SLOT = ("INSERT INTO slots (job, slot, name, fate, reason, event_seq, recorded_at, count,"
            " until_slot) VALUES (?, ?, ?, 'ran', '', ?, ?, 1, NULL)")
RAW_TIMER = ("UPDATE timers SET slot = ?, slot_name = ?, due_at = ?, last_name = ?,"
             " version = version + 1 WHERE job = ? AND version = 0")


def raw_rate(plan: Plan) -> float:
    """The same rows as a firing writes, with plain executemany, batches of 500, one commit
    each, into cronduit's own schema (same indexes), WAL and synchronous=FULL."""
    best = 0.0
    slot, after = to_text(T0), to_text(T0 + timedelta(minutes=1))
    name, next_name = "2026-01-01 00:00 UTC", "2026-01-01 00:01 UTC"
    jobs = [f"j{i:05d}" for i in range(plan.timers)]
    events = [(i + 1, f"slot/{job}/2026-01-01T00:00:00Z", job, slot, slot)
              for i, job in enumerate(jobs)]
    slots = [(job, slot, name, i + 1, slot) for i, job in enumerate(jobs)]
    timers = [(after, next_name, after, name, job) for job in jobs]
    for _ in range(plan.passes):
        with scratch() as folder:
            SqliteStore(folder / "cronduit.db").close()  # the schema, by cronduit's migrations
            db = sqlite3.connect(folder / "cronduit.db", isolation_level=None)
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")
            db.executemany("INSERT INTO timers (job, timing_key, slot, slot_name, due_at)"
                           " VALUES (?, 'every 1m', ?, ?, ?)",
                           [(job, slot, name, slot) for job in jobs])
            began = time.perf_counter()
            for start in range(0, plan.timers, BATCH):
                db.execute("BEGIN IMMEDIATE")
                db.executemany(RAW_EVENT, events[start:start + BATCH])
                db.executemany(RAW_SLOT, slots[start:start + BATCH])
                db.executemany(RAW_TIMER, timers[start:start + BATCH])
                db.execute("COMMIT")
            took = time.perf_counter() - began
            db.close()
        best = max(best, plan.timers / took)
    return best


def part_firings(plan: Plan) -> None:
    print(f"== 1. Durable firings, no process: {plan.timers:,} timers due at once; "
          f"best of {plan.passes} ==\n")
    every = timed_config(plan.timers, "every: 1m")
    cron = timed_config(plan.timers, "cron: '* * * * *'")
    minute = T0 + timedelta(minutes=1)
    raw = raw_rate(plan)
    rows = [
        ("raw sqlite3 executemany, batches of 500", raw),
        ("cronduit firing.fire_timers, every 1m", engine_rate(every, plan, T0, T0, fire_timers)),
        ("cronduit firing.fire_timers, cron * * * * *",
         engine_rate(cron, plan, T0, minute, fire_timers)),
    ]
    if plan.tick_row:
        rows.append(("cronduit Engine.tick (+ route, run records)",
                     engine_rate(every, plan, T0, T0, tick)))
    peer = run_peer("--store", "sqlite", "--jobs", str(plan.peer_firing_jobs),
                    "--seconds", str(plan.peer_firing_seconds), "--work", "noop")
    ran = len(peer["lateness"])  # type: ignore[arg-type]
    expected = int(peer["expected"])  # type: ignore[call-overload]
    rows.append((f"APScheduler 3.11 SQLAlchemy/SQLite, {plan.peer_firing_jobs:,} jobs/s",
                 ran / plan.peer_firing_seconds))
    header = f"{'path':48} {'firings/s':>10} {'x raw':>6}"
    print(header)
    print("-" * len(header))
    for label, rate in rows:
        print(f"{label:48} {rate:>10,.0f} {rate / raw:>6.2f}")
    print(f"\nAPScheduler: {ran:,} of {expected:,} slots ran in {plan.peer_firing_seconds} s; "
          f"missed {1 - ran / expected:.1%} (offered {plan.peer_firing_jobs:,}/s)")
    ratio = rows[1][1] / raw
    print(f"target: cronduit's firing path >= 50% of raw SQLite: {ratio:.0%}, "
          f"{'met' if ratio >= 0.5 else 'not met'}\n")


# -- 2. runs through the daemon --------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """One workload of ``jobs`` jobs every second over ``seconds``: what ran, how late."""

    system: str
    jobs: int
    seconds: int
    lateness: list[float]
    fired: list[float] | None
    cpu_self: float
    cpu_children: float

    @property
    def expected(self) -> int:
        return self.jobs * self.seconds

    @property
    def ran(self) -> int:
        return len(self.lateness)

    @property
    def missed(self) -> int:
        return self.expected - self.ran

    @property
    def rate(self) -> float:
        return self.ran / self.seconds

    @property
    def cpu_per_run(self) -> float:
        return (self.cpu_self + self.cpu_children) / max(self.ran, 1)

    @property
    def sustained(self) -> bool:
        """No slot missed, and every run started before its job's next slot (1 s later)."""
        return not self.missed and max(self.lateness, default=0.0) < 1.0


def cronduit_load(jobs: int, seconds: int) -> Load:
    """``jobs`` jobs ``every: 1s`` running ``/bin/true`` through ``cronduit serve``."""
    with scratch() as folder:
        lines = (f"j{i:04d}: {{command: [/bin/true], every: 1s}}" for i in range(jobs))
        # kept_runs above the runs per job in the window: no pruning work while measuring
        config = write_config(folder, lines, kept_runs=1000)
        with daemon(config) as served:
            served.wait_for("serving ")
            time.sleep(1)  # the arming second, left out below
            before = cpu_seconds(served.process)
            time.sleep(seconds + GRACE)
            after = cpu_seconds(served.process)
        found = firings(folder)
    # The first slot is the second the jobs were armed in: they run at once, up to a second
    # after the whole second the slot is named for, so it says nothing of scheduling. The
    # window is the ``seconds`` slots after it.
    t0 = min(firing.slot for firing in found) + timedelta(seconds=1)
    window = [firing for firing in found
              if t0 <= firing.slot < t0 + timedelta(seconds=seconds)]
    lateness = [firing.started - firing.slot.timestamp() for firing in window
                if firing.started is not None]
    fired = [(firing.accepted_at - firing.slot).total_seconds() for firing in window]
    return Load("cronduit serve (SQLite)", jobs, seconds, lateness, fired,
                after[0] - before[0], after[1] - before[1])


def apscheduler_load(store: str, jobs: int, seconds: int) -> Load:
    peer = run_peer("--store", store, "--jobs", str(jobs), "--seconds", str(seconds),
                    "--work", "true")
    lateness: list[float] = peer["lateness"]  # type: ignore[assignment]
    name = "SQLAlchemy/SQLite" if store == "sqlite" else "memory"
    return Load(f"APScheduler 3.11 {name}", jobs, seconds, lateness, None,
                float(peer["cpu_self"]), float(peer["cpu_children"]))  # type: ignore[arg-type]


def load_row(load: Load) -> str:
    fired = ms(percentile(load.fired, 0.99)) if load.fired is not None else "-"
    return (f"{load.jobs:>5} {load.expected:>6} {load.ran:>6} {load.missed:>6} "
            f"{ms(percentile(load.lateness, 0.5)):>8} {ms(percentile(load.lateness, 0.99)):>8} "
            f"{ms(max(load.lateness, default=math.nan)):>8} {fired:>9} {load.rate:>6,.0f}")


LOAD_HEADER = (f"{'jobs':>5} {'slots':>6} {'ran':>6} {'missed':>6} {'late p50':>8} "
               f"{'late p99':>8} {'late max':>8} {'fired p99':>9} {'runs/s':>6}")


def print_loads(loads: list[Load]) -> None:
    header = (f"{'system':34} {LOAD_HEADER} {'CPU self s':>10} {'children s':>10} "
              f"{'CPU ms/run':>10}")
    print(header)
    print("-" * len(header))
    for load in loads:
        print(f"{load.system:34} {load_row(load)} {load.cpu_self:>10.1f} "
              f"{load.cpu_children:>10.1f} {load.cpu_per_run * 1000:>10.2f}")
    print()


def print_steps(steps: list[Load], spawn_rate: float) -> None:
    header = f"{'cronduit serve':14} {LOAD_HEADER} {'x spawn':>7} sustained"
    print(header)
    print("-" * len(header))
    for load in sorted(steps, key=lambda step: step.jobs):
        print(f"{'':14} {load_row(load)} {load.rate / spawn_rate:>7.2f} "
              f"{'yes' if load.sustained else 'no'}")
    print()


def ramp(plan: Plan, main: Load) -> list[Load]:
    """From the main run's job count, step down the ladder until a count is sustained, or
    up until one is not: the boundary, with the fewest runs."""
    steps = [main]
    ladder = sorted({*plan.ladder, main.jobs})
    at = ladder.index(main.jobs)
    direction = 1 if main.sustained else -1
    at += direction
    while 0 <= at < len(ladder):
        load = cronduit_load(ladder[at], plan.ramp_window)
        steps.append(load)
        if load.sustained != main.sustained:
            break
        at += direction
    return steps


def burst_floor(count: int, threads: int = 2, passes: int = 3) -> float:
    """The machine's best time to start 99% of ``count`` processes due at one instant.

    ``count`` ``/bin/true`` started with ``posix_spawn`` from ``threads`` threads at once
    (one per core), nothing recorded, reaped afterwards: no launcher that starts a process
    when its slot comes can do better. Seconds from the first start to the 99th percentile
    ``posix_spawn`` return (after the child's ``exec``); best of ``passes``.
    """
    return min(_burst(count, threads) for _ in range(passes))


def _burst(count: int, threads: int) -> float:
    began = time.perf_counter()
    done: list[float] = []
    pids: list[int] = []

    def spawn(share: int) -> None:
        for _ in range(share):
            pids.append(os.posix_spawn(TRUE, [TRUE], {}))
            done.append(time.perf_counter() - began)

    workers = [threading.Thread(target=spawn, args=(count // threads,)) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for pid in pids:
        os.waitpid(pid, 0)
    return percentile(done, 0.99)


def supervisor_rate(count: int = 3000) -> tuple[float, float]:
    """Launches per second through cronduit's supervisor, and its CPU per run (with the job's).

    ``count`` ``/bin/true`` attempts with their folders made beforehand, sent 64 at a time
    with ``begin_launch`` from one thread (as the engine sends a tick's launches) and awaited
    until each one's exit is recorded: the launcher alone, without the store or the engine.
    """
    with scratch() as folder:
        specs = []
        for number in range(count + 1):
            run = folder / f"r{number}"
            run.mkdir()
            specs.append(LaunchSpec(run_id=run.name, attempt=1, argv=(TRUE,), shell=None,
                                    cwd=folder, env={"PATH": os.defpath},
                                    attempt_file=run / "attempt-1", log_path=run / "log"))
        begin_launch(specs.pop()).result()  # the supervisor started and warm
        pid = supervisor_pid()
        assert pid is not None
        supervisor = psutil.Process(pid)
        before = sum(cpu_seconds(supervisor))
        began = time.perf_counter()
        attempts = []
        for start in range(0, count, 64):
            pending = [begin_launch(spec) for spec in specs[start:start + 64]]
            attempts += [launch.result() for launch in pending]

        async def recorded() -> None:
            for attempt in attempts:
                await wait(attempt)

        asyncio.run(recorded())
        took = time.perf_counter() - began
        return count / took, (sum(cpu_seconds(supervisor)) - before) / count


def report_target_lateness(main: Load, peers: list[Load], spawn_rate: float) -> None:
    for peer in peers:
        print(f"cronduit / {peer.system}: late p99 x"
              f"{percentile(main.lateness, 0.99) / percentile(peer.lateness, 0.99):.2f}, "
              f"CPU per run x{main.cpu_per_run / peer.cpu_per_run:.2f}")
    floor = math.ceil(0.99 * main.jobs) / spawn_rate
    burst = burst_floor(main.jobs)
    p99 = percentile(main.lateness, 0.99)
    met = p99 <= 0.05 and main.missed == 0
    print(f"note: the {main.jobs} slots of a second share one instant; starting 99% of them "
          f"one after another at the bare spawn rate takes {floor * 1000:,.0f} ms, and from "
          f"two threads with nothing recorded (burst_floor) {burst * 1000:,.0f} ms: the "
          f"machine's floor for this p99")
    print(f"target: p99 <= 50 ms with no slot missed at {main.jobs} jobs/s: p99 {ms(p99)} ms, "
          f"{main.missed} missed, {'met' if met else 'not met'}\n")


def report_target_sustained(steps: list[Load], spawn_rate: float) -> None:
    sustained = max((load.rate for load in steps if load.sustained), default=0.0)
    no_miss = max((load.rate for load in steps if not load.missed), default=0.0)
    share = sustained / spawn_rate
    print(f"highest with no slot missed (however late): {no_miss:,.0f}/s = "
          f"{no_miss / spawn_rate:.0%} of the start rate")
    print(f"target: sustained runs/s >= 50% of the start rate: {sustained:,.0f}/s = "
          f"{share:.0%} of {spawn_rate:,.0f}/s, {'met' if share >= 0.5 else 'not met'}\n")


def part_runs(plan: Plan) -> None:
    print(f"== 2. Jobs due every second running /bin/true; lateness in ms, slot -> process "
          f"start; window {plan.window} s ==\n")
    spawn_rate = measure_spawn_rate(plan.spawn_seconds)
    main = cronduit_load(plan.jobs, plan.window)
    peers = [apscheduler_load(store, plan.jobs, plan.window) for store in ("sqlite", "memory")]
    print_loads([main, *peers])
    report_target_lateness(main, peers, spawn_rate)
    launches, cpu = supervisor_rate()
    print(f"cronduit's supervisor alone (supervisor_rate, 3,000 /bin/true sent 64 at a time): "
          f"{launches:,.0f} launches/s = {launches / spawn_rate:.2f}x the bare start rate, "
          f"{cpu * 1000:.2f} ms CPU per run with the job's")
    print(f"bare process start rate (measure_spawn_rate, posix_spawn /bin/true): "
          f"{spawn_rate:,.0f}/s. Job counts stepped ({plan.window} s for {plan.jobs}, "
          f"{plan.ramp_window} s for the others); sustained: no slot missed and every run "
          f"started within 1 s, before its next slot\n")
    steps = ramp(plan, main)
    print_steps(steps, spawn_rate)
    report_target_sustained(steps, spawn_rate)


# -- 3. an idle daemon -----------------------------------------------------------------------


@dataclass(frozen=True)
class Idle:
    """An idle scheduler: start-up seconds, CPU %, and RSS against a 1-job baseline."""

    system: str
    startup: float
    restart: float | None
    cpu_percent: float
    rss: int
    rss_one: int
    jobs: int

    @property
    def per_job(self) -> float:
        return (self.rss - self.rss_one) / self.jobs


def idle_figures(served: Served, seconds: float) -> tuple[float, int]:
    """CPU % over ``seconds`` of idling, after a settling second, and the RSS after."""
    time.sleep(SETTLE)
    before, began = thread_cpu_seconds(served.process.pid), time.perf_counter()
    time.sleep(seconds)
    cpu = thread_cpu_seconds(served.process.pid) - before
    return cpu / (time.perf_counter() - began) * 100, served.process.memory_info().rss


def cronduit_idle(plan: Plan) -> Idle:
    def config(folder: Path, jobs: int) -> Path:
        return write_config(folder, (f"j{i:05d}: {{command: [/bin/true], cron: '{far_cron(i)}'}}"
                                     for i in range(jobs)))

    with scratch() as folder:
        path = config(folder, plan.idle_jobs)
        with daemon(path) as served:
            startup = served.wait_for(f"serving {plan.idle_jobs} jobs")
            cpu_percent, rss = idle_figures(served, plan.idle_seconds)
        with daemon(path) as served:
            restart = served.wait_for(f"serving {plan.idle_jobs} jobs")
    with scratch() as folder, daemon(config(folder, 1)) as served:
        served.wait_for("serving 1 job")  # "1 job" from cronduit, "1 jobs" from the peer
        _, rss_one = idle_figures(served, plan.one_job_idle_seconds)
    return Idle("cronduit serve (SQLite)", startup, restart, cpu_percent, rss, rss_one,
                plan.idle_jobs)


def apscheduler_idle(store: str, plan: Plan) -> Idle:
    def peer(folder: Path, jobs: int) -> Served:
        return Served([sys.executable, str(PEER), "--store", store, "--jobs", str(jobs),
                       "--work", "idle", "--db", str(folder / "jobs.sqlite")], folder)

    restart = None
    with scratch() as folder:
        with peer(folder, plan.idle_jobs) as served:
            startup = served.wait_for(f"serving {plan.idle_jobs} jobs", timeout=300)
            cpu_percent, rss = idle_figures(served, plan.idle_seconds)
        if store == "sqlite":
            with peer(folder, plan.idle_jobs) as served:
                restart = served.wait_for(f"serving {plan.idle_jobs} jobs")
    with scratch() as folder, peer(folder, 1) as served:
        served.wait_for("serving 1 job")  # "1 job" from cronduit, "1 jobs" from the peer
        _, rss_one = idle_figures(served, plan.one_job_idle_seconds)
    name = "SQLAlchemy/SQLite" if store == "sqlite" else "memory"
    return Idle(f"APScheduler 3.11 {name}", startup, restart, cpu_percent, rss, rss_one,
                plan.idle_jobs)


def part_idle(plan: Plan) -> None:
    print(f"== 3. Idle with {plan.idle_jobs:,} cron jobs armed weeks ahead; "
          f"CPU over {plan.idle_seconds:.0f} s ==\n")
    rows = [cronduit_idle(plan)]
    rows += [apscheduler_idle(store, plan) for store in plan.idle_peer_stores]
    header = (f"{'system':36} {'start-up s':>10} {'restart s':>9} {'idle CPU':>8} "
              f"{'RSS MiB':>7} {'1-job MiB':>9} {'KiB/job':>7}")
    print(header)
    print("-" * len(header))
    for row in rows:
        restart = "-" if row.restart is None else f"{row.restart:.2f}"
        print(f"{row.system:36} {row.startup:>10.2f} {restart:>9} {row.cpu_percent:>7.2f}% "
              f"{row.rss / 2**20:>7.1f} {row.rss_one / 2**20:>9.1f} {row.per_job / 1024:>7.2f}")
    mine = rows[0]
    checks = [("start-up < 2 s", mine.startup < 2.0, f"{mine.startup:.2f} s"),
              ("idle CPU < 1%", mine.cpu_percent < 1.0, f"{mine.cpu_percent:.2f}%"),
              ("RSS < 5 KiB per job", mine.per_job < 5 * 1024, f"{mine.per_job / 1024:.2f} KiB")]
    print()
    for name, ok, figure in checks:
        print(f"target: {name}: {figure}, {'met' if ok else 'not met'}")
    print()


def _counts(text: str) -> tuple[int, ...]:
    return tuple(int(count) for count in text.split(","))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter windows (~90 s)")
    parser.add_argument("--part", type=int, choices=(1, 2, 3), action="append",
                        help="run only this part (repeatable); default all three")
    parser.add_argument("--ladder", type=_counts, metavar="N,N,...",
                        help="job counts part 2 steps through (default: the plan's)")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.ladder:
        plan = replace(plan, ladder=args.ladder)
    parts = [(part_firings, part_runs, part_idle)[n - 1] for n in sorted(set(args.part or []))]
    began = time.perf_counter()
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load average {load:.2f} "
          f"at the start; {'quick' if plan is QUICK else 'full'} run\n")
    for part in parts or (part_firings, part_runs, part_idle):
        started = time.perf_counter()
        part(plan)
        print(f"(this part took {time.perf_counter() - started:.0f} s)\n")
    print(f"total {time.perf_counter() - began:.0f} s; load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
