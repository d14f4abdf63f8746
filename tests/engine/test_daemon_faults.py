"""The daemon's loop on a store that stops committing (a full disk) and a clock that steps:
it stays up, says so once, backs off, and carries on by itself."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronduit.core.config import load_config
from cronduit.daemon import Daemon
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner
from tests.engine.flaky import FlakyStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = "jobs:\n  j: {run: 'true', every: 1h}\n"
PATIENCE = 20.0


class Serving:
    """A daemon serving on a flaky store in this test's event loop."""

    def __init__(self, folder: Path) -> None:
        self.config_path = folder / "cronduit.yaml"
        self.config_path.write_text(CONFIG)
        self.store = FlakyStore(SqliteStore(folder / "cronduit.db"))
        self.clock = FakeClock(T0)
        self.lines: list[str] = []
        self.daemon = Daemon(self.config_path, load_config(CONFIG, str(self.config_path)),
                             self.store, FakeRunner(), self.clock, dry_run=False,
                             log=self.lines.append)

    def said(self, part: str) -> list[str]:
        return [line for line in self.lines if part in line]

    async def until(self, what: Callable[[], bool]) -> None:
        """Wait for ``what`` to hold (the daemon works on its own thread meanwhile)."""
        async with asyncio.timeout(PATIENCE):
            while not what():
                await asyncio.sleep(0.02)

    def heartbeat_at(self) -> str | None:
        with self.store.inner.transaction() as tx:
            raw = tx.get_meta("daemon")
        return None if raw is None else str(json.loads(raw)["heartbeat_at"])


def test_the_loop_lives_through_failing_commits_and_says_so_once_each_way(
        tmp_path: Path) -> None:
    """Every commit fails for a while: one line when it begins, retries that back off (a few,
    not hundreds), one line when a commit succeeds again; an apply asked for meanwhile is
    carried out after, and the daemon stops normally."""
    serving = Serving(tmp_path)

    async def scenario() -> None:
        task = asyncio.create_task(serving.daemon.serve())
        await serving.until(lambda: bool(serving.said("serving 1 job")))
        serving.store.down = True
        await serving.until(lambda: serving.store.failed >= 3)
        serving.config_path.write_text(CONFIG + "  k: {run: 'true', every: 1h}\n")
        serving.daemon._ask_reload()
        await serving.until(lambda: serving.store.failed >= 4)
        serving.store.down = False
        await serving.until(lambda: bool(serving.said("apply: k: added")))
        serving.daemon._stop()
        await task

    asyncio.run(scenario())
    assert 1 == len(serving.said("state store unavailable: database or disk is full; runs "
                                 "going carry on, timers and new runs wait; retrying"))
    assert 1 == len(serving.said("state store available again after "))
    assert serving.store.failed < 12  # 0.25 s, 0.5 s, 1 s, 2 s...: no busy loop
    assert serving.said("stopped; runs going carry on")


def test_a_daemon_started_while_commits_fail_starts_once_they_succeed(tmp_path: Path) -> None:
    """The disk is full at start: the daemon waits (one line), then applies and serves."""
    serving = Serving(tmp_path)
    serving.store.down = True

    async def scenario() -> None:
        task = asyncio.create_task(serving.daemon.serve())
        await serving.until(lambda: serving.store.failed >= 2)
        assert [] == serving.said("serving 1 job")
        serving.store.down = False
        await serving.until(lambda: bool(serving.said("serving 1 job")))
        serving.daemon._stop()
        await task

    asyncio.run(scenario())
    assert 1 == len(serving.said("state store unavailable"))
    assert 1 == len(serving.said("j: timer armed for 2026-06-01T12:00:00Z"))


def test_the_heartbeat_goes_on_after_the_wall_clock_steps_back(tmp_path: Path) -> None:
    """Heartbeats are paced on the monotonic clock: a wall clock stepped back an hour still
    gets one within seconds, stamped with the new time, so commands keep seeing the daemon."""
    serving = Serving(tmp_path)
    back = T0 - timedelta(hours=1)

    async def scenario() -> None:
        task = asyncio.create_task(serving.daemon.serve())
        await serving.until(lambda: T0.isoformat() == serving.heartbeat_at())
        serving.clock.set(back)
        await serving.until(lambda: back.isoformat() == serving.heartbeat_at())
        serving.daemon._stop()
        await task

    asyncio.run(scenario())
    assert back.isoformat() == serving.heartbeat_at()  # the stop's, on the stepped clock
