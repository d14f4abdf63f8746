"""Log tails: on a PostgreSQL state, each attempt's end stores the run's log tail with the
attempt's end, so any host can show it; on SQLite nothing is read or written."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronduit import intake
from cronduit.core.config import load_config
from cronduit.core.lifecycle import AttemptReport
from cronduit.core.log_tails import TAIL_BYTES
from cronduit.engine import Engine
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import RunLogTail, Store
from cronduit.store.postgres import PostgresStore
from cronduit.testing import FakeClock
from tests.engine.conftest import Rig, configured
from tests.helpers.postgres import fresh_schema, in_schema

MakeRig = Callable[..., Rig]
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
JOB = "jobs:\n  j:\n    run: ./j\n"
RETRIED = "jobs:\n  j:\n    run: ./j\n    retry: {attempts: 2, backoff: 10s}\n"


def stored(store: Store, run_id: str) -> RunLogTail | None:
    with store.transaction() as tx:
        return tx.stored_log_tail(run_id)


def started(rig: Rig) -> str:
    """A manual run of j, launched: its id."""
    rig.accept("manual/1", "j", "manual")
    rig.tick()
    return rig.runner.launched[-1].run.id


def test_a_runs_tail_is_stored_with_its_end_on_postgresql_and_not_on_sqlite(
        make_rig: MakeRig) -> None:
    """The transaction that records the run's end stores its tail on a PostgreSQL state; a
    daemon on SQLite, whose logs are on its own host, neither reads nor writes one."""
    rig = make_rig(JOB, T0)
    run_id = started(rig)
    log = b"building\n\x1b[31mfailed\x1b[0m: \xff\n"  # raw: escapes, invalid UTF-8
    rig.runner.logs[run_id] = log
    rig.runner.finish(run_id, 1)
    rig.advance(timedelta(seconds=3))
    [run] = rig.history("j")
    if rig.backend == "sqlite":
        assert ("failure", None, []) == (run.outcome, stored(rig.store, run_id),
                                         rig.runner.tails_read)
        return
    assert ("failure", RunLogTail(run_id, 1, log, len(log), 0, T0 + timedelta(seconds=3))) == (
        run.outcome, stored(rig.store, run_id))


def test_a_log_past_the_tail_keeps_its_last_mebibyte_and_its_size(make_rig: MakeRig) -> None:
    """Three MiB of log: the last one is stored, and the log's size says how much more there
    was."""
    rig = make_rig(JOB, T0)
    run_id = started(rig)
    log = b"".join(b"%09d\n" % n for n in range(314_573))  # 3 MiB and a little
    rig.runner.logs[run_id] = log
    rig.runner.finish(run_id, 0)
    rig.tick()
    tail = stored(rig.store, run_id)
    if rig.backend == "sqlite":
        assert tail is None
        return
    assert tail is not None
    assert (TAIL_BYTES, log[-TAIL_BYTES:], len(log)) == (len(tail.tail), tail.tail, tail.size)


def test_each_attempts_end_replaces_the_tail_so_a_run_in_backoff_shows_its_log(
        make_rig: MakeRig) -> None:
    """The first attempt's end stores what it wrote (readable while the run waits to retry);
    the second's replaces it with the log both wrote."""
    rig = make_rig(RETRIED, T0)
    run_id = started(rig)
    if rig.backend == "sqlite":
        return  # nothing is stored there (the first test shows it)
    rig.runner.logs[run_id] = b"attempt 1 failed\n"
    rig.runner.finish(run_id, 1)
    rig.tick()
    first = stored(rig.store, run_id)
    rig.advance(timedelta(seconds=10))
    rig.runner.logs[run_id] += b"attempt 2 ok\n"
    rig.runner.finish(run_id, 0)
    rig.tick()
    last = stored(rig.store, run_id)
    assert ((1, b"attempt 1 failed\n"), (2, b"attempt 1 failed\nattempt 2 ok\n")) == (
        (first.attempt, first.tail) if first else None, (last.attempt, last.tail) if last else None)


def test_a_run_that_ended_while_no_daemon_watched_gets_its_tail_at_restart(
        make_rig: MakeRig) -> None:
    """The attempt ended during the restart (its file says how); the restarted engine settles
    it and stores its tail in the same transaction, as for a run it watched end."""
    rig = make_rig(JOB, T0)
    run_id = started(rig)
    if rig.backend == "sqlite":
        return
    rig.runner.logs[run_id] = b"done while the daemon was down\n"
    rig.runner.recovered[run_id] = AttemptReport(0)
    rig.restart()
    tail = stored(rig.store, run_id)
    assert ("success", b"done while the daemon was down\n") == (
        rig.history("j")[0].outcome, tail.tail if tail else None)


def test_retention_drops_the_tail_with_the_runs_files(make_rig: MakeRig) -> None:
    """kept_runs: 1 — the older run's files are pruned, and its stored tail with them."""
    rig = make_rig("settings:\n  kept_runs: 1\n" + JOB, T0)
    if rig.backend == "sqlite":
        return
    ids = []
    for n in range(2):
        rig.accept(f"manual/{n}", "j", "manual")
        rig.tick()
        ids.append(rig.runner.launched[-1].run.id)
        rig.runner.logs[ids[-1]] = b"run %d\n" % n
        rig.runner.finish(ids[-1], 0)
        rig.advance(timedelta(seconds=1))
    assert (None, b"run 1\n") == (stored(rig.store, ids[0]),
                                  getattr(stored(rig.store, ids[1]), "tail", None))


# -- with the real runner ------------------------------------------------------------------


REAL = """\
jobs:
  loud:
    run: "python3 -c 'import sys; sys.stdout.write(\\"x\\" * 3145728 + \\"LAST\\\\n\\")'"
"""


async def _serve_once(store: Store, folder: Path) -> str:
    """One manual run of ``loud`` on the real runner, the clock faked: its id once it ended."""
    config = configured(load_config(REAL, str(folder / "cronduit.yaml")), "postgresql")
    paths = StatePaths(folder / "state")
    paths.root.mkdir()
    clock = FakeClock(T0)
    woken = asyncio.Event()
    runner = ProcessRunner(paths, folder / "cronduit.yaml", dict, woken.set)
    runner.attach(asyncio.get_running_loop())
    engine = Engine(config, store, runner)
    engine.apply(config, clock.now())
    engine.start(clock.now())
    with store.transaction() as tx:
        job = config.jobs["loud"]
        intake.accept_manual(tx, job, intake.check_inputs(job, {}), queue=False,
                             operator="test", now=clock.now())
    while True:
        woken.clear()  # before the tick: an end during it is not lost
        engine.tick(clock.now())
        with store.transaction() as tx:
            [run] = tx.history("loud", 1)
        if run.state == "ended":
            return run.id
        await asyncio.wait_for(woken.wait(), 30)


def test_the_real_runner_stores_the_last_mebibyte_of_a_bigger_log() -> None:
    """A job writes 3 MiB and a last line: the store keeps the log's last MiB, ending with
    that line, and its size; the log on this host keeps all of it."""
    with fresh_schema() as schema, tempfile.TemporaryDirectory(prefix="tails-") as folder:
        store = PostgresStore(in_schema(schema))
        try:
            run_id = asyncio.run(_serve_once(store, Path(folder)))
            tail = stored(store, run_id)
        finally:
            store.close()
        log = StatePaths(Path(folder) / "state").log(run_id).read_bytes()
    assert tail is not None
    assert (3 * TAIL_BYTES + 5, TAIL_BYTES, log[-TAIL_BYTES:], 0) == (
        tail.size, len(tail.tail), tail.tail, tail.cut)
    assert tail.tail.endswith(b"xxLAST\n")
