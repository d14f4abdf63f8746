"""From one host to many (SPEC §10): a real daemon fires slots on SQLite, stops, the state is
copied into PostgreSQL with ``cronduit state copy``, and a daemon serving the PostgreSQL
config goes on from there. Counted from the jobs' own output files and from the ledger: no
slot ran twice, and the cron slot that came due while no daemon ran was caught up, not lost.

The cron job ticks once a minute, so the test waits for one minute boundary to pass while
both daemons are down: up to a minute of its run time.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core.enums import SlotFate
from cronduit.core.timespec import format_utc
from cronduit.ports import Store
from cronduit.store.postgres import PostgresStore
from cronduit.store.sqlite import SqliteStore
from tests.acceptance.conftest import Deployment
from tests.helpers.postgres import URL, fresh_schema, in_schema

SLOT_OF_TRIGGER = """\
#!/bin/sh
# The slot this run was fired for, one line a run, appended to the file $1.
sed -n 's/.*"slot": "\\([^"]*\\)".*/\\1/p' "$CRONDUIT_TRIGGER_FILE" >> "$1"
"""
JOBS = """
jobs:
  tick:
    run: 'sh slot.sh tick.txt'
    every: 1s
  minute:
    run: 'sh slot.sh minute.txt'
    cron: '* * * * *'
    catch_up: {window: 1h, mode: all}
"""
MINUTE = timedelta(minutes=1)


@pytest.fixture
def schema() -> Iterator[str]:
    with fresh_schema() as name:
        yield name


def _cli(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cronduit", *args, "-c",
                           str(deployment.config)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=deployment.folder)


def _stop(deployment: Deployment, process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, once the daemon listens (its handlers are in place by then): a clean stop."""
    process.terminate()
    assert 0 == process.wait(timeout=30), deployment.daemon_log()


def _ran(store: Store, job: str) -> list[str]:
    with store.transaction() as tx:
        return [format_utc(record.slot) for record in tx.slots(job, None, None)
                if record.fate == SlotFate.RAN]


def _settle(deployment: Deployment) -> None:
    """Runs still going when the daemon stopped would refuse the copy: a dry-run daemon
    records their ends and starts nothing (fires no timer), then stops."""
    dry = deployment.serve("--dry-run")
    deployment.wait_for(lambda: "listening on http://" in deployment.daemon_log())  # started up
    deployment.wait_for(lambda: all(run.state == "ended" for job in ("tick", "minute")
                                    for run in deployment.runs(job)))
    _stop(deployment, dry)


def test_a_state_copied_into_postgresql_goes_on_where_the_sqlite_daemon_stopped(
        deployment: Deployment, schema: str) -> None:
    url = f"{URL}?options=-csearch_path%3D{schema}"
    (deployment.folder / "slot.sh").write_text(SLOT_OF_TRIGGER)
    deployment.write(JOBS)
    sqlite_daemon = deployment.serve()
    deployment.wait_for(lambda: len(deployment.lines("tick.txt")) >= 3)
    _stop(deployment, sqlite_daemon)
    _settle(deployment)

    before = SqliteStore(deployment.folder / ".cronduit" / "cronduit.db")
    try:
        with before.transaction() as tx:
            tick_timer, minute_timer = tx.get_timer("tick"), tx.get_timer("minute")
        ran_on_sqlite = {job: _ran(before, job) for job in ("tick", "minute")}
    finally:
        before.close()
    assert tick_timer is not None
    assert minute_timer is not None
    assert ran_on_sqlite["tick"] == deployment.lines("tick.txt")

    copied = _cli(deployment, "state", "copy", "--to", url)
    assert (0, "") == (copied.returncode, copied.stderr)
    assert copied.stdout.startswith("copied ")
    again = _cli(deployment, "state", "copy", "--to", url)
    assert (0, True) == (again.returncode, again.stdout.startswith("already copied: "))

    # While no daemon runs, the minute job's armed slot comes due: it must not be lost.
    deployment.wait_for(lambda: datetime.now(UTC) > minute_timer.due_at + timedelta(seconds=1),
                        timeout=75)
    deployment.write(f"settings:\n  state: '{url}'\n{JOBS}")
    pg_daemon = deployment.serve()
    after = PostgresStore(in_schema(schema))
    try:
        deployment.wait_for(lambda: format_utc(minute_timer.slot)
                            in _ran(after, "minute"), timeout=30)
        deployment.wait_for(lambda: len(_ran(after, "tick")) >= len(ran_on_sqlite["tick"]) + 3)
        _stop(deployment, pg_daemon)
        ran = {job: _ran(after, job) for job in ("tick", "minute")}
    finally:
        after.close()
    # The last runs may still be writing their lines: each run's line, once it is there.
    deployment.wait_for(lambda: len(deployment.lines("tick.txt")) == len(ran["tick"])
                        and len(deployment.lines("minute.txt")) == len(ran["minute"]))

    for job in ("tick", "minute"):
        lines = deployment.lines(f"{job}.txt")
        assert len(set(lines)) == len(lines), f"a {job} slot ran twice: {lines}"
        assert sorted(lines) == ran[job]  # every run recorded, every recorded slot run once
        assert ran[job][:len(ran_on_sqlite[job])] == ran_on_sqlite[job]  # the ledger came along
    # Where the SQLite daemon stopped, the PostgreSQL one went on: the interval job's armed
    # slot fired (late, once), and every minute from the armed one on ran, none missing.
    assert format_utc(tick_timer.slot) == ran["tick"][len(ran_on_sqlite["tick"])]
    on_pg = ran["minute"][len(ran_on_sqlite["minute"]):]
    first = minute_timer.slot
    assert [format_utc(first + n * MINUTE) for n in range(len(on_pg))] == on_pg
    assert len(on_pg) >= 1
