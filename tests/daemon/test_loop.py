"""The daemon's loop, served in this test's event loop on a fake clock and a fake runner:
it ticks when woken, sleeps no longer than what is due, beats, applies when asked, and stops
leaving its runs going. Each test waits for the event that proves its point; the loop's
longest sleep is stretched to an hour, so nothing but the behaviour under test can make the
point come in time."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cronduit import intake
from cronduit.core.config import load_config
from cronduit.daemon import loop, read_daemon
from cronduit.daemon.loop import Daemon
from cronduit.intake import pausing as control
from cronduit.notifier import NotificationSender
from cronduit.ports import Notification
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = "jobs:\n  hand: {run: 'true'}\n  daily: {run: 'true', cron: '0 13 * * *'}\n"
PATIENCE = 20.0


@pytest.fixture(autouse=True)
def long_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop's longest sleep, an hour: only a wake, or a due time, ends one early."""
    monkeypatch.setattr(loop, "MAX_SLEEP", 3600.0)


class Serving:
    def __init__(self, folder: Path, config: str = CONFIG, *, http: bool = False) -> None:
        """``http``: the daemon serves HTTP too, on the config's ``settings.listen``."""
        self.config_path = folder / "cronduit.yaml"
        self.config_path.write_text(config)
        self.store = SqliteStore(folder / "cronduit.db")
        self.clock = FakeClock(T0)
        self.runner = FakeRunner()
        self.lines: list[str] = []
        self.daemon = Daemon(self.config_path, load_config(config, str(self.config_path)),
                             self.store, self.runner, self.clock, dry_run=False,
                             log=self.lines.append, config_text=config,
                             open_store=(lambda: SqliteStore(folder / "cronduit.db"))
                             if http else None)
        self.task: asyncio.Task[None] | None = None

    def said(self, part: str) -> list[str]:
        return [line for line in self.lines if part in line]

    async def until(self, what: Callable[[], bool]) -> None:
        """Wait for ``what``; a daemon that ended meanwhile fails the test with its error."""
        try:
            async with asyncio.timeout(PATIENCE):
                while not what():
                    if self.task is not None and self.task.done():
                        self.task.result()
                        raise AssertionError("the daemon stopped")
                    await asyncio.sleep(0.01)
        except TimeoutError:
            raise AssertionError(f"not reached; the daemon said {self.lines}") from None

    def run_manual(self, job: str = "hand") -> None:
        config = self.daemon.engine.config
        with self.store.transaction() as tx:
            intake.accept_manual(tx, config.jobs[job], {}, queue=False, operator="ana",
                                 now=self.clock.now())

    def play(self, scenario: Callable[[], Awaitable[None]]) -> None:
        async def main() -> None:
            self.task = asyncio.create_task(self.daemon.serve())
            await self.until(lambda: bool(self.said("serving 2 jobs")))
            await scenario()
            self.daemon._stop()
            await self.task

        try:
            asyncio.run(main())
        finally:
            self.store.close()


def test_a_wake_makes_the_loop_route_a_trigger_accepted_elsewhere_at_once(
        tmp_path: Path) -> None:
    serving = Serving(tmp_path)

    async def scenario() -> None:
        serving.run_manual()
        serving.daemon.wake()  # as the CLI's SIGUSR1, or the HTTP acceptor after a commit
        await serving.until(lambda: len(serving.runner.launched) == 1)

    serving.play(scenario)
    assert ["hand"] == [launch.job.name for launch in serving.runner.launched]


def test_the_loop_wakes_for_a_due_timer_without_being_asked(tmp_path: Path) -> None:
    """Each turn reads the clock again and fires what is due by then (here: a timer one hour
    ahead, at 13:00, once the fake clock is moved there)."""
    serving = Serving(tmp_path)

    async def scenario() -> None:
        serving.clock.advance(timedelta(hours=1))
        serving.daemon.wake()  # the clock moved: the loop reads it again
        await serving.until(lambda: len(serving.runner.launched) == 1)

    serving.play(scenario)
    assert ["daily"] == [launch.job.name for launch in serving.runner.launched]


def test_the_heartbeat_names_this_process_and_the_stop_is_recorded(tmp_path: Path) -> None:
    serving = Serving(tmp_path)
    beats: list[bool] = []

    async def scenario() -> None:
        await serving.until(lambda: read_daemon(serving.store) is not None)
        info = read_daemon(serving.store)
        assert info is not None
        assert (os.getpid(), False, T0.isoformat()) == (info.pid, info.stopped,
                                                        info.heartbeat_at)
        beats.append(info.stopped)

    serving.play(scenario)
    store = SqliteStore(tmp_path / "cronduit.db")
    info = read_daemon(store)
    store.close()
    assert info is not None
    assert info.stopped
    assert [False] == beats
    assert serving.said("stopped; runs going carry on and are adopted by the next daemon")


def test_a_reload_asked_for_applies_the_file_at_the_next_turn(tmp_path: Path) -> None:
    """Asked for as soon as the daemon serves, often while its first turn writes the
    heartbeat: a wake that came then was once cleared before the tick, and the apply waited
    for the loop's longest sleep."""
    serving = Serving(tmp_path)

    async def scenario() -> None:
        serving.config_path.write_text(CONFIG + "  more: {run: 'true', every: 1d}\n")
        serving.daemon._ask_reload()  # SIGHUP's way
        await serving.until(lambda: bool(serving.said("apply: more: added")))

    serving.play(scenario)
    assert "more" in serving.daemon.engine.config.jobs


def test_a_stop_leaves_runs_going_to_the_next_daemon(tmp_path: Path) -> None:
    serving = Serving(tmp_path)

    async def scenario() -> None:
        serving.run_manual()
        serving.daemon.wake()
        await serving.until(lambda: len(serving.runner.launched) == 1)

    serving.play(scenario)
    assert [] == serving.runner.stopped  # nothing stopped on the way out
    store = SqliteStore(tmp_path / "cronduit.db")
    with store.transaction() as tx:
        assert ["running"] == [run.state for run in tx.active_runs("hand")]
    store.close()


def sample(serving: Serving, name: str, **labels: str) -> float | None:
    """One sample of the daemon's metrics as a scrape would read it; None when absent."""
    text = serving.daemon.metrics.render().decode()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return None


def test_the_daemon_counts_what_its_engine_commits_and_reads_its_gauges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manual run that ends is counted as its end commits; the gauges the loop reads (at
    every turn here) show the daily job's next due time and, once it is paused, its pause."""
    monkeypatch.setattr(loop, "GAUGES_EVERY", 0.0)
    serving = Serving(tmp_path)

    async def scenario() -> None:
        serving.run_manual()
        serving.daemon.wake()
        await serving.until(lambda: len(serving.runner.launched) == 1)
        serving.runner.finish(serving.runner.launched[0].run.id, 0)
        serving.daemon.wake()
        await serving.until(lambda: 1.0 == sample(
            serving, "cronduit_runs_total", job="hand", outcome="success"))
        with serving.store.transaction() as tx:
            control.pause(tx, "daily", "disk full", "ana", None, serving.clock.now())
        serving.daemon.wake()
        await serving.until(lambda: 1.0 == sample(serving, "cronduit_job_paused", job="daily"))

    serving.play(scenario)
    assert T0.replace(hour=13).timestamp() == sample(
        serving, "cronduit_job_next_run_timestamp_seconds", job="daily")
    assert 0.0 == sample(serving, "cronduit_job_paused", job="hand")


def test_a_daemon_serving_http_writes_its_metrics_ahead_of_the_first_scrape(
        tmp_path: Path) -> None:
    """Once its first reading of the gauges is in, the daemon writes their lines on a thread
    of its own: the first scrape finds every line written, and nothing left to write."""
    serving = Serving(tmp_path, "settings:\n  listen: 127.0.0.1:0\n" + CONFIG, http=True)

    def written_ahead() -> bool:
        ahead = serving.daemon._rendering_ahead
        return ahead is not None and ahead.done()

    async def scenario() -> None:
        await serving.until(written_ahead)
        assert 0 == serving.daemon.metrics.write_changes()

    serving.play(scenario)
    assert T0.replace(hour=13).timestamp() == sample(
        serving, "cronduit_job_next_run_timestamp_seconds", job="daily")


def test_a_daemon_serving_http_writes_a_runs_lines_ahead_at_its_next_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that ends has its lines written ahead by the loop's next turn, on a thread of
    its own: not left to the next scrape, nor to the next reading of the gauges (none
    here after the first)."""
    monkeypatch.setattr(loop, "GAUGES_EVERY", 3600.0)
    serving = Serving(tmp_path, "settings:\n  listen: 127.0.0.1:0\n" + CONFIG, http=True)
    line = b'cronduit_runs_total{job="hand",outcome="success"} 1.0\n'

    async def scenario() -> None:
        serving.run_manual()
        serving.daemon.wake()
        await serving.until(lambda: len(serving.runner.launched) == 1)
        serving.runner.finish(serving.runner.launched[0].run.id, 0)
        serving.daemon.wake()
        # The text as kept, nothing written for the asking (a scrape would write it).
        await serving.until(lambda: line in serving.daemon.metrics._runs.text())

    serving.play(scenario)

NOTIFYING = """
notifiers:
  ops: {url: "http://127.0.0.1:9/hook", on: [failure]}
jobs:
  hand: {run: 'true', notify: [failure]}
  daily: {run: 'true', cron: '0 13 * * *'}
"""


def test_the_sender_looks_for_notifications_after_a_tick_that_queued_some_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One look as the loop begins, none after the tick that only started a run (a look is
    a transaction on the engine's thread, which the next tick would wait for), one after the
    tick that recorded the failure and queued its notification."""
    monkeypatch.setattr(loop, "NOTIFY_EVERY", 3600.0)
    looks: list[datetime] = []
    due = NotificationSender._due

    def looking(sender: NotificationSender, now: datetime) -> list[Notification]:
        looks.append(now)
        return due(sender, now)

    monkeypatch.setattr(NotificationSender, "_due", looking)
    serving = Serving(tmp_path, NOTIFYING)

    async def scenario() -> None:
        await serving.until(lambda: len(looks) == 1)
        serving.run_manual()
        serving.daemon.wake()
        await serving.until(lambda: len(serving.runner.launched) == 1)
        serving.runner.finish(serving.runner.launched[0].run.id, 1)
        serving.daemon.wake()
        await serving.until(lambda: bool(serving.said("notify ops of run")))

    serving.play(scenario)
    assert 2 == len(looks)
