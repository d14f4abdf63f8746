"""Soak: many one-second jobs for minutes on end; does anything grow or drift?

300 jobs ``every: 1s`` running ``/bin/true`` through ``cronduit serve`` for 10 minutes (about
180,000 runs), with ``kept_runs: 3`` so retention prunes run folders all along, as a daemon
left alone for months does. Every few seconds the bench samples the resident memory and the
open file descriptors of the daemon and of its supervisor, and the size of the store. After
the window it reads, from the store, each slot's lateness (slot to the kernel's start time of
its process, as ``bench/engine.py`` measures it) and groups it by minute.

Pass marks (issue 11, item 13): RSS and open descriptors of both processes grow less than
10 % after the first minute (the last minute against the second: RSS's median sample,
the descriptors' fewest, since a sample also counts the launches in flight);
lateness p99 does not drift (the last full minute's p99 against the second minute's); no
slot is missed; the store's size per run is printed.

The peer a user would pick instead, APScheduler 3.11 with its memory store (its durable
store cannot keep up with this load: see ``bench/engine.py`` part 2), runs the same jobs for
the same time, one after the other, sampled the same way; and the machine's own limit, the
bare process start rate, says how much of the machine the load takes.

Run:  python bench/soak.py [--jobs 300] [--minutes 10] [--quick]   (pip install -e '.[bench]')
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from _daemon import daemon, firings, write_config
from _helpers import measure_spawn_rate

PEER = Path(__file__).with_name("_apscheduler_peer.py")
SAMPLE_EVERY = 5.0
"""Seconds between samples of memory, descriptors and store size."""
STOP_MARGIN = 3.0
"""Seconds before the last slot whose runs the stop may cut short (fired, not launched)."""
GROWTH_LIMIT = 0.10
"""Growth allowed from the end of the first minute to the end of the window."""


@dataclass
class Samples:
    """One process's resident memory (bytes) and open descriptors, by seconds since start."""

    name: str
    points: list[tuple[float, int, int]] = field(default_factory=list)

    def add(self, at: float, process: psutil.Process) -> None:
        try:
            with process.oneshot():
                self.points.append((at, process.memory_info().rss, process.num_fds()))
        except psutil.NoSuchProcess:
            pass

    def growth(self, column: int) -> float:
        """Growth of ``column`` (1: RSS, 2: descriptors) from the second minute to the last.

        RSS: the minutes' medians. Descriptors: the minutes' fewest. A sample catches
        whatever launches are in flight at that instant (the daemon holds a launch's
        attempt file and log until the supervisor has them; at this load it is launching
        most of the time), while a leaked descriptor stays open and raises every sample,
        the fewest too."""
        early, late = self._minute(1, column), self._minute(-1, column)
        if early is None or late is None or not early:
            return math.nan
        return (late - early) / early

    def _minute(self, index: int, column: int) -> float | None:
        minutes: dict[int, list[int]] = defaultdict(list)
        for point in self.points:
            minutes[int(point[0] // 60)].append(point[column])
        if len(minutes) < 2:
            return None
        values = minutes[sorted(minutes)[index]]
        return statistics.median(values) if column == 1 else min(values)

    def by_minute(self) -> str:
        """Resident memory (MiB) at the end of each minute, to see growth level off, and
        each minute's fewest and most open descriptors."""
        marks: dict[int, int] = {}
        fds: dict[int, list[int]] = defaultdict(list)
        for at, rss, open_fds in self.points:
            marks[int(at // 60)] = rss
            fds[int(at // 60)].append(open_fds)
        memory = " ".join(f"{rss / 2**20:.1f}" for _, rss in sorted(marks.items()))
        descriptors = " ".join(f"{min(v)}-{max(v)}" for _, v in sorted(fds.items()))
        return f"RSS MiB by minute {memory}; descriptors by minute {descriptors}"

    def row(self) -> str:
        if not self.points:
            return f"{self.name:28} (no samples)"
        rss = [self._minute(index, 1) or 0.0 for index in (1, -1)]
        fds = [self._minute(index, 2) or 0.0 for index in (1, -1)]
        return (f"{self.name:28} {rss[0] / 2**20:9.1f} {rss[1] / 2**20:9.1f} "
                f"{self.growth(1):+8.1%} {fds[0]:6.0f} {fds[1]:6.0f} {self.growth(2):+8.1%}")


SAMPLE_HEADER = (f"{'process':28} {'RSS m2 MiB':>9} {'RSS last':>9} {'growth':>8} "
                 f"{'fds m2':>6} {'fds last':>6} {'growth':>8}")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def supervisor_of(process: psutil.Process) -> psutil.Process | None:
    """The daemon's supervisor: the process started from ``executor.supervisor``."""
    for candidate in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(candidate.info["cmdline"] or ())
        if "cronduit.executor.supervisor" in cmdline and candidate.pid != process.pid:
            return candidate
    return None


def store_bytes(state: Path) -> int:
    return sum(path.stat().st_size for path in state.glob("cronduit.db*") if path.exists())


def cronduit_soak(folder: Path, jobs: int, seconds: int) -> dict[str, object]:
    lines = (f"j{i:04d}: {{command: [/bin/true], every: 1s}}" for i in range(jobs))
    config = write_config(folder, lines, kept_runs=3)
    daemon_samples, supervisor_samples = Samples("cronduit daemon"), Samples("cronduit supervisor")
    sizes: list[tuple[float, int]] = []
    with daemon(config) as served:
        served.wait_for("serving ")
        started = time.monotonic()
        supervisor = None
        while (elapsed := time.monotonic() - started) < seconds:
            supervisor = supervisor or supervisor_of(served.process)
            daemon_samples.add(elapsed, served.process)
            if supervisor is not None:
                supervisor_samples.add(elapsed, supervisor)
            sizes.append((elapsed, store_bytes(folder / "state")))
            time.sleep(SAMPLE_EVERY)
    found = firings(folder)
    with closing(sqlite3.connect(folder / "state" / "cronduit.db")) as db:
        runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    t0 = min(firing.slot for firing in found)
    # Slots of the last seconds were still being launched when the stop came: not missed.
    cut = max(firing.slot for firing in found).timestamp() - STOP_MARGIN
    by_minute: dict[int, list[float]] = defaultdict(list)
    missed = at_stop = 0
    for firing in found:
        minute = int((firing.slot - t0).total_seconds() // 60)
        if firing.started is None:
            if firing.slot.timestamp() > cut:
                at_stop += 1
            else:
                missed += 1
        else:
            by_minute[minute].append(firing.started - firing.slot.timestamp())
    return {"samples": [daemon_samples, supervisor_samples], "runs": runs, "missed": missed,
            "at_stop": at_stop, "store": store_bytes(folder / "state"),
            "by_minute": dict(by_minute), "sizes": sizes}


def apscheduler_soak(folder: Path, jobs: int, seconds: int) -> dict[str, object]:
    out = folder / "result.json"
    samples = Samples("APScheduler 3.11 memory")
    with subprocess.Popen([sys.executable, str(PEER), "--store", "memory", "--jobs", str(jobs),
                           "--seconds", str(seconds), "--work", "true", "--result", str(out)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as peer:
        process = psutil.Process(peer.pid)
        started = time.monotonic()
        while peer.poll() is None:
            samples.add(time.monotonic() - started, process)
            time.sleep(SAMPLE_EVERY)
    result = json.loads(out.read_text())
    lateness: list[float] = result["lateness"]
    # The peer reports lateness in the order its jobs ran: cut it into minutes by share.
    per_minute = max(1, len(lateness) * 60 // max(seconds, 1))
    by_minute = {index // per_minute: lateness[index:index + per_minute]
                 for index in range(0, len(lateness), per_minute)}
    return {"samples": [samples], "runs": len(lateness),
            "missed": int(result["expected"]) - len(lateness), "by_minute": by_minute}


def print_minutes(name: str, by_minute: dict[int, list[float]]) -> tuple[float, float]:
    print(f"  {name}: lateness by minute (ms, p50 / p99 / runs)")
    for minute in sorted(by_minute):
        values = by_minute[minute]
        print(f"    minute {minute + 1:2d}: {percentile(values, 0.5) * 1000:7.0f} "
              f"{percentile(values, 0.99) * 1000:7.0f} {len(values):7d}")
    # The last full minute: the window's end cuts the minute after it short (a few slots).
    full = max(len(values) for values in by_minute.values())
    minutes = [minute for minute in sorted(by_minute) if len(by_minute[minute]) >= full // 2]
    early = by_minute[minutes[1]] if len(minutes) > 1 else by_minute[minutes[0]]
    return percentile(early, 0.99), percentile(by_minute[minutes[-1]], 0.99)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="100 jobs for 2 minutes")
    parser.add_argument("--no-peer", action="store_true", help="cronduit only")
    args = parser.parse_args()
    jobs, seconds = (100, 120) if args.quick else (args.jobs, int(args.minutes * 60))
    spawn_rate = measure_spawn_rate(3.0)
    print(f"soak: {jobs} jobs every 1s for {seconds}s ({jobs * seconds:,} runs due); bare "
          f"process start rate {spawn_rate:,.0f}/s, so the load is {jobs / spawn_rate:.0%} "
          "of the machine's limit")
    with tempfile.TemporaryDirectory(prefix="cronduit-soak-") as scratch:
        Path(scratch, "cronduit").mkdir()
        ours = cronduit_soak(Path(scratch) / "cronduit", jobs, seconds)
        peer = None
        if not args.no_peer:
            Path(scratch, "peer").mkdir()
            peer = apscheduler_soak(Path(scratch) / "peer", jobs, seconds)
    print(SAMPLE_HEADER)
    for result in (ours, peer):
        if result is not None:
            for samples in result["samples"]:  # type: ignore[attr-defined]
                print(samples.row())
    for result in (ours, peer):
        if result is not None:
            for samples in result["samples"]:  # type: ignore[attr-defined]
                print(f"  {samples.name}: {samples.by_minute()}")
    verdicts = [("no slot missed before the stop", ours["missed"] == 0)]
    for name, result in (("cronduit", ours), ("APScheduler memory", peer)):
        if result is None:
            continue
        early, late = print_minutes(name, result["by_minute"])  # type: ignore[arg-type]
        print(f"  {name}: {result['runs']:,} runs, {result['missed']:,} slots missed, "
              f"p99 minute 2 {early * 1000:.0f} ms -> last full minute {late * 1000:.0f} ms "
              f"({late / early:.2f}x)"
              + (f"; {result['at_stop']:,} slots of the last {STOP_MARGIN:.0f} s not launched "
                 "before the stop" if "at_stop" in result else ""))
        if name == "cronduit":
            verdicts.append(("lateness p99 does not drift (last <= 1.5x minute 2, or "
                             "< 50 ms more)", late <= max(early * 1.5, early + 0.05)))
    store = int(ours["store"])  # type: ignore[arg-type]
    runs = int(ours["runs"])  # type: ignore[arg-type]
    print(f"  cronduit store: {store / 2**20:.1f} MiB for {runs:,} runs = "
          f"{store / max(runs, 1):,.0f} bytes per run (coordination history is kept)")
    for samples in ours["samples"]:  # type: ignore[attr-defined]
        verdicts.append((f"{samples.name} RSS growth < 10 %", samples.growth(1) < GROWTH_LIMIT))
        verdicts.append((f"{samples.name} descriptors growth < 10 %",
                         samples.growth(2) < GROWTH_LIMIT))
    for text, ok in verdicts:
        print(f"  {'met' if ok else 'NOT MET'}: {text}")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
