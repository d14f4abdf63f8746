"""The APScheduler 3.x side of ``bench/engine.py``, run as its own process.

Every workload uses a ``BackgroundScheduler`` with its defaults: a pool of 10 threads,
``misfire_grace_time`` 1 s, ``coalesce`` on, ``max_instances`` 1; and a job store:
``SQLAlchemyJobStore`` on a SQLite file (the durable one), ``SQLAlchemyJobStore`` on
PostgreSQL (``--store postgresql --url URL --schema SCHEMA``: the table in that schema, which
must exist; the store APScheduler's docs recommend there), or ``MemoryJobStore``.

``--work noop`` / ``--work true``: ``JOBS`` interval jobs every second from a common first
slot ``T0`` (a few seconds after the jobs are added, so adding them is not measured), for
``SECONDS`` seconds; each run does nothing, or starts and reaps ``/bin/true``. Prints one
JSON object: slots due in ``[T0, T0 + SECONDS)``, the lateness of each slot that ran (slot ->
the no-op's first instruction, or the moment ``Popen`` returned, i.e. after the child's
``exec``), and the CPU seconds of this process and its reaped children from ``T0`` to
``GRACE`` seconds after the window. Slots that did not run (missed, skipped at max
instances, coalesced) all count as missed, as they do for cronduit.

``--work idle``: ``JOBS`` cron jobs far in the future (the same expressions as cronduit's
idle daemon), added to a started scheduler; prints ``serving JOBS jobs`` and idles until
SIGINT. With ``--db`` naming a file that already holds the jobs, adds nothing (a restart).

Run:  python bench/_apscheduler_peer.py --store sqlite --jobs 1000 --seconds 10 --work noop
      --result out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apscheduler.events import EVENT_JOB_EXECUTED, JobExecutionEvent
from apscheduler.jobstores.base import BaseJobStore
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger

LEAD = 1.0
"""Seconds between starting to add the jobs and their first slot, plus 2 ms per job."""
GRACE = 2.0
"""Seconds after the window for its last slots to run (as for the cronduit daemon)."""


def noop() -> float:
    return time.time()


def run_true() -> float:
    with subprocess.Popen(["/bin/true"]) as child:  # what subprocess.run does, timed inside
        started = time.time()
        child.wait()
    return started


def far_cron(index: int) -> str:
    """A distinct cron expression per job, all in the first week of January."""
    return f"{index % 60} {(index // 60) % 24} {1 + index // 1440} 1 *"


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds of this process, and of the children it has reaped."""
    times = os.times()
    return times.user + times.system, times.children_user + times.children_system


_SERVER: dict[str, str | None] = {"url": None, "schema": None}
"""The PostgreSQL job store's SQLAlchemy URL and schema (``--url``, ``--schema``)."""


def scheduler_on(store: str, db: Path) -> BackgroundScheduler:
    jobstore: BaseJobStore
    if store == "memory":
        jobstore = MemoryJobStore()
    elif store == "postgresql":
        jobstore = SQLAlchemyJobStore(url=_SERVER["url"], tableschema=_SERVER["schema"])
    else:
        jobstore = SQLAlchemyJobStore(url=f"sqlite:///{db}")
    return BackgroundScheduler(jobstores={"default": jobstore}, timezone=UTC)


def every_second(store: str, jobs: int, seconds: float, work: str,
                 db: Path) -> dict[str, object]:
    scheduler = scheduler_on(store, db)
    lateness: list[float] = []
    lock = threading.Lock()
    lead = LEAD + jobs * 0.002
    t0 = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=lead)
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
    before = cpu_seconds()
    time.sleep(seconds + GRACE)
    after = cpu_seconds()
    scheduler.shutdown(wait=False)
    return {"expected": jobs * round(seconds), "lateness": lateness,
            "cpu_self": after[0] - before[0], "cpu_children": after[1] - before[1]}


def idle(store: str, jobs: int, db: Path) -> None:
    restart = db.exists()
    scheduler = scheduler_on(store, db)
    scheduler.start()
    if not restart:
        for index in range(jobs):
            trigger = CronTrigger.from_crontab(far_cron(index), timezone=UTC)
            scheduler.add_job(noop, trigger, id=f"j{index:05d}")
    print(f"serving {jobs} jobs", flush=True)
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    while True:
        time.sleep(3600)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=["sqlite", "postgresql", "memory"], required=True)
    parser.add_argument("--url", help="postgresql: the SQLAlchemy URL (postgresql+psycopg://)")
    parser.add_argument("--schema", help="postgresql: the schema the job table goes in")
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=0.0)
    parser.add_argument("--work", choices=["noop", "true", "idle"], required=True)
    parser.add_argument("--db", type=Path, help="the SQLite job store (idle: kept)")
    parser.add_argument("--result", type=Path, help="where to write the figures (JSON)")
    args = parser.parse_args()
    logging.getLogger("apscheduler").setLevel(logging.CRITICAL)  # one warning per missed run
    _SERVER.update(url=args.url, schema=args.schema)
    if args.work == "idle":
        idle(args.store, args.jobs, args.db)
    with tempfile.TemporaryDirectory(prefix="cronduit-bench-aps-") as folder:
        db = Path(folder) / "jobs.sqlite"
        result = every_second(args.store, args.jobs, args.seconds, args.work, db)
    # A file, not stdout: a result of a few hundred KiB written to a pipe just before
    # os._exit came through cut short under load.
    args.result.write_text(json.dumps(result))
    os._exit(0)  # pool threads may still be in a job; the figures are out


if __name__ == "__main__":
    raise SystemExit(main())
