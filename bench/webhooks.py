"""Durable webhook acceptance: how many ``202``s a second, and how fast, against the disk.

A real ``cronduit serve`` (uvicorn on loopback, SQLite, WAL, synchronous=FULL) answers job
webhooks from a load generator in its own process (``bench/_load.py``). A 202 means the
event is committed, so the number to compare with is the disk's: in the same run, the rate
of raw SQLite commits of one event row each, on the same file system. Group commit is what
lets acceptance beat that rate: one commit carries every request that arrived meanwhile.

Parts: the raw commit rate; the most the daemon sustains (closed loop, 32 connections);
latency at fixed offered rates (open loop, timed from when each request was due); and the
same at 2,000/s spread over 50 jobs. Targets (issue 4): >= 2,000 accepted/s, p99 < 50 ms.

    .venv/bin/python bench/webhooks.py            # about 70 s
    .venv/bin/python bench/webhooks.py --quick    # about 30 s
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _daemon import Served, cpu_seconds, daemon
from cronduit.core.signing import webhook_token
from cronduit.store.sqlite import SqliteStore

SECRET = "bench-webhook-secret"
BUSY = "sleep 60"
"""The job of most cases: its first run goes on for the whole window and every other
webhook waits in its queue, so the cases measure acceptance (and routing) alone."""
LOAD = Path(__file__).parent / "_load.py"


@contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cronduit-bench-", dir=os.environ.get("TMPDIR")) as d:
        yield Path(d)


def raw_commit_rate(seconds: float) -> float:
    """Commits/s of one event row each (WAL, synchronous=FULL), into cronduit's schema."""
    with scratch() as folder:
        SqliteStore(folder / "cronduit.db").close()
        db = sqlite3.connect(folder / "cronduit.db", isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        count = 0
        end = time.perf_counter() + seconds
        began = time.perf_counter()
        while time.perf_counter() < end:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO events (delivery_id, job, kind, label, accepted_at) "
                       "VALUES (?, 'poke', 'webhook', 'webhook', '2026-01-01T00:00:00Z')",
                       (f"raw/{count}",))
            db.execute("COMMIT")
            count += 1
        took = time.perf_counter() - began
        db.close()
    return count / took


def write_config(folder: Path, jobs: int, command: str) -> Path:
    (folder / "secrets.env").write_text(f"HOOK_KEY={SECRET}\n")
    lines = ["settings:", "  state: state", "  listen: 127.0.0.1:0", "  secrets_file: secrets.env",
             "  webhook_secret: HOOK_KEY", "jobs:"]
    lines += [f"  hook{i:02d}: {{run: '{command}', webhook: true}}" for i in range(jobs)]
    path = folder / "cronduit.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def load(mode: str, port: int, paths: list[str], seconds: float, amount: float
         ) -> dict[str, object]:
    """Run the generator in its own process, taking the paths in turn."""
    argv = [sys.executable, str(LOAD), mode, "127.0.0.1", str(port), ",".join(paths),
            str(seconds), str(round(amount) if mode == "closed" else amount)]
    loaded: dict[str, object] = json.loads(subprocess.run(argv, stdout=subprocess.PIPE,
                                                          check=True).stdout)
    return loaded


def accepted_events(folder: Path) -> int:
    db = sqlite3.connect(folder / "state" / "cronduit.db")
    try:
        return int(db.execute("SELECT COUNT(*) FROM events WHERE kind = 'webhook'").fetchone()[0])
    finally:
        db.close()


def stop_runs(folder: Path) -> None:
    """Runs outlive the daemon by design; the bench ends its own (each leads its group)."""
    db = sqlite3.connect(folder / "state" / "cronduit.db")
    try:
        pids = [row[0] for row in db.execute("SELECT pid FROM runs WHERE pid IS NOT NULL")]
    finally:
        db.close()
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def run_case(name: str, jobs: int, mode: str, amount: float, seconds: float,
             spread: int = 1, command: str = BUSY) -> dict[str, object]:
    with scratch() as folder:
        config = write_config(folder, jobs, command)
        served: Served = daemon(config)
        with served:
            served.wait_for("listening on")
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", served.log.read_text())
            assert found is not None
            port = int(found.group(1))
            targets = [f"/hooks/hook{i:02d}/{webhook_token(SECRET, f'hook{i:02d}')}"
                       for i in range(spread)]
            before = cpu_seconds(served.process)
            result = load(mode, port, targets, seconds, amount)
            after = cpu_seconds(served.process)
            time.sleep(0.5)
        result["daemon_cpu_s"] = (after[0] - before[0]) + (after[1] - before[1])
        result["events"] = accepted_events(folder)
        stop_runs(folder)
        result["name"] = name
        return result


def row(result: dict[str, object], raw: float) -> str:
    statuses = result["statuses"]
    assert isinstance(statuses, dict)
    accepted = int(statuses.get("202", 0))
    other = sum(int(v) for k, v in statuses.items() if k != "202")
    per_s = float(result["per_s"])  # type: ignore[arg-type]
    return (f"{result['name']:<40} {per_s:>9,.0f} {per_s / raw:>6.1f} {accepted:>8,} "
            f"{other:>6,} {result['events']:>8,} {float(result['p50_ms']):>7.1f} "  # type: ignore[arg-type]
            f"{float(result['p99_ms']):>7.1f} {float(result['max_ms']):>7.1f} "  # type: ignore[arg-type]
            f"{float(result['daemon_cpu_s']):>6.1f}")  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter windows")
    args = parser.parse_args()
    window = 5.0 if args.quick else 10.0
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} at the start\n")
    raw = raw_commit_rate(2.0)
    print(f"raw SQLite, one event row per commit (WAL, synchronous=FULL): {raw:,.0f} commits/s\n")
    cases = [
        ("closed loop, 32 connections, 1 job", 1, "closed", 32, window, 1, BUSY),
        ("open loop, offered 1,000/s, 1 job", 1, "open", 1000, window, 1, BUSY),
        ("open loop, offered 2,000/s, 1 job", 1, "open", 2000, window, 1, BUSY),
        ("open loop, offered 2,000/s, 10 of 50 jobs", 50, "open", 2000, window, 10, BUSY),
        ("open loop, offered 3,000/s, 1 job", 1, "open", 3000, window, 1, BUSY),
        ("open loop, 1,000/s, runs back to back", 1, "open", 1000, window, 1, "true"),
    ]
    header = (f"{'case':<40} {'202/s':>9} {'x raw':>6} {'202s':>8} {'other':>6} {'events':>8} "
              f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'CPU s':>6}")
    print(header)
    print("-" * len(header))
    results = []
    for name, jobs, mode, amount, seconds, spread, command in cases:
        result = run_case(name, jobs, mode, amount, seconds, spread, command)
        results.append(result)
        print(row(result, raw), flush=True)
    target = results[2]
    statuses = target["statuses"]
    assert isinstance(statuses, dict)
    met = (float(target["per_s"]) >= 1950 and float(target["p99_ms"]) < 50  # type: ignore[arg-type]
           and set(statuses) == {"202"})
    print(f"\ntarget: >= 2,000 accepted/s with p99 < 50 ms (offered 2,000/s, 1 job): "
          f"{float(target['per_s']):,.0f}/s, p99 {float(target['p99_ms']):.1f} ms, "  # type: ignore[arg-type]
          f"{'met' if met else 'not met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
