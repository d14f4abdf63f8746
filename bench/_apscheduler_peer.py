"""The APScheduler 3.x side of ``bench/engine.py``, run as its own process.

One workload per invocation: ``JOBS`` interval jobs every second from a common start instant
``T0`` (two seconds after the jobs are added, so adding them is not measured), for
``SECONDS`` seconds, in a ``BackgroundScheduler`` with its default executor (a pool of 10
threads), default ``misfire_grace_time`` (1 s), ``coalesce`` and ``max_instances`` (1).
Work is a no-op, or starting and reaping ``/bin/true``.

Prints one JSON object: slots due in ``[T0, T0 + SECONDS)``, the lateness of each slot that
ran (slot -> the no-op's first instruction, or the moment ``Popen`` returned, i.e. after the
child's ``exec``), and the CPU seconds of this process and its reaped children over the
window. A slot counts as run only if it ran; missed, skipped (max instances) and coalesced
slots all count as missed, as they do for cronduit.

Run:  python bench/_apscheduler_peer.py --store sqlite --jobs 1000 --seconds 10 --work noop
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apscheduler.events import EVENT_JOB_EXECUTED, JobExecutionEvent
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler

LEAD = 2.0
"""Seconds between adding the jobs and their first slot."""
GRACE = 2.0
"""Seconds after the window for its last slots to run (as for the cronduit daemon)."""


def noop() -> float:
    return time.time()


def run_true() -> float:
    with subprocess.Popen(["/bin/true"]) as child:  # what subprocess.run does, timed inside
        started = time.time()
        child.wait()
    return started


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def measure(store: str, jobs: int, seconds: float, work: str, folder: Path) -> dict[str, object]:
    jobstore = (MemoryJobStore() if store == "memory"
                else SQLAlchemyJobStore(url=f"sqlite:///{folder / 'jobs.sqlite'}"))
    scheduler = BackgroundScheduler(jobstores={"default": jobstore}, timezone=UTC)
    lateness: list[float] = []
    lock = threading.Lock()
    t0 = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=LEAD + 1)
    end = t0 + timedelta(seconds=seconds)

    def executed(event: JobExecutionEvent) -> None:
        slot = event.scheduled_run_time
        if t0 <= slot < end:
            with lock:
                lateness.append(event.retval - slot.timestamp())

    scheduler.add_listener(executed, EVENT_JOB_EXECUTED)
    func = noop if work == "noop" else run_true
    scheduler.start(paused=True)
    for index in range(jobs):
        scheduler.add_job(func, "interval", seconds=1, start_date=t0, id=f"j{index:05d}")
    scheduler.resume()
    time.sleep(max(0.0, t0.timestamp() - time.time()))
    cpu_before = cpu_seconds()
    time.sleep(seconds + GRACE)
    cpu = cpu_seconds() - cpu_before
    scheduler.shutdown(wait=False)
    return {"expected": jobs * round(seconds), "lateness": lateness, "cpu_s": cpu}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=["sqlite", "memory"], required=True)
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--work", choices=["noop", "true"], required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cronduit-bench-aps-") as folder:
        result = measure(args.store, args.jobs, args.seconds, args.work, Path(folder))
    print(json.dumps(result), flush=True)
    os._exit(0)  # worker threads may still be in a job; the figures are already out


if __name__ == "__main__":
    raise SystemExit(main())
