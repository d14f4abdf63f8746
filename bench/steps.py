"""Durable multi-step executions through the real daemon: what a step costs (issue 14).

Four parts, one run, each case in a temporary folder on the same disk:

1. **Steps.** ``cronduit serve`` (SQLite state, a subprocess, as a user starts it) with one
   job of 5 steps, each ``[bash, -c, ...]`` that appends ``start <step> <attempt id>
   $EPOCHREALTIME`` to a file as it begins and ``end <step> <attempt id> $EPOCHREALTIME``
   just before it exits 0. Step 1 declares one output, ``TOKEN`` (the execution's id,
   written to ``$CRONDUIT_OUTPUT_FILE``), which steps 2..5 take as an input and check, so
   every step end validates and saves outputs or passes them on. 1,000 executions, under
   ``overlap: {webhook: allow, max_parallel: 4}``: four side by side on the 2 cores.

   The triggers are **webhook** triggers, not manual ones: cronduit treats a waiting manual
   run as ``queue`` whatever the ``manual`` policy says (``docs/overlap.md``, choices 9 and
   10), so 1,000 manual triggers waiting together start one run, and never run side by
   side. They are accepted through the store API (``insert_events``, ``NewEvent`` of kind
   ``webhook``, as the tests do; the job has ``webhook: true``), and the daemon is woken
   with SIGUSR1 after each transaction, as ``cronduit job run`` wakes it: a few ms per
   transaction, where a ``cronduit job run`` each would start a Python process per trigger
   and dominate the case. Fed (the main rows): the bench tops the waiting triggers up to
   16 whenever fewer than 8 wait (it looks every 5 ms), so a freed lane always finds one;
   *all*: every trigger accepted at once before the first ran (a backlog of 1,000), to show
   what a long backlog costs. *1 lane*: the same with ``max_parallel: 1``, one execution
   after another, the gap without the other lanes' work on the 2 cores. The bench polls the
   store until all executions are ``succeeded``.

   *Per-step overhead*: for each execution, the gap from step k's ``end`` line to step
   k+1's ``start`` line (4 per execution), the attempt ids tied to their execution through
   the store's ``step_attempts``. The gap is split at the instant the daemon's transaction
   that ended step k was decided (``step_attempts.ended_at``, the tick's clock, microseconds):
   *noticed* is from the ``end`` line to that instant (bash exiting, the supervisor recording
   its exit status, the daemon waking and reading it), *commit + launch* from it to the next
   ``start`` line (the transaction that saves step k's end and outputs and writes step k+1's
   attempt, its commit, the launch through the supervisor and bash starting).
   *CPU per step*: the daemon's CPU time plus its supervisor's own (psutil, 10 ms ticks)
   from the daemon's ``serving`` line to the last execution's success, over 5,000 steps; the
   jobs' (bash, reaped by the supervisor) are shown apart.
2. **Plain runs.** The same daemon setup with a one-command job (the same bash command, less
   the output and the input check) and 5,000 webhook triggers, same overlap, fed and all at
   once. A run's end and the next start in the same lane cannot be paired, so both cases are
   compared by wall time (first ``start`` line to last ``end`` line) per step or run, CPU
   per step or run, and the *mean lane gap*: (lanes x wall - the time spent inside the
   commands) / count, a lane's idle time per step or run, which the steps case checks
   against its measured mean gap.
3. **The machine's own costs**, measured first, on the same file system: one durable commit
   (``sqlite3``, WAL, ``synchronous=FULL``, a one-row insert and its commit, median of
   1,000) and one process start (``subprocess.run(["bash", "-c", "true"])`` wall time,
   median of 200; and ``posix_spawn`` of ``/bin/true`` back to back,
   ``_helpers.measure_spawn_rate``).
4. **Target**: per-step overhead p50 <= 2 x (one durable commit + one bash start), judged
   on the 1-lane case, which runs first of the cases, with the commit and the start measured
   again right after it (the floor is the mean of the two measurements: a VM's speed
   drifts over minutes): the gap from one step's exit to the next step's start with nothing
   else in the way, which is what a step costs. With 4 lanes on 2 cores the gap also holds
   the wait for a core the other lanes' processes hold (queueing, not the step's cost); its
   ratio is printed beside, with the p99s.

kept_runs is set above the run count: no pruning of run folders while measuring. The
1-minute load average is printed at the start, at each case and at the end.

Run:  python bench/steps.py [--quick] [--scratch DIR]
      (needs: pip install -e '.[bench]'; about 5 min, --quick about 20 s)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil

from _daemon import Served, cpu_seconds, daemon, write_config
from _helpers import measure_spawn_rate
from cronduit.core.enums import TriggerKind
from cronduit.ports import NewEvent
from cronduit.store.sql.transaction import from_text
from cronduit.store.sqlite import SqliteStore

STEPS = 5
LANES = 4
"""``max_parallel`` of both jobs under ``overlap: {webhook: allow}``."""
BACKLOG = 8
"""Triggers kept waiting while fed: twice the lanes, so a freed lane always finds one."""
STALL = 30.0
"""Seconds without one more success after which the bench gives up on a case."""


@dataclass(frozen=True)
class Plan:
    """How much to run: the full run, or ``--quick``."""

    executions: int = 1_000
    runs: int = 5_000
    commits: int = 1_000
    starts: int = 200
    spawn_seconds: float = 2.0


FULL = Plan()
QUICK = Plan(executions=100, runs=500, commits=300, starts=100, spawn_seconds=1.0)

_SCRATCH: list[tempfile.TemporaryDirectory[str]] = []
"""The folder every case's folder lives under (``--scratch``), deleted when the bench exits;
made by :func:`main`."""


@contextmanager
def scratch() -> Iterator[Path]:
    """A new folder under the bench's temporary one, kept to the end (as ``engine.py``)."""
    yield Path(tempfile.mkdtemp(dir=_SCRATCH[0].name))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the jobs --------------------------------------------------------------------------------


def body(times: Path, middle: str = "") -> str:
    """The bash script of a step or a run: a ``start`` line, ``middle``, an ``end`` line.
    A plain run has no step or attempt id: it writes ``run`` and its run id instead."""
    who = '"${CRONDUIT_STEP_ID:-run}" "${CRONDUIT_ATTEMPT_ID:-$CRONDUIT_RUN_ID}"'
    lines = [f'printf "start %s %s %s\\n" {who} "$EPOCHREALTIME" >> {times}']
    if middle:
        lines.append(middle)
    lines.append(f'printf "end %s %s %s\\n" {who} "$EPOCHREALTIME" >> {times}')
    return "\n".join(lines)


def overlap(lanes: int) -> dict[str, object]:
    return {"webhook": "allow", "max_parallel": lanes}

HOOK_KEY = "CRONDUIT_BENCH_HOOK_KEY"
"""The secret's variable that signs webhook URLs: a ``webhook: true`` job needs one."""


def steps_job(times: Path, lanes: int) -> str:
    """The job of part 1, as one flow mapping (JSON is YAML)."""
    output = 'printf \'{"TOKEN": "%s"}\' "$CRONDUIT_EXECUTION_ID" > "$CRONDUIT_OUTPUT_FILE"'
    steps: list[dict[str, object]] = [
        {"id": "s1", "outputs": ["TOKEN"], "command": ["bash", "-c", body(times, output)]}]
    check = '[ "$TOKEN" = "$CRONDUIT_EXECUTION_ID" ] || exit 1'
    steps += [{"id": f"s{n}", "inputs": {"TOKEN": "s1.TOKEN"},
               "command": ["bash", "-c", body(times, check)]} for n in range(2, STEPS + 1)]
    return "steps: " + json.dumps({"steps": steps, "webhook": True, "overlap": overlap(lanes)})


def plain_job(times: Path, lanes: int) -> str:
    return "plain: " + json.dumps({"command": ["bash", "-c", body(times)], "webhook": True,
                                   "overlap": overlap(lanes)})


# -- a case through the daemon ---------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """What one daemon did: the command's lines, the store's records, CPU, accept time."""

    count: int
    """Executions or runs."""
    units: int
    """Steps or runs."""
    lanes: int
    backlog: int | None
    """Triggers kept waiting, or None: all accepted at once."""
    load: float
    """The machine's load average (1 minute) as the case began."""
    lines: list[tuple[str, str, str, float]]
    """(``start``/``end``, step, attempt or run id, epoch seconds) as the bash wrote them."""
    attempts: dict[str, tuple[str, str, float]]
    """attempt id -> (execution id, step id, ended_at epoch seconds), from the store."""
    accept_seconds: float
    daemon_cpu: float
    supervisor_cpu: float
    jobs_cpu: float

    @property
    def cpu(self) -> float:
        return self.daemon_cpu + self.supervisor_cpu

    @property
    def wall(self) -> float:
        stamps = [line[3] for line in self.lines]
        return max(stamps) - min(stamps)

    @property
    def inside(self) -> float:
        """Seconds spent between a start line and its end line, summed."""
        starts = {line[2]: line[3] for line in self.lines if line[0] == "start"}
        return sum(line[3] - starts[line[2]] for line in self.lines if line[0] == "end")

    @property
    def lane_gap(self) -> float:
        """A lane's idle time per step or run: (lanes x wall - time inside) / units."""
        return (self.lanes * self.wall - self.inside) / self.units

    @property
    def cpu_each(self) -> float:
        return self.cpu / self.units


def supervisor_of(served: Served) -> psutil.Process | None:
    for child in served.process.children():
        try:
            if any("supervisor" in part for part in child.cmdline()):
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def own_and_reaped(process: psutil.Process | None) -> tuple[float, float]:
    if process is None:
        return 0.0, 0.0
    times = process.cpu_times()
    return times.user + times.system, times.children_user + times.children_system


class Acceptor:
    """Accepts webhook triggers of one job through the store API (``insert_events``, one
    transaction per call, as the tests do) and wakes the daemon with SIGUSR1, as ``cronduit
    job run`` does; keeps the seconds its transactions took."""

    def __init__(self, db: Path, job: str, pid: int) -> None:
        self.store = SqliteStore(db)
        self.job = job
        self.pid = pid
        self.tag = uuid.uuid4().hex
        self.accepted = 0
        self.seconds = 0.0

    def accept(self, count: int) -> None:
        now = datetime.now(UTC)
        events = [NewEvent(f"webhook/{self.job}/{self.tag}-{n:05d}", self.job,
                           TriggerKind.WEBHOOK, "webhook", now)
                  for n in range(self.accepted, self.accepted + count)]
        began = time.perf_counter()
        with self.store.transaction() as tx:
            tx.insert_events(events)
        self.seconds += time.perf_counter() - began
        self.accepted += count
        os.kill(self.pid, signal.SIGUSR1)


DONE = {
    "steps": ("SELECT COUNT(*) FROM executions WHERE job = 'steps' AND state = 'succeeded'",
              "SELECT COUNT(*) FROM executions WHERE job = 'steps' AND state <> 'running'"
              " AND state <> 'succeeded'"),
    "plain": ("SELECT COUNT(*) FROM runs WHERE job = 'plain' AND state = 'ended'"
              " AND outcome = 'success'",
              "SELECT COUNT(*) FROM runs WHERE job = 'plain' AND state = 'ended'"
              " AND outcome <> 'success'"),
}
PENDING = "SELECT COUNT(*) FROM events WHERE job = ? AND state IN ('new', 'waiting')"


def feed_and_wait(db: Path, acceptor: Acceptor, count: int, backlog: int | None) -> None:
    """Accept ``count`` triggers: all at once (``backlog`` None), or topped up to
    2 x ``backlog`` whenever fewer than ``backlog`` wait (looked at every 5 ms); then poll
    the store (every 0.2 s) until all ``count`` executions or runs succeeded. Fails at the
    first that did not, or when none more succeeded for ``STALL`` seconds."""
    job = acceptor.job
    succeeded, other = DONE[job]
    if backlog is None:
        acceptor.accept(count)
    last, moved, looked = -1, time.monotonic(), 0.0
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
        while time.monotonic() - moved < STALL:
            if backlog is not None and acceptor.accepted < count:
                pending = conn.execute(PENDING, (job,)).fetchone()[0]
                if pending < backlog:
                    acceptor.accept(min(2 * backlog - pending, count - acceptor.accepted))
                    moved = time.monotonic()
            if time.monotonic() - looked >= 0.2:
                looked = time.monotonic()
                done = conn.execute(succeeded).fetchone()[0]
                if conn.execute(other).fetchone()[0]:
                    raise RuntimeError(f"{job}: an execution or a run did not succeed")
                if done >= count:
                    return
                if done != last:
                    last, moved = done, time.monotonic()
            time.sleep(0.005 if acceptor.accepted < count else 0.2)
    raise TimeoutError(f"{job}: {last} of {count} succeeded, none more for {STALL:.0f} s")


def run_case(job: str, count: int, lanes: int = LANES, backlog: int | None = BACKLOG) -> Case:
    load = os.getloadavg()[0]
    with scratch() as folder:
        times = folder / "times"
        line = steps_job(times, lanes) if job == "steps" else plain_job(times, lanes)
        config = write_config(folder, [line], kept_runs=count + 100)
        secret = f"settings:\n  webhook_secret: {HOOK_KEY}\n"
        config.write_text(config.read_text().replace("settings:\n", secret))
        db = folder / "state" / "cronduit.db"
        with daemon(config) as served:
            served.wait_for("serving ")
            daemon_before = cpu_seconds(served.process)[0]
            supervisor_before = own_and_reaped(supervisor_of(served))
            acceptor = Acceptor(db, job, served.process.pid)
            try:
                feed_and_wait(db, acceptor, count, backlog)
            finally:
                acceptor.store.close()
            supervisor = supervisor_of(served)
            daemon_cpu = cpu_seconds(served.process)[0] - daemon_before
            supervisor_after = own_and_reaped(supervisor)
        accept_seconds = acceptor.seconds
        lines = []
        for text in times.read_text().splitlines():
            kind, step, attempt, stamp = text.split()
            lines.append((kind, step, attempt, float(stamp)))
        attempts = {}
        with closing(sqlite3.connect(db)) as conn:
            for attempt_id, execution, step, ended in conn.execute(
                    "SELECT attempt_id, execution_id, step_id, ended_at FROM step_attempts"):
                ended_at = from_text(ended)
                assert ended_at is not None
                attempts[attempt_id] = (execution, step, ended_at.timestamp())
    units = count * STEPS if job == "steps" else count
    return Case(count, units, lanes, backlog, load, lines, attempts, accept_seconds, daemon_cpu,
                supervisor_after[0] - supervisor_before[0],
                supervisor_after[1] - supervisor_before[1])


@dataclass(frozen=True)
class Gaps:
    total: list[float]
    noticed: list[float]
    launched: list[float]


def step_gaps(case: Case) -> Gaps:
    """Per execution, step k's end line to step k+1's start line, and its two parts."""
    walks: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for kind, step, attempt, stamp in case.lines:
        execution, stored_step, _ = case.attempts[attempt]
        if stored_step != step:
            raise AssertionError(f"attempt {attempt} wrote step {step}, the store has "
                                 f"{stored_step}")
        walks[execution][step][kind] = stamp
    if len(walks) != case.count:
        raise AssertionError(f"{len(walks)} executions wrote lines, expected {case.count}")
    gaps = Gaps([], [], [])
    ended = {(case.attempts[a][0], case.attempts[a][1]): case.attempts[a][2]
             for a in case.attempts}
    for execution, steps in walks.items():
        if len(steps) != STEPS or any(len(marks) != 2 for marks in steps.values()):
            raise AssertionError(f"execution {execution}: lines {dict(steps)}")
        for k in range(1, STEPS):
            end, start = steps[f"s{k}"]["end"], steps[f"s{k + 1}"]["start"]
            decided = ended[execution, f"s{k}"]
            gaps.total.append(start - end)
            gaps.noticed.append(decided - end)
            gaps.launched.append(start - decided)
    return gaps


# -- the machine's own costs -----------------------------------------------------------------


def durable_commit(count: int) -> float:
    """Median seconds of a one-row insert and its commit, WAL and synchronous=FULL."""
    with scratch() as folder, closing(sqlite3.connect(folder / "commit.db",
                                                      isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        took = []
        for n in range(count):
            began = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t (v) VALUES (?)", (f"row {n}",))
            db.execute("COMMIT")
            took.append(time.perf_counter() - began)
    return statistics.median(took)


def file_create(count: int) -> float:
    """Median seconds to create one empty file, each in a folder of its own, under the
    scratch folder: what each step's attempt record and log cost the daemon (made while
    the step before runs). On the VMs this bench was run on (ext4 without a journal) it
    varied from 20 us to 1 ms of CPU between folders of the same disk and over minutes,
    after runs that had made and deleted tens of thousands of files; printed so that a
    run's figures can be read with it."""
    took = []
    with scratch() as folder:
        for n in range(count):
            home = folder / f"run-{n}"
            home.mkdir()
            began = time.perf_counter()
            os.close(os.open(home / "attempt-1", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC,
                             0o600))
            took.append(time.perf_counter() - began)
    return statistics.median(took)


def bash_start(count: int) -> float:
    """Median wall seconds of ``subprocess.run(["bash", "-c", "true"])``."""
    took = []
    for _ in range(count):
        began = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], check=True)
        took.append(time.perf_counter() - began)
    return statistics.median(took)


# -- report ----------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1000:,.2f}"


def gap_rows(gaps: Gaps, label: str) -> None:
    for name, values in ((f"{label}: end k -> start k+1", gaps.total),
                         ("  noticed: end line -> decided", gaps.noticed),
                         ("  commit + launch: -> start line", gaps.launched)):
        print(f"{name:40} {ms(percentile(values, 0.5)):>7} {ms(percentile(values, 0.9)):>7} "
              f"{ms(percentile(values, 0.99)):>7} {ms(max(values)):>8} "
              f"{ms(statistics.fmean(values)):>7}")


def options() -> Plan:
    """The plan the command line asks for; makes the scratch folder where it says."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="100 executions and 500 runs, for a smoke run")
    parser.add_argument("--scratch", type=Path, default=None,
                        help="the folder to make the cases' state folders in (default: the "
                             "system's temporary folder)")
    args = parser.parse_args()
    _SCRATCH.append(tempfile.TemporaryDirectory(prefix="cronduit-bench-steps-",
                                                dir=args.scratch))
    return QUICK if args.quick else FULL


def main() -> int:
    plan = options()
    os.environ[HOOK_KEY] = uuid.uuid4().hex  # the daemons inherit it
    began = time.perf_counter()
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} at the start; {'quick' if plan is QUICK else 'full'} run; "
          f"scratch on {_SCRATCH[0].name}\n")

    # The machine's costs first, on a quiet machine; then the judged case, the 1-lane one,
    # before the others load the machine, and the commit and start again right after it:
    # a VM's speed drifts over minutes, and the target compares the case with the costs.
    commit = durable_commit(plan.commits)
    create = file_create(plan.starts)
    start = bash_start(plan.starts)
    spawn = 1 / measure_spawn_rate(plan.spawn_seconds)
    serial = run_case("steps", plan.executions, lanes=1)
    serial_gaps = step_gaps(serial)
    commit_after, start_after = durable_commit(plan.commits), bash_start(plan.starts)
    steps = run_case("steps", plan.executions)
    gaps = step_gaps(steps)
    plain = run_case("plain", plan.runs)
    steps_all = run_case("steps", plan.executions, backlog=None)
    all_gaps = step_gaps(steps_all)
    plain_all = run_case("plain", plan.runs, backlog=None)

    print(f"== 1. Steps: {plan.executions:,} executions of {STEPS} steps = {steps.units:,} "
          f"steps, overlap webhook: allow, max_parallel {LANES} ==\n")
    print(f"webhook triggers accepted through the store API (insert_events), the daemon "
          f"woken with SIGUSR1 after each transaction; fed: topped up to {2 * BACKLOG} "
          f"whenever fewer than {BACKLOG} wait (rows without a mark); all: all at once before "
          f"the first ran\n")
    header = (f"{'per-step overhead, ms':40} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>8} "
              f"{'mean':>7}")
    print(header)
    print("-" * len(header))
    gap_rows(gaps, f"{LANES} lanes ({len(gaps.total):,})")
    gap_rows(serial_gaps, f"1 lane ({len(serial_gaps.total):,})")
    gap_rows(all_gaps, f"{LANES} lanes, all ({len(all_gaps.total):,})")
    print(f"\n(4 gaps per execution; decided: the instant the daemon's transaction that ended "
          f"step k was decided, step_attempts.ended_at. 1 lane: the same {plan.executions:,} "
          f"executions with max_parallel 1, one after another, for the gap without the other "
          f"lanes' work on the 2 cores.) Mean lane gap, (lanes x wall - inside) / steps: "
          f"{ms(steps.lane_gap)} ms ({LANES} lanes), {ms(serial.lane_gap)} ms (1 lane), "
          f"{ms(steps_all.lane_gap)} ms ({LANES} lanes, all)\n")

    print(f"== 2. Steps against plain runs ({plan.runs:,} webhook triggers of a one-command "
          f"job, same overlap) ==\n")
    header = (f"{'case':28} {'count':>6} {'wall s':>7} {'wall/each ms':>12} "
              f"{'lane gap ms':>11} {'CPU/each ms':>11} {'daemon s':>8} {'superv. s':>9} "
              f"{'jobs s':>6} {'accept ms':>9} {'load':>5}")
    print(header)
    print("-" * len(header))
    for label, case in ((f"steps, {LANES} lanes", steps), ("steps, 1 lane", serial),
                        (f"plain runs, {LANES} lanes", plain),
                        (f"steps, {LANES} lanes, all", steps_all),
                        (f"plain runs, {LANES} lanes, all", plain_all)):
        print(f"{label:28} {case.units:>6,} {case.wall:>7.2f} {ms(case.wall / case.units):>12} "
              f"{ms(case.lane_gap):>11} {ms(case.cpu_each):>11} {case.daemon_cpu:>8.2f} "
              f"{case.supervisor_cpu:>9.2f} {case.jobs_cpu:>6.2f} "
              f"{case.accept_seconds * 1000:>9,.1f} {case.load:>5.2f}")
    print("(count: steps or runs; wall: first start line to last end line; CPU/each: daemon +"
          " supervisor per step or run, their seconds in the next two columns, from the "
          "daemon's serving line to the last success; jobs: the bash processes' CPU, apart; "
          "accept: the bench's transactions that accepted the triggers, summed; load: the "
          "1-minute load average as the case began)")
    print(f"steps / plain runs, {LANES} lanes each: wall per step "
          f"x{steps.wall / steps.units / (plain.wall / plain.units):.2f}, CPU per step "
          f"x{steps.cpu_each / plain.cpu_each:.2f}, lane gap x{steps.lane_gap / plain.lane_gap:.2f}"
          "")
    print(f"all at once / fed: CPU per step x{steps_all.cpu_each / steps.cpu_each:.2f}, per "
          f"run x{plain_all.cpu_each / plain.cpu_each:.2f}\n")

    print("== 3. The machine's own costs, same file system, measured before the cases (and "
          "the first two again right after the 1-lane case) ==\n")
    print(f"one durable commit (sqlite3 WAL, synchronous=FULL, one-row insert), median of "
          f"{plan.commits:,}: {ms(commit)} ms (after the 1-lane case: {ms(commit_after)} ms)")
    print(f"one process start (subprocess.run bash -c true), median of {plan.starts}: "
          f"{ms(start)} ms (after the 1-lane case: {ms(start_after)} ms)")
    print(f"posix_spawn /bin/true back to back (measure_spawn_rate): {ms(spawn)} ms each")
    print(f"one empty file created in a new folder under the scratch folder, median of "
          f"{plan.starts}: {ms(create)} ms (a step's attempt record and log are two, made "
          f"while the step before runs; see file_create)\n")

    floor = (commit + start + commit_after + start_after) / 2  # around the judged case
    p50, p99 = percentile(gaps.total, 0.5), percentile(gaps.total, 0.99)
    s50, s99 = percentile(serial_gaps.total, 0.5), percentile(serial_gaps.total, 0.99)
    print("== 4. Target ==\n")
    print(f"commit + start = {ms(floor)} ms (the mean of before and after the 1-lane case: "
          f"{ms(commit + start)} and {ms(commit_after + start_after)}); per-step overhead, "
          f"{LANES} lanes: p50 {ms(p50)} ms"
          f" = x{p50 / floor:.2f}, p99 {ms(p99)} ms = x{p99 / floor:.2f}; 1 lane: p50 "
          f"{ms(s50)} ms = x{s50 / floor:.2f}, p99 {ms(s99)} ms = x{s99 / floor:.2f}")
    print(f"target: per-step overhead p50 <= 2 x (one durable commit + one process start), "
          f"1 lane: x{s50 / floor:.2f}, {'met' if s50 <= 2 * floor else 'not met'} "
          f"(p99 x{s99 / floor:.2f}; beside it, {LANES} lanes sharing the 2 cores: p50 "
          f"x{p50 / floor:.2f}, p99 x{p99 / floor:.2f})\n")
    print(f"total {time.perf_counter() - began:.0f} s; load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
