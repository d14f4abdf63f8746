"""The daemon's log line writer: the last place an outside value is cleaned before the log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cronduit.core.config import load_config
from cronduit.core.enums import TriggerKind
from cronduit.daemon.loop import Daemon
from cronduit.ports import NewEvent
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = 'settings: {webhook_secret: HOOK_KEY}\njobs:\n  poke: {run: "true", webhook: true}\n'


def test_a_label_stored_raw_by_an_older_version_reaches_the_log_cleaned(
        tmp_path: Path) -> None:
    """A trigger accepted before labels were cleaned still writes a clean line when it runs."""
    store = SqliteStore(tmp_path / "cronduit.db")
    config = load_config(CONFIG, "cronduit.yaml")
    lines: list[str] = []
    daemon = Daemon(tmp_path / "cronduit.yaml", config, store, FakeRunner(), FakeClock(T0),
                    dry_run=False, log=lines.append)
    daemon.engine.apply(config, T0)
    with store.transaction() as tx:
        tx.insert_event(NewEvent("webhook/poke/old", "poke", TriggerKind.WEBHOOK,
                                 "webhook \x1b[2J\x00\u202eevil", T0))
    daemon.engine.tick(T0)
    store.close()
    (started,) = [line for line in lines if " run poke " in line]
    assert started.endswith(": started [webhook \\x1b[2J\\x00\\u202eevil]")
    assert started.startswith("2026-06-01T12:00:00Z run poke ")
