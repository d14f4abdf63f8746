"""``cronduit doctor`` reads the time where every command does: from the runtime's clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.ports import Timer
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock
from tests.helpers.store import put_timer

NOW = datetime(2100, 1, 1, 12, tzinfo=UTC)
"""Far ahead of the machine's clock: only a doctor that asks the runtime sees this time."""


def test_a_timer_overdue_by_the_runtimes_clock_is_a_problem(tmp_path: Path) -> None:
    """Due two hours before the runtime's now (and long after the machine's): overdue."""
    config = tmp_path / "cronduit.yaml"
    config.write_text('jobs:\n  nightly: {run: "true", cron: "0 10 * * *"}\n')
    store = SqliteStore(tmp_path / ".cronduit" / "cronduit.db")
    due = NOW - timedelta(hours=2)
    with store.transaction() as tx:
        put_timer(tx, Timer("nightly", "cron 0 10 * * * tz UTC dst run/once jitter 0s", due,
                            "2100-01-01 10:00 UTC", due, None))
    store.close()
    result = CliRunner().invoke(cli, ["doctor", "-c", str(config)],
                                obj=Runtime(clock=FakeClock(NOW), nudge=lambda _: None))
    assert (1, True) == (result.exit_code, "nightly: next slot 2100-01-01 10:00 UTC, overdue "
                         "since 2100-01-01T10:00:00Z: is the daemon running?" in result.output)
