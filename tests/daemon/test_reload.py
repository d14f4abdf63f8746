"""An apply never takes the daemon down: whatever the file holds and whatever fails while it
is applied, the apply is refused in one line and the running config stays, all of it (its
timers, the config kept as applied, the secrets). Only a fault of the state folder is tried
again (see test_daemon_faults)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cronduit.core.config import Config, load_config
from cronduit.daemon.heartbeat import APPLIED_CONFIG
from cronduit.daemon.loop import Daemon
from cronduit.ports import Transaction
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = "jobs:\n  j: {run: 'true', every: 1h}\n"
EDITED = CONFIG + "  k: {run: 'true', every: 1h}\n"
PATIENCE = 20.0


class _Refusing:
    """A transaction that fails, as a bug of cronduit's would, when it records an apply
    that succeeded: the apply's own transaction, and no other."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def set_meta(self, key: str, value: str) -> None:
        if key == "last_apply" and json.loads(value)["ok"]:
            raise OverflowError("date value out of range")
        self._tx.set_meta(key, value)


class BreakingStore:
    """A real store whose apply transactions fail with a non-store error while ``broken``."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.broken = False

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with self.inner.transaction() as tx:
            yield _Refusing(tx) if self.broken else tx

    def close(self) -> None:
        self.inner.close()


class Serving:
    """A daemon serving in this test's event loop, on a store that can break, with secrets
    that cannot be read while ``secrets_unreadable``."""

    def __init__(self, folder: Path) -> None:
        self.config_path = folder / "cronduit.yaml"
        self.config_path.write_text(CONFIG)
        self.store = BreakingStore(SqliteStore(folder / "cronduit.db"))
        self.secrets_unreadable = False
        self.task: asyncio.Task[None] | None = None
        self.lines: list[str] = []
        self.daemon = Daemon(self.config_path, load_config(CONFIG, str(self.config_path)),
                             self.store, FakeRunner(), FakeClock(T0),  # type: ignore[arg-type]
                             dry_run=False, log=self.lines.append, secrets=self._secrets,
                             config_text=CONFIG)

    def _secrets(self, _: Config) -> Mapping[str, str]:
        if self.secrets_unreadable:  # as a secrets file that is a directory
            raise IsADirectoryError(21, "Is a directory")
        return {}

    def said(self, part: str) -> list[str]:
        return [line.split(" ", 1)[1] for line in self.lines if part in line]

    async def until(self, what: Callable[[], bool]) -> None:
        """Wait for ``what``; a daemon that ended meanwhile fails the test with its error."""
        async with asyncio.timeout(PATIENCE):
            while not what():
                if self.task is not None and self.task.done():
                    self.task.result()
                    raise AssertionError("the daemon stopped")
                await asyncio.sleep(0.02)

    async def apply(self, expected: str) -> None:
        """Ask for an apply (SIGHUP's way) and wait for the line that says how it went."""
        seen = len(self.said(expected))
        self.daemon._ask_reload()
        await self.until(lambda: len(self.said(expected)) > seen)

    def kept(self) -> tuple[list[str], str, dict[str, object]]:
        """What the store holds of the config in force: timers, applied text, last answer."""
        with self.store.inner.transaction() as tx:
            timers = sorted(timer.job for timer in tx.timers())
            answer = json.loads(tx.get_meta("last_apply") or "{}")
            applied = json.loads(tx.get_meta(APPLIED_CONFIG) or "{}")
        return timers, applied.get("text", ""), answer

    def run(self, scenario: Callable[[], Any]) -> None:
        """Serve, play ``scenario``, then check the daemon still applies and stops normally."""
        async def main() -> None:
            self.task = asyncio.create_task(self.daemon.serve())
            await self.until(lambda: bool(self.said("serving 1 job")))
            await scenario()
            self.config_path.write_text(EDITED)
            self.store.broken = self.secrets_unreadable = False
            await self.apply("apply: k: added")
            self.daemon._stop()
            await self.task

        asyncio.run(main())


def test_a_file_that_is_not_utf8_is_refused_and_the_daemon_carries_on(tmp_path: Path) -> None:
    """Once the daemon's end (a UnicodeDecodeError out of its loop): now one line, and the
    running config stays."""
    serving = Serving(tmp_path)
    config = serving.daemon.engine.config

    async def scenario() -> None:
        serving.config_path.write_bytes(EDITED.encode() + b"  l: {run: caf\xe9}\n")
        await serving.apply("apply refused")
        assert config is serving.daemon.engine.config

    serving.run(scenario)
    assert ["apply refused: the config has errors; the running config stays",
            f"apply refused: {serving.config_path}:4:15: not UTF-8 text"
            ] == serving.said("apply refused")


def test_a_failure_inside_the_apply_leaves_nothing_of_it_applied(tmp_path: Path) -> None:
    """Whatever fails while the apply is written (here an OverflowError) rolls all of it
    back: no timer for the new job, the applied config and the engine's are the old ones,
    and ``cronduit apply`` hears the refusal."""
    serving = Serving(tmp_path)
    config = serving.daemon.engine.config
    found: list[object] = []

    async def scenario() -> None:
        serving.config_path.write_text(EDITED)
        serving.store.broken = True
        await serving.apply("apply refused")
        found.extend([serving.daemon.engine.config is config, serving.kept()])

    serving.run(scenario)
    why = "cannot apply the config: OverflowError: date value out of range"
    assert [True, (["j"], CONFIG, {"at": T0.isoformat(), "ok": False, "lines": [why]})] == found
    assert [f"apply refused: {why}; the running config stays"] == serving.said("apply refused")


def test_secrets_that_cannot_be_read_refuse_the_apply(tmp_path: Path) -> None:
    """Read before anything is applied: once the engine had taken the new config when the
    secrets failed, and the failure (an OSError) was retried for ever as a full disk."""
    serving = Serving(tmp_path)
    config = serving.daemon.engine.config
    found: list[object] = []

    async def scenario() -> None:
        serving.config_path.write_text(EDITED)
        serving.secrets_unreadable = True
        await serving.apply("apply refused")
        found.extend([serving.daemon.engine.config is config, serving.kept()[:2]])

    serving.run(scenario)
    assert [True, (["j"], CONFIG)] == found
    assert ["apply refused: cannot read the secrets (settings.secrets_file): Is a directory; "
            "the running config stays"] == serving.said("apply refused")
