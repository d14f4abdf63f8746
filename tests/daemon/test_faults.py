"""The daemon's loop on a store that stops committing (a full disk) and a clock that steps:
it stays up, says so once, backs off, and carries on by itself."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronduit.core.config import load_config
from cronduit.daemon.loop import Daemon
from cronduit.notifier import NotificationSender
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner
from tests.helpers.flaky import FlakyStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = "jobs:\n  j: {run: 'true', every: 1h}\n"
HTTP = "settings:\n  listen: 127.0.0.1:0\n"
PATIENCE = 20.0


class Serving:
    """A daemon serving on a flaky store in this test's event loop."""

    def __init__(self, folder: Path, *, http: bool = False) -> None:
        self.config_path = folder / "cronduit.yaml"
        text = HTTP + CONFIG if http else CONFIG
        self.config_path.write_text(text)
        self.store = FlakyStore(SqliteStore(folder / "cronduit.db"))
        self.clock = FakeClock(T0)
        self.lines: list[str] = []
        self.daemon = Daemon(self.config_path, load_config(text, str(self.config_path)),
                             self.store, FakeRunner(), self.clock, dry_run=False,
                             log=self.lines.append,
                             open_store=(lambda: SqliteStore(folder / "cronduit.db"))
                             if http else None)

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


def test_a_run_now_accepted_before_the_store_failed_is_answered_as_waiting(
        tmp_path: Path) -> None:
    """run-now looks up the run of a trigger already accepted: a store that fails then
    makes the answer "waiting" (the trigger is safe), never an error."""
    serving = Serving(tmp_path)
    serving.store.down = True
    assert asyncio.run(serving.daemon.run_of("manual/j/1", 0.1)) is None


def test_notifications_wait_while_the_store_fails(tmp_path: Path) -> None:
    """A pass of the notification sender that cannot read the store sends nothing and ends
    quietly; the daemon's loop is the one that says the store is unavailable."""
    serving = Serving(tmp_path)
    serving.store.down = True
    sender = NotificationSender(lambda: serving.daemon.engine.config, serving.store,
                                serving.clock, _on_this_thread, serving.lines.append)

    async def one_pass() -> None:
        sender.kick()
        assert sender._pass is not None
        assert 0 == await sender._pass
        await sender.close()

    asyncio.run(one_pass())
    assert [] == serving.lines


async def _on_this_thread(work: Callable[..., object], *args: object) -> object:
    return work(*args)


def test_a_store_that_fails_as_the_http_server_comes_up_does_not_stop_the_daemon(
        tmp_path: Path) -> None:
    """The heartbeat naming the address is written as the server comes up; when that commit
    fails the daemon serves all the same, and its loop writes the heartbeat again."""
    serving = Serving(tmp_path, http=True)
    serving.store.fail(3)  # after the apply, its record and the start: the first heartbeat

    async def scenario() -> None:
        task = asyncio.create_task(serving.daemon.serve())
        await serving.until(lambda: bool(serving.said("listening on http://127.0.0.1:")))
        await serving.until(lambda: serving.heartbeat_at() is not None)
        serving.daemon._stop()
        await task

    asyncio.run(scenario())
    assert 1 == serving.store.failed


def test_a_daemon_stopped_while_it_waits_to_start_stops_with_one_line(tmp_path: Path) -> None:
    """SIGTERM while start-up waits for the disk: the daemon stops cleanly, having started
    nothing, rather than with the store's error."""
    serving = Serving(tmp_path)
    serving.store.down = True

    async def scenario() -> None:
        task = asyncio.create_task(serving.daemon.serve())
        await serving.until(lambda: serving.store.failed >= 1)
        serving.daemon._stop()
        await task

    asyncio.run(scenario())
    assert serving.said("stopped before the state store could be written; nothing was started")
    assert [] == serving.said("serving")
